# Leaderboard comparison: long-context models served by LMDeploy (TurboMind or PyTorch engine, tensor parallel) on
# BABILong, LongBioBench and NoLiMa, tier by tier. Needs GPUs, `pip install -e ".[lmdeploy]"`, the models as local
# directories under $LONGCTX_MODEL_ROOT and the benchmark data (see README).
#   opencompass examples/eval_longctx.py             # run
#   opencompass examples/eval_longctx.py --dry-run   # parse and partition only (any machine): prints the plan
# Each model runs the tiers up to its own max_tier (opencompass_longctx/tables/lmdeploy_models.py), NoLiMa in
# the model's own tokenizer (tokenizer='model': one copy per model, abbr <dataset>@<model>), and LongBioBench
# cells that do not fit a tier once reserve_tokens is set aside are left out, and a dataset whose prompts would
# not fit a model's window is built to fit it (LongBioBench) or left out as N/A: LongCtxPartitioner does it
# (opencompass_longctx/combinations.py, models/window.py) and the plan lists what it built and what it left out.
from mmengine.config import read_base
from opencompass.runners import LocalRunner

from opencompass_longctx.run.partitioner import LongCtxEvalPartitioner, LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.tables.tier_table import TIERS
    from opencompass_longctx.configs.datasets.babilong.babilong_0k_gen import babilong_datasets as babilong_0k
    from opencompass_longctx.configs.datasets.babilong.babilong_4k_gen import babilong_datasets as babilong_4k
    from opencompass_longctx.configs.datasets.babilong.babilong_16k_gen import babilong_datasets as babilong_16k
    from opencompass_longctx.configs.datasets.babilong.babilong_32k_gen import babilong_datasets as babilong_32k
    from opencompass_longctx.configs.datasets.babilong.babilong_64k_gen import babilong_datasets as babilong_64k
    from opencompass_longctx.configs.datasets.babilong.babilong_128k_gen import babilong_datasets as babilong_128k
    from opencompass_longctx.configs.datasets.babilong.babilong_256k_gen import babilong_datasets as babilong_256k
    from opencompass_longctx.configs.datasets.babilong.babilong_512k_gen import babilong_datasets as babilong_512k
    from opencompass_longctx.configs.datasets.babilong.babilong_1m_gen import babilong_datasets as babilong_1m
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_RESERVE_TOKENS
    from opencompass_longctx.configs.datasets.longbio.longbio_2k_gen import longbio_datasets as longbio_2k
    from opencompass_longctx.configs.datasets.longbio.longbio_8k_gen import longbio_datasets as longbio_8k
    from opencompass_longctx.configs.datasets.longbio.longbio_32k_gen import longbio_datasets as longbio_32k
    from opencompass_longctx.configs.datasets.longbio.longbio_64k_gen import longbio_datasets as longbio_64k
    from opencompass_longctx.configs.datasets.longbio.longbio_128k_gen import longbio_datasets as longbio_128k
    from opencompass_longctx.configs.datasets.longbio.longbio_1m_gen import longbio_datasets as longbio_1m
    from opencompass_longctx.configs.datasets.nolima.nolima_250_gen import nolima_datasets as nolima_250
    from opencompass_longctx.configs.datasets.nolima.nolima_500_gen import nolima_datasets as nolima_500
    from opencompass_longctx.configs.datasets.nolima.nolima_1k_gen import nolima_datasets as nolima_1k
    from opencompass_longctx.configs.datasets.nolima.nolima_2k_gen import nolima_datasets as nolima_2k
    from opencompass_longctx.configs.datasets.nolima.nolima_4k_gen import nolima_datasets as nolima_4k
    from opencompass_longctx.configs.datasets.nolima.nolima_8k_gen import nolima_datasets as nolima_8k
    from opencompass_longctx.configs.datasets.nolima.nolima_16k_gen import nolima_datasets as nolima_16k
    from opencompass_longctx.configs.datasets.nolima.nolima_32k_gen import nolima_datasets as nolima_32k
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
# The models to compare (abbrs from opencompass_longctx/tables/lmdeploy_models.py): the open long-context
# models compared today, one of each architecture the planner sizes differently, and the dense reference all three
# benchmarks' papers report: Qwen3-30B-A3B-Instruct-2507 (MoE, 256k native), Qwen3-Next-80B-A3B-Instruct (Gated
# DeltaNet hybrid, 256k), gpt-oss-20b (MoE + 128-token sliding layers; a reasoning model: NoLiMa's reasoning
# budget, the named longctx-reasoning mode elsewhere), Gemma-3-27B-it (5:1 sliding/global, 128k) and
# Llama-3.1-8B-Instruct (dense GQA, 128k). The 2024 1M rows stay in the table as references.
RUN_MODELS = ['qwen3-30b-a3b-instruct-2507', 'qwen3-next-80b-a3b-instruct', 'gpt-oss-20b', 'gemma-3-27b-it',
              'llama-3.1-8b-instruct']
models = [m for m in lmdeploy_longctx_models if m['abbr'] in RUN_MODELS]

# LongBioBench fills the whole prompt to the tier: reserve_tokens keeps room for the chat template and the answer.
# Above 128k (beyond the paper) 100 samples per cell, as BABILong publishes 100 per task at its long tiers.
longbio = [dict(d, reserve_tokens=LONGBIO_RESERVE_TOKENS,
                **({'num_samples': 100} if TIERS[d['tier']] > 128000 else {}))
           for d in [*longbio_2k, *longbio_8k, *longbio_32k, *longbio_64k, *longbio_128k, *longbio_1m]]
datasets = [*babilong_0k, *babilong_4k, *babilong_16k, *babilong_32k, *babilong_64k, *babilong_128k,
            *babilong_256k, *babilong_512k, *babilong_1m, *longbio,
            *[dict(d, tokenizer='model') for d in [*nolima_250, *nolima_500, *nolima_1k, *nolima_2k, *nolima_4k,
                                                   *nolima_8k, *nolima_16k, *nolima_32k]]]

summarizer = dict(summarizer, dataset_abbrs=[f'babilong_qa1-qa{last}_{tier}' for tier in TIERS for last in (5, 10)]
                  + [f'longbio_mean_{tier}' for tier in TIERS])
# One inference task per model and tier band (up to 32k, 64k-128k, 256k-1m): each model's engine starts at most
# three times, sized for the band (session_len, and max_batch_size from the KV-cache arithmetic on the declared
# GPU). The plan, with its GPU-hours, is printed and written to <work_dir>/plan/ (also by --dry-run).
# Parallel engines: shards=2 (or {'<model abbr>': 2}); another GPU: cost_model=dict(gpu='H100-80GB').
# Multi-node: replace LocalRunner with OpenCompass's SlurmRunner (README).
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=8, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=LongCtxEvalPartitioner, n=100),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxEvalTask)))
work_dir = 'outputs/longctx'
