# Kept for existing configs: the tier table lives in opencompass_longctx/tables/tier_table.py (pure data).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.tier_table import STANDARD_TIERS, TIER_BANDS, TIERS  # noqa: F401
