# BABILong at one tier. To add a tier, copy this file and change TIER (and the file name).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
TIER = '1k'
babilong_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in BABILONG_BASE]
