# Test config: a reduced CPU leaderboard for the Slurm and resume tests: the tiny chat model (with the preemption
# tests' gate, tests/doubles/gated_model.py; closed unless a test opens it) and the rule reader, two tier bands
# (0k | 250-1k), BABILong (the project's stand-in files), LongBioBench and NoLiMa (stand-in data in the tiny
# model's tokenizer); LONGCTX_TEST_MODELS and LONGCTX_TEST_TIERS pick models and tiers. LocalRunner here;
# cluster_leaderboard_slurm.py runs the same through OpenCompass's SlurmRunner.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
from opencompass_longctx.demo.rule_reader import BabiRuleReader
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
    from opencompass_longctx.configs.summarizers.longctx import summarizer
    from ._env_cluster import BABILONG, MODELS, NOLIMA, TIERS, TINY

ALL_MODELS = [
    dict(type='gated_model.GatedTinyChatModel', abbr='tiny-chat', path=TINY, meta_template=LONGCTX_META_TEMPLATE,
         model_kwargs=dict(device_map='cpu', torch_dtype='float32'), generation_kwargs=dict(do_sample=False),
         max_seq_len=16384, max_out_len=20, batch_size=1, run_cfg=dict(num_gpus=0)),
    dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=100000, max_out_len=20, batch_size=4,
         run_cfg=dict(num_gpus=0)),
]
models = [m for m in ALL_MODELS if m['abbr'] in MODELS]
datasets = [dict(d, tier=t, abbr=f"{d['abbr']}_{t}", path=BABILONG, num_samples=2)
            for t in ('0k', '1k') for d in BABILONG_BASE[:5]]              # qa1-qa5: the table's BABILong row
datasets += [dict(d, tier=t, abbr=f"{d['abbr']}_{t}", num_samples=2)
             for t in ('0k', '1k') for d in LONGBIO_BASE if d['cell'] == 'standard']
datasets += [dict(d, type=DemoNoLiMaDataset, tier=t, abbr=f"{d['abbr']}_{t}", path=NOLIMA, tokenizer=TINY,
                  pairs=1, haystacks=[0], depth_indices=[0, 25]) for t in ('250', '1k') for d in NOLIMA_BASE]
datasets = [d for d in datasets if d['tier'] in TIERS]
infer = dict(partitioner=dict(type=LongCtxPartitioner, bands=['0k', '1k']),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxEvalTask)))
