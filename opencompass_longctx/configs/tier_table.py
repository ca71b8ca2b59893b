# The tier table at the configs/ path, for configs that read_base() it; the data is opencompass_longctx/tables/tier_table.py.
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.tier_table import STANDARD_TIERS, TIER_BANDS, TIERS  # noqa: F401
