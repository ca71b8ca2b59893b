"""OpenCompass's inference and evaluation tasks, going on past a dataset that fails.

With one inference task per (model, tier band) (:class:`~opencompass_longctx.run.partitioner.LongCtxPartitioner`), and
evaluation tasks that hold many datasets, a task holds many datasets; OpenCompass's ``OpenICLInferTask`` and
``OpenICLEvalTask`` stop at the first exception, so one bad dataset would lose every later dataset of its task.
``LongCtxInferTask`` builds the model once, as OpenCompass's does, then builds and runs each dataset in turn (a
model that fails to build is not built again: each remaining dataset of the task fails at once with the same
exception; an LMDeploy model's task starts with plain ``python`` whatever its tp, see ``get_command``);
``LongCtxEvalTask`` scores each dataset in turn. A dataset that fails is logged
(``longctx: dataset failed [model/dataset]: <exception>``, with its traceback) and the next one runs. When any
failed, the task ends with an error listing them, so the runner and the tier table (which reads these lines)
report each failure with its own reason.

    infer = dict(partitioner=dict(type=LongCtxPartitioner),
                 runner=dict(type=LocalRunner, task=dict(type=LongCtxInferTask)))
    eval = dict(partitioner=dict(type=NaivePartitioner, n=100),
                runner=dict(type=LocalRunner, task=dict(type=LongCtxEvalTask)))
"""
import argparse
import copy
import os.path as osp
import sys
import time
import traceback

from mmengine.config import Config
from opencompass.registry import TASKS
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask
from opencompass.utils import (build_dataset_from_cfg, build_model_from_cfg, dataset_abbr_from_cfg,
                               get_infer_output_path, get_logger, model_abbr_from_cfg, task_abbr_from_cfg)
from opencompass_longctx.errors import LongCtxError

FAILED = 'longctx: dataset failed'


class DatasetsFailed(LongCtxError, RuntimeError):
    """Some datasets of a task failed (each is logged with its traceback); the others ran."""


class _GoesOn:
    """Runs each dataset of a task in turn; a failing one is logged and the next runs."""
    stage = ''

    def _command(self, base_module, command):
        """OpenCompass's command (GPU and launcher handling included), running this module instead of its script."""
        return command.replace(base_module.__file__, f'{osp.abspath(__file__)} --stage {self.stage}')

    def _each(self, work):
        """``work(model_cfg, dataset_cfg)`` for every pair of the task; failures logged, then raised together."""
        failed, total, done = [], sum(len(d) for d in self.dataset_cfgs), 0
        for model_cfg, dataset_cfgs in zip(self.model_cfgs, self.dataset_cfgs):
            for dataset_cfg in dataset_cfgs:
                done += 1
                self.logger.info(f'The Progress of This Task --> Models: 1/1, Datasets: {done}/{total}')
                try:
                    work(model_cfg, dataset_cfg)
                except Exception as e:  # noqa: BLE001 - logged with its traceback; the next dataset runs
                    abbr = dataset_abbr_from_cfg(dataset_cfg)
                    first = str(e).splitlines()[0] if str(e) else ''
                    self.logger.error(f'{FAILED} [{model_abbr_from_cfg(model_cfg)}/{abbr}]: {type(e).__name__}: '
                                      f'{first}\n{traceback.format_exc()}')
                    failed.append(f'{abbr} ({type(e).__name__})')
        if failed:
            raise DatasetsFailed(f'{len(failed)} of {total} datasets of this {self.stage} task failed, the others '
                                 'ran: ' + ', '.join(failed))


@TASKS.register_module()
class LongCtxInferTask(_GoesOn, OpenICLInferTask):
    stage = 'infer'

    def get_command(self, cfg_path, template):
        """OpenCompass's command, except that an LMDeploy model's task starts with plain ``python`` whatever its tp:
        OpenCompass wraps a task with ``num_gpus > 1`` in ``torch.distributed.run`` unless the model's type string
        contains 'VLLM' or 'Lmdeploy' (openicl_infer.py:50-61), which this package's class paths do not; the
        engine starts its own tensor-parallel workers: TurboMind its threads, LMDeploy 0.18's PyTorch engine a Ray
        executor at tp > 1 on CUDA (pytorch/engine/executor/__init__.py:50-61; its mp executor, which would take
        MASTER_PORT from the environment torchrun sets, is disabled there), each task its own local Ray instance."""
        import opencompass.tasks.openicl_infer as base
        from opencompass_longctx.plan import is_lmdeploy
        if is_lmdeploy(self.model_cfgs[0]):
            return template.format(task_cmd=f'{sys.executable} {osp.abspath(__file__)} --stage {self.stage} '
                                            f'{cfg_path}')
        return self._command(base, super().get_command(cfg_path, template))

    def run(self, cur_model=None, cur_model_abbr=None):
        self.logger.info(f'Task {task_abbr_from_cfg(self.cfg)}')
        models = {}   # abbr -> the model, or the exception its build raised (remembered: never built twice)

        def infer(model_cfg, dataset_cfg):
            self.max_out_len = model_cfg.get('max_out_len', None)
            self.batch_size = model_cfg.get('batch_size', None)
            self.min_out_len = model_cfg.get('min_out_len', None)
            if osp.exists(get_infer_output_path(model_cfg, dataset_cfg, osp.join(self.work_dir, 'predictions'))):
                return
            abbr = model_abbr_from_cfg(model_cfg)
            if abbr not in models:  # each model is built once per task, before its first dataset to run
                try:
                    models[abbr] = (cur_model if cur_model and cur_model_abbr == abbr
                                    else build_model_from_cfg(model_cfg))
                except Exception as e:
                    models[abbr] = e
                    raise
            if isinstance(models[abbr], Exception):  # the remaining datasets fail at once with the same reason
                self.logger.error(f'{abbr} failed to build for an earlier dataset of this task: not built again')
                raise models[abbr]
            self.model, self.model_cfg, self.dataset_cfg = models[abbr], model_cfg, dataset_cfg
            self.infer_cfg = dataset_cfg['infer_cfg']
            self.sub_cfg = {'models': [model_cfg], 'datasets': [[dataset_cfg]]}
            self.dataset = build_dataset_from_cfg(dataset_cfg)
            self._inference()
        self._each(infer)


@TASKS.register_module()
class LongCtxEvalTask(_GoesOn, OpenICLEvalTask):
    stage = 'eval'

    def get_command(self, cfg_path, template):
        import opencompass.tasks.openicl_eval as base
        return self._command(base, super().get_command(cfg_path, template))

    def run(self):
        def evaluate(model_cfg, dataset_cfg):
            self.model_cfg, self.dataset_cfg = model_cfg, dataset_cfg
            self.eval_cfg = copy.deepcopy(dataset_cfg.get('eval_cfg'))
            self.output_column = copy.deepcopy(dataset_cfg['reader_cfg']['output_column'])
            if osp.exists(get_infer_output_path(model_cfg, dataset_cfg, osp.join(self.work_dir, 'results'))):
                return
            self._score()
        self._each(evaluate)


def main(argv=None):
    ap = argparse.ArgumentParser(description='OpenCompass task that goes on past a failing dataset')
    ap.add_argument('--stage', choices=('infer', 'eval'), required=True)
    ap.add_argument('config', help='the task config OpenCompass wrote')
    args = ap.parse_args(argv)
    start = time.time()
    task = (LongCtxInferTask if args.stage == 'infer' else LongCtxEvalTask)(Config.fromfile(args.config))
    task.run()
    get_logger().info(f'time elapsed: {time.time() - start:.2f}s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
