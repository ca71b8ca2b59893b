"""One leaderboard across runs (issue 19): two separate real runs (the tiny chat model, the rule reader) merged
by `python -m opencompass_longctx.report RUN RUN`; fingerprints of data and scoring decide what may be merged."""
import json
import os
import shutil

import pytest

from report_runs import own_table, read_csv, report, report_cli, report_runs  # noqa: F401 (report_runs: the fixture)

pytestmark = pytest.mark.e2e


def test_the_merged_table_has_both_models_with_each_runs_own_numbers(report_runs, tmp_path):
    out = tmp_path / 'merged'
    proc = report(report_runs['tiny'], report_runs['rule'], '-o', out, '--no-html')
    assert proc.returncode == 0 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    merged = read_csv(out / 'longctx_report.csv')
    assert {r['model'] for r in merged} == {'tiny-chat', 'rule-reader'}
    for key in ('tiny', 'rule'):
        own = own_table(report_runs[key])
        model = own[0]['model']
        assert [r for r in merged if r['model'] == model] == own, key  # every column of every cell, unchanged
    assert all(r['marks'] == '' for r in merged)  # same data, same scoring: all comparable
    rule = {(r['benchmark'], r['row'], r['tier']): r for r in merged if r['model'] == 'rule-reader'}
    assert float(rule['babilong', 'qa1-qa5', '0k']['score']) == 40.0  # qa1 and qa2 read right, qa3-qa5 not
    data = json.load(open(out / 'longctx_report.json'))
    assert data['runs'] == [report_runs['tiny'], report_runs['rule']]
    fps = data['fingerprints']
    # a dataset both models read: the same rows (a chat model's messages and the rule reader's joined string)
    assert fps['tiny-chat/babilong_qa1_0k']['rows'] == fps['rule-reader/babilong_qa1_0k']['rows']
    assert fps['tiny-chat/longbio_idk_1k']['rows'] == fps['rule-reader/longbio_idk_1k']['rows']
    # NoLiMa copied per model tokenizer: other haystacks (rows), the same needles and depths (design)
    a, b = fps['tiny-chat/nolima_main_250@tiny-chat'], fps['rule-reader/nolima_main_250@rule-reader']
    assert a['rows'] != b['rows'] and a['design'] == b['design'] and a['mode'] == b['mode']
    assert os.path.isfile(out / 'longctx_report_plots' / 'score_vs_tier_babilong_qa1-qa5.png')
    assert (out / 'longctx_report.md').read_text() in proc.stdout


def test_the_same_data_twice_takes_the_newer_run_and_says_so(report_runs, tmp_path):
    later = tmp_path / 'again' / '29991231_235959'   # the same run, as if rerun later
    shutil.copytree(report_runs['tiny'], later)
    out = tmp_path / 'merged'
    proc = report(report_runs['tiny'], later, report_runs['rule'], report_runs['rule'], '-o', out, '--no-html')
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.load(open(out / 'longctx_report.json'))
    notes = data['merge_notes']
    assert any(n.startswith('tiny-chat: 16 dataset(s) are in ') and f'the newer run ({later}) is used' in n
               for n in notes), notes
    assert any('was given twice' in n and report_runs['rule'] in n for n in notes), notes
    assert {fp['run'] for k, fp in data['fingerprints'].items() if k.startswith('tiny-chat/')} == {str(later)}
    assert f'the newer run ({later}) is used' in proc.stdout
    own = own_table(report_runs['tiny'])
    assert [r for r in read_csv(out / 'longctx_report.csv') if r['model'] == 'tiny-chat'] == own


def test_runs_of_one_model_over_different_data_are_an_error_naming_both(report_runs, tmp_path):
    proc = report_cli(report_runs['rule'], report_runs['rule_small'], '-o', tmp_path / 'm', cwd=tmp_path)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    err = proc.stderr
    assert 'made on different data or with different scoring' in err
    assert 'rule-reader/babilong_qa1_0k: the data differ' in err and '3 samples' in err and '2 samples' in err
    assert report_runs['rule'] in err and report_runs['rule_small'] in err
    assert not os.path.exists(tmp_path / 'm')


def test_a_column_over_other_data_is_marked_not_comparable(report_runs, tmp_path):
    """The tiny model on 3 samples per dataset, the rule reader on 2 (another run): no fingerprint is shared by
    two models, so both models' 0k cells are marked, with a footnote naming the datasets."""
    out = tmp_path / 'merged'
    proc = report(report_runs['tiny'], report_runs['rule_small'], '-o', out, '--no-html')
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {(r['model'], r['benchmark'], r['row'], r['tier']): r for r in read_csv(out / 'longctx_report.csv')}
    for model in ('tiny-chat', 'rule-reader'):
        assert rows[model, 'babilong', 'qa1-qa5', '0k']['marks'] == '‡'
    assert rows['tiny-chat', 'babilong', 'qa1-qa5', '1k']['marks'] == ''   # only the tiny model ran 1k
    md = (out / 'longctx_report.md').read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith('| rule-reader | babilong | qa1-qa5 | 40.0 ['))
    assert line.split(' | ')[3].endswith(' ‡')
    assert "‡ Not comparable with the other models' cells of its column" in md
    assert (f'- rule-reader/babilong_qa1_0k ({report_runs["rule_small"]}): its data or scoring differ from '
            "tiny-chat's in babilong qa1 at 0k (rows ") in md
    # the paired table compares only the samples both ran, and says the datasets differ
    paired = [r for r in read_csv(out / 'longctx_compare.csv') if r['benchmark'] == 'babilong' and r['tier'] == '0k']
    assert paired and 'the datasets differ' in paired[0]['note']


def test_bad_input_is_a_clear_error_not_a_traceback(report_runs, tmp_path):
    empty = tmp_path / 'empty' / '20260101_000000'
    shutil.copytree(report_runs['tiny'], empty, ignore=shutil.ignore_patterns('results'))
    cases = {
        'no results': ([empty], [f'{empty}: the run has no results', 'opencompass <config> -r 20260101_000000']),
        'no run': ([tmp_path], [f'{tmp_path}: no OpenCompass run found (expected <run>/configs/*.py)']),
        'no directory': ([tmp_path / 'nope'], ['nope: no such directory']),
    }
    for name, (args, words) in cases.items():  # the command itself once; the same entry point in-process after
        proc = report_cli(*args, cwd=tmp_path) if name == 'no results' else report(*args)
        assert proc.returncode == 2, (name, proc.stderr[-2000:])
        assert 'Traceback' not in proc.stderr and proc.stderr.startswith('longctx-report: error: '), name
        for w in words:
            assert w in proc.stderr, (name, proc.stderr)


def test_a_models_caveat_from_its_runs_config_marks_the_merged_cells(report_runs, tmp_path):
    """A model row that runs beyond what its engine supports above some tier (its config's ``caveats``, as the
    LMDeploy rows carry them): the merged table marks its cells there, read from that run's config dump."""
    from opencompass_longctx.models.recipe import CAVEAT_MARK
    run = tmp_path / 'runs' / '20261201_000001'
    shutil.copytree(report_runs['rule'], run)
    (dump,) = (run / 'configs').glob('*.py')
    text = dump.read_text()
    at = text.index("models=[\n    dict(abbr='rule-reader',\n") + len("models=[\n    dict(abbr='rule-reader',\n")
    dump.write_text(text[:at] + "        caveats=[dict(above=500, reason='test: no engine support above 500 tokens')],\n"
                    + text[at:])
    out = tmp_path / 'merged'
    proc = report(report_runs['tiny'], run, '-o', out, '--no-html', '--no-plots')
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (out / 'longctx_report.md').read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith('| rule-reader | babilong | qa1-qa5 |')).split(' | ')
    assert line[3] == '40.0 [21.3, 62.1]' and line[5] == f'40.0 [21.3, 62.1]{CAVEAT_MARK}'   # 0k unmarked, 1k marked
    assert f'{CAVEAT_MARK} rule-reader at 1k: test: no engine support above 500 tokens' in md
    assert CAVEAT_MARK not in next(ln for ln in md.splitlines() if ln.startswith('| tiny-chat | babilong |'))
