# LongBioBench at one tier. To add a tier, copy this file (here or into your own workspace) and change TIER.
# The tier keeps the cells whose needles fit it (LONGBIO_NEED_TOKENS, opencompass_longctx/longbio/catalogue.py).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE, LONGBIO_STRICT_BASE

TIER = '4k'
# The cells whose needles fit the tier (opencompass_longctx.longbio.cells.tier_cells: every cell at 0k, which holds
# the needles only, and at a malformed TIER, whose loaders then say what is wrong with it). An import in a config
# is lazy, built when the run needs it; __import__ runs it now.
TIER_CELLS = __import__('opencompass_longctx.longbio.cells', fromlist=['tier_cells']).tier_cells(TIER)
longbio_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in LONGBIO_BASE if d['cell'] in TIER_CELLS]
longbio_strict_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in LONGBIO_STRICT_BASE
                           if d['cell'] in TIER_CELLS]
