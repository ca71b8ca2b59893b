# LongBioBench summary groups per tier (children before parents: OpenCompass computes groups in list order).
#   longbio_<category>_<tier>  mean accuracy of the category's cells (Understanding 6, Reasoning 6,
#                              Trustworthiness 3; at 1k and 2k the cells that do not fit are left out, see
#                              LONGBIO_TOO_SMALL in opencompass_longctx/longbio/catalogue.py)
#   longbio_<tier>             mean of the three categories (the authors' README "avg")
# The same with the prefix longbio_strict_ for the strict-mode datasets. Subsets name their metric, so a
# group is the plain mean. Citation counts with its headline sub-metric (compat: citation accuracy, strict:
# answer and citation both right) and IDK with "both" (answered when answerable and refused when not).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.tier_table import STANDARD_TIERS
    from opencompass_longctx.longbio.catalogue import LONGBIO_CATEGORIES, LONGBIO_CELLS, LONGBIO_TOO_SMALL

longbio_summary_groups = [
    dict(name=f'{prefix}{cat}_{tier}',
         subsets=[(f"{prefix}{c['cell']}_{tier}", 'accuracy') for c in LONGBIO_CELLS
                  if c['category'] == cat and c['cell'] not in LONGBIO_TOO_SMALL.get(tier, [])])
    for prefix in ('longbio_', 'longbio_strict_') for tier in STANDARD_TIERS for cat in LONGBIO_CATEGORIES
] + [
    dict(name=f'{prefix}{tier}', subsets=[(f'{prefix}{cat}_{tier}', 'naive_average') for cat in LONGBIO_CATEGORIES])
    for prefix in ('longbio_', 'longbio_strict_') for tier in STANDARD_TIERS
]

summarizer = dict(
    dataset_abbrs=[f'{prefix}{name}' for tier in STANDARD_TIERS for prefix in ('longbio_',)
                   for name in [tier] + [f'{cat}_{tier}' for cat in LONGBIO_CATEGORIES]],
    summary_groups=longbio_summary_groups,
)
