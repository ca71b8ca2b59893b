# Test config: one model per run (the tiny chat model, or the rule reader), so that the report tests can merge two
# separate runs. BABILong qa1-qa5 (the project's demo-format data), LongBioBench's standard and idk cells, and NoLiMa
# copied per model tokenizer (abbr nolima_main_<tier>@<model>, as examples/eval_longctx.py does), at two small tiers.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
from opencompass_longctx.demo.rule_reader import BabiRuleReader
from opencompass_longctx.demo.tiny_chat import TinyChatModel
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from ...configs.datasets.babilong.babilong_base import BABILONG_BASE
    from ...configs.datasets.longbio.longbio_base import LONGBIO_BASE
    from ...configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from ...configs.models.longctx_tiny_chat import models as tiny
    from ...configs.summarizers.longctx import summarizer
    from ._env_report import BABILONG, LONGBIO_CELLS, MODEL, NOLIMA, SAMPLES, TIERS, TINY

rule = [dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=2000000, max_out_len=20, batch_size=8,
             run_cfg=dict(num_gpus=0))]
models = [dict(tiny[0], type=TinyChatModel, path=TINY)] if MODEL == 'tiny' else rule
NOLIMA_TIERS = [{'0k': '250'}.get(t, t) for t in TIERS]  # NoLiMa has no 0k

datasets = [dict(d, tier=t, abbr=f"{d['abbr']}_{t}", path=BABILONG, num_samples=SAMPLES)
            for t in TIERS for d in BABILONG_BASE[:5]]
datasets += [dict(d, tier=t, abbr=f"{d['abbr']}_{t}", num_samples=2)
             for t in TIERS for d in LONGBIO_BASE if d['cell'] in LONGBIO_CELLS]
datasets += [dict(d, type=DemoNoLiMaDataset, tier=t, abbr=f"{d['abbr']}_{t}@{m['abbr']}", path=NOLIMA,
                  tokenizer=TINY if MODEL == 'tiny' else None, pairs=1, haystacks=[0], depth_indices=[0, 12, 25])
             for m in models for t in NOLIMA_TIERS for d in NOLIMA_BASE]
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
