"""OpenCompass's command-line form from the repository root: datasets, model and summarizer named by file name are
found under configs/ (OpenCompass's default --config-dir). (In a user workspace: test_install.py.)"""
import glob
import json
import os
import shutil

import pytest

from conftest import REPO, run_opencompass, summary_by_dataset

pytestmark = pytest.mark.e2e


def test_command_line_form_from_the_repository_root(tmp_path, tiny_model_dir):
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k',), samples=1)   # qa1-qa10, 1 sample each
    env = {'LONGCTX_TINY_MODEL': tiny_model_dir, 'BABILONG_DATA': str(tmp_path / 'babilong'),
           'LONGBIO_NUM_SAMPLES': '1', 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    # OpenCompass writes .cache/dataset_size.json (sizes by abbr, reused by later runs) and tmp/ in the directory it
    # runs in: leave the repository as it was
    size_cache = REPO / '.cache' / 'dataset_size.json'
    made = [p for p in (REPO / '.cache', REPO / 'tmp') if not p.exists()]
    saved = size_cache.read_bytes() if size_cache.exists() else None
    try:
        proc = run_opencompass(['--datasets', 'babilong_0k_gen', 'longbio_1k_gen', '--models', 'longctx_tiny_chat',
                                '--summarizer', 'longctx', '--debug', '-w', str(tmp_path / 'out')], REPO, env)
    finally:
        for p in made:
            shutil.rmtree(p, ignore_errors=True)
        if saved is not None:
            size_cache.write_bytes(saved)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    # OpenCompass ships its own babilong_0k_gen: it warns, and takes the --config-dir one (configs/ here)
    assert 'configs/datasets/babilong/babilong_0k_gen.py' in out and 'Ambiguous patterns' in out
    (run_dir,) = glob.glob(str(tmp_path / 'out' / '*'))
    rows = summary_by_dataset(run_dir)
    assert {r for r in rows if r.startswith('babilong_qa')} >= {f'babilong_qa{i}_0k' for i in range(1, 11)}
    assert {r for r in rows if r.startswith('longbio_') and r.endswith('_1k')} >= {
        'longbio_standard_1k', 'longbio_citation_2_1k', 'longbio_strict_standard_1k'}
    for r in rows.values():
        float(r['tiny-chat'])   # every dataset ran and was scored
    results = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', 'babilong_qa1_0k.json')))
    assert results['scoring_mode'] == ['official']   # the project's BABILong, not OpenCompass's
    (js,) = glob.glob(os.path.join(run_dir, 'summary', 'longctx_*.json'))
    # every list named *_datasets in a file: LongBioBench in both modes (compat and strict)
    assert {r['bench'] for r in json.load(open(js))['rows']} == {'babilong', 'longbio', 'longbio_strict'}
