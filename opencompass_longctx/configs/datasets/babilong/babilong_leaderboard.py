# BABILong's part of the leaderboard example (examples/eval_longctx.py takes every benchmark's <name>_leaderboard.py:
# opencompass_longctx.spec.example): its tiers, and the summary rows shown first (the leaderboard's qa1-qa5 and
# qa1-qa10 means at every tier).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.tier_table import TIERS
    from .babilong_0k_gen import babilong_datasets as babilong_0k
    from .babilong_4k_gen import babilong_datasets as babilong_4k
    from .babilong_16k_gen import babilong_datasets as babilong_16k
    from .babilong_32k_gen import babilong_datasets as babilong_32k
    from .babilong_64k_gen import babilong_datasets as babilong_64k
    from .babilong_128k_gen import babilong_datasets as babilong_128k
    from .babilong_256k_gen import babilong_datasets as babilong_256k
    from .babilong_512k_gen import babilong_datasets as babilong_512k
    from .babilong_1m_gen import babilong_datasets as babilong_1m

datasets = [*babilong_0k, *babilong_4k, *babilong_16k, *babilong_32k, *babilong_64k, *babilong_128k,
            *babilong_256k, *babilong_512k, *babilong_1m]
dataset_abbrs = [f'babilong_qa1-qa{last}_{tier}' for tier in TIERS for last in (5, 10)]
