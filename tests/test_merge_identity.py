"""A merged row is one model on one dataset (issue 27), through the real `longctx-report` entry point over real
runs (tests/report_runs.py): a model abbr names the model its config describes (another model, or the same one
with other generation settings, under a reused abbr is an error unless `--as` renames one side); a file that
cannot be read is left out and named, never taken as matching; any model abbr (a slash, a leading dot, a space,
unicode, '..' inside a name) works in a real `opencompass` run, the tier table, the merge and the comparison."""
import glob
import json
import os
import shutil

import pytest

from conftest import run_opencompass
from report_runs import CONFIG, own_table, read_csv, report, report_cli, report_runs  # noqa: F401 (the fixture)

NESTED = 'org/.rule reader ü v1..2'


def _copy(run, root, stamp='29991231_235959'):
    """A copy of a real run, as if made again later (a timestamp-named run directory)."""
    dst = root / stamp
    shutil.copytree(run, dst)
    return dst


def _edit_dump(run, old, new):
    """Edit the run's model configs (the ``models=[...]`` block of its config dump)."""
    (dump,) = (run / 'configs').glob('*.py')
    text = dump.read_text(encoding='utf-8')
    start = text.index('\nmodels=[\n')
    end = text.index('\n    ]\n', start)
    block = text[start:end]
    assert block.count(old) == 1, (old, block)
    dump.write_text(text[:start] + block.replace(old, new) + text[end:], encoding='utf-8')


def _as_model(rows, name):
    return [dict(r, model=name) for r in rows]


@pytest.mark.e2e
def test_a_reused_abbr_for_another_model_is_kept_apart_naming_both_runs_and_fields(report_runs, tmp_path):
    """The rule reader's run relabelled 'tiny-chat' (another type and path under the tiny model's abbr): the old
    merge mixed both into one row; now two rows, each named by what tells it apart (the shortest distinguishing part
    of their paths: the tiny model's directory, the rule reader's default path), and a note says why; `--as
    RUN=NEWABBR` names one otherwise."""
    fake = _copy(report_runs['rule'], tmp_path / 'fake')
    for kind in ('results', 'predictions'):
        os.rename(fake / kind / 'rule-reader', fake / kind / 'tiny-chat')
    _edit_dump(fake, "abbr='rule-reader'", "abbr='tiny-chat'")
    proc = report_cli(report_runs['tiny'], fake, '-o', tmp_path / 'm', '--no-html', '--no-plots', cwd=tmp_path)
    assert proc.returncode == 0 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    rows = read_csv(tmp_path / 'm' / 'longctx_report.csv')
    assert [r for r in rows if r['model'] == 'tiny-chat [tiny-chat]'] == \
        _as_model(own_table(report_runs['tiny']), 'tiny-chat [tiny-chat]')
    assert [r for r in rows if r['model'] == 'tiny-chat [rule-reader]'] == \
        _as_model(own_table(report_runs['rule']), 'tiny-chat [rule-reader]')
    notes = json.load(open(tmp_path / 'm' / 'longctx_report.json', encoding='utf-8'))['merge_notes']
    (note,) = [n for n in notes if 'different models' in n]
    assert note.startswith("'tiny-chat' names 2 different models, kept apart as 'tiny-chat [tiny-chat]' from "
                           f"{report_runs['tiny']}; 'tiny-chat [rule-reader]' from {fake}"), note
    assert 'type: "opencompass_longctx.demo.tiny_chat.TinyChatModel" / ' \
           '"opencompass_longctx.demo.rule_reader.BabiRuleReader"' in note and '--as RUN=NEWABBR' in note
    assert '/ "rule-reader"' in note      # the places first: the tiny model's directory / the rule reader's name
    assert 'max_seq_len: 16384 / 2000000' in note

    out = tmp_path / 'renamed'
    proc = report(report_runs['tiny'], fake, '--as', f'{fake}=rule-again', '-o', out, '--no-html', '--no-plots')
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_csv(out / 'longctx_report.csv')
    assert [r for r in rows if r['model'] == 'tiny-chat'] == own_table(report_runs['tiny'])
    assert [r for r in rows if r['model'] == 'rule-again'] == _as_model(own_table(report_runs['rule']), 'rule-again')
    data = json.load(open(out / 'longctx_report.json', encoding='utf-8'))
    assert data['fingerprints']['rule-again/babilong_qa1_0k']['run'] == str(fake)
    assert data['model_identities']['rule-again']['type'].endswith('BabiRuleReader')
    assert any("its model 'tiny-chat' is shown as 'rule-again' (--as)" in n for n in data['merge_notes'])
    plain = tmp_path / 'plain'   # the same two runs without the relabelling: the comparison is the same, renamed
    assert report(report_runs['tiny'], report_runs['rule'], '-o', plain, '--no-html', '--no-plots').returncode == 0
    paired = read_csv(out / 'longctx_compare.csv')
    assert [dict(r, b='rule-reader') for r in paired] == read_csv(plain / 'longctx_compare.csv')
    assert paired and {(r['a'], r['b']) for r in paired} == {('tiny-chat', 'rule-again')}, paired[:1]
    assert int(paired[0]['pairs']) > 0   # the predictions are read under the abbr the run wrote them with


@pytest.mark.e2e
def test_other_generation_settings_are_another_model_batch_size_is_not(report_runs, tmp_path):
    sampled = _copy(report_runs['tiny'], tmp_path / 'sampled')
    _edit_dump(sampled, 'generation_kwargs=dict(\n            do_sample=False)', 'generation_kwargs=dict(do_sample=True, top_p=0.9)')
    proc = report(report_runs['tiny'], sampled, '-o', tmp_path / 'm', '--no-html', '--no-plots')
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.load(open(tmp_path / 'm' / 'longctx_report.json', encoding='utf-8'))
    shown = ['tiny-chat [generation_kwargs={"do_sample": false}]',
             'tiny-chat [generation_kwargs={"do_sample": true, "top_p": 0.9}]']
    assert list(data['model_identities']) == shown        # the same path: the setting that differs names them
    (note,) = [n for n in data['merge_notes'] if 'different models' in n]
    assert 'generation_kwargs.do_sample: false / true, generation_kwargs.top_p: "<absent>" / 0.9' in note, note
    assert 'type:' not in note   # only the fields that differ

    bigger = _copy(report_runs['tiny'], tmp_path / 'bigger')
    _edit_dump(bigger, 'batch_size=1,', 'batch_size=16,')
    proc = report(report_runs['tiny'], bigger, '-o', tmp_path / 'b', '--no-html', '--no-plots')
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f'the newer run ({bigger}) is used' in proc.stdout


def _corrupt(path):
    raw = path.read_bytes()
    at = raw.index(b'"prediction": "') + len(b'"prediction": "')
    path.write_bytes(raw[:at] + b'\xff' + raw[at:])   # one byte that is not UTF-8


@pytest.mark.e2e
def test_an_unreadable_predictions_file_never_counts_as_the_same_data(report_runs, tmp_path):
    """A newer run whose qa1 0k result was made on other data (2 samples, not 3) and whose predictions file has one
    invalid UTF-8 byte: the old merge took it (BABILong qa1-qa5 0k 20.0 instead of 40.0, no mark, no note). And a
    newer run whose qa2 0k result file is truncated: the old merge showed the older run's number with no word."""
    newer = _copy(report_runs['rule'], tmp_path / 'newer')
    small = report_runs['rule_small']
    for kind in ('results', 'predictions'):
        shutil.copy(os.path.join(small, kind, 'rule-reader', 'babilong_qa1_0k.json'),
                    newer / kind / 'rule-reader' / 'babilong_qa1_0k.json')
    bad_preds = newer / 'predictions' / 'rule-reader' / 'babilong_qa1_0k.json'
    _corrupt(bad_preds)
    bad_result = newer / 'results' / 'rule-reader' / 'babilong_qa2_0k.json'
    bad_result.write_text(bad_result.read_text()[:40])
    out = tmp_path / 'merged'
    proc = report(report_runs['rule'], newer, '-o', out, '--no-html', '--no-plots')
    assert proc.returncode == 0 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    rows = {(r['benchmark'], r['row'], r['tier']): r for r in read_csv(out / 'longctx_report.csv')}
    cell = rows['babilong', 'qa1-qa5', '0k']
    assert cell['score'] == '' and cell['status'] != 'ok', cell      # neither 20.0 nor the older 40.0
    assert float(rows['babilong', 'qa1-qa5', '1k']['score']) == 40.0  # the rest merges as before
    notes = json.load(open(out / 'longctx_report.json', encoding='utf-8'))['merge_notes']
    for abbr, path in (('babilong_qa1_0k', bad_preds), ('babilong_qa2_0k', bad_result)):
        assert any(n.startswith(f'rule-reader/{abbr}: ') and str(path) in n and 'left out' in n
                   and report_runs['rule'] in n for n in notes), (abbr, notes)
    md = (out / 'longctx_report.md').read_text(encoding='utf-8')
    assert f'predictions file {bad_preds} cannot be read' in md


@pytest.fixture(scope='module')
def nested_run(report_runs):
    """One real `opencompass` run of the rule reader under the abbr NESTED (BABILong qa1-qa5, LongBioBench,
    NoLiMa at 0k/250, 3 samples: the data and cache of the report runs)."""
    root = report_runs['root']
    env = {'LONGCTX_TEST_DATA': str(root / 'babilong'), 'NOLIMA_TEST_DATA': str(root / 'nolima'),
           'LONGCTX_CACHE_DIR': str(root / 'cache'), 'LONGCTX_REPORT_MODEL': 'rule', 'LONGCTX_REPORT_TIERS': '0k',
           'LONGCTX_REPORT_ABBR': NESTED}
    work = root / 'out_nested'
    proc = run_opencompass([str(CONFIG.with_name('report_run_abbr.py')), '-w', str(work)], root, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(work / '*'))
    logs = [os.path.join(d, f) for d, _, files in os.walk(os.path.join(run, 'logs')) for f in files
            if f.endswith('.out')]   # (os.walk: glob skips the abbr's dot directory)
    assert any(os.sep + os.path.join(*NESTED.split('/')) + os.sep in p for p in logs), logs
    for log in logs:
        text = open(log, encoding='utf-8', errors='replace').read()
        assert 'Traceback' not in text, f'{log}:\n{text[-3000:]}'
    return run


@pytest.mark.e2e
def test_any_model_abbr_works_in_the_run_the_table_the_merge_and_the_comparison(nested_run, report_runs, tmp_path):
    results = os.path.join(nested_run, 'results', *NESTED.split('/'))
    assert os.path.isfile(os.path.join(results, 'babilong_qa1_0k.json'))   # OpenCompass's own nested layout
    own = own_table(nested_run)  # the run's own summarizer found its results
    assert {r['model'] for r in own} == {NESTED}
    assert float({(r['benchmark'], r['row']): r for r in own}['babilong', 'qa1-qa5']['score']) == 40.0
    out = tmp_path / 'merged'
    proc = report(nested_run, report_runs['tiny'], '-o', out, '--no-html', '--no-plots',
                  '--compare', NESTED, 'tiny-chat')
    assert proc.returncode == 0 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    merged = read_csv(out / 'longctx_report.csv')
    keys = {(r['benchmark'], r['row'], r['tier']) for r in own}   # (the tiny run adds 1k: not run here)
    assert [r for r in merged if r['model'] == NESTED and (r['benchmark'], r['row'], r['tier']) in keys] == own
    data = json.load(open(out / 'longctx_report.json', encoding='utf-8'))
    assert data['failures'] == [] and f'{NESTED}/babilong_qa1_0k' in data['fingerprints']
    # the same rows as the rule reader's other run: same data, and NoLiMa's per-model copy compares by design
    assert data['fingerprints'][f'{NESTED}/nolima_main_250@{NESTED}']['mode'] == \
        data['fingerprints']['tiny-chat/nolima_main_250@tiny-chat']['mode']
    paired = read_csv(out / 'longctx_compare.csv')
    assert paired and all((r['a'], r['b']) == (NESTED, 'tiny-chat') for r in paired)
    assert all(r['marks'] == '' for r in merged if r['tier'] == '0k'), [r for r in merged if r['marks']]


@pytest.mark.parametrize('abbr,bad', [
    ('../escape', True), ('org/../../x', True), ('/abs/model', True), ('org//model', True), ('model/', True),
    ('./model', True), ('', True), ('org/model', False), ('.hidden', False), ('v1..2', False),
    ('my model ü', False), ('org/.model..x', False)])
def test_the_plan_refuses_an_abbr_that_writes_outside_the_work_dir(abbr, bad):
    from opencompass_longctx.plan.checks import check_run
    found = check_run([dict(type='opencompass_longctx.demo.rule_reader.BabiRuleReader', abbr=abbr)], [])
    problems = [p['problem'] for p in found if 'is not a relative name' in p['problem']]
    assert bool(problems) == bad, found
    if bad:
        assert repr(abbr) in problems[0] and "'org/model'" in problems[0]
