"""Runs of the reduced CPU leaderboard (tests/configs/cluster_leaderboard.py) shared by the Slurm and the resume
tests (a pytest plugin: ``pytest_plugins = ['cluster_runs']``, so the session fixtures run once for both files).

* ``leaderboard_inputs``: the tiny model, the stand-in BABILong files (qa1-qa5 at 0k and 1k, 2 samples each), the
  stand-in NoLiMa set and one dataset cache, for every run of the session.
* ``reference_run``: one uninterrupted ``LocalRunner`` run of the config (both models, two bands, three
  benchmarks): the tier table the Slurm run must reproduce and the predictions a resumed run must equal byte for
  byte.
* :func:`start_gated` starts a run whose tiny model stops at a chosen batch (tests/doubles/gated_model.py) and
  returns once it waits there, so a test can kill it in the middle of a dataset.
"""
import glob
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass

CONFIGS = REPO / 'tests' / 'configs'
LOCAL = CONFIGS / 'cluster_leaderboard.py'
SLURM = CONFIGS / 'cluster_leaderboard_slurm.py'
BABILONG_TASKS = [f'qa{i}' for i in range(1, 6)]
GATE_WAIT_S = 400


@pytest.fixture(scope='session')
def leaderboard_inputs(tmp_path_factory, tiny_model_dir):
    from opencompass_longctx.demo import babilong_data
    from opencompass_longctx.demo.datasets import prepare_nolima
    root = tmp_path_factory.mktemp('leaderboard_inputs')
    babilong_data.write(str(root / 'babilong'), tiers=('0k', '1k'), tasks=BABILONG_TASKS, samples=2)
    prepare_nolima(str(root / 'nolima'))
    return {'LONGCTX_TINY_MODEL': tiny_model_dir, 'LONGCTX_TEST_DATA': str(root / 'babilong'),
            'NOLIMA_TEST_DATA': str(root / 'nolima'), 'LONGCTX_CACHE_DIR': str(root / 'cache'),
            'LONGCTX_PROGRESS': '0', 'HF_HUB_OFFLINE': '1',
            'PYTHONPATH': os.pathsep.join([str(REPO / 'tests' / 'doubles'), os.environ.get('PYTHONPATH', '')])}


def run_dir(cwd) -> str:
    (run,) = glob.glob(os.path.join(str(cwd), 'out', '*'))
    return run


def run(config, cwd, env, *extra):
    """``opencompass <config> -w out <extra>`` in ``cwd``; fails the test unless it exits 0."""
    proc = run_opencompass([str(config), '-w', 'out', *extra], cwd, env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


@pytest.fixture(scope='session')
def reference_run(tmp_path_factory, leaderboard_inputs):
    cwd = tmp_path_factory.mktemp('reference')
    t0 = time.time()
    run(LOCAL, cwd, leaderboard_inputs)
    run_path = run_dir(cwd)
    assert_clean_logs(run_path)
    return {'dir': run_path, 'seconds': time.time() - t0}


def plan_of(run_path) -> dict:
    return json.load(open(os.path.join(run_path, 'plan', 'longctx_plan.json')))


def predictions(run_path, model) -> dict:
    """{dataset abbr: bytes of its predictions file}."""
    folder = os.path.join(run_path, 'predictions', model)
    return {os.path.basename(p)[:-5]: open(p, 'rb').read() for p in sorted(glob.glob(os.path.join(folder, '*.json')))}


def tier_table(run_path) -> str:
    (csv,) = glob.glob(os.path.join(run_path, 'summary', 'longctx_*.csv'))
    return open(csv, encoding='utf-8').read()


def opencompass_popen(args, cwd, env) -> subprocess.Popen:
    """The real ``opencompass`` command in the background (output to ``cwd/opencompass.log``)."""
    import sys
    exe = Path(sys.executable).with_name('opencompass')
    cmd = [str(exe)] if exe.exists() else [sys.executable, '-m', 'opencompass.cli.main']
    log = open(os.path.join(str(cwd), 'opencompass.log'), 'w')
    return subprocess.Popen(cmd + list(args), cwd=cwd, env=dict(os.environ, **env), stdout=log,
                            stderr=subprocess.STDOUT)


def start_gated(config, cwd, env, gate_at: int):
    """Start a run whose tiny model stops before its ``gate_at``-th batch; return ``(process, gate record)`` once
    it waits there (the record: ``pid``, ``slurm_job_id``, ``batches_done``)."""
    gate = Path(cwd) / 'gate'
    gate.mkdir()
    env = dict(env, LONGCTX_GATE_DIR=str(gate), LONGCTX_GATE_AT=str(gate_at), LONGCTX_GATE_TIMEOUT=str(GATE_WAIT_S))
    proc = opencompass_popen([str(config), '-w', 'out'], cwd, env)
    deadline = time.time() + GATE_WAIT_S
    while not (gate / 'held').exists():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            log = open(os.path.join(str(cwd), 'opencompass.log')).read()
            pytest.fail(f'the gated model never reached batch {gate_at} (exit {proc.returncode}):\n{log[-4000:]}')
        time.sleep(0.5)
    return proc, json.loads((gate / 'held').read_text())


def finish(proc, cwd, timeout: float = 600) -> str:
    """Wait for a background run to end; its output."""
    proc.wait(timeout=timeout)
    return open(os.path.join(str(cwd), 'opencompass.log'), encoding='utf-8', errors='replace').read()


def interrupted_state(run_path, model='tiny-chat'):
    """``(task, finished, partial, todo)`` of the one task interrupted in the middle of a dataset: the plan's
    task, the datasets with predictions files, the one with saved batches (``(abbr, tmp path)``), the others."""
    folder = Path(run_path) / 'predictions' / model
    tmps = sorted(folder.glob('tmp_*.jsonl'))
    assert len(tmps) == 1, f'expected one dataset with saved batches, found {[t.name for t in tmps]}'
    partial = tmps[0].name[len('tmp_'):-len('.jsonl')]
    (task,) = [t for t in plan_of(run_path)['task_list'] if t['model'] == model and partial in t['datasets']]
    finished = [a for a in task['datasets'] if (folder / f'{a}.json').exists()]
    todo = [a for a in task['datasets'] if a not in finished and a != partial]
    return task, finished, (partial, tmps[0]), todo


MARK = 'MARKED-BY-THE-TEST'


def mark_saved_batch(tmp: Path, line: int = 0) -> str:
    """Replace the prediction of one saved sample (a line of ``tmp_*.jsonl``) by a marker; its idx."""
    lines = tmp.read_text(encoding='utf-8').splitlines()
    item = json.loads(lines[line])
    item['prediction'] = f"{MARK}-saved-{item['idx']}"
    lines[line] = json.dumps(item, ensure_ascii=False)
    tmp.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return str(item['idx'])


def mark_prediction(path: Path, idx: str = '0'):
    """Replace one prediction of a finished dataset's file by a marker (written as OpenCompass writes it)."""
    data = json.loads(path.read_text(encoding='utf-8'))
    data[idx]['prediction'] = f'{MARK}-finished-{idx}'
    path.write_text(json.dumps(data, indent=4, ensure_ascii=False), encoding='utf-8')


def with_marks(reference: bytes, marks: dict) -> bytes:
    """The reference predictions file as OpenCompass writes it, with ``{idx: marker}`` put in."""
    data = json.loads(reference)
    for idx, text in marks.items():
        data[idx]['prediction'] = text
    return json.dumps(data, indent=4, ensure_ascii=False).encode()


def assert_resumed_predictions(run_path, reference_path, datasets, partial, saved_idx, finished_marked,
                               model='tiny-chat'):
    """Every predictions file of ``datasets`` equals the reference run's byte for byte, except the marks: the saved
    batch's mark is in the interrupted dataset's final file (it continued from its saved batches) and the finished
    dataset's mark is still there (it was not run again)."""
    got, want = predictions(run_path, model), predictions(reference_path, model)
    assert sorted(got) == sorted(datasets) and set(got) <= set(want)
    want = {a: want[a] for a in got}
    assert not list((Path(run_path) / 'predictions' / model).glob('tmp_*')), 'saved batches left behind'
    assert want[partial] == with_marks(want[partial], {})          # the reference is in OpenCompass's own format
    expected = dict(want)
    expected[partial] = with_marks(want[partial], {saved_idx: f'{MARK}-saved-{saved_idx}'})
    if finished_marked:
        expected[finished_marked] = with_marks(want[finished_marked], {'0': f'{MARK}-finished-0'})
    for abbr in want:
        assert got[abbr] == expected[abbr], f'{model}/{abbr} differs from the uninterrupted run'
    assert f'{MARK}-saved-{saved_idx}'.encode() in got[partial]
