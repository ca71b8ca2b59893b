# Test config: report_run_abbr.py (a model abbr with a slash, a leading dot, a space, unicode and '..') with the
# summarizer's plots on: the depth plot's file name is made from the abbr (tests/test_report_page.py).
from mmengine.config import read_base

with read_base():
    from .report_run_abbr import datasets, eval, infer, models, summarizer as _summarizer

summarizer = dict(_summarizer, plots=True)
