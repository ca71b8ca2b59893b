# Test config: the NoLiMa main set at several tiers (a few pairs, haystacks and depths), for evaluation-only
# runs (-m eval) on predictions the test writes, so base score and effective length go through the pipeline.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

with read_base():
    from ...configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from ...configs.models.longctx_tiny_chat import models
    from ...configs.summarizers.nolima import summarizer
    from ._env_nolima import DATA, PAIRS, TIERS

datasets = [
    dict(d, tier=t, abbr=f"{d['abbr']}_{t}", path=DATA, pairs=PAIRS, haystacks=[0, 1], depth_indices=[0, 25])
    for t in TIERS for d in NOLIMA_BASE
]
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
