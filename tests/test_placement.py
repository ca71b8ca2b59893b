"""Issue 27: a run whose results cannot all be placed in the tier table ends with a non-zero exit and names them.

The check (opencompass_longctx.leaderboard.placement) on dataset configs, then one real `opencompass` run of the
demo's tiny model with a user-made abbr (``babilong_qa1_0k_sys``): the run exits non-zero naming it, the tier table
is still written, and the opt-outs (the environment variable, the summarizer option, ``--allow-unplaced``) keep
exit 0 with the warning; ``longctx-report`` on the same run does the same.
"""
import glob
import json
import os

import pytest

from conftest import run_opencompass
from report_runs import report_cli

from opencompass_longctx.leaderboard.placement import (ALLOW_ENV, Unplaced, allow_unplaced_enabled, benchmark_spec,
                                                       exit_message, stopping, unplaced)
from opencompass_longctx.writers.formats import unplaced_section as section

BABILONG = 'opencompass_longctx.babilong.dataset.BabilongDataset'
LONGBIO = 'opencompass_longctx.longbio.dataset.LongBioDataset'
NOLIMA = 'opencompass_longctx.nolima.dataset.NoLiMaDataset'


def _reasons(datasets, pairs=None, **kw):
    return {u.dataset: u.reason for u in unplaced(datasets, pairs, **kw)}


def test_placeable_datasets_of_every_benchmark_are_not_listed():
    from opencompass_longctx.babilong.dataset import BabilongDataset
    datasets = [dict(type=BABILONG, abbr=f'babilong_qa{i}_4k', tier='4k') for i in range(1, 11)]
    datasets += [dict(type=BabilongDataset, abbr='babilong_qa1_128k', tier='128k'),   # a class, as in a live run
                 dict(type=LONGBIO, abbr='longbio_standard_1k', tier='1k'),
                 dict(type=LONGBIO, abbr='longbio_strict_idk_2k', tier='2k'),
                 dict(type=NOLIMA, abbr='nolima_main_250', tier='250'),
                 dict(type=NOLIMA, abbr='nolima_cot_4k@my-model', tier='4k'),
                 dict(type='opencompass_longctx.demo.datasets.DemoBabilongDataset', abbr='babilong_qa2_0k', tier='0k')]
    assert unplaced(datasets, [('m', d['abbr']) for d in datasets]) == []


def test_each_reason_is_named():
    found = _reasons([
        dict(type=BABILONG, abbr='babilong_qa1_4k_sys', tier='4k'),        # a user-made abbr
        dict(type=BABILONG, abbr='babilong_qa11_0k', tier='0k'),           # qa11: in no row (qa1-qa5, qa1-qa10)
        dict(type=BABILONG, abbr='babilong_qa1_4..k', tier='4k'),          # the tier part is not a tier
        dict(type=BABILONG, abbr='nolima_main_4k', tier='4k'),             # read as another benchmark's
        dict(type=BABILONG, abbr='babilong_qa2_4k', tier='8k'),            # the abbr names another tier
        dict(type=LONGBIO, abbr='longbio_no_such_cell_1k', tier='1k'),     # a cell in no category
    ])
    assert found['babilong_qa1_4k_sys'].startswith('its abbr matches none of the babilong table names (`^babilong_')
    assert "its task 'qa11' is in no row of the babilong table (rows qa1-qa5: qa1, qa2" in found['babilong_qa11_0k']
    assert found['babilong_qa1_4..k'] == "the tier part of its abbr, '4..k', is not a tier (unknown tier '4..k')"
    assert found['nolima_main_4k'].startswith('its abbr reads as a nolima dataset (main at 4k), but it is a '
                                              'BabilongDataset')
    assert found['babilong_qa2_4k'].startswith("its abbr names tier 4k but its config's tier is 8k")
    assert "its task 'no_such_cell' is in no row of the longbio table" in found['longbio_no_such_cell_1k']
    assert len(found) == 6


def test_other_packages_datasets_are_never_counted():
    gsm8k = dict(type='opencompass.datasets.GSM8KDataset', abbr='gsm8k', path='opencompass/gsm8k')
    mine = dict(type='my_pkg.datasets.MyDataset', abbr='babilong_made_up')
    assert benchmark_spec(gsm8k) is None and benchmark_spec(mine) is None
    assert unplaced([gsm8k, mine], [('m', 'gsm8k'), ('m', 'babilong_made_up')]) == []
    # a config dump read where its class cannot be imported: known by the class name the spec gives
    assert benchmark_spec(dict(type='gone.module.LongBioDataset')).name == 'longbio'


def test_two_datasets_of_one_model_in_one_cell():
    datasets = [dict(type=BABILONG, abbr='babilong_qa1_4k', tier='4k'),
                dict(type=BABILONG, abbr='babilong_qa1_4K', tier='4k')]   # the same cell: the table shows one
    found = _reasons(datasets, [('a', 'babilong_qa1_4k'), ('a', 'babilong_qa1_4K'), ('b', 'babilong_qa1_4k')])
    assert found == {'babilong_qa1_4K': 'for a it reads the same cell (babilong qa1 at 4k) as babilong_qa1_4k: the '
                                        'table shows one of them'}
    # per-model copies (one per model's tokenizer) share a cell across models, never for one model
    copies = [dict(type=NOLIMA, abbr=f'nolima_main_4k@{m}', tier='4k') for m in 'ab']
    assert unplaced(copies, [('a', 'nolima_main_4k@a'), ('b', 'nolima_main_4k@b')]) == []
    assert unplaced([dict(type=BABILONG, abbr='babilong_qa1_4k', tier='4k')] * 2, [('a', 'babilong_qa1_4k')] * 2) == []


def test_results_decide_the_exit_and_the_messages_name_the_ways_out():
    datasets = [dict(type=BABILONG, abbr='babilong_qa1_0k_sys', tier='0k'),
                dict(type=BABILONG, abbr='babilong_qa12_0k', tier='0k')]
    found = unplaced(datasets, [('m', 'babilong_qa1_0k_sys'), ('m', 'babilong_qa12_0k')],
                     has_result=lambda m, a: a == 'babilong_qa1_0k_sys', run='outputs/x/1')
    assert [(u.dataset, u.with_result, u.no_result) for u in found] == [('babilong_qa1_0k_sys', ('m',), False),
                                                                        ('babilong_qa12_0k', (), True)]
    assert [u.dataset for u in stopping(found)] == ['babilong_qa1_0k_sys']   # the other failed: no score to place
    assert found[1].line().endswith('(no result: it is listed under "Failed or missing" too)')
    assert found[0].line().startswith('outputs/x/1: babilong_qa1_0k_sys (babilong): its abbr matches none')
    text = exit_message(stopping(found), 'summary/t.md')
    assert text.startswith('1 dataset(s) of the run cannot be placed in the tier table (summary/t.md)')
    assert 'babilong_qa1_0k_sys' in text and 'allow_unplaced=True' in text and f'{ALLOW_ENV}=1' in text
    assert section(found).startswith('\nNot in the tier table (2 dataset(s)') and section([]) == ''


def test_the_opt_out(monkeypatch):
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    assert not allow_unplaced_enabled(None) and allow_unplaced_enabled(True)
    monkeypatch.setenv(ALLOW_ENV, '1')
    assert allow_unplaced_enabled(None) and not allow_unplaced_enabled(False)   # the option wins
    assert Unplaced('a', 'babilong', 'why').line() == 'a (babilong): why'


RUN_CONFIG = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.demo.datasets import DemoBabilongDataset
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_0k_gen import babilong_datasets as b0
    from opencompass_longctx.configs.datasets.babilong.babilong_base import babilong_system_infer_cfg
    from opencompass_longctx.configs.models.longctx_tiny_chat import models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
qa = [dict(d, type=DemoBabilongDataset, path=DATA, num_samples=2) for d in b0[:5]]
# the README's system-prompt variant under a user-made abbr: the tier table has no place for it
datasets = qa + [dict(qa[0], abbr='babilong_qa1_0k_sys', infer_cfg=babilong_system_infer_cfg)]
summarizer = dict(summarizer, plots=False)
infer = dict(partitioner=dict(type=NaivePartitioner, n=2),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=100),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLEvalTask)))
'''


@pytest.mark.e2e
def test_a_run_with_an_unplaceable_dataset_exits_non_zero_and_names_it(tmp_path, tiny_model_dir, monkeypatch):
    cfg = tmp_path / 'run.py'
    cfg.write_text(RUN_CONFIG.replace('DATA', repr(str(tmp_path / 'data'))))
    env = {'LONGCTX_TINY_MODEL': tiny_model_dir, 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache'), ALLOW_ENV: '',
           'LONGCTX_FAIL_ON_MISSING': ''}
    proc = run_opencompass([str(cfg), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    assert os.path.isfile(os.path.join(run, 'results', 'tiny-chat', 'babilong_qa1_0k_sys.json'))   # it has scores
    assert '1 dataset(s) of the run cannot be placed in the tier table' in proc.stderr
    assert 'babilong_qa1_0k_sys (babilong): its abbr matches none of the babilong table names' in proc.stderr
    assert 'allow_unplaced=True' in proc.stderr
    # the table is written as before (qa1-qa5 from the five placed datasets), the list after it: printed, in the
    # markdown and in the JSON
    table = proc.stdout[proc.stdout.index('Long-context tier table'):]
    assert '| tiny-chat | babilong | qa1-qa5 |' in table
    assert '- babilong_qa1_0k_sys (babilong): its abbr matches none' in table.split('Not in the tier table (1 ')[1]
    (md,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.md'))
    assert 'Not in the tier table (1 dataset(s)' in open(md, encoding='utf-8').read()
    rep = json.load(open(md[:-3] + '.json', encoding='utf-8'))
    assert [(u['dataset'], u['with_result']) for u in rep['unplaced']] == [('babilong_qa1_0k_sys', ['tiny-chat'])]
    (row,) = [r for r in rep['rows'] if r['row'] == 'qa1-qa5']
    assert row['datasets']['0k']['qa1'] == 'babilong_qa1_0k' and row['cells']['0k']['n'] == 10

    # the opt-out by environment variable, re-summarising the same run (-m viz): exit 0, the warning kept
    ts = os.path.basename(run)
    proc = run_opencompass([str(cfg), '-w', 'out', '-m', 'viz', '-r', ts], tmp_path, dict(env, **{ALLOW_ENV: '1'}))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'Not in the tier table (1 dataset(s)' in proc.stdout
    assert 'not in the tier table: babilong_qa1_0k_sys' in proc.stdout + proc.stderr

    # the summarizer option, on the run's dumped config (in-process: what `opencompass` calls at its end)
    from mmengine.config import Config

    from opencompass_longctx.summarizers.longctx import LongCtxSummarizer
    dumped = Config.fromfile(glob.glob(os.path.join(run, 'configs', '*.py'))[0])
    dumped['work_dir'] = run
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    with pytest.raises(SystemExit) as exc:
        LongCtxSummarizer(dumped, plots=False).summarize(time_str='again')
    assert 'babilong_qa1_0k_sys' in str(exc.value.code)
    LongCtxSummarizer(dumped, plots=False, allow_unplaced=True).summarize(time_str='again')   # no exit

    # longctx-report reads the run's files: the same check, the same exit, its own flag
    proc = report_cli(run, '--no-plots', '--no-html', '-o', tmp_path / 'rep', cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert f'{run}: babilong_qa1_0k_sys (babilong): its abbr matches none' in proc.stderr
    assert json.load(open(tmp_path / 'rep' / 'longctx_report.json'))['unplaced'][0]['dataset'] == 'babilong_qa1_0k_sys'
    proc = report_cli(run, '--no-plots', '--no-html', '-o', tmp_path / 'rep', '--allow-unplaced', cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'warning: 1 dataset(s) of the runs are not in the tier table' in proc.stderr
    assert 'Not in the tier table (1 dataset(s)' in open(tmp_path / 'rep' / 'longctx_report.md').read()
