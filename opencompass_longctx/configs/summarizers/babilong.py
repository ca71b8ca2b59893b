# BABILong summary groups per tier (children before parents, as OpenCompass computes them in order).
# Subsets name their metric ('accuracy') so the group is the plain mean of the task accuracies.
#   babilong_qa1-qa5_<tier>  the paper's and leaderboard's headline (mean over qa1-qa5)
#   babilong_qa1-qa10_<tier> the mean over qa1-qa10 (OpenCompass's older BABILong group)
from mmengine.config import read_base

with read_base():
    from opencompass_longctx.tables.tier_table import STANDARD_TIERS
babilong_summary_groups = [
    dict(name=f'babilong_qa1-qa{last}_{tier}', subsets=[(f'babilong_qa{i}_{tier}', 'accuracy') for i in range(1, last + 1)])
    for tier in STANDARD_TIERS for last in (5, 10)
]

summarizer = dict(
    dataset_abbrs=[f'babilong_qa1-qa{last}_{tier}' for tier in STANDARD_TIERS for last in (5, 10)],
    summary_groups=babilong_summary_groups,
)
