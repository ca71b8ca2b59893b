# LongBioBench's summary groups at every shipped tier, derived from its spec as every run's groups are
# (opencompass_longctx/summarizers/groups.py), children before parents:
#   longbio_<category>_<tier>  mean accuracy of the category's cells that the tier config holds
#   longbio_mean_<tier>        mean of the three categories (the authors' README "avg")
# and the same with the prefix longbio_strict_ for the strict-mode datasets. `summarizer` is the long-context one.
# (An import in a config is lazy, built when the run needs it; __import__ runs the groups function now.)
from opencompass_longctx.summarizers.longctx import LongCtxSummarizer

longbio_summary_groups = __import__('opencompass_longctx.summarizers.groups', fromlist=['shipped_groups']) \
    .shipped_groups('longbio')
summarizer = dict(type=LongCtxSummarizer)
