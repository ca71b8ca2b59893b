"""Bad result files (issue 12 item 14): a truncated JSON, a file holding `[]`, a string accuracy or count, an
accuracy outside [0, 100] or none where samples were answered make a MISSING cell with the reason, never a
traceback: in the table builder with plots on, in the long-context summarizer (OpenCompass's own table included)
and in `python -m opencompass_longctx.report`."""
import json
import os
import subprocess
import sys

import pytest
from mmengine.config import ConfigDict

from opencompass_longctx import __version__
from opencompass_longctx.summarizers.longctx import LongCtxSummarizer
from opencompass_longctx.writers.formats import to_markdown, write
from opencompass_longctx.leaderboard.build import ModelInfo, build
MODEL = 'm'
TIERS = ('0k', '1k', '2k')
GOOD = {'accuracy': 50.0, 'counts': {'n': 4, 'over_length': 0}, 'package_version': [__version__],
        'details': [{'correct': [i % 2 == 0], 'depth': [0.25 * i]} for i in range(4)]}
# (file name, content written verbatim, words the reason must contain)
BAD = {
    'truncated': ('longbio_standard_1k', json.dumps(GOOD)[:25], ['unreadable result file', 'longbio_standard_1k']),
    'empty list': ('longbio_calculation_1k', '[]', ['holds [] (list), not a JSON object']),
    'string accuracy': ('longbio_standard_0k', json.dumps(dict(GOOD, accuracy='85.0')),
                        ["accuracy is \"85.0\" (str), not a number"]),
    'string count': ('longbio_calculation_0k', json.dumps(dict(GOOD, counts=[{'n': 'ten', 'over_length': 0}])),
                     ['counts.n is "ten" (str), not a whole number']),
    'accuracy above 100': ('longbio_standard_2k', json.dumps(dict(GOOD, accuracy=150.0)),
                           ['accuracy is 150.0 (float), outside [0, 100]']),
    'no accuracy': ('longbio_calculation_2k', json.dumps({k: v for k, v in GOOD.items() if k != 'accuracy'}),
                    ["no 'accuracy' in it, and its counts do not say that every sample was left out"]),
}
ABBRS = [f'longbio_{c}_{t}' for t in TIERS for c in ('standard', 'calculation', 'idk')]
NOLIMA = 'nolima_main_1k'


def make_run(root, bad):
    res = root / 'results' / MODEL
    if not res.is_dir():
        res.mkdir(parents=True)
        for abbr in ABBRS:
            (res / f'{abbr}.json').write_text(json.dumps(GOOD))
    name, text, _ = BAD[bad]
    (res / f'{name}.json').write_text(text)
    (res / f'{NOLIMA}.json').write_text(text)  # read for NoLiMa's own figures too
    return name


@pytest.mark.parametrize('bad', list(BAD))
def test_a_bad_result_file_is_a_missing_cell_with_its_reason(tmp_path, bad):
    name, words = make_run(tmp_path, bad), BAD[bad][2]
    rep = build(str(tmp_path), [ModelInfo(MODEL)], ABBRS, expected=[(MODEL, a) for a in ABBRS])
    tier = name.rsplit('_', 1)[1]
    row = 'understanding' if 'standard' in name else 'reasoning'
    (cell,) = [r.cells[tier] for r in rep.rows if r.row == row]
    assert cell.status == 'missing' and all(w in cell.reason for w in words), cell.reason
    (trust,) = [r for r in rep.rows if r.row == 'trustworthiness']
    assert trust.cells[tier].status == 'ok'  # the other datasets of the tier still count
    # listed as a dataset without a usable result, pointing at the file
    (fail,) = rep.failures
    assert (fail.dataset, fail.stage) == (name, 'result') and fail.log.endswith(f'{name}.json')
    md = to_markdown(rep)
    assert f'- {MODEL}/{name}: ' in md and words[0] in md
    paths = write(rep, str(tmp_path / 'summary'), 'longctx_x', plots=True)  # plots on: the depth heatmap too
    assert any(os.path.basename(p) == f'depth_longbio_{MODEL}.png' for p in paths['plots'])


def test_a_result_with_every_sample_left_out_has_no_score_by_design_and_is_na(tmp_path):
    """The evaluator writes no accuracy when nothing was answered (every sample over-length): N/A, not a failure."""
    res = tmp_path / 'results' / MODEL
    res.mkdir(parents=True)
    for abbr in ABBRS:
        body = GOOD if abbr != 'longbio_standard_1k' else {'counts': {'n': 4, 'over_length': 4},
                                                           'package_version': [__version__]}
        (res / f'{abbr}.json').write_text(json.dumps(body))
    rep = build(str(tmp_path), [ModelInfo(MODEL)], ABBRS, expected=[(MODEL, a) for a in ABBRS])
    (row,) = [r for r in rep.rows if r.row == 'understanding']
    assert row.cells['1k'].status == 'n/a' and not rep.failures


def _config(root, nolima=False):
    types = {a: 'opencompass_longctx.longbio.dataset.LongBioDataset' for a in ABBRS}
    if nolima:
        types[NOLIMA] = 'opencompass_longctx.nolima.dataset.NoLiMaDataset'
    datasets = [dict(abbr=a, type=t, tier=a.rsplit('_', 1)[1],
                     infer_cfg=dict(retriever=dict(type='ZeroRetriever'),
                                    inferencer=dict(type='opencompass_longctx.run.inferencer.LongCtxGenInferencer')))
                for a, t in types.items()]
    return dict(models=[dict(abbr=MODEL, max_seq_len=4096)], datasets=datasets, work_dir=str(root))


@pytest.mark.parametrize('bad', list(BAD))
def test_the_summarizers_survive_bad_result_files(tmp_path, bad, capsys):
    name, words = make_run(tmp_path, bad), BAD[bad][2]
    cfg = ConfigDict(_config(tmp_path, nolima=True))
    report = LongCtxSummarizer(cfg, plots=True).summarize(time_str='t')
    out = capsys.readouterr().out
    assert 'Long-context tier table' in out and f'- {MODEL}/{name}: ' in out and words[0] in out
    # OpenCompass's own table: the bad dataset is '-' (a count is not part of it), the good ones keep their score
    ours = [ln for ln in out.splitlines() if ln.startswith(name + ' ')]
    assert ours and ours[0].rstrip().endswith('50.00' if bad == 'string count' else '-')
    good = next(a for a in ABBRS if a != name)
    assert any(ln.startswith(good + ' ') and ln.rstrip().endswith('50.00') for ln in out.splitlines())
    assert [f.dataset for f in report.failures] == [name, NOLIMA]
    assert any(ln.startswith(NOLIMA + ' ') for ln in out.splitlines())   # NoLiMa's own figures read it the same way


@pytest.mark.e2e
def test_report_cli_on_bad_result_files_with_plots(tmp_path):
    run = tmp_path / '20260101_000000'
    for bad in BAD:  # all of them in one run: one command
        make_run(run, bad)
    (run / 'configs').mkdir()
    (run / 'configs' / 'run.py').write_text('\n'.join(f'{k} = {v!r}' for k, v in _config(run).items()) + '\n')
    proc = subprocess.run([sys.executable, '-m', 'opencompass_longctx.report', str(tmp_path), '--fail-on-missing'],
                          capture_output=True, text=True, cwd=tmp_path)
    assert 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 1  # the table is written and printed first, then the run is failed
    assert os.path.isfile(run / 'summary' / 'longctx_report_plots' / f'depth_longbio_{MODEL}.png')
    for name, _, words in BAD.values():
        assert f'- {MODEL}/{name}: ' in proc.stdout and words[0] in proc.stdout
        assert f'{MODEL}/{name}: ' in proc.stderr
    assert f'{len(BAD)} dataset(s) of the run failed or have no usable result' in proc.stderr


def test_an_output_directory_that_cannot_be_made_is_one_line_and_exit_2(tmp_path, capsys):
    from opencompass_longctx.report import main
    run = tmp_path / '20260101_000000'
    make_run(run, 'string accuracy')
    (run / 'configs').mkdir()
    (run / 'configs' / 'run.py').write_text('\n'.join(f'{k} = {v!r}' for k, v in _config(run).items()) + '\n')
    afile = tmp_path / 'afile'
    afile.write_text('')
    for out, why in ((afile, 'File exists'), (afile / 'sub', 'Not a directory')):
        assert main([str(run), '-o', str(out), '--no-plots', '--no-html']) == 2
        err = capsys.readouterr().err
        assert err.count('\n') == 1 and f"cannot write the report to '{out}': {why}" in err, err
