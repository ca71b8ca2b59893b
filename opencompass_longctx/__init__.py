"""opencompass-longctx: long-context benchmarks per context tier for OpenCompass.

Importing the package is cheap; OpenCompass is imported only by the dataset, evaluator and summarizer
modules that OpenCompass itself loads.
"""
__version__ = '0.1.0'

from opencompass_longctx.run.cluster import warn_if_slurm_flag
warn_if_slurm_flag()   # `opencompass --slurm` drops LongCtxPartitioner and its plan: say so (cheap: reads sys.argv)
