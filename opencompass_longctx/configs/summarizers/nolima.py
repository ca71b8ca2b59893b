# NoLiMa's summary groups at every shipped tier, derived from its spec as every run's groups are
# (opencompass_longctx/summarizers/groups.py): nolima_<variant>_avg (mean over the tiers of 1k and above) and
# nolima_<tier>_variants (mean over the variants), for configs that combine benchmarks under another summarizer
# (a group whose members were not all run shows '-'). `summarizer` is the long-context one: from the datasets
# run it derives these groups and adds NoLiMa's own figures (opencompass_longctx/nolima/summary.py): the rows
# nolima_<variant>_base_score / _threshold / _effective_length (K tokens; 0 = "<1K") and the report
# summary/nolima_<time>.{json,md} (acc(L), base score, threshold, effective length, splits).
# (An import in a config is lazy, built when the run needs it; __import__ runs the groups function now.)
from opencompass_longctx.summarizers.longctx import LongCtxSummarizer

nolima_summary_groups = __import__('opencompass_longctx.summarizers.groups', fromlist=['shipped_groups']) \
    .shipped_groups('nolima')
summarizer = dict(type=LongCtxSummarizer)
