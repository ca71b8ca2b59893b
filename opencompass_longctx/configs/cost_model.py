# Kept for existing configs: the cost model lives in opencompass_longctx/tables/cost_model.py (pure data).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.cost_model import COST_MODEL, CUDA_NOT_FREE_GIB, GPUS  # noqa: F401
