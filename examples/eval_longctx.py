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
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
# Every benchmark's part of this example: the datasets and the summary rows of its config folder's
# <benchmark>_leaderboard.py (configs/datasets/babilong/babilong_leaderboard.py, ...: its tiers and options), in the
# benchmarks' order. An import in a config is lazy, built when the run needs it; __import__ runs it now.
LEADERBOARD = __import__('opencompass_longctx.spec', fromlist=['example']).example('leaderboard')
# The models to compare (abbrs from opencompass_longctx/tables/lmdeploy_models.py): the open long-context
# models compared today, one of each architecture the planner sizes differently, and the dense reference all three
# benchmarks' papers report: Qwen3-30B-A3B-Instruct-2507 (MoE, 256k native), Qwen3-Next-80B-A3B-Instruct (Gated
# DeltaNet hybrid, 256k), gpt-oss-20b (MoE + 128-token sliding layers; a reasoning model: NoLiMa's reasoning
# budget, the named longctx-reasoning mode elsewhere), Gemma-3-27B-it (5:1 sliding/global, 128k) and
# Llama-3.1-8B-Instruct (dense GQA, 128k). The 2024 1M rows stay in the table as references.
RUN_MODELS = ['qwen3-30b-a3b-instruct-2507', 'qwen3-next-80b-a3b-instruct', 'gpt-oss-20b', 'gemma-3-27b-it',
              'llama-3.1-8b-instruct']
models = [m for m in lmdeploy_longctx_models if m['abbr'] in RUN_MODELS]

datasets = LEADERBOARD['datasets']
summarizer = dict(summarizer, dataset_abbrs=LEADERBOARD['dataset_abbrs'])
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
