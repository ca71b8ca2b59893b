import sys

from opencompass_longctx.gpucheck.cli import main
if __name__ == '__main__':      # not when multiprocessing's spawn re-imports it as __mp_main__ (environment.in_child)
    sys.exit(main())
