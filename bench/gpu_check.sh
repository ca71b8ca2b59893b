#!/usr/bin/env bash
# The GPU check, one command on the device machine, from the repository root, with the wheelhouse carried:
#   python bench/build_gpu_wheelhouse.py        # here, once: bench/gpu_wheelhouse/ (gitignored)
#   bash bench/gpu_check.sh                     # on the GPU machine (carry: bench/gpu_wheelhouse): ~8 min on an H200
#   PYTHON=<python 3.12 without CUDA> bash bench/gpu_check.sh --rehearse    # here: up to the first CUDA call
# Installs the wheelhouse (--no-deps --no-index, into a separate directory: the machine's own packages are left
# as they are) and this checkout, then runs bench/gpu_check.py; the report is $OUT/gpu_check.{json,md}
# (outputs/gpu_check without $OUT). Other arguments go to bench/gpu_check.py (--help).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
HOUSE=${LONGCTX_WHEELHOUSE:-bench/gpu_wheelhouse}
SITE=${LONGCTX_GPU_SITE:-/tmp/longctx_gpu_site}
export OUT=${OUT:-outputs/gpu_check}
mkdir -p "$OUT"
if ! ls "$HOUSE"/*.whl >/dev/null 2>&1; then
  echo "no wheels in $HOUSE: run python bench/build_gpu_wheelhouse.py here first and carry $HOUSE" >&2
  exit 2
fi
t0=$(date +%s)
export LONGCTX_GPU_T0=$t0   # bench/gpu_check.py keeps every stage inside the call's 600 s from here
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$HOUSE"/*.whl \
  || { echo "installing the wheelhouse failed" >&2; exit 3; }
# this checkout, as it is now (not a wheel built earlier): OpenCompass's task subprocesses import it from $SITE
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --upgrade \
  --target "$SITE" . || { echo "installing this checkout failed" >&2; exit 3; }
echo "[gpu_check] installed in $(( $(date +%s) - t0 )) s into $SITE" | tee "$OUT/install.log"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$SITE/bin:$PATH"
export TIKTOKEN_CACHE_DIR="$PWD/$HOUSE/tiktoken"   # the OpenAI vocabulary files (GPT-2 for BABILong's tiers)
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
exec "$PY" -u bench/gpu_check.py --out "$OUT" "$@"
