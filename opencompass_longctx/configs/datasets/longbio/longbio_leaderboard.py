# LongBioBench's part of the leaderboard example (examples/eval_longctx.py takes every benchmark's
# <name>_leaderboard.py: opencompass_longctx.spec.example): its tiers, and the summary rows shown first (the mean
# over the categories at every tier).
# LongBioBench fills the whole prompt to the tier: reserve_tokens keeps room for the chat template and the answer.
# Above 128k (beyond the paper) 100 samples per cell, as BABILong publishes 100 per task at its long tiers.
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.tier_table import TIERS
    from .longbio_base import LONGBIO_RESERVE_TOKENS
    from .longbio_2k_gen import longbio_datasets as longbio_2k
    from .longbio_8k_gen import longbio_datasets as longbio_8k
    from .longbio_32k_gen import longbio_datasets as longbio_32k
    from .longbio_64k_gen import longbio_datasets as longbio_64k
    from .longbio_128k_gen import longbio_datasets as longbio_128k
    from .longbio_1m_gen import longbio_datasets as longbio_1m

datasets = [dict(d, reserve_tokens=LONGBIO_RESERVE_TOKENS, **({'num_samples': 100} if TIERS[d['tier']] > 128000 else {}))
            for d in [*longbio_2k, *longbio_8k, *longbio_32k, *longbio_64k, *longbio_128k, *longbio_1m]]
dataset_abbrs = [f'longbio_mean_{tier}' for tier in TIERS]
