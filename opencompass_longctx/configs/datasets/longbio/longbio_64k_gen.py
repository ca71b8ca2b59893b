# LongBioBench at one tier. To add a tier, copy this file and change TIER (and the file name).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE, LONGBIO_STRICT_BASE, LONGBIO_TOO_SMALL

TIER = '64k'
longbio_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}")
                    for d in LONGBIO_BASE if d['cell'] not in LONGBIO_TOO_SMALL.get(TIER, [])]
longbio_strict_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}")
                           for d in LONGBIO_STRICT_BASE if d['cell'] not in LONGBIO_TOO_SMALL.get(TIER, [])]
