import csv
import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Offline before anything imports huggingface_hub (it reads these once, at import): no test may wait on the hub.
os.environ['HF_HUB_OFFLINE'] = '1'
os.environ['HF_DATASETS_OFFLINE'] = '1'

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / 'shared'
# LMDeploy's config classes, unpacked beside the environment (README: `pip install --no-deps --target .lmdeploy
# lmdeploy==0.18.0 pybase64 openai-harmony==0.0.8`): importable by the tests and their opencompass subprocesses,
# not installed into the environment (LMDeploy cannot serve without CUDA, and its CUDA requirements would break `pip check`).
LMDEPLOY_DIR = REPO / '.lmdeploy'
if LMDEPLOY_DIR.is_dir():
    sys.path.append(str(LMDEPLOY_DIR))
    os.environ['PYTHONPATH'] = os.pathsep.join(p for p in (os.environ.get('PYTHONPATH'), str(LMDEPLOY_DIR)) if p)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """Every test gets its own dataset cache and no data roots from the machine; no network."""
    monkeypatch.setenv('LONGCTX_CACHE_DIR', str(tmp_path / 'longctx_cache'))
    monkeypatch.delenv('COMPASS_DATA_CACHE', raising=False)
    monkeypatch.delenv('BABILONG_DATA', raising=False)
    monkeypatch.delenv('LONGCTX_DOWNLOAD', raising=False)
    monkeypatch.delenv('BABI_DIR', raising=False)
    monkeypatch.delenv('PG19_DIR', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    monkeypatch.setenv('HF_DATASETS_OFFLINE', '1')
    monkeypatch.setenv('LONGCTX_PROGRESS', '0')


@pytest.fixture(scope='session')
def tiny_model_dir(tmp_path_factory):
    from opencompass_longctx.demo.tiny_model import build
    return build(str(tmp_path_factory.mktemp('models') / 'tiny-chat'))


@pytest.fixture
def demo_babilong(tmp_path):
    """BABILong-format files the project writes itself (qa1-qa10 at 0k and 1k, 5 samples each)."""
    from opencompass_longctx.demo import babilong_data
    root = tmp_path / 'babilong'
    babilong_data.write(str(root), tiers=('0k', '1k'), samples=5)
    return root


@pytest.fixture
def babi_inputs(tmp_path):
    """Generator inputs the project writes itself: bAbI-format test files and plain-text books."""
    from opencompass_longctx.demo import babilong_data
    babi, books = tmp_path / 'babi', tmp_path / 'books'
    babilong_data.write_babi(str(babi), stories=20)
    babilong_data.write_books(str(books), books=3, sentences=6000)
    return str(babi), str(books)


def run_opencompass(args, cwd, env_extra=None, timeout=900):
    """Run the real `opencompass` command in a subprocess; return CompletedProcess."""
    env = dict(os.environ)
    env.update(env_extra or {})
    exe = Path(sys.executable).with_name('opencompass')
    cmd = [str(exe)] if exe.exists() else [sys.executable, '-m', 'opencompass.cli.main']
    return subprocess.run(cmd + list(args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def summary_by_dataset(run_dir):
    """OpenCompass's summary CSV of a run, {dataset: row}, in file order."""
    (path,) = glob.glob(os.path.join(run_dir, 'summary', 'summary_*.csv'))
    with open(path, newline='') as f:
        return {r['dataset']: r for r in csv.DictReader(f)}


def assert_clean_logs(run_dir):
    """OpenCompass exits 0 even when tasks fail: every task log must exist and hold no traceback."""
    logs = glob.glob(os.path.join(run_dir, 'logs', '**', '*.out'), recursive=True)
    assert logs, 'no task logs: no task ran'
    for log in logs:
        text = open(log, encoding='utf-8', errors='replace').read()
        assert 'Traceback' not in text, f'{log}:\n{text[-3000:]}'


# ---------------------------------------------------------------------------------------------- markers
# `make test-fast` runs the unit tests only (pytest -m "not e2e and not browser and not slurm"); `make test` and CI
# run everything. Each test says what it needs with its own mark (on the test, or `pytestmark` for a whole module):
# e2e when it starts a process (the real `opencompass`, `longctx-report`, pip, make, a fresh Python), browser when it
# drives Chromium, slurm when it needs the cluster. A test that starts the pipeline or Chromium without its mark
# fails (`_pipeline_needs_its_mark`), so a new one cannot slip into the fast tier unnoticed.
PIPELINE_PROGRAMS = ('opencompass', 'pip', 'pip3', 'make')
BROWSERS = ('chromium', 'chromium-browser')
SLURM_PROGRAMS = ('sbatch', 'srun', 'sinfo', 'squeue', 'scancel', 'scontrol', 'sacct')
PIPELINE_MODULES = ('opencompass', 'pip')     # python -m <one of these, or a module under it>


def pytest_configure(config):
    config.addinivalue_line('markers', 'e2e: starts a process of the real pipeline (opencompass, longctx-report, pip)')
    config.addinivalue_line('markers', 'browser: drives a headless Chromium')
    config.addinivalue_line('markers', 'slurm: needs the test Slurm cluster')


def mark_needed(args):
    """The mark a test needs to start a command line (a list, or a string for the shell): 'browser' for Chromium,
    'slurm' for a Slurm command, 'e2e' for a program of the pipeline (``opencompass``, a ``longctx-*`` console
    script, pip, make, or ``python -m`` one of :data:`PIPELINE_MODULES` or ``opencompass_longctx.*``), None for
    anything else."""
    words = args.split() if isinstance(args, str) else [str(a) for a in args]
    if not words:
        return None
    program = os.path.basename(words[0])
    if program in BROWSERS:
        return 'browser'
    if program in SLURM_PROGRAMS:
        return 'slurm'
    if program in PIPELINE_PROGRAMS or program.startswith('longctx-'):
        return 'e2e'
    if 'python' in program and '-m' in words[:-1]:
        module = words[words.index('-m') + 1]
        return 'e2e' if module.split('.')[0] in PIPELINE_MODULES + ('opencompass_longctx',) else None
    return None


@pytest.fixture(autouse=True)
def _pipeline_needs_its_mark(request, monkeypatch):
    """A test that starts the pipeline (:func:`mark_needed`) without the mark it needs fails, naming the mark."""
    marks = {m for m in ('e2e', 'browser', 'slurm') if request.node.get_closest_marker(m)}
    if marks == {'e2e', 'browser', 'slurm'}:
        return

    class Guarded(subprocess.Popen):
        def __init__(self, args, *a, **kw):
            need = mark_needed(args)
            if need and need not in marks and not (need == 'slurm' and 'e2e' in marks):
                pytest.fail(f'{request.node.nodeid} starts {args!r} without @pytest.mark.{need}: mark it (make '
                            'test-fast leaves e2e, browser and slurm tests out)', pytrace=False)
            super().__init__(args, *a, **kw)
    monkeypatch.setattr(subprocess, 'Popen', Guarded)
