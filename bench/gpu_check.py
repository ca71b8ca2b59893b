"""The GPU check from a checkout: the package's own command, ``longctx-gpu-check``
(:mod:`opencompass_longctx.gpucheck`), which ``bench/gpu_check.sh`` runs after installing the carried wheelhouse.

    python bench/gpu_check.py --help        # = longctx-gpu-check --help
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from opencompass_longctx.gpucheck.cli import main  # noqa: E402

if __name__ == '__main__':
    sys.exit(main())
