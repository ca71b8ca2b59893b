"""LongCtxInferTask and LongCtxEvalTask: a task that holds a whole tier band (or a chunk of evaluations) runs every
dataset even when one fails, and each failure reaches the tier table with its own reason (through the real
`opencompass` command)."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, run_opencompass
from opencompass_longctx.run.tasks import FAILED
CONFIG = REPO / 'tests' / 'configs' / 'infer_task_continue.py'


@pytest.mark.e2e
def test_one_failing_dataset_does_not_stop_its_band(tmp_path):
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k', '1k'), tasks=['qa1', 'qa2'], samples=2)
    env = {'LONGCTX_TEST_DATA': str(tmp_path / 'babilong'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(CONFIG), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    plan = json.load(open(os.path.join(run, 'plan', 'longctx_plan.json')))
    assert plan['tasks'] == 1                                   # one band: the three datasets in one task
    (log,) = glob.glob(os.path.join(run, 'logs', 'infer', 'rule-reader', '*.out'))
    text = open(log).read()
    assert f'{FAILED} [rule-reader/longbio_no_such_cell_1k]: LongBioConfigError' in text
    assert 'datasets of this infer task failed, the others ran: longbio_no_such_cell_1k' in text
    # the datasets after the failing one ran and were scored
    for abbr in ('babilong_qa1_0k', 'babilong_qa2_1k'):
        assert os.path.isfile(os.path.join(run, 'predictions', 'rule-reader', f'{abbr}.json'))
        res = json.load(open(os.path.join(run, 'results', 'rule-reader', f'{abbr}.json')))
        assert res['accuracy'] == 100.0
    (eval_log,) = glob.glob(os.path.join(run, 'logs', 'eval', 'rule-reader', '*.out'))   # one eval task for all
    assert f'{FAILED} [rule-reader/longbio_no_such_cell_1k]' in open(eval_log).read()
    # the tier table names the failing dataset with its own exception and log
    (js,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))
    failures = json.load(open(js))['failures']
    (f,) = [f for f in failures if f['dataset'] == 'longbio_no_such_cell_1k']
    assert f['stage'] == 'infer' and "unknown LongBioBench cell 'no_such_cell'" in f['reason'] and f['log']


@pytest.mark.e2e
def test_a_model_that_fails_to_build_is_built_once_and_fails_every_dataset_of_its_band(tmp_path, tiny_model_dir):
    """The real task (opencompass_longctx/run/tasks.py, run as OpenCompass's runner runs it) with an LMDeploy model
    whose KV-cache preflight fails: one construction, and each of the three datasets fails with that reason (read
    back as the tier table reads it)."""
    from opencompass_longctx.run import tasks
    from opencompass_longctx.leaderboard.failures import find_failures
    builds = tmp_path / 'builds.jsonl'
    env = dict(os.environ, LONGCTX_TINY_MODEL=tiny_model_dir, LONGCTX_TEST_DATA=str(tmp_path / 'babilong'),
               LONGCTX_FAKE_LMDEPLOY_LOG=str(builds), CUDA_VISIBLE_DEVICES='0',
               PYTHONPATH=os.pathsep.join([str(REPO / 'tests' / 'doubles'), os.environ.get('PYTHONPATH', '')]))
    proc = subprocess.run([sys.executable, tasks.__file__, '--stage', 'infer',
                           str(REPO / 'tests' / 'configs' / 'infer_task_build_failure.py')],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and 'DatasetsFailed: 3 of 3 datasets of this infer task failed' in proc.stderr
    assert [json.loads(line)['event'] for line in open(builds)] == ['build']     # built once, not per dataset
    model, abbrs = 'double-unbuildable', ['babilong_qa1_0k', 'babilong_qa1_1k', 'babilong_qa1_2k']
    log = tmp_path / 'out' / 'logs' / 'infer' / model / f'{abbrs[0]}.out'        # where the runner puts it
    log.parent.mkdir(parents=True)
    log.write_text(proc.stdout + proc.stderr)
    failures = find_failures(str(tmp_path / 'out'), [(model, a) for a in abbrs], lambda m, a: None)
    assert [f.dataset for f in failures] == abbrs and {f.stage for f in failures} == {'infer'}
    (reason,) = {f.reason for f in failures}                                       # the same reason for each
    assert reason.startswith('PreflightError: ') and 'the KV cache for session_len=8192' in reason


def test_an_lmdeploy_task_starts_with_plain_python_whatever_its_tp(tmp_path):
    """OpenCompass wraps a task with num_gpus > 1 in torch.distributed.run unless the model type names 'VLLM' or
    'Lmdeploy' (openicl_infer.py:50-61); LMDeploy starts its own tensor-parallel workers (and its PyTorch engine
    reads MASTER_PORT, mp_executor.py:214-215): an LMDeploy task runs under plain python, on the GPUs the runner
    gave it (LocalRunner's real command template)."""
    from mmengine.config import ConfigDict
    from opencompass.runners.local import get_command_template
    from opencompass.tasks import OpenICLInferTask

    from opencompass_longctx.run import tasks
    lmdeploy = dict(type='opencompass_longctx.models.lmdeploy.LongCtxTurboMindModel', abbr='m', path='model',
                    engine_config=dict(tp=4, session_len=8192), max_seq_len=8192, run_cfg=dict(num_gpus=4))
    hf = dict(type='opencompass.models.HuggingFacewithChatTemplate', abbr='hf', path='model', max_seq_len=8192,
              run_cfg=dict(num_gpus=4))

    def command(task_class, model):
        cfg = ConfigDict(models=[model], datasets=[[dict(abbr='babilong_qa1_0k')]], work_dir=str(tmp_path))
        return task_class(cfg).get_command('task.py', get_command_template([0, 1, 2, 3]))
    assert 'torch.distributed.run' in command(OpenICLInferTask, lmdeploy)         # OpenCompass's own launcher
    ours = command(tasks.LongCtxInferTask, lmdeploy)
    assert ours == f'CUDA_VISIBLE_DEVICES=0,1,2,3 {sys.executable} {os.path.abspath(tasks.__file__)} --stage infer ' \
                   'task.py'
    assert 'torch.distributed.run' not in ours and 'torchrun' not in ours
    # a model that is not LMDeploy's keeps OpenCompass's launcher (with this module as the script)
    assert 'torch.distributed.run' in command(tasks.LongCtxInferTask, hf)
    assert f'{os.path.abspath(tasks.__file__)} --stage infer task.py' in command(tasks.LongCtxInferTask, hf)
