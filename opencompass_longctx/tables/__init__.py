"""Pure-data tables of the package: the context tiers and tier bands (``tier_table``), the cost model
(``cost_model``) and the LMDeploy model table (``lmdeploy_models``).

Each module holds plain Python data and imports nothing, so it sits on the ground floor: the package imports
these tables, and configs ``read_base()`` them (``from opencompass_longctx.tables.tier_table import TIERS``).
``opencompass_longctx/configs/{tier_table,cost_model,lmdeploy_models}.py`` re-export them at the configs/ paths, for configs that ``read_base()`` them.
"""
