# NoLiMa summary. NoLiMaSummarizer adds, from the datasets actually run, groups per variant
# (nolima_<variant>_avg: mean over the tiers >= 1k) and per tier (nolima_<tier>_variants: mean over the
# variants), and the rows nolima_<variant>_base_score / _threshold / _effective_length (K tokens; 0 = "<1K"),
# plus a report summary/nolima_<time>.{json,md} with acc(L), base score, threshold and effective length.
#
# nolima_summary_groups: the same groups written out for the main set at every standard tier, for configs that
# combine benchmarks under another summarizer (a group whose members were not all run shows '-').
from mmengine.config import read_base

from opencompass_longctx.nolima.summarizer import NoLiMaSummarizer
with read_base():
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_VARIANTS
NOLIMA_TIERS = ['250', '500', '1k', '2k', '4k', '8k', '16k', '32k', '64k', '128k']
NOLIMA_PAPER_TIERS = ['1k', '2k', '4k', '8k', '16k', '32k']

nolima_summary_groups = (
    [dict(name=f'nolima_{v}_avg', subsets=[(f'nolima_{v}_{t}', 'accuracy') for t in NOLIMA_PAPER_TIERS])
     for v in NOLIMA_VARIANTS]
    + [dict(name=f'nolima_{t}_variants', subsets=[(f'nolima_{v}_{t}', 'accuracy') for v in NOLIMA_VARIANTS])
       for t in NOLIMA_TIERS]
)

summarizer = dict(type=NoLiMaSummarizer)
