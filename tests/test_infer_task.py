"""LongCtxInferTask and LongCtxEvalTask: a task that holds a whole tier band (or a chunk of evaluations) runs every
dataset even when one fails, and each failure reaches the tier table with its own reason (through the real
`opencompass` command)."""
import glob
import json
import os

from conftest import REPO, run_opencompass
from opencompass_longctx.tasks import FAILED

CONFIG = REPO / 'tests' / 'configs' / 'infer_task_continue.py'


def test_one_failing_dataset_does_not_stop_its_band(tmp_path):
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k', '1k'), tasks=['qa1', 'qa2'], samples=2)
    env = {'LONGCTX_TEST_DATA': str(tmp_path / 'babilong'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(CONFIG), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    plan = json.load(open(os.path.join(run, 'plan', 'longctx_plan.json')))
    assert plan['tasks'] == 1                                   # one band: the three datasets in one task
    (log,) = glob.glob(os.path.join(run, 'logs', 'infer', 'rule-reader', '*.out'))
    text = open(log).read()
    assert f'{FAILED} [rule-reader/longbio_no_such_cell_1k]: LongBioConfigError' in text
    assert 'datasets of this infer task failed, the others ran: longbio_no_such_cell_1k' in text
    # the datasets after the failing one ran and were scored
    for abbr in ('babilong_qa1_0k', 'babilong_qa2_1k'):
        assert os.path.isfile(os.path.join(run, 'predictions', 'rule-reader', f'{abbr}.json'))
        res = json.load(open(os.path.join(run, 'results', 'rule-reader', f'{abbr}.json')))
        assert res['accuracy'] == 100.0
    (eval_log,) = glob.glob(os.path.join(run, 'logs', 'eval', 'rule-reader', '*.out'))   # one eval task for all
    assert f'{FAILED} [rule-reader/longbio_no_such_cell_1k]' in open(eval_log).read()
    # the tier table names the failing dataset with its own exception and log
    (js,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))
    failures = json.load(open(js))['failures']
    (f,) = [f for f in failures if f['dataset'] == 'longbio_no_such_cell_1k']
    assert f['stage'] == 'infer' and "unknown LongBioBench cell 'no_such_cell'" in f['reason'] and f['log']
