# NoLiMa at one tier (haystack of L tokens, 1k = 1000). To add a tier, copy this file and change TIER.
# nolima_datasets: the main set; nolima_all_variants: main, hard, cot, mc, direct and distractor.
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_ALL_VARIANTS, NOLIMA_BASE
TIER = '64k'
nolima_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in NOLIMA_BASE]
nolima_all_variants = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in NOLIMA_ALL_VARIANTS]
