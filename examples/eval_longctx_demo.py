# CPU demo of the whole pipeline: the project's tiny random-weight chat model on the three benchmarks at small
# tiers: BABILong-format files the project generates itself (not the licensed BABILong data) at 0k, 1k and
# 2k; LongBioBench (generated on the fly) at 0k and 2k; NoLiMa on the project's own stand-in needle sets and
# books (not the licensed NoLiMa data) at 250 and 500 tokens.
# Run:  opencompass examples/eval_longctx_demo.py   (from any directory: it writes under outputs/longctx_demo there)
# Scores are those of a random model (near 0): the demo proves the plumbing, not a model. The tiny model writes at
# most 8 tokens per answer (its out_len_cap), so the demo takes minutes on 2 CPU cores, not half an hour.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.datasets import DemoBabilongDataset, DemoNoLiMaDataset
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_0k_gen import babilong_datasets as babilong_0k
    from opencompass_longctx.configs.datasets.babilong.babilong_1k_gen import babilong_datasets as babilong_1k
    from opencompass_longctx.configs.datasets.babilong.babilong_2k_gen import babilong_datasets as babilong_2k
    from opencompass_longctx.configs.datasets.longbio.longbio_0k_gen import longbio_datasets as longbio_0k
    from opencompass_longctx.configs.datasets.longbio.longbio_2k_gen import longbio_datasets as longbio_2k
    from opencompass_longctx.configs.datasets.nolima.nolima_250_gen import nolima_datasets as nolima_250
    from opencompass_longctx.configs.datasets.nolima.nolima_500_gen import nolima_datasets as nolima_500
    from opencompass_longctx.configs.models.longctx_tiny_chat import models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
# Relative to the directory opencompass is run from (no `import os` here: a module object in a top-level
# config cannot be dumped by OpenCompass).
DEMO_DIR = 'outputs/longctx_demo'
TIERS = ['0k', '1k', '2k']
NUM_SAMPLES = 2  # per BABILong task and tier; LongBioBench: 1 per cell and tier

# The Demo types are the production loaders on the project's own stand-in files, which they write under DEMO_DIR
# when missing (opencompass_longctx/demo/).
datasets = [dict(d, type=DemoBabilongDataset, path=f'{DEMO_DIR}/babilong', num_samples=NUM_SAMPLES)
            for d in [*babilong_0k, *babilong_1k, *babilong_2k]]
datasets += [dict(d, num_samples=1) for d in [*longbio_0k, *longbio_2k]]
datasets += [dict(d, type=DemoNoLiMaDataset, path=f'{DEMO_DIR}/nolima', pairs=2, haystacks=[0],
                  depth_indices=[0, 12, 25]) for d in [*nolima_250, *nolima_500]]

# OpenCompass's table: the per-tier groups first, then every dataset. The long-context tier table (all
# benchmarks x tiers, effective lengths, plots) follows it; groups are derived from the datasets' abbrs.
summarizer = dict(
    summarizer,
    dataset_abbrs=[f'babilong_qa1-qa{last}_{tier}' for tier in TIERS for last in (5, 10)]
    + [f'longbio_{row}_{tier}' for tier in ('0k', '2k')
       for row in ('understanding', 'reasoning', 'trustworthiness', 'mean')]
    + [d['abbr'] for d in datasets],
)

# One inference task per model and tier band (here one band, so one model load) and one evaluation task: each
# OpenCompass subprocess pays ~10 s of imports, so one task per dataset would dominate a CPU demo. The package's
# tasks go on past a dataset that fails (and the tier table says which, and why).
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
work_dir = f'{DEMO_DIR}/runs'
