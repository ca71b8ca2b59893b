# Test config: report_run.py's rule-reader run under a model abbr with a slash (OpenCompass nests
# results/org/...), a leading dot, a space, a non-ASCII letter and '..' inside a name. Plots off: the depth plot's
# file name is another part's (writers/plots.py); this run proves the results, the table and the merge.
from mmengine.config import read_base

with read_base():
    from ._env_abbr import ABBR
    from .report_run import datasets as _datasets, eval, infer, models as _models, summarizer as _summarizer

models = [dict(m, abbr=ABBR) for m in _models]
datasets = [dict(d, abbr=d['abbr'].replace('@rule-reader', '@' + ABBR)) for d in _datasets]
summarizer = dict(_summarizer, plots=False)
