"""num_proc: parallel builds give the same rows (and the same cache entries) as one process, for every
benchmark, whatever PYTHONHASHSEED; one progress bar; no pool for num_proc=1; bounded rows in flight."""
import hashlib
import json
import operator
import os
import subprocess
import sys

import pytest

from opencompass_longctx import parallel
from opencompass_longctx.babilong import generator as G
from opencompass_longctx.babilong.dataset import load_babilong
from opencompass_longctx.longbio.dataset import load_longbio
from opencompass_longctx.longbio.generator import TierTooSmallError, generate, cell_settings
from opencompass_longctx.nolima import build as nbuild
from opencompass_longctx.nolima import dataset as nds
from opencompass_longctx.demo import nolima_data
def digest(rows) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps(r, sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()


@pytest.fixture
def force_pool(monkeypatch):
    """Small builds normally stay in one process (parallel.plan): make every build use the pool, with small
    chunks, so that a test-sized build crosses chunk and worker boundaries."""
    monkeypatch.setattr(parallel, 'MIN_PARALLEL_TOKENS', 0)
    monkeypatch.setattr(parallel, 'CHUNK_TOKENS', 8192 * 3)
    monkeypatch.setattr(nbuild, 'MIN_PARALLEL_TOKENS', 0)
    monkeypatch.setattr(nbuild, 'CHUNK_TOKENS', 26 * 500 * 2)


@pytest.fixture
def no_pool(monkeypatch):
    import concurrent.futures
    monkeypatch.setattr(concurrent.futures, 'ProcessPoolExecutor',
                        lambda *a, **k: pytest.fail('a process pool was started'))


@pytest.fixture(scope='module')
def nolima_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp('nolima') / 'data'
    nolima_data.write(str(root), book_tokens=3000)
    return str(root)


_LONGBIO_CHILD = r'''
import hashlib, json, sys
from opencompass_longctx import parallel
from opencompass_longctx.longbio.generator import generate, cell_settings
parallel.MIN_PARALLEL_TOKENS, parallel.CHUNK_TOKENS = 0, 8192 * 3
h = hashlib.sha256()
for cell in ('idk', 'citation_2'):
    for r in generate(cell_settings('8k', cell=cell, mode='strict'), 7, num_proc=int(sys.argv[1])):
        h.update(json.dumps(r, sort_keys=True, ensure_ascii=False).encode())
print(h.hexdigest())
'''


@pytest.mark.e2e
def test_longbio_rows_are_the_same_for_any_num_proc_and_hash_seed(force_pool, tmp_path):
    one = hashlib.sha256()
    for cell in ('idk', 'citation_2'):
        for r in generate(cell_settings('8k', cell=cell, mode='strict'), 7, num_proc=1):
            one.update(json.dumps(r, sort_keys=True, ensure_ascii=False).encode())
    for seed, num_proc in (('1', '2'), ('777', '3')):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, '-c', _LONGBIO_CHILD, num_proc], env=env, capture_output=True,
                             text=True, check=True)
        assert out.stdout.strip() == one.hexdigest(), (seed, num_proc, out.stderr[-2000:])


def test_longbio_cache_entry_is_the_same_for_any_num_proc(force_pool, tmp_path, monkeypatch):
    built = {}
    for num_proc in (1, 2):
        cache = tmp_path / f'cache{num_proc}'
        monkeypatch.setenv('LONGCTX_CACHE_DIR', str(cache))
        ds = load_longbio('8k', cell='multihop_2', num_samples=5, num_proc=num_proc)
        (entry,) = os.listdir(cache / 'longbio')   # one entry, named by its key: num_proc is not part of it
        built[num_proc] = (entry, ds.to_list())
    assert built[1] == built[2] and len(built[1][1]) == 5


def test_nolima_rows_are_the_same_for_any_num_proc(force_pool, nolima_dir, tmp_path, monkeypatch):
    got = {}
    for num_proc in (1, 2):
        monkeypatch.setenv('LONGCTX_CACHE_DIR', str(tmp_path / f'cache{num_proc}'))
        ds = nds.load_nolima('500', path=nolima_dir, pairs=5, needle_set='distractor', num_proc=num_proc)
        got[num_proc] = (os.listdir(tmp_path / f'cache{num_proc}' / 'nolima'), digest(ds))
        assert len(ds) == 5 * 5 * 26
    assert got[1] == got[2]


def test_babilong_generated_split_is_the_same_for_any_num_proc(force_pool, babi_inputs, tmp_path, monkeypatch):
    got = {}
    for num_proc in (1, 2):
        monkeypatch.setenv('LONGCTX_CACHE_DIR', str(tmp_path / f'cache{num_proc}'))
        ds = load_babilong(tier='3k', task='qa2', babi_dir=babi_inputs[0], background_dir=babi_inputs[1],
                           num_samples=5, num_proc=num_proc)
        got[num_proc] = digest(ds)
        assert len(ds) == 5
    assert got[1] == got[2]


@pytest.mark.e2e
def test_babilong_generator_files_are_byte_identical_for_any_num_proc(force_pool, babi_inputs, tmp_path):
    outs = []
    for num_proc in (1, 2):
        out = tmp_path / f'out{num_proc}'
        G.write(G.Generator(*babi_inputs), str(out), ['3k', '1k'], ['qa1', 'qa3'], 3, progress=False,
                num_proc=num_proc)
        outs.append({os.path.relpath(os.path.join(d, f), out): open(os.path.join(d, f), 'rb').read()
                     for d, _, fs in os.walk(out) for f in fs})
    assert outs[0] == outs[1] and 'data/qa3/1k.json' in outs[0]
    env = dict(os.environ, PYTHONHASHSEED='99')   # the CLI, in another process, with --num-proc
    subprocess.run([sys.executable, '-m', 'opencompass_longctx.babilong.generator', str(tmp_path / 'cli'),
                    '--babi-dir', babi_inputs[0], '--background-dir', babi_inputs[1], '--tiers', '3k', '1k',
                    '--tasks', 'qa1', 'qa3', '--samples', '3', '--num-proc', '2'], check=True, env=env,
                   capture_output=True)
    for rel, data in outs[0].items():
        assert (tmp_path / 'cli' / rel).read_bytes() == data, rel


def test_num_proc_1_and_small_builds_start_no_pool(no_pool, babi_inputs, nolima_dir):
    assert len(load_longbio('2k', cell='standard', num_samples=3, num_proc=1)) == 3
    assert len(load_longbio('2k', cell='rank_2', num_samples=3, num_proc=4)) == 3   # too small to repay workers
    assert len(nds.load_nolima('250', path=nolima_dir, pairs=1, num_proc=1)) == 130
    assert len(load_babilong(tier='2k', task='qa1', babi_dir=babi_inputs[0], background_dir=babi_inputs[1],
                             sample_source='generated', num_samples=2, num_proc=1)) == 2
    assert parallel.plan(800, 16, 131072, parallel.MIN_PARALLEL_TOKENS, parallel.CHUNK_TOKENS) == (16, 13)
    assert parallel.plan(800, 1, 131072, parallel.MIN_PARALLEL_TOKENS, parallel.CHUNK_TOKENS) == (1, 1)
    assert parallel.plan(5, 16, 2048, parallel.MIN_PARALLEL_TOKENS, parallel.CHUNK_TOKENS) == (1, 1)


def test_a_worker_error_reaches_the_caller_unchanged(force_pool):
    with pytest.raises(TierTooSmallError, match=r"'multi_standard_10' does not fit tier 2k .*fits: 4k"):
        list(generate(cell_settings('2k', cell='multi_standard_10'), 4, num_proc=2))


def test_results_come_in_order_with_a_bounded_number_in_flight():
    pulled, seen = [], []

    def items():
        for i in range(40):
            pulled.append(i)
            yield i

    for out in parallel.ordered_map(operator.add, items(), int, (), workers=2):   # state int() = 0: out = item
        assert len(pulled) - len(seen) <= 2 * 2   # at most 2 * workers items taken and not yet handed on
        seen.append(out)
    assert seen == list(range(40))


def test_one_progress_bar_across_workers(force_pool, monkeypatch, capfd):
    monkeypatch.setenv('LONGCTX_PROGRESS', '1')
    list(generate(cell_settings('8k', cell='standard'), 6, num_proc=2))
    err = capfd.readouterr().err
    assert 'LongBioBench standard 8k (2 processes)' in err and '6/6' in err
    monkeypatch.setenv('LONGCTX_PROGRESS', '0')
    list(generate(cell_settings('8k', cell='standard'), 6, num_proc=2))
    assert capfd.readouterr().err == ''


@pytest.mark.parametrize('bad', [0, -1, 1.5, '2', True])
def test_bad_num_proc_is_a_clear_error(bad):
    with pytest.raises(parallel.NumProcError, match='num_proc must be a positive integer'):
        load_longbio('2k', cell='standard', num_samples=1, num_proc=bad)


@pytest.mark.e2e
def test_workers_that_cannot_start_give_a_clear_error(tmp_path):
    """Workers are spawned and import the main script: one that builds at import time breaks them."""
    script = tmp_path / 'unguarded.py'
    script.write_text('from opencompass_longctx import parallel\n'
                      'from opencompass_longctx.longbio.generator import generate, cell_settings\n'
                      'parallel.MIN_PARALLEL_TOKENS = 0\n'
                      "print(len(list(generate(cell_settings('8k', cell='standard'), 4, num_proc=2))))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "a dataset build worker of 2 stopped before it finished" in out.stderr
    # the error's last line (the spawned workers' resource tracker may warn after it, at interpreter exit)
    lines = [line for line in out.stderr.splitlines() if 'resource_tracker' not in line and line.strip()]
    assert "if __name__ == '__main__':" in lines[-1]


def test_consecutive_builds_reuse_the_workers_until_idle(monkeypatch):
    import time
    monkeypatch.setattr(parallel, 'IDLE_SECONDS', 2)
    pids = [set(parallel.ordered_map(operator.add, [0] * 8, os.getpid, (), workers=2)) for _ in range(2)]
    assert pids[1] <= pids[0] and os.getpid() not in pids[0]   # state = the pid of the worker: the same workers
    monkeypatch.setenv('LONGCTX_CACHE_DIR', os.environ['LONGCTX_CACHE_DIR'] + '-other')   # other environment:
    assert set(parallel.ordered_map(operator.add, [0] * 8, os.getpid, (), workers=2)).isdisjoint(pids[0])
    time.sleep(4)
    assert parallel._POOL['executor'] is None   # shut down after IDLE_SECONDS without a build
