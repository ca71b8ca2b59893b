# Test config: one BABILong tier scored in all three modes, on the project's own demo-format data.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.babilong.evaluator import BabilongEvaluator
with read_base():
    from ...configs.datasets.babilong.babilong_base import BABILONG_BASE
    from ...configs.models.longctx_tiny_chat import models
    from ._env import DATA, TIER

datasets = [
    dict(d, tier=TIER, path=DATA, num_samples=3, abbr=f"{d['abbr']}_{TIER}_{mode}",
         eval_cfg=dict(evaluator=dict(type=BabilongEvaluator, mode=mode)))
    for d in BABILONG_BASE[:8] for mode in ('official', 'fixed', 'lenient')
]
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
