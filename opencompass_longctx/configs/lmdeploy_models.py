# Kept for existing configs: the model table lives in opencompass_longctx/tables/lmdeploy_models.py (pure data).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS  # noqa: F401
