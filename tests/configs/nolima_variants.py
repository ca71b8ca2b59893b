# Test config: every NoLiMa variant at the given tiers (a few pairs, haystacks and depths) on the project's
# stand-in data, with the tiny chat model and the NoLiMa summarizer config (the long-context summarizer). One infer task, one eval task.
# The main set decodes with the authors' 192 new tokens; the other variants with 16 (the random tiny model never
# stops early, and 192 steps per batch is what makes a CPU run slow). The model holds 1500 tokens: the main set
# at 500 (about 1730 tokens with the chat template, plus 192) is over-length, so it is never sent to the model.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.run.inferencer import LongCtxGenInferencer
with read_base():
    from ...configs.datasets.nolima.nolima_base import NOLIMA_ALL_VARIANTS
    from ...configs.models.longctx_tiny_chat import models as tiny_models
    from ...configs.summarizers.nolima import summarizer
    from ._env_nolima import DATA, PAIRS, TIERS

models = [dict(m, batch_size=16, max_seq_len=1500) for m in tiny_models]
datasets = [
    dict(d, tier=t, abbr=f"{d['abbr']}_{t}", path=DATA, pairs=PAIRS, haystacks=[0, 3], depth_indices=[0, 12, 25],
         infer_cfg=d['infer_cfg'] if d['needle_set'] == 'main'
         else dict(d['infer_cfg'], inferencer=dict(type=LongCtxGenInferencer, max_out_len=16)))
    for t in TIERS for d in NOLIMA_ALL_VARIANTS
] + [dict(NOLIMA_ALL_VARIANTS[0], tier='500', abbr='nolima_main_500', path=DATA, pairs=PAIRS, haystacks=[0, 3],
          depth_indices=[0, 12, 25])]
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
