"""NoLiMa end to end through the real `opencompass` command (subprocess runner, not --debug) with the
project's tiny CPU chat model and stand-in data in the real layout. OpenCompass exits 0 even when tasks fail,
so every test reads the summary, the predictions, the results and the task logs."""
import glob
import json
import os

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass, summary_by_dataset as summary_rows
from opencompass_longctx.nolima import metrics as nm
from opencompass_longctx.demo import nolima_data

pytestmark = pytest.mark.e2e
VARIANTS = ['main', 'hard', 'cot', 'mc', 'direct', 'distractor']


def _env(tmp, data, tiers, pairs=2):
    return {'NOLIMA_TEST_DATA': str(data), 'NOLIMA_TEST_TIERS': tiers, 'NOLIMA_TEST_PAIRS': str(pairs),
            'LONGCTX_TINY_MODEL': str(tmp / 'tiny'), 'LONGCTX_CACHE_DIR': str(tmp / 'cache'),
            'HF_HUB_OFFLINE': '1', 'LONGCTX_PROGRESS': '0'}


@pytest.fixture(scope='module')
def variants_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp('nolima_e2e')
    data = cwd / 'nolima'
    nolima_data.write(str(data), book_tokens=3000)
    env = _env(cwd, data, '250')
    proc = run_opencompass([str(REPO / 'tests' / 'configs' / 'nolima_variants.py'), '-w', 'out'], cwd, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = glob.glob(str(cwd / 'out' / '*'))
    return cwd, run_dir, env, proc


def test_every_variant_runs_and_is_summarised(variants_run):
    _, run_dir, _, proc = variants_run
    assert_clean_logs(run_dir)
    rows = summary_rows(run_dir)
    for v in VARIANTS:
        r = rows[f'nolima_{v}_250']
        assert r['metric'] == 'accuracy' and r['mode'] == 'gen'
        float(r['tiny-chat'])  # a number, not '-'
        res = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', f'nolima_{v}_250.json')))
        assert res['metric'] == ['contains'] and res['counts'][0]['n'] == 12
        assert float(r['tiny-chat']) == pytest.approx(res['accuracy'])
        c = res['counts'][0]
        # the random model's answers: every test is scored, the empty ones counted apart
        assert c['correct'] + c['empty'] + c['blocked'] + c['invalid'] + c['empty_after_reasoning'] <= 12
        d = res['details'][0]
        assert d['variant'] == [v] and d['context_length'] == [250] and d['haystack'] == ['rand_book_1']
        assert {k for k in ('pair', 'question_type', 'order', 'depth') if k in d} == {'pair', 'question_type',
                                                                                    'order', 'depth'}
    # main at 500 does not fit the model (max_seq_len 1500): nothing sent, no score, every test counted
    over = json.load(open(os.path.join(run_dir, 'results', 'tiny-chat', 'nolima_main_500.json')))
    assert 'accuracy' not in over and over['counts'][0]['over_length'] == 12 == over['counts'][0]['n']
    assert rows['nolima_main_500']['tiny-chat'] == '-'
    assert all(d['over_length'] == [True] for d in over['details'])
    assert float(rows['nolima_250_variants']['tiny-chat']) == pytest.approx(
        sum(float(rows[f'nolima_{v}_250']['tiny-chat']) for v in VARIANTS) / 6)
    assert float(rows['nolima_main_base_score']['tiny-chat']) == pytest.approx(
        float(rows['nolima_main_250']['tiny-chat']))  # one base length: best = the 250 score per pair
    (report,) = glob.glob(os.path.join(run_dir, 'summary', 'nolima_*.md'))
    assert '| tiny-chat | main |' in open(report).read() and 'NoLiMa: base score' in proc.stdout


def test_prompts_are_the_authors_system_message_and_template(variants_run):
    cwd, run_dir, env, _ = variants_run
    os.environ['LONGCTX_CACHE_DIR'] = env['LONGCTX_CACHE_DIR']
    from opencompass_longctx.nolima.dataset import load_nolima
    for v in ('main', 'cot', 'distractor'):
        ds = load_nolima('250', needle_set=v, path=env['NOLIMA_TEST_DATA'], pairs=2, haystacks=[0, 3],
                         depth_indices=[0, 12, 25])
        preds = json.load(open(os.path.join(run_dir, 'predictions', 'tiny-chat', f'nolima_{v}_250.json')))
        assert len(preds) == len(ds) == 12
        for i, p in preds.items():
            system, user = p['origin_prompt']
            assert system == {'role': 'SYSTEM', 'prompt': 'You are a helpful assistant'}
            assert user['role'] == 'HUMAN' and user['prompt'] == ds[int(i)]['prompt']  # byte-exact
            assert p['gold'] == ds[int(i)]['answer']
    # the faithful decoding budget (192 new tokens) is what the base config gives the inferencer
    (cfg,) = glob.glob(os.path.join(run_dir, 'configs', '*.py'))
    text = open(cfg).read()
    assert "max_out_len=192" in text and 'NoLiMaEvaluator' in text
    log = open(os.path.join(run_dir, 'logs', 'infer', 'tiny-chat', 'nolima_main_250.out')).read()
    # the tiny demo model writes at most its out_len_cap (8) new tokens of the 192 the dataset gives it
    assert "'max_new_tokens': 8" in log


@pytest.fixture(scope='module')
def lengths_data(tmp_path_factory):
    cwd = tmp_path_factory.mktemp('nolima_len')
    data = cwd / 'nolima'
    nolima_data.write(str(data), book_tokens=5000, variants=['main'])
    return cwd, data


def _oracle_predictions(run_dir, env, tiers, fail_at):
    """Predictions files as OpenCompass writes them: the gold name, except (per tier) the indices in
    fail_at[tier], answered with None (blocked), '' (empty) or a wrong name in turn."""
    os.environ['LONGCTX_CACHE_DIR'] = env['LONGCTX_CACHE_DIR']
    from opencompass_longctx.nolima.dataset import load_nolima
    records, bad = [], ['', None, 'Nobody']
    for t in tiers:
        ds = load_nolima(t, path=env['NOLIMA_TEST_DATA'], pairs=int(env['NOLIMA_TEST_PAIRS']), haystacks=[0, 1],
                         depth_indices=[0, 25])
        preds = {}
        for i, r in enumerate(ds):
            wrong = i in fail_at.get(t, ())
            pred = bad[fail_at[t].index(i) % 3] if wrong else f'The answer is {r["answer"]}.'
            preds[str(i)] = {'origin_prompt': r['prompt'][:50], 'prediction': pred, 'gold': r['answer']}
            records.append(dict(context_length=r['context_length'], pair=r['pair'], haystack=r['haystack'],
                                correct=not wrong))
        path = os.path.join(run_dir, 'predictions', 'tiny-chat', f'nolima_main_{t}.json')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        json.dump(preds, open(path, 'w'))
    return records


def test_base_score_and_effective_length_through_the_eval_pipeline(lengths_data):
    cwd, data = lengths_data
    tiers = ['250', '500', '1k', '2k', '4k']
    env = _env(cwd, data, ','.join(tiers), pairs=3)  # 3 pairs x 2 books x 2 depths = 12 tests per tier
    run_dir = cwd / 'out' / '20000101_000000'
    fail_at = {'250': [0, 5], '500': [3], '1k': [1, 2], '2k': [0, 1, 2, 3, 4, 5], '4k': [7]}
    records = _oracle_predictions(str(run_dir), env, tiers, fail_at)
    proc = run_opencompass([str(REPO / 'tests' / 'configs' / 'nolima_lengths.py'), '-w', 'out', '-m', 'eval',
                            '-r', '20000101_000000'], cwd, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_clean_logs(str(run_dir))
    rows = summary_rows(str(run_dir))
    acc = nm.accuracy_by_length(records)
    for t, L in zip(tiers, (250, 500, 1000, 2000, 4000)):
        assert float(rows[f'nolima_main_{t}']['tiny-chat']) == pytest.approx(acc[L], abs=0.01)
        res = json.load(open(run_dir / 'results' / 'tiny-chat' / f'nolima_main_{t}.json'))
        c = res['counts'][0]
        n_bad = len(fail_at[t])
        assert (c['empty'], c['blocked']) == ((n_bad + 2) // 3, (n_bad + 1) // 3)
    base = nm.base_score(nm.per_pair_haystack(records))
    assert float(rows['nolima_main_base_score']['tiny-chat']) == pytest.approx(base, abs=0.01)
    assert float(rows['nolima_main_threshold']['tiny-chat']) == pytest.approx(0.85 * base, abs=0.01)
    # 1K passes (10/12 >= 0.85 x base), 2K fails (6/12), 4K passes again: contiguous 1K, raw 4K
    assert acc[1000] >= 0.85 * base > acc[2000] and acc[4000] >= 0.85 * base
    assert float(rows['nolima_main_effective_length']['tiny-chat']) == 1.0
    (rep,) = glob.glob(str(run_dir / 'summary' / 'nolima_*.json'))
    main = json.load(open(rep))['tiny-chat']['main']
    assert (main['effective_length'], main['raw_effective_length']) == ('1K', '4K')
    assert main['n'] == {'250': 12, '500': 12, '1000': 12, '2000': 12, '4000': 12}
    assert float(rows['nolima_main_avg']['tiny-chat']) == pytest.approx((acc[1000] + acc[2000] + acc[4000]) / 3,
                                                                       abs=0.01)


def test_a_tier_longer_than_the_books_stops_the_run_with_a_clear_error(lengths_data, tmp_path):
    _, data = lengths_data
    env = _env(tmp_path, data, '32k')
    proc = run_opencompass([str(REPO / 'tests' / 'configs' / 'nolima_lengths.py'), '-w', 'out'], tmp_path, env)
    out = proc.stdout + proc.stderr
    assert 'HaystackTooShortError: haystack too short for L=32000' in out
    assert 'more)' in out and 'The longer tier is not available either' in out
    assert not glob.glob(str(tmp_path / 'out' / '*' / 'predictions' / '*' / '*.json'))


def test_missing_data_stops_the_run_and_says_how_to_get_it(tmp_path):
    env = _env(tmp_path, tmp_path / 'no_such_dir', '1k')
    proc = run_opencompass([str(REPO / 'tests' / 'configs' / 'nolima_lengths.py'), '-w', 'out'], tmp_path, env)
    out = proc.stdout + proc.stderr
    assert 'DataNotFoundError: NoLiMa data not found' in out
    assert 'huggingface-cli download amodaresi/NoLiMa --repo-type dataset --revision' in out
