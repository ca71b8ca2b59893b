# LongBioBench at one tier. To add a tier, copy this file (here or into your own workspace) and change TIER.
# The tier keeps the cells whose needles fit it (LONGBIO_NEED_TOKENS, opencompass_longctx/longbio/catalogue.py).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.datasets.longbio.longbio_base import (LONGBIO_BASE, LONGBIO_NEED_TOKENS,
                                                                           LONGBIO_STRICT_BASE, LONGBIO_TIER_UNITS)

TIER = '32k'
# The tier in tokens (1k = 1024), with builtins only (configs are plain data). 0k holds the needles only, so every
# cell; a malformed TIER keeps every cell and their loaders say what is wrong with it.
TIER_NUMBER = TIER.strip().lower().rstrip('km')
TIER_TOKENS = (float(TIER_NUMBER) * LONGBIO_TIER_UNITS.get(TIER.strip().lower()[-1:], 1)
               if TIER_NUMBER.replace('.', '', 1).isdigit() else 0)
TIER_CELLS = [cell for cell, need in LONGBIO_NEED_TOKENS.items() if not TIER_TOKENS or need <= TIER_TOKENS]
longbio_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in LONGBIO_BASE if d['cell'] in TIER_CELLS]
longbio_strict_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in LONGBIO_STRICT_BASE
                           if d['cell'] in TIER_CELLS]
