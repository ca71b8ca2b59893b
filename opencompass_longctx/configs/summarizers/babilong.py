# BABILong's summary groups at every shipped tier, derived from its spec as every run's groups are
# (opencompass_longctx/summarizers/groups.py): babilong_qa1-qa5_<tier> (the paper's and leaderboard's headline)
# and babilong_qa1-qa10_<tier>, each the plain mean of the task accuracies. `summarizer` is the long-context one.
# (An import in a config is lazy, built when the run needs it; __import__ runs the groups function now.)
from opencompass_longctx.summarizers.longctx import LongCtxSummarizer

babilong_summary_groups = __import__('opencompass_longctx.summarizers.groups', fromlist=['shipped_groups']) \
    .shipped_groups('babilong')
summarizer = dict(type=LongCtxSummarizer)
