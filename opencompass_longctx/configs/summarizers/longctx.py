# The long-context summarizer: OpenCompass's summary plus one tier table across benchmarks (markdown, CSV,
# JSON and plots under <work_dir>/summary/). Its groups come from the run's dataset abbrs, so a copied tier
# config appears as a new column with no edit here. Options: ruler_threshold (85.6), nolima_ratio (0.85),
# model_aliases={'babilong': {'<model abbr>': '<published name>'}}, plots (True), fail_on_missing (False; or
# LONGCTX_FAIL_ON_MISSING=1: exit status 1 when a dataset failed or has no result).
from opencompass_longctx.summarizers.longctx import LongCtxSummarizer
summarizer = dict(type=LongCtxSummarizer)
