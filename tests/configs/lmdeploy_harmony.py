# Test config: the shipped gpt-oss-20b row (a thinking model, harmony format) on LMDeploy's real pipeline with the
# test double of its engine (tests/doubles/lmdeploy_double.py, `trace`: the model reasons in the analysis channel,
# naming wrong places, then answers in the final channel); its model directory is tests/harmony_tokenizer.py's
# (the harmony vocabulary, no weights). LongCtxPartitioner, one band; BABILong qa1 at 0k.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
    from ._env_leaderboard import BABILONG, GPT_OSS

TRACE = 'The question asks where Mary is. The garden and the hallway are mentioned; check the last move.'
(row,) = [m for m in lmdeploy_longctx_models if m['abbr'] == 'gpt-oss-20b']
models = [dict(row, type='lmdeploy_double.RecordingTurboMindModel', path=GPT_OSS, fake_engine=dict(trace=TRACE),
               engine_config=dict(row['engine_config'], session_len=8192, max_batch_size=2), max_seq_len=8192,
               max_tier='1k', gpu_memory_gib=80, batch_size=2)]
datasets = [dict(BABILONG_BASE[0], tier='0k', abbr=f"{BABILONG_BASE[0]['abbr']}_0k", path=BABILONG, num_samples=4)]
infer = dict(partitioner=dict(type=LongCtxPartitioner, bands=['1k']),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
