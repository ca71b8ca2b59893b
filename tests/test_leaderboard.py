"""The leaderboard run through the real `opencompass` command with LongCtxPartitioner and LMDeploy model configs,
served by a test double of LMDeploy's engine (tests/doubles/lmdeploy_double.py: only the engine LMDeploy would
build is replaced; validation, preflight, chat template, OpenCompass's TurboMind wrapper and LMDeploy's own pipeline,
tokenizer and backend choice are real). Two models (tp=1 and
tp=2) and three bands of tiny tiers: the engines started are the plan's, no batch is larger than its engine's
max_batch_size, and every prediction is in its place (none skipped as over-length by an undersized engine)."""
import glob
import json
import os

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass, summary_by_dataset
from opencompass_longctx.overlength import OVER_LENGTH

pytestmark = pytest.mark.e2e
CONFIG = REPO / 'tests' / 'configs' / 'leaderboard_double.py'


def test_reduced_leaderboard_run_loads_each_model_once_per_band(tmp_path, tiny_model_dir):
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k', '1k', '2k'), tasks=['qa1', 'qa2'], samples=3)
    log = tmp_path / 'lmdeploy.jsonl'
    env = {'LONGCTX_TINY_MODEL': tiny_model_dir, 'LONGCTX_TEST_DATA': str(tmp_path / 'babilong'),
           'NOLIMA_TEST_DATA': str(tmp_path / 'nolima'), 'LONGCTX_FAKE_LMDEPLOY_LOG': str(log),
           'LONGCTX_CACHE_DIR': str(tmp_path / 'cache'), 'CUDA_VISIBLE_DEVICES': '0,1',
           'PYTHONPATH': os.pathsep.join([str(REPO / 'tests' / 'doubles'), os.environ.get('PYTHONPATH', '')])}
    proc = run_opencompass([str(CONFIG), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    assert_clean_logs(run)
    plan = json.load(open(os.path.join(run, 'plan', 'longctx_plan.json')))
    assert plan['tasks'] == plan['engine_starts'] == 6                     # 2 models x 3 bands
    assert plan['problems'] == []
    assert {m: d['engine_starts'] for m, d in plan['models'].items()} == {'double-tp1': 3, 'double-tp2': 3}

    records = [json.loads(line) for line in open(log)]
    engines = {r['pid']: r for r in records if r['event'] == 'engine'}
    # the engines started are exactly the plan's, with its session_len and max_batch_size
    started = sorted((f"double-tp{e['tp']}", e['session_len'], e['max_batch_size']) for e in engines.values())
    planned = sorted((t['model'], t['engine']['session_len'], t['engine']['max_batch_size'])
                     for t in plan['task_list'])
    assert started == planned
    for e in engines.values():                                            # tp GPUs per engine, as scheduled
        assert len(e['cuda_visible_devices'].split(',')) == e['tp']
    # bands are sized per band: three different session lengths per model, batch sizes that differ with them
    assert len({(e['tp'], e['session_len']) for e in engines.values()}) == 6
    batches = [r for r in records if r['event'] == 'batch']
    assert batches and all(b['size'] <= engines[b['pid']]['max_batch_size'] for b in batches)
    assert max(b['size'] for b in batches) > 1                            # short bands batch several prompts

    # every dataset of every model has all its predictions, each a real answer (none over-length)
    datasets = [t['datasets'] for t in plan['task_list']]
    for model in ('double-tp1', 'double-tp2'):
        abbrs = sorted({a for t in plan['task_list'] if t['model'] == model for a in t['datasets']})
        assert len(abbrs) == 10
        for abbr in abbrs:
            preds = json.load(open(os.path.join(run, 'predictions', model, f'{abbr}.json')))
            assert preds and all(p['prediction'] != OVER_LENGTH for p in preds.values()), (model, abbr)
    assert sum(len(d) for d in datasets) == 20
    # the double answers bAbI questions with the rule reader: BABILong scores are real, not placeholders
    summary = summary_by_dataset(run)
    for tier in ('0k', '1k', '2k'):
        assert float(summary[f'babilong_qa1_{tier}']['double-tp1']) == 100.0
        assert float(summary[f'babilong_qa1_{tier}']['double-tp2']) == 100.0
