# Settings of examples/eval_longctx_cpu.py that come from the environment (a top-level config cannot import os:
# OpenCompass dumps every top-level name, and a module object cannot be dumped).
import os

TIERS = os.environ.get('LONGCTX_CPU_TIERS', '0k,1k,2k,4k,8k,16k').split(',')
SAMPLES = int(os.environ.get('LONGCTX_CPU_SAMPLES', '2'))
