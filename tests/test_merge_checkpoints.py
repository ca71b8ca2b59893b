"""Checkpoints named alike are two models, the same weights elsewhere one, and a partial model stays (issue 41,
items 1 and 3), through real `opencompass` runs of the tiny chat model (tests/configs/report_run.py) and the real
`longctx-report` command: two different checkpoints at ``<root>/ckpt/exp1/final`` and ``<root>/ckpt/exp2/final``
under one abbr are two rows, ``tiny-chat [exp1]`` and ``tiny-chat [exp2]``, and the merge says why (before: one
row reading some datasets from one and the rest from the other); a copy of exp1's weights under another root
(another cluster) is the same model (its run recorded the weights' fingerprint); exp2 ran one LongBioBench
understanding cell of the two exp1 ran, and its rows are the same partial means as in its own run's table, compared
with exp1's on the cell they share (before: '-' in every cell and "not compared")."""
import glob
import json
import os
import shutil

import pytest

from conftest import assert_clean_logs, run_opencompass
from report_runs import CONFIG, own_table, read_csv, report_cli

pytestmark = pytest.mark.e2e

ENV = {'LONGCTX_REPORT_MODEL': 'tiny', 'LONGCTX_REPORT_TIERS': '0k', 'LONGCTX_REPORT_SAMPLES': '2'}


@pytest.fixture(scope='module')
def checkpoint_runs(tmp_path_factory):
    from opencompass_longctx.demo import babilong_data
    from opencompass_longctx.demo.tiny_model import build
    root = tmp_path_factory.mktemp('checkpoints')
    babilong_data.write(str(root / 'babilong'), tiers=('0k',), tasks=[f'qa{i}' for i in range(1, 6)], samples=2)
    exp1 = build(str(root / 'ckpt' / 'exp1' / 'final'), seed=0)
    exp2 = build(str(root / 'ckpt' / 'exp2' / 'final'), seed=1)
    other = str(shutil.copytree(exp1, root / 'cluster2' / 'ckpt' / 'exp1' / 'final'))
    env = dict(ENV, LONGCTX_TEST_DATA=str(root / 'babilong'), NOLIMA_TEST_DATA=str(root / 'nolima'),
               LONGCTX_CACHE_DIR=str(root / 'cache'))
    runs = {}
    for name, model, cells in (('exp1', exp1, 'standard,paraphrase,idk'), ('exp2', exp2, 'standard'),
                               ('moved', other, 'standard')):
        proc = run_opencompass([str(CONFIG), '-w', str(root / f'out_{name}')], root,
                               dict(env, LONGCTX_TINY_MODEL=model, LONGCTX_REPORT_LONGBIO=cells))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        (runs[name],) = glob.glob(str(root / f'out_{name}' / '*'))
        assert_clean_logs(runs[name])
    runs['root'] = root
    return runs


def _rows(out, model):
    return [r for r in read_csv(out / 'longctx_report.csv') if r['model'] == model]


def test_two_checkpoints_named_final_are_two_rows(checkpoint_runs, tmp_path):
    exp1, exp2 = checkpoint_runs['exp1'], checkpoint_runs['exp2']
    out = tmp_path / 'merged'
    proc = report_cli(exp1, exp2, '-o', out, '--no-html', '--no-plots', cwd=tmp_path)
    assert proc.returncode == 0 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    data = json.load(open(out / 'longctx_report.json', encoding='utf-8'))
    assert list(data['model_identities']) == ['tiny-chat [exp1]', 'tiny-chat [exp2]']
    root = os.path.realpath(checkpoint_runs['root'])
    (note,) = [n for n in data['merge_notes'] if 'different models' in n]
    assert note.startswith(f"'tiny-chat' names 2 different models, kept apart as 'tiny-chat [exp1]' from {exp1}; "
                           f"'tiny-chat [exp2]' from {exp2}"), note
    assert f'path: "{root}/ckpt/exp1/final" / "{root}/ckpt/exp2/final" (weights ' in note, note
    # each row is its own run's table, nothing read across
    for name, run in (('exp1', exp1), ('exp2', exp2)):
        own = [dict(r, model=f'tiny-chat [{name}]') for r in own_table(run)]
        assert [r for r in _rows(out, f'tiny-chat [{name}]') if r['benchmark'] != 'longbio'] == \
            [r for r in own if r['benchmark'] != 'longbio']
    # the same runs in the other order: the same names
    again = tmp_path / 'again'
    assert report_cli(exp2, exp1, '-o', again, '--no-html', '--no-plots', cwd=tmp_path).returncode == 0
    assert sorted(json.load(open(again / 'longctx_report.json'))['model_identities']) == \
        ['tiny-chat [exp1]', 'tiny-chat [exp2]']


def test_the_same_weights_under_another_root_are_one_model(checkpoint_runs, tmp_path):
    exp1, moved = checkpoint_runs['exp1'], checkpoint_runs['moved']
    recorded = json.load(open(os.path.join(moved, 'longctx_models.json')))['tiny-chat']['path']
    assert recorded['path'] == os.path.realpath(os.path.join(checkpoint_runs['root'], 'cluster2', 'ckpt', 'exp1',
                                                             'final')) and len(recorded['weights']) == 64
    out = tmp_path / 'merged'
    proc = report_cli(exp1, moved, '-o', out, '--no-html', '--no-plots', cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.load(open(out / 'longctx_report.json', encoding='utf-8'))
    assert list(data['model_identities']) == ['tiny-chat']
    assert any(n.startswith(f'tiny-chat: one model in {exp1} and {moved}: path ') and 'hold the same weights' in n
               for n in data['merge_notes']), data['merge_notes']


def test_a_partial_model_keeps_its_rows_in_a_merge_and_is_compared_on_the_cells_it_shares(checkpoint_runs,
                                                                                          tmp_path):
    exp1, exp2 = checkpoint_runs['exp1'], checkpoint_runs['exp2']
    out = tmp_path / 'merged'
    proc = report_cli(exp1, exp2, '-o', out, '--no-plots', '--no-html', cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    merged = {(r['row'], r['tier']): r for r in _rows(out, 'tiny-chat [exp2]') if r['benchmark'] == 'longbio'}
    own = {(r['row'], r['tier']): r for r in own_table(exp2) if r['benchmark'] == 'longbio'}
    cell = merged['understanding', '0k']
    assert (cell['status'], cell['cells_used'], cell['cells_total']) == ('ok', '1', '6'), cell
    assert {k: dict(r, model='') for k, r in merged.items()} == {k: dict(r, model='') for k, r in own.items()}
    assert ('trustworthiness', '0k') not in merged   # exp1's idk cell: no row of exp2's, as in its own table
    md = (out / 'longctx_report.md').read_text(encoding='utf-8')
    (line,) = [ln for ln in md.splitlines() if ln.startswith('| tiny-chat [exp2] | longbio | understanding |')]
    assert '(1/6)' in line
    data = json.load(open(out / 'longctx_report.json', encoding='utf-8'))
    assert not any('tiny-chat [exp2]' in f['model'] for f in data['failures'])   # not run is not a failure
    paired = [r for r in read_csv(out / 'longctx_compare.csv') if r['benchmark'] == 'longbio'
              and r['row'] == 'understanding' and r['tier'] == '0k']
    assert paired and int(paired[0]['pairs']) == 2, paired    # the standard cell's 2 samples, both models
    assert 'MISSING' not in paired[0]['note'], paired
