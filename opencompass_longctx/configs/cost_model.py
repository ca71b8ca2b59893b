# The cost model at the configs/ path, for configs that read_base() it; the data is opencompass_longctx/tables/cost_model.py.
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.cost_model import COST_MODEL, CUDA_NOT_FREE_GIB, GPUS  # noqa: F401
