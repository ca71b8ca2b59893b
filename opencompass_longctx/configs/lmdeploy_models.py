# The model table at the configs/ path, for configs that read_base() it; the data is opencompass_longctx/tables/lmdeploy_models.py.
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS  # noqa: F401
