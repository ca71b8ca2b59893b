# Test config: a reduced leaderboard run through LongCtxPartitioner with LMDeploy model configs served by the
# test double of LMDeploy's engine (tests/doubles/lmdeploy_double.py): two models (tp=1 and tp=2), three bands of
# tiny tiers (0k | 250-1k | 2k), BABILong (the project's own demo-format data), LongBioBench and NoLiMa (stand-in
# data in the model's tokenizer).
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
    from ._env_leaderboard import BABILONG, NOLIMA, TINY

models = [
    dict(type='lmdeploy_double.RecordingTurboMindModel', abbr=f'double-tp{tp}', path=TINY,
         meta_template=LONGCTX_META_TEMPLATE,
         engine_config=dict(tp=tp, session_len=8192, max_batch_size=1, cache_max_entry_count=0.8),
         gen_config=dict(do_sample=False), max_seq_len=8192, max_out_len=192, batch_size=1,
         gpu_memory_gib=0.002,  # a 2 MiB "GPU": the KV cache of the tiny model decides the batch size per band
         run_cfg=dict(num_gpus=tp))
    for tp in (1, 2)
]
datasets = [dict(d, tier=t, abbr=f"{d['abbr']}_{t}", path=BABILONG, num_samples=3)
            for t in ('0k', '1k', '2k') for d in BABILONG_BASE[:2]]
datasets += [dict(d, tier=t, abbr=f"{d['abbr']}_{t}", num_samples=2)
             for t in ('0k', '1k') for d in LONGBIO_BASE if d['cell'] == 'standard']
datasets += [dict(d, type=DemoNoLiMaDataset, tier=t, abbr=f"{d['abbr']}_{t}", path=NOLIMA, tokenizer=TINY,
                  pairs=1, haystacks=[0], depth_indices=[0, 25]) for t in ('250', '1k') for d in NOLIMA_BASE]
infer = dict(partitioner=dict(type=LongCtxPartitioner, bands=['0k', '1k', '2k']),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
