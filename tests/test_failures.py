"""Failures surface (issue 13 item 5): the tier table lists every dataset of the run whose task failed, with the
exception's last line and the task log, and fail_on_missing (or LONGCTX_FAIL_ON_MISSING=1) makes `opencompass`
exit non-zero. Task logs are read the way OpenCompass writes them: a log per task, named after its first dataset."""
import glob
import json
import os
import shutil

import pytest

from conftest import REPO, run_opencompass
from opencompass_longctx.leaderboard.failures import find_failures, last_exception
from opencompass_longctx.leaderboard.runs import table_inputs
from opencompass_longctx.summarizers.longctx import LongCtxSummarizer
from opencompass_longctx.writers.formats import to_markdown
from opencompass_longctx.leaderboard.build import ModelInfo, build
from opencompass_longctx.leaderboard.results import Results
TRACEBACK = '''11/30 20:48:14 - OpenCompass - INFO - Task [m/a_1k,m/b_1k]
11/30 20:48:14 - OpenCompass - INFO - The Progress of This Task --> Models: 1/1, Datasets: 1/2
Traceback (most recent call last):
  File "/x/openicl_infer.py", line 93, in run
    self.dataset = build_dataset_from_cfg(self.dataset_cfg)
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
pkg.DataNotFoundError: babilong: qa1/1k not found. Searched:
  /data/babilong
Set download=True
'''


def test_last_exception_line():
    # the exception line and the rest of its message, on one line
    assert last_exception(TRACEBACK) == ('pkg.DataNotFoundError: babilong: qa1/1k not found. Searched: /data/babilong '
                                         'Set download=True')
    chained = ('Traceback (most recent call last):\n  File "a", line 1\nKeyError: 1\n\nDuring handling of the above '
               'exception, another exception occurred:\n\nTraceback (most recent call last):\n  File "b", line 2\n'
               'ValueError: bad tier\nsecond line of the message\n11/30 20:48:14 - OpenCompass - INFO - time elapsed')
    assert last_exception(chained) == 'ValueError: bad tier second line of the message'
    assert last_exception('11/30 20:48:14 - OpenCompass - INFO - all fine\n') is None
    assert last_exception('Traceback (most recent call last):\n  File "a"\nE: ' + 'x' * 1000).endswith('…')


def _write(path, text=''):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def test_failures_from_grouped_infer_and_eval_logs(tmp_path):
    run = str(tmp_path)
    order = ['a_1k', 'b_1k', 'c_1k', 'd_1k', 'e_1k', 'f_1k']
    # infer: task [a, b] died on a (b not reached); c, d, e, f inferred
    _write(f'{run}/logs/infer/m/a_1k.out', TRACEBACK)
    for abbr in order[2:]:
        _write(f'{run}/predictions/m/{abbr}.json', '{}')
    # eval: one task [c, d, e] named after c: c scored, d failed, e not reached; f: OpenCompass's error result
    _write(f'{run}/results/m/c_1k.json', json.dumps({'accuracy': 1.0}))
    _write(f'{run}/logs/eval/m/c_1k.out', 'Traceback (most recent call last):\n  File "e.py"\nIndexError: list '
           'index out of range\n')
    _write(f'{run}/results/m/f_1k.json', json.dumps({'error': 'predictions and references differ in length'}))
    expected = [('m', a) for a in order] + [('other', 'a_1k')]
    fails = {f.dataset if f.model == 'm' else 'other': f for f in find_failures(run, expected, Results(run).get)}
    assert set(fails) == {'a_1k', 'b_1k', 'd_1k', 'e_1k', 'f_1k', 'other'}
    a, b = fails['a_1k'], fails['b_1k']
    assert (a.stage, a.reason) == ('infer', last_exception(TRACEBACK))
    assert a.log == os.path.join(run, 'logs', 'infer', 'm', 'a_1k.out') and b.log == a.log
    assert b.reason == f'not reached: its task stopped at a_1k with {a.reason}'
    d, e = fails['d_1k'], fails['e_1k']
    assert (d.stage, d.reason, d.log) == ('eval', 'IndexError: list index out of range',
                                          os.path.join(run, 'logs', 'eval', 'm', 'c_1k.out'))
    assert e.reason == 'not reached: its task stopped at d_1k with IndexError: list index out of range'
    assert (fails['f_1k'].stage, fails['f_1k'].reason) == ('eval', 'predictions and references differ in length')
    assert fails['other'].log is None and 'no task log' in fails['other'].reason


def test_failed_cells_in_the_table(tmp_path):
    run = str(tmp_path)
    abbrs = [f'babilong_qa{i}_{t}' for t in ('0k', '1k') for i in range(1, 6)]
    for abbr in abbrs:
        if abbr != 'babilong_qa3_1k':
            _write(f'{run}/results/m/{abbr}.json', json.dumps({'accuracy': 80.0, 'counts': {'n': 5}}))
    _write(f'{run}/logs/infer/m/babilong_qa3_1k.out', TRACEBACK.replace('m/a_1k,m/b_1k', 'm/babilong_qa3_1k'))
    rep = build(run, [ModelInfo('m')], abbrs, expected=[('m', a) for a in abbrs])
    (row,) = rep.rows
    cell = row.cells['1k']
    assert cell.status == 'failed' and cell.text() == 'FAIL' and 'DataNotFoundError' in cell.reason
    assert row.cells['0k'].status == 'ok' and row.mean == 80.0 and row.mean_note  # * over the tiers with results
    md = to_markdown(rep)
    assert '| m | babilong | qa1-qa5 | 80.0 [' in md and '| FAIL | 80.0* |' in md
    log = os.path.join(run, 'logs', 'infer', 'm', 'babilong_qa3_1k.out')
    assert f'- m/babilong_qa3_1k: infer failed: {last_exception(TRACEBACK)} (log: {log})' in md
    # without `expected` (no run to read) nothing is called a failure
    assert build(run, [ModelInfo('m')], abbrs).rows[0].cells['1k'].status == 'missing'


def test_splits_of_a_dataset_show_its_failure_and_its_na(tmp_path):
    run = str(tmp_path)
    details = [{'question_type': ['onehop'], 'correct': [True], 'over_length': [False]}]
    _write(f'{run}/results/m/nolima_main_250.json', json.dumps({'accuracy': 100.0, 'counts': {'n': 1},
                                                                'details': details}))
    over = [dict(d, over_length=[True]) for d in details]
    _write(f'{run}/results/m/nolima_main_1k.json', json.dumps({'counts': {'n': 1, 'over_length': 1},
                                                               'details': over}))
    _write(f'{run}/logs/infer/m/nolima_main_500.out', TRACEBACK.replace('m/a_1k,m/b_1k', 'm/nolima_main_500'))
    abbrs = ['nolima_main_250', 'nolima_main_500', 'nolima_main_1k']
    rep = build(run, [ModelInfo('m')], abbrs, expected=[('m', a) for a in abbrs])
    rows = {r.row: r for r in rep.rows}
    for row in ('main', 'main one-hop'):
        assert [rows[row].cells[t].text() for t in ('250', '500', '1k')] == ['100.0', 'FAIL', 'N/A'], row


def test_expected_pairs_follow_model_dataset_combinations():
    m1, m2 = dict(abbr='m1'), dict(abbr='m2')
    d1, d2 = dict(abbr='d1'), dict(abbr='d2')
    _, _, expected = table_inputs(dict(models=[m1, m2], datasets=[d1, d2]))
    assert expected == [('m1', 'd1'), ('m1', 'd2'), ('m2', 'd1'), ('m2', 'd2')]
    _, _, expected = table_inputs(dict(models=[m1, m2], datasets=[d1, d2], model_dataset_combinations=[
        dict(models=[m1], datasets=[d1, d2]), dict(models=[m2], datasets=[d1])]))
    assert expected == [('m1', 'd1'), ('m1', 'd2'), ('m2', 'd1')]  # m2/d2 is not run: not a failure


RUN_CONFIG = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.demo.datasets import DemoBabilongDataset
from opencompass_longctx.demo.rule_reader import BabiRuleReader
with read_base():
    from ..configs.datasets.babilong.babilong_0k_gen import babilong_datasets as b0
    from ..configs.datasets.longbio.longbio_0k_gen import longbio_datasets as l0
    from ..configs.summarizers.longctx import summarizer

cells = {d['cell']: d for d in l0}
datasets = [dict(b0[0], type=DemoBabilongDataset, path=DATA, num_samples=2), dict(cells['standard'], num_samples=1),
            # two typos: an unknown cell, and no samples (their task stops at the first)
            dict(cells['standard'], cell='no_such_cell', abbr='longbio_no_such_cell_0k', num_samples=1),
            dict(cells['calculation'], num_samples=0)]
models = [dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=100000, max_out_len=20, batch_size=8,
               run_cfg=dict(num_gpus=0))]
summarizer = dict(summarizer, plots=False)
infer = dict(partitioner=dict(type=NaivePartitioner, n=2),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=100),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLEvalTask)))
'''


@pytest.mark.e2e
def test_a_failing_dataset_is_in_the_table_and_fails_the_run_on_request(tmp_path):
    shutil.copytree(REPO / 'configs', tmp_path / 'configs')
    (tmp_path / 'examples').mkdir()
    cfg = tmp_path / 'examples' / 'run.py'
    cfg.write_text(RUN_CONFIG.replace('DATA', repr(str(tmp_path / 'data'))))
    env = {'LONGCTX_CACHE_DIR': str(tmp_path / 'cache'), 'LONGCTX_FAIL_ON_MISSING': ''}
    proc = run_opencompass([str(cfg), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-3000:]  # opt-in only: OpenCompass's exit status by default
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    log = os.path.join('out', os.path.basename(run), 'logs', 'infer', 'rule-reader', 'longbio_no_such_cell_0k.out')
    unknown = "opencompass_longctx.longbio.cells.LongBioConfigError: unknown LongBioBench cell 'no_such_cell'"
    table = proc.stdout[proc.stdout.index('Long-context tier table'):]
    assert f'- rule-reader/longbio_no_such_cell_0k: infer failed: {unknown}' in table and f'(log: {log})' in table
    assert ('- rule-reader/longbio_calculation_0k: infer failed: not reached: its task stopped at '
            f'longbio_no_such_cell_0k with {unknown}') in table
    assert '| rule-reader | longbio | reasoning | FAIL |' in table  # calculation's row
    assert 'babilong_qa1_0k' not in table.split('Partial rows')[0].split('Failed or missing')[1]  # it ran
    # the opt-in, re-summarising the same run (-m viz): by environment variable, then by the summarizer option
    ts = os.path.basename(run)
    proc = run_opencompass([str(cfg), '-w', 'out', '-m', 'viz', '-r', ts], tmp_path,
                           dict(env, LONGCTX_FAIL_ON_MISSING='1'))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert 'Long-context tier table' in proc.stdout and 'Traceback' not in proc.stderr
    assert '2 dataset(s) of the run failed or have no usable result' in proc.stderr and unknown in proc.stderr
    # the summarizer option, on the run's dumped config (in-process: what `opencompass` calls)
    from mmengine.config import Config
    dumped = Config.fromfile(glob.glob(os.path.join(run, 'configs', '*.py'))[0])
    dumped['work_dir'] = run
    with pytest.raises(SystemExit) as exc:
        LongCtxSummarizer(dumped, plots=False, fail_on_missing=True).summarize(time_str='again')
    assert unknown in str(exc.value.code)
    report = json.load(open(os.path.join(run, 'summary', 'longctx_again.json')))
    assert [(f['dataset'], f['stage']) for f in report['failures']] == [('longbio_no_such_cell_0k', 'infer'),
                                                                        ('longbio_calculation_0k', 'infer')]
    LongCtxSummarizer(dumped, plots=False, fail_on_missing=False).summarize(time_str='again')  # the option wins


def test_the_failure_of_a_model_with_a_slash_in_its_abbr_names_its_nested_log(tmp_path):
    """OpenCompass nests `org/model` as logs/infer/org/model/: the task's log is found there (before: one folder deep
    only, so the task line of a grouped task was never read and the second dataset had no log)."""
    run = str(tmp_path)
    _write(f'{run}/logs/infer/org/model/a_1k.out', TRACEBACK.replace('m/a_1k,m/b_1k', 'org/model/a_1k,org/model/b_1k'))
    fails = {f.dataset: f for f in find_failures(run, [('org/model', 'a_1k'), ('org/model', 'b_1k')],
                                                 Results(run).get)}
    assert set(fails) == {'a_1k', 'b_1k'}
    assert all(f.log == f'{run}/logs/infer/org/model/a_1k.out' for f in fails.values()), fails
    assert fails['a_1k'].stage == 'infer' and 'DataNotFoundError' in fails['a_1k'].reason
