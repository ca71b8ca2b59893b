# Test config: cluster_leaderboard.py with a partitioner of no options, as a user would run it with
# `opencompass --slurm` (which replaces it by OpenCompass's NumWorkerPartitioner: options such as bands= would make
# that fail before the package is imported; without them the datasets are built and the package warns).
from mmengine.config import read_base
from opencompass.runners import LocalRunner

from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxInferTask
with read_base():
    from .cluster_leaderboard import datasets, eval, models, summarizer

infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxInferTask)))
