# Test config: examples/eval_longctx.py as it was before the per-model logic moved into the package
# (opencompass_longctx.combinations): each model's largest tier, NoLiMa copied per model tokenizer and the
# LongBioBench cells that fit, all worked out by hand here. tests/test_example_plan.py checks that the example
# plans the same run.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    from opencompass_longctx.tables.tier_table import TIERS
    from opencompass_longctx.longbio.catalogue import LONGBIO_NEED_TOKENS
    from opencompass_longctx.configs.datasets.babilong.babilong_0k_gen import babilong_datasets as babilong_0k
    from opencompass_longctx.configs.datasets.babilong.babilong_4k_gen import babilong_datasets as babilong_4k
    from opencompass_longctx.configs.datasets.babilong.babilong_16k_gen import babilong_datasets as babilong_16k
    from opencompass_longctx.configs.datasets.babilong.babilong_32k_gen import babilong_datasets as babilong_32k
    from opencompass_longctx.configs.datasets.babilong.babilong_64k_gen import babilong_datasets as babilong_64k
    from opencompass_longctx.configs.datasets.babilong.babilong_128k_gen import babilong_datasets as babilong_128k
    from opencompass_longctx.configs.datasets.babilong.babilong_256k_gen import babilong_datasets as babilong_256k
    from opencompass_longctx.configs.datasets.babilong.babilong_512k_gen import babilong_datasets as babilong_512k
    from opencompass_longctx.configs.datasets.babilong.babilong_1m_gen import babilong_datasets as babilong_1m
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
# The models to compare (abbrs from opencompass_longctx/tables/lmdeploy_models.py).
RUN_MODELS = ['qwen3-30b-a3b-instruct-2507', 'qwen3-next-80b-a3b-instruct', 'gpt-oss-20b', 'gemma-3-27b-it',
              'llama-3.1-8b-instruct']

models = [m for m in lmdeploy_longctx_models if m['abbr'] in RUN_MODELS]
MAX_TIER = {m['abbr']: TIERS[m['max_tier']] for m in LONGCTX_LMDEPLOY_MODELS}
SIZE = dict(TIERS, **{'250': 250, '500': 500})  # NoLiMa's short lengths
babilong = [*babilong_0k, *babilong_4k, *babilong_16k, *babilong_32k, *babilong_64k, *babilong_128k,
            *babilong_256k, *babilong_512k, *babilong_1m]
# LongBioBench fills the whole prompt to the tier (1k = 1024 tokens of its data tokenizer, the authors' Qwen2.5
# vocabulary): reserve_tokens keeps room for the chat template and the answer, and a cell whose needles then no
# longer fit the tier is left out (multihop_5 at 2k). Above 128k (beyond the paper) 100 samples per cell, as
# BABILong publishes 100 per task at its long tiers.
LONGBIO_RESERVE = 512
longbio = [dict(d, reserve_tokens=LONGBIO_RESERVE, **({'num_samples': 100} if TIERS[d['tier']] > 128000 else {}))
           for d in [*longbio_2k, *longbio_8k, *longbio_32k, *longbio_64k, *longbio_128k, *longbio_1m]
           if LONGBIO_NEED_TOKENS[d['cell']] + LONGBIO_RESERVE <= TIERS[d['tier']] * 1024 // 1000]
# NoLiMa counts L in the evaluated model's own tokenizer: one copy of each dataset per model.
nolima = [dict(d, tokenizer=m['path'], abbr=f"{d['abbr']}@{m['abbr']}") for m in models
          for d in [*nolima_250, *nolima_500, *nolima_1k, *nolima_2k, *nolima_4k, *nolima_8k, *nolima_16k, *nolima_32k]]
datasets = [*babilong, *longbio, *nolima]
# each model only gets the tiers up to its own largest one (prompts that still do not fit are skipped and
# reported as N/A by the over-length policy, never truncated), and NoLiMa in its own tokenizer
# a model that thinks (gpt-oss) gets larger decoding budgets: NoLiMa the paper's 1536 tokens, BABILong and
# LongBioBench their own budget + 1536 (the longctx-reasoning mode)
# (mode, k, extra): max_out_len = k * the benchmark's own + extra (data, not lambdas: OpenCompass dumps the config)
THINK = {'nolima': ('nolima-reasoning', 0, 1536), 'other': ('longctx-reasoning', 1, 1536)}
# a LongBioBench prompt + the chat template (128 tokens allowed) + the answer must fit the model's window
# (max_seq_len): where the tier's budget does not, the prompts are built to the window (max_prompt_tokens), as the
# authors size theirs to the model (1k = 1024 tokens, 1m = 1024 x 1024)
CHAT_TEMPLATE = 128
LONGBIO_TIER_TOKENS = {'2k': 2048, '8k': 8192, '32k': 32768, '64k': 65536, '128k': 131072, '1m': 1048576}
model_dataset_combinations = [
    dict(models=[m], datasets=[
        dict(t, max_prompt_tokens=room) if t['abbr'].startswith('longbio_')
        and LONGBIO_TIER_TOKENS[t['tier']] - LONGBIO_RESERVE > room else t
        for d in [d for d in [*babilong, *longbio] if SIZE[d['tier']] <= MAX_TIER[m['abbr']]]
        + [d for d in nolima if d['tokenizer'] == m['path'] and SIZE[d['tier']] <= MAX_TIER[m['abbr']]]
        for kind in ['nolima' if d['abbr'].startswith('nolima_') else 'other']
        for t in [d if not m['thinks'] else dict(d, infer_cfg=dict(
            d['infer_cfg'], decoding_mode=THINK[kind][0],
            inferencer=dict(d['infer_cfg']['inferencer'],
                            max_out_len=THINK[kind][1] * d['infer_cfg']['inferencer']['max_out_len']
                            + THINK[kind][2])))]
        for room in [m['max_seq_len'] - CHAT_TEMPLATE - t['infer_cfg']['inferencer']['max_out_len']]])
    for m in models]

summarizer = dict(summarizer, dataset_abbrs=[f'babilong_qa1-qa{last}_{tier}' for tier in TIERS for last in (5, 10)]
                  + [f'longbio_mean_{tier}' for tier in TIERS])
# One inference task per model and tier band (up to 32k, 64k-128k, 256k-1m): each model's engine starts at most
# three times, sized for the band (session_len, and max_batch_size from the KV-cache arithmetic on the declared
# GPU). The plan, with its GPU-hours, is printed and written to <work_dir>/plan/ (also by --dry-run).
# Parallel engines: shards=2 (or {'<model abbr>': 2}); another GPU: cost_model=dict(gpu='H100-80GB').
# Multi-node: replace LocalRunner with OpenCompass's SlurmRunner (README).
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=8, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=100),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=LongCtxEvalTask)))
work_dir = 'outputs/longctx'
