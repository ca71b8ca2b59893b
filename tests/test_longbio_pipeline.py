"""LongBioBench end to end through the real `opencompass` command (subprocess runner, not --debug) with the
project's tiny CPU chat model: all 15 cells at 0k, 2k, 8k and 128k in both modes, then the same run
re-evaluated on oracle predictions. OpenCompass exits 0 even when tasks fail, so the tests read the summary,
the predictions, the results and the task logs."""
import glob
import json
import os
import shutil

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass, summary_by_dataset as summary
from opencompass_longctx.longbio.catalogue import LONGBIO_CATEGORIES, LONGBIO_CELLS, LONGBIO_NEED_TOKENS
from opencompass_longctx.longbio.dataset import load_longbio
from opencompass_longctx.longbio.scoring import oracle_prediction
from opencompass_longctx.tiers import parse_tier

pytestmark = pytest.mark.e2e
CONFIG = REPO / 'tests' / 'configs' / 'longbio_pipeline.py'
TIERS = ('0k', '2k', '8k', '128k')
HELD = ('0k', '2k')  # the tiers whose prompts the tiny model's 16k window holds
PREFIXES = {'longbio_': 'compat', 'longbio_strict_': 'strict'}
SAMPLES = 2


def expected_datasets():
    return {f"{p}{c['cell']}_{t}": (c['cell'], t, mode) for t in TIERS for p, mode in PREFIXES.items()
            for c in LONGBIO_CELLS if t == '0k' or LONGBIO_NEED_TOKENS[c['cell']] <= parse_tier(t).tokens(1024)}


@pytest.fixture(scope='module')
def longbio_run(tmp_path_factory, tiny_model_dir):
    cwd = tmp_path_factory.mktemp('longbio')
    env = {'LONGCTX_CACHE_DIR': str(cwd / 'cache'), 'LONGCTX_TINY_MODEL': tiny_model_dir, 'HF_HUB_OFFLINE': '1',
           'LONGCTX_PROGRESS': '0', 'LONGBIO_TEST_SAMPLES': str(SAMPLES)}
    proc = run_opencompass([str(CONFIG), '-w', 'out'], cwd, env, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = glob.glob(str(cwd / 'out' / '*'))
    return cwd, run_dir, env


def test_every_cell_tier_and_mode_runs_and_the_summary_shows_three_categories_per_tier(longbio_run):
    cwd, run_dir, _ = longbio_run
    assert_clean_logs(run_dir)
    rows = summary(run_dir)
    expected = expected_datasets()
    assert len(expected) == 2 * (15 + 12 + 15 + 15)   # 2k holds 12 cells (LONGBIO_NEED_TOKENS)
    for abbr, (cell, tier, mode) in expected.items():
        res = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', f'{abbr}.json')))
        if tier in HELD:
            assert rows[abbr]['metric'] == 'accuracy'
            assert 0.0 <= float(rows[abbr]['tiny-chat']) <= 100.0     # a number, not '-'
            assert res['counts'][0]['over_length'] == 0
        else:  # longer than the tiny model's window: not sent, not truncated, counted, and no score
            assert res['counts'][0]['over_length'] == SAMPLES and 'accuracy' not in res, abbr
            assert rows[abbr]['tiny-chat'] == '-'
    for t in HELD:
        for p in PREFIXES:
            for name in [f'{p}mean_{t}'] + [f'{p}{cat}_{t}' for cat in LONGBIO_CATEGORIES]:
                assert rows[name]['metric'] == 'naive_average', name
                float(rows[name]['tiny-chat'])
    assert set(rows) == set(expected) | {f'{p}{n}' for t in TIERS for p in PREFIXES
                                         for n in [f'mean_{t}'] + [f'{c}_{t}' for c in LONGBIO_CATEGORIES]}


def test_prompts_are_sent_exactly_and_results_record_the_mode(longbio_run):
    cwd, run_dir, env = longbio_run
    os.environ['LONGCTX_CACHE_DIR'] = env['LONGCTX_CACHE_DIR']
    for abbr, (cell, tier, mode) in [('longbio_rank_5_8k', ('rank_5', '8k', 'compat')),
                                     ('longbio_strict_idk_128k', ('idk', '128k', 'strict'))]:
        ds = load_longbio(tier, cell=cell, mode=mode, num_samples=SAMPLES)
        preds = json.load(open(os.path.join(run_dir, 'predictions', 'tiny-chat', f'{abbr}.json')))
        assert len(preds) == len(ds) == SAMPLES * (2 if cell == 'idk' else 1)
        for i, p in preds.items():
            # a real system message, the user message and the authors' answer prefix (continued), byte-exact
            system, user, prefix = p['origin_prompt']
            assert (system['role'], user['role'], prefix['role']) == ('SYSTEM', 'HUMAN', 'BOT')
            assert system['prompt'] == ds[int(i)]['system'] and user['prompt'] == ds[int(i)]['user']
            assert prefix['prompt'] == ds[int(i)]['prefix'] and prefix['prefill'] is True
            assert p['gold'] == ds[int(i)]['answer']
        res = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', f'{abbr}.json')))
        scoring = res['scoring'][0]
        assert scoring['mode'] == mode and scoring['cell'] == cell and scoring['model'] == 'tiny-chat'
        assert scoring['authors_truncation'] == (mode == 'compat')   # 'tiny-chat' lacks "instruct"
        assert res['counts'][0]['samples'] == SAMPLES and len(res['details']) == len(ds)
    res = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', 'longbio_strict_idk_2k.json')))
    assert res['headline'] == ['both'] and set(res['submetrics'][0]) == {'answer', 'refusal', 'both'}


def test_oracle_predictions_score_100_in_every_cell_through_the_eval_pipeline(longbio_run):
    """Replace the model's predictions with oracle answers (one dataset with empty ones) and re-run only the
    evaluation (-m eval -r) on a copy of the run."""
    cwd, run_dir, env = longbio_run
    os.environ['LONGCTX_CACHE_DIR'] = env['LONGCTX_CACHE_DIR']
    run_copy = os.path.join(os.path.dirname(run_dir), '20000101_000000')
    shutil.copytree(run_dir, run_copy, ignore=shutil.ignore_patterns('results', 'summary'))
    expected = expected_datasets()
    for abbr, (cell, tier, mode) in expected.items():
        path = os.path.join(run_copy, 'predictions', 'tiny-chat', f'{abbr}.json')
        preds = json.load(open(path))
        ds = load_longbio(tier, cell=cell, mode=mode, num_samples=SAMPLES)
        for i, p in preds.items():
            p['prediction'] = '' if abbr == 'longbio_rank_2_8k' else oracle_prediction(json.loads(ds[int(i)]['label']))
        json.dump(preds, open(path, 'w'))
    proc = run_opencompass([str(CONFIG), '-w', 'out', '-m', 'eval', '-r', '20000101_000000'], cwd, env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_clean_logs(run_copy)
    got = {k: float(v['tiny-chat']) for k, v in summary(run_copy).items()}
    for abbr in expected:
        assert got[abbr] == (0.0 if abbr == 'longbio_rank_2_8k' else 100.0), abbr
    for t in TIERS:
        for p in PREFIXES:
            reasoning = 100.0 * 5 / 6 if (p, t) == ('longbio_', '8k') else 100.0
            assert got[f'{p}reasoning_{t}'] == pytest.approx(reasoning, abs=0.01)
            assert got[f'{p}understanding_{t}'] == got[f'{p}trustworthiness_{t}'] == 100.0
            assert got[f'{p}mean_{t}'] == pytest.approx((200.0 + reasoning) / 3, abs=0.01)
