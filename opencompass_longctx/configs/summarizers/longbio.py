# LongBioBench summary groups per tier (children before parents: OpenCompass computes groups in list order).
#   longbio_<category>_<tier>  mean accuracy of the category's cells that the tier holds (Understanding 6,
#                              Reasoning 6, Trustworthiness 3; a small tier leaves out the cells whose needles do
#                              not fit it, as its tier config does: LONGBIO_NEED_TOKENS in
#                              opencompass_longctx/longbio/catalogue.py)
#   longbio_<tier>             mean of the three categories (the authors' README "avg")
# The same with the prefix longbio_strict_ for the strict-mode datasets. Subsets name their metric, so a
# group is the plain mean. Citation counts with its headline sub-metric (compat: citation accuracy, strict:
# answer and citation both right) and IDK with "both" (answered when answerable and refused when not).
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.tier_table import STANDARD_TIERS
    from opencompass_longctx.longbio.catalogue import (LONGBIO_CATEGORIES, LONGBIO_CELLS, LONGBIO_NEED_TOKENS,
                                                       LONGBIO_TIER_UNITS)

# The cells each standard tier holds, computed as the tier configs compute it (1k = 1024 tokens; 0k: all).
LONGBIO_TIER_CELLS = {
    tier: [c['cell'] for c in LONGBIO_CELLS if not tokens or LONGBIO_NEED_TOKENS[c['cell']] <= tokens]
    for tier in STANDARD_TIERS for tokens in [float(tier[:-1]) * LONGBIO_TIER_UNITS[tier[-1]]]
}
longbio_summary_groups = [
    dict(name=f'{prefix}{cat}_{tier}',
         subsets=[(f"{prefix}{c['cell']}_{tier}", 'accuracy') for c in LONGBIO_CELLS
                  if c['category'] == cat and c['cell'] in LONGBIO_TIER_CELLS[tier]])
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
