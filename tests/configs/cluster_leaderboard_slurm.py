# Test config: cluster_leaderboard.py through OpenCompass's SlurmRunner (each task one `srun` job on the test's
# one-node cluster, tests/slurm_cluster.py): the partition and the retry count come from the environment.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import SlurmRunner

from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from .cluster_leaderboard import datasets, models, summarizer
    from ._env_cluster import PARTITION, RETRY

# the rule reader asks for one GPU (the test cluster's node has two, as generic resources): its jobs carry
# --gres=gpu:1, the request the plan shows; it does not use it
models = [dict(m, run_cfg=dict(num_gpus=1)) if m['abbr'] == 'rule-reader' else m for m in models]

infer = dict(partitioner=dict(type=LongCtxPartitioner, bands=['0k', '1k']),
             runner=dict(type=SlurmRunner, partition=PARTITION, retry=RETRY, max_num_workers=2,
                         task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=SlurmRunner, partition=PARTITION, retry=RETRY, max_num_workers=2,
                        task=dict(type=LongCtxEvalTask)))
