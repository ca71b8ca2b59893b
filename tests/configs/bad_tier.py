# Test config: a tier string that is not a tier.
from mmengine.config import read_base

with read_base():
    from ...configs.datasets.babilong.babilong_base import BABILONG_BASE
    from ...configs.models.longctx_tiny_chat import models

datasets = [dict(BABILONG_BASE[0], tier='12q', abbr='babilong_qa1_12q')]
