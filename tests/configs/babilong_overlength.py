# Test config: a model whose max_seq_len holds the 0k tier but not the 2k tier.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

with read_base():
    from ...configs.datasets.babilong.babilong_0k_gen import babilong_datasets as b0
    from ...configs.datasets.babilong.babilong_2k_gen import babilong_datasets as b2
    from ...configs.models.longctx_tiny_chat import models as tiny
    from ...configs.summarizers.longctx import summarizer
    from ._env import DATA

datasets = [dict(d, path=DATA, num_samples=3) for d in [*b0[:5], *b2[:5]]]
models = [dict(tiny[0], max_seq_len=1200)]
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
