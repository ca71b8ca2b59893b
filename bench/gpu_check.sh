#!/usr/bin/env bash
# The GPU check on a GPU machine without network, from the repository root, with the wheelhouse carried: one way to
# run the package's own command, longctx-gpu-check (opencompass_longctx/gpucheck; with network: make gpu-install,
# then make gpu-check).
#   python bench/build_gpu_wheelhouse.py        # here, once: bench/gpu_wheelhouse/ (gitignored)
#   bash bench/gpu_check.sh                     # on the GPU machine (carry: bench/gpu_wheelhouse): ~8 min on an H200
#   PYTHON=<python 3.12 without CUDA> bash bench/gpu_check.sh --rehearse    # here: up to the first CUDA call
# Checks the Python first (the wheelhouse is cp312 only: the package's check, run from the checkout before anything
# is installed), installs the wheelhouse (--no-deps --no-index, into a separate directory: the machine's own
# packages are left as they are) and this checkout, then runs the check inside one 600 s device call (stage limits
# below: the bench engine serves the prefix-cache stage too; the tp > 1 stage is not run on one GPU, and the
# wheelhouse has no Ray, which the PyTorch engine needs for it); the report is $OUT/gpu_check.{json,md,jsonl}
# (outputs/gpu_check without $OUT). Other arguments go to longctx-gpu-check (--help).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
HOUSE=${LONGCTX_WHEELHOUSE:-bench/gpu_wheelhouse}
SITE=${LONGCTX_GPU_SITE:-/tmp/longctx_gpu_site}
export OUT=${OUT:-outputs/gpu_check}
mkdir -p "$OUT"
t0=$(date +%s)
export LONGCTX_GPU_T0=$t0   # the check keeps every stage inside the call's 600 s from here
"$PY" -m opencompass_longctx.gpucheck --python 3.12 --python-only --out "$OUT" || exit 4
if ! ls "$HOUSE"/*.whl >/dev/null 2>&1; then
  echo "no wheels in $HOUSE: run python bench/build_gpu_wheelhouse.py here first and carry $HOUSE" >&2
  exit 2
fi
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
# one 600 s device call: the stage limits the call allows (each is also cut to the call's time left)
exec "$PY" -u -m opencompass_longctx.gpucheck --out "$OUT" --python 3.12 --call-seconds 600 \
  --limits python=10,stack=30,model=90,data=40,opencompass=330,bench=110,prefix=45,tp=5 "$@"
