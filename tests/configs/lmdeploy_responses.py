# Test config: LMDeploy's error responses through the real pipeline. LongCtxPartitioner, two LMDeploy model configs
# on LMDeploy's real pipeline with the test double of its engine (tests/doubles/lmdeploy_double.py), one band
# (0k-1k) each: an engine that refuses some prompts (its session_len below the configured one, so LMDeploy's own
# check refuses prompts the project's check let through; a KV cache too small for others) and an engine that
# fails every request. BABILong (0k, 1k), LongBioBench and NoLiMa.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
    from opencompass_longctx.configs.summarizers.longctx import summarizer
    from ._env_leaderboard import BABILONG, NOLIMA, TINY

# double-refusing: LMDeploy's session_len check refuses the BABILong 1k prompts (~2.5k tokens of the tiny model), its
# KV cache (TurboMind's OUT_OF_MEMORY) the LongBioBench prompt (~1.2k tokens + 192 new); the others are answered
FAKE = {'double-refusing': dict(session_len=1500, kv_tokens=1000), 'double-errors': dict(error_every=1)}
models = [dict(type='lmdeploy_double.RecordingTurboMindModel', abbr=abbr, path=TINY, fake_engine=fake,
               meta_template=LONGCTX_META_TEMPLATE, engine_config=dict(tp=1, max_batch_size=1),
               gen_config=dict(do_sample=False), max_seq_len=8192, max_out_len=64, batch_size=1,
               gpu_memory_gib=1, run_cfg=dict(num_gpus=1))
          for abbr, fake in FAKE.items()]
datasets = [dict(BABILONG_BASE[0], tier=t, abbr=f"{BABILONG_BASE[0]['abbr']}_{t}", path=BABILONG, num_samples=2)
            for t in ('0k', '1k')]
datasets += [dict(d, tier='0k', abbr=f"{d['abbr']}_0k", num_samples=1) for d in LONGBIO_BASE
             if d['cell'] == 'standard'][:1]
datasets += [dict(NOLIMA_BASE[0], type=DemoNoLiMaDataset, tier='250', abbr=f"{NOLIMA_BASE[0]['abbr']}_250",
                  path=NOLIMA, tokenizer=TINY, pairs=1, haystacks=[0], depth_indices=[0])]
infer = dict(partitioner=dict(type=LongCtxPartitioner, bands=['1k']),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxEvalTask)))
