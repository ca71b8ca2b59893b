"""End to end through the real `opencompass` command (subprocess runner, not --debug), with the project's
tiny CPU chat model. OpenCompass exits 0 even when tasks fail, so every test reads the summary, the
predictions, the results and the task logs."""
import glob
import json
import os
import shutil

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass, summary_by_dataset
from opencompass_longctx.babilong.scoring import score_one

pytestmark = pytest.mark.e2e
DEMO = REPO / 'examples' / 'eval_longctx_demo.py'
TIERS = ('0k', '1k', '2k')
TASKS = [f'qa{i}' for i in range(1, 11)]


def summary_rows(run_dir):
    return list(summary_by_dataset(run_dir).values())


@pytest.fixture(scope='module')
def demo_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp('demo')
    env = {'LONGCTX_CACHE_DIR': str(cwd / 'cache'), 'HF_HUB_OFFLINE': '1', 'LONGCTX_PROGRESS': '0'}
    env.pop('LONGCTX_TINY_MODEL', None)
    proc = run_opencompass([str(DEMO)], cwd, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = glob.glob(str(cwd / 'outputs' / 'longctx_demo' / 'runs' / '*'))
    return cwd, run_dir, env, proc


def test_demo_summary_has_a_number_in_every_row(demo_run):
    cwd, run_dir, _, proc = demo_run
    assert_clean_logs(run_dir)
    rows = summary_rows(run_dir)
    names = [r['dataset'] for r in rows]
    from mmengine.config import Config
    cfg = Config.fromfile(str(DEMO))
    expected_sets = [d['abbr'] for d in cfg['datasets']]
    expected_groups = [f'babilong_qa1-qa{n}_{t}' for t in TIERS for n in (5, 10)] + [
        f'longbio_{row}_{t}' for t in ('0k', '2k') for row in ('understanding', 'reasoning', 'trustworthiness', 'mean')]
    assert names == expected_groups + expected_sets
    assert {a.split('_')[0] for a in expected_sets} == {'babilong', 'longbio', 'nolima'}  # all three benchmarks
    for r in rows:
        float(r['tiny-chat'])  # a number, not '-'
        assert r['metric'] == ('naive_average' if r['dataset'] in expected_groups else 'accuracy')
    (js,) = glob.glob(os.path.join(run_dir, 'summary', 'longctx_*.json'))
    benches = {(r['bench'], r['row']) for r in json.load(open(js))['rows']}
    assert {('babilong', 'qa1-qa5'), ('longbio', 'mean'), ('nolima', 'main'), ('nolima', 'main one-hop')} <= benches
    plots = {os.path.basename(p) for p in glob.glob(os.path.join(js[:-5] + '_plots', '*.png'))}
    # depth x tier heatmaps from the per-sample needle depths of LongBioBench and NoLiMa
    assert {'depth_longbio_tiny-chat.png', 'depth_nolima_tiny-chat.png', 'score_vs_tier_babilong_qa1-qa5.png',
            'score_vs_tier_nolima_main_one-hop.png'} <= plots
    # the tiny model was built on first use inside the run, and the demo data written by the loader
    assert os.path.isfile(cwd / 'outputs' / 'longctx_demo' / 'tiny-chat' / 'config.json')
    assert os.path.isfile(cwd / 'outputs' / 'longctx_demo' / 'babilong' / 'data' / 'qa7' / '2k.json')
    assert 'babilong_qa1-qa5_2k' in proc.stdout  # the table is printed


def test_demo_sends_exact_prompts_and_records_details(demo_run):
    _, run_dir, env, _ = demo_run
    from opencompass_longctx.babilong.dataset import load_babilong
    os.environ['LONGCTX_CACHE_DIR'] = env['LONGCTX_CACHE_DIR']
    from mmengine.config import Config
    n = Config.fromfile(str(DEMO))['NUM_SAMPLES']
    ds = load_babilong(tier='1k', task='qa2', path=os.path.join(os.path.dirname(os.path.dirname(run_dir)),
                                                                'babilong'), num_samples=n)
    preds = json.load(open(os.path.join(run_dir, 'predictions', 'tiny-chat', 'babilong_qa2_1k.json')))
    assert len(preds) == n
    for i, p in preds.items():
        (turn,) = p['origin_prompt']  # one user turn, no system message
        assert turn['role'] == 'HUMAN'
        assert turn['prompt'] == ds[int(i)]['prompt']  # byte-exact: no list repr, no added newline
        assert p['gold'] == ds[int(i)]['target']
    res = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', 'babilong_qa2_1k.json')))
    details = res['details']  # OpenCompass stores each detail field as a one-element list
    assert res['counts'] == [{'n': n, 'correct': sum(d['correct'][0] for d in details),
                              'invalid_predictions': sum(d.get('invalid_prediction', [False])[0] for d in details),
                              'over_length': 0, 'engine_too_small': 0, 'engine_error': 0}]
    assert res['scoring_mode'] == ['official']
    assert len(details) == n and all(d['answer'] == [p['gold']] for d, p in zip(details, preds.values()))


def oracle_answer(task, target):
    return 'apple, milk' if target == 'apple,milk' else f'{target}.'


def test_oracle_predictions_score_through_the_eval_pipeline(demo_run):
    """Replace the model's predictions with the gold answers and re-run only evaluation (-m eval -r)."""
    cwd, run_dir, env, _ = demo_run
    run_copy = os.path.join(os.path.dirname(run_dir), '20000101_000000')
    shutil.copytree(run_dir, run_copy, ignore=shutil.ignore_patterns('results', 'summary'))
    expected = {}
    for path in glob.glob(os.path.join(run_copy, 'predictions', 'tiny-chat', 'babilong_*.json')):
        preds = json.load(open(path))
        abbr = os.path.basename(path)[:-5]
        task = abbr.split('_')[1]
        for p in preds.values():
            p['prediction'] = oracle_answer(task, p['gold'])
        json.dump(preds, open(path, 'w'))
        hits = [score_one(p['prediction'], p['gold'], p['origin_prompt'][0]['prompt'].rsplit('Question: ', 1)[1],
                          task)['correct'] for p in preds.values()]
        expected[abbr] = 100.0 * sum(hits) / len(hits)
    proc = run_opencompass([str(DEMO), '-m', 'eval', '-r', '20000101_000000'], cwd, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_clean_logs(run_copy)
    got = {r['dataset']: float(r['tiny-chat']) for r in summary_rows(run_copy)}
    for abbr, acc in expected.items():
        assert got[abbr] == pytest.approx(acc, abs=0.01), abbr
    # the official rule never accepts qa7 'none' (it contains 'one'); every other task is perfect
    for t in TIERS:
        for q in TASKS:
            if q != 'qa7':
                assert got[f'babilong_{q}_{t}'] == 100.0
    qa7 = [json.load(open(f)) for f in glob.glob(os.path.join(run_copy, 'predictions', 'tiny-chat', 'babilong_qa7_*'))]
    n_none = sum(p['gold'] == 'none' for preds in qa7 for p in preds.values())
    assert n_none > 0 and min(got[f'babilong_qa7_{t}'] for t in TIERS) < 100.0
    assert got['babilong_qa1-qa5_1k'] == 100.0


def test_three_scoring_modes_in_one_run(tmp_path, demo_babilong):
    env = {'LONGCTX_TEST_DATA': str(demo_babilong), 'LONGCTX_TEST_TIER': '1k',
           'LONGCTX_TINY_MODEL': str(tmp_path / 'tiny'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(REPO / 'tests' / 'configs' / 'babilong_modes.py'), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = glob.glob(str(tmp_path / 'out' / '*'))
    assert_clean_logs(run_dir)
    rows = summary_rows(run_dir)
    assert len(rows) == 24
    for r in rows:
        float(r['tiny-chat'])
        mode = r['dataset'].rsplit('_', 1)[1]
        res = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', r['dataset'] + '.json')))
        assert res['scoring_mode'] == [mode] and res['counts'][0]['n'] == 3


def test_unknown_tier_stops_the_run_with_a_clear_error(tmp_path):
    proc = run_opencompass([str(REPO / 'tests' / 'configs' / 'bad_tier.py')], tmp_path)
    assert proc.returncode != 0
    assert "TierError: unknown tier '12q'; accepted:" in proc.stderr


def test_over_length_tier_is_skipped_and_reported_as_not_applicable(tmp_path):
    """max_seq_len 1200 holds the 0k prompts but no 2k prompt: those are never sent to the model (no silent
    truncation), counted as over-length, and the tier table shows N/A for 2k, not 0."""
    from opencompass_longctx.demo import babilong_data
    from opencompass_longctx.overlength import OVER_LENGTH
    babilong_data.write(str(tmp_path / 'data'), tiers=('0k', '2k'), tasks=[f'qa{i}' for i in range(1, 6)], samples=3)
    env = {'LONGCTX_TEST_DATA': str(tmp_path / 'data'), 'LONGCTX_TINY_MODEL': str(tmp_path / 'tiny'),
           'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(REPO / 'tests' / 'configs' / 'babilong_overlength.py'), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = glob.glob(str(tmp_path / 'out' / '*'))
    assert_clean_logs(run_dir)
    preds = json.load(open(os.path.join(run_dir, 'predictions', 'tiny-chat', 'babilong_qa1_2k.json')))
    assert [p['prediction'] for p in preds.values()] == [OVER_LENGTH] * 3
    preds0 = json.load(open(os.path.join(run_dir, 'predictions', 'tiny-chat', 'babilong_qa1_0k.json')))
    assert all(p['prediction'] != OVER_LENGTH for p in preds0.values())
    res = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', 'babilong_qa3_2k.json')))
    assert res['counts'][0]['over_length'] == 3 and 'accuracy' not in res
    infer_log = open(glob.glob(os.path.join(run_dir, 'logs', 'infer', 'tiny-chat', '*.out'))[0]).read()
    assert "over-length policy 'skip': 3 of 3 prompts" in infer_log
    (js,) = glob.glob(os.path.join(run_dir, 'summary', 'longctx_*.json'))
    (row,) = json.load(open(js))['rows']
    assert row['cells']['2k']['status'] == 'n/a' and 'longer than the model' in row['cells']['2k']['reason']
    assert row['cells']['0k']['status'] == 'ok' and row['mean'] == row['cells']['0k']['score']
    assert '| N/A |' in open(js[:-5] + '.md').read()
