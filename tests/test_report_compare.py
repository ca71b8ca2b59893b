"""Which model is better (issue 19): paired differences of two separate real runs, checked against a hand
computation on the runs' per-sample details (scipy's exact binomial test and Clopper-Pearson interval, an
implementation independent of the package's); over-length samples left out and counted; the ranking's groups."""
import json
import os
import shutil

import pytest
from scipy.stats import binomtest

from opencompass_longctx.overlength import OVER_LENGTH
from report_runs import read_csv, report, report_runs  # noqa: F401 (report_runs: the fixture)

pytestmark = pytest.mark.e2e

TASKS = [f'qa{i}' for i in range(1, 6)]


def correct(run, model, abbr):
    res = json.load(open(os.path.join(run, 'results', model, f'{abbr}.json')))
    return [None if d.get('over_length') else bool(d['correct'][0]) for d in res['details']]


def by_key(rows):
    return {(r['a'], r['b'], r['benchmark'], r['row'], r['tier']): r for r in rows}


@pytest.fixture(scope='module')
def compared(report_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp('compare') / 'merged'
    proc = report(report_runs['tiny'], report_runs['rule'], '-o', out, '--no-html', '--no-plots')
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


def test_paired_differences_equal_a_hand_computation_on_the_details(report_runs, compared):
    out, proc = compared
    table = by_key(read_csv(out / 'longctx_compare.csv'))
    for tier in ('0k', '1k'):
        a = [x for t in TASKS for x in correct(report_runs['tiny'], 'tiny-chat', f'babilong_{t}_{tier}')]
        b = [x for t in TASKS for x in correct(report_runs['rule'], 'rule-reader', f'babilong_{t}_{tier}')]
        wins, losses = sum(x and not y for x, y in zip(a, b)), sum(y and not x for x, y in zip(a, b))
        row = table['tiny-chat', 'rule-reader', 'babilong', 'qa1-qa5', tier]
        assert row['method'] == 'mcnemar' and int(row['pairs']) == len(a) == 15
        assert float(row['diff']) == pytest.approx(100.0 * (wins - losses) / len(a))
        m = wins + losses
        test = binomtest(wins, m, 0.5)
        assert float(row['p']) == pytest.approx(test.pvalue, rel=1e-4)
        ci = test.proportion_ci(0.95, method='exact')
        assert float(row['lo']) == pytest.approx(100.0 * m / len(a) * (2 * ci.low - 1), abs=1e-3)
        assert float(row['hi']) == pytest.approx(100.0 * m / len(a) * (2 * ci.high - 1), abs=1e-3)
        assert row['significant'] == str(int(test.pvalue < 0.05)) == '1'  # the rule reader reads qa1 and qa2
    # NoLiMa, copied per model tokenizer: paired by position and gold answer, 3 needles at 3 depths
    row = table['tiny-chat', 'rule-reader', 'nolima', 'main', '250']
    a = correct(report_runs['tiny'], 'tiny-chat', 'nolima_main_250@tiny-chat')
    b = correct(report_runs['rule'], 'rule-reader', 'nolima_main_250@rule-reader')
    assert int(row['pairs']) == len(a) == len(b) == 3
    assert float(row['diff']) == pytest.approx(100.0 * (sum(a) - sum(b)) / 3)
    assert '| tiny-chat | rule-reader | babilong | qa1-qa5 | 0k | -40.0 * |' in proc.stdout


def test_over_length_samples_leave_the_pair_and_are_counted(report_runs, tmp_path):
    """One tiny-chat prompt marked over-length (as LongCtxGenInferencer writes it): the pair leaves that sample out,
    says so, and the unequal datasets (2 pairs in qa1, 3 in the others) take the seeded sign-flip test (each sample its
    own cluster: BABILong declares independent samples)."""
    run = tmp_path / 'runs' / '20261201_000000'
    shutil.copytree(report_runs['tiny'], run)
    preds_path = run / 'predictions' / 'tiny-chat' / 'babilong_qa1_0k.json'
    preds = json.load(open(preds_path))
    preds['0']['prediction'] = OVER_LENGTH
    json.dump(preds, open(preds_path, 'w'))
    res_path = run / 'results' / 'tiny-chat' / 'babilong_qa1_0k.json'
    res = json.load(open(res_path))
    res['details'][0] = {'pred': None, 'answer': [preds['0']['gold']], 'correct': [False], 'over_length': [True]}
    kept = [d['correct'][0] for d in res['details'][1:]]
    res['accuracy'] = 100.0 * sum(kept) / len(kept)
    res['counts'][0].update(over_length=1)
    json.dump(res, open(res_path, 'w'))
    outs = []
    for i in range(2):
        out = tmp_path / f'merged{i}'
        proc = report(run, report_runs['rule'], '-o', out, '--no-html', '--no-plots', '--compare', 'rule-reader',
                      'tiny-chat')
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(by_key(read_csv(out / 'longctx_compare.csv')))
    assert outs[0] == outs[1]  # seeded: the same interval every time
    row = outs[0]['rule-reader', 'tiny-chat', 'babilong', 'qa1-qa5', '0k']
    assert row['excluded'] == '1 over-length' and int(row['pairs']) == 14 and row['method'] == 'sign-flip'
    assert int(row['clusters']) == 14 and row['testable'] == '1'
    per_task = []
    for t in TASKS:
        a = correct(report_runs['rule'], 'rule-reader', f'babilong_{t}_0k')
        b = correct(str(run), 'tiny-chat', f'babilong_{t}_0k')
        pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
        per_task.append(sum(x - y for x, y in pairs) / len(pairs))
    assert float(row['diff']) == pytest.approx(100.0 * sum(per_task) / len(per_task))  # as the table weighs tasks
    assert float(row['lo']) <= float(row['diff']) <= float(row['hi'])
    assert {(k[0], k[1]) for k in outs[0]} == {('rule-reader', 'tiny-chat')}  # --compare: that pair only


def test_the_ranks_split_only_models_that_differ_significantly(report_runs, compared):
    out, _ = compared
    board = json.load(open(out / 'longctx_compare.json'))['leaderboard']
    ranks = {(e['bench'], e['model']): e['rank'] for e in board}
    # BABILong: the rule reader leads (40.0 vs 0.0, McNemar p < 0.05): two groups
    assert ranks['babilong', 'rule-reader'] == 1 and ranks['babilong', 'tiny-chat'] == 2
    # NoLiMa: both 0.0 on the same 6 samples: one group
    assert ranks['nolima', 'rule-reader'] == ranks['nolima', 'tiny-chat'] == 1
    md = (out / 'longctx_compare.md').read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith('| babilong | qa1-qa5 | 2 | tiny-chat | 0.0 | 0k, 1k |'))
    assert '| rule-reader - tiny-chat = +40.0 * |' in line and line.endswith('| <0k | ranks 2 of 2: 1 significantly '
                                                                           'better (rule-reader), 0 significantly '
                                                                           'worse (Holm over the 1 testable pair) |')
    lead = next(e for e in board if e['model'] == 'tiny-chat' and e['bench'] == 'babilong')
    assert lead['leader'] == lead['vs']['a'] == 'rule-reader' and lead['vs']['b'] == 'tiny-chat'
    assert lead['direction'] == lead['vs']['direction'] == 'leader - model' and lead['vs']['diff'] > 0
    assert lead['decision'].startswith('ranks 2 of 2: 1 significantly better') and lead['vs']['p_holm'] < 0.05
    assert (lead['rank'], lead['rank_hi'], lead['tier_ranks']) == (2, 2, {'0k': [2, 2], '1k': [2, 2]})
    nolima = next(e for e in board if e['bench'] == 'nolima' and e['vs'])
    assert nolima['vs']['method'] == 'not testable' and not nolima['vs']['significant']  # one needle entry


def test_compare_with_an_unknown_model_is_a_clear_error(report_runs, tmp_path):
    proc = report(report_runs['tiny'], report_runs['rule'], '-o', tmp_path / 'm', '--compare', 'tiny-chat', 'gpt-5')
    assert proc.returncode == 2 and not os.path.exists(tmp_path / 'm')
    assert "longctx-report: error: --compare: unknown model 'gpt-5'; the runs have: tiny-chat, rule-reader" in \
        proc.stderr


# ---------------------------------------------------------------------------------------------- leaderboard size
RUN_CONFIG = '''models = [dict(abbr={model!r}, type='opencompass_longctx.demo.rule_reader.BabiRuleReader',
               max_seq_len=2000000, max_out_len=20, batch_size=8, run_cfg=dict(num_gpus=0))]
datasets = [dict(abbr=f'babilong_{{t}}_1k', type='opencompass_longctx.babilong.dataset.BabilongDataset', task=t,
                 tier='1k', num_samples={n},
                 reader_cfg=dict(input_columns=['prompt'], output_column='target'),
                 eval_cfg=dict(evaluator=dict(type='opencompass_longctx.babilong.evaluator.BabilongEvaluator',
                                              mode='official')))
            for t in {tasks!r}]
'''


def write_run(root, model, right, n=1000):
    """A finished run in OpenCompass's layout (config dump, results, predictions) of BABILong qa1-qa5 at 1k with
    ``n`` samples each; ``right(task, i)``: whether the model answered sample i correctly."""
    from opencompass_longctx import __version__
    run = root / model / '20261201_000000'
    (run / 'configs').mkdir(parents=True)
    (run / 'configs' / '20261201_000000_1.py').write_text(RUN_CONFIG.format(model=model, n=n, tasks=TASKS))
    for sub in ('results', 'predictions'):
        (run / sub / model).mkdir(parents=True)
    for t in TASKS:
        gold = [f'place{i % 7}' for i in range(n)]
        hits = [right(t, i) for i in range(n)]
        preds = {str(i): dict(origin_prompt=[dict(role='HUMAN', prompt=f'{t} story {i}: where is John?')],
                              prediction=gold[i] if hits[i] else 'nowhere', gold=gold[i]) for i in range(n)}
        details = [dict(pred=[preds[str(i)]['prediction']], answer=[gold[i]], correct=[hits[i]]) for i in range(n)]
        res = dict(accuracy=100.0 * sum(hits) / n, details=details, package_version=[__version__],
                   counts=[dict(n=n, correct=sum(hits), over_length=0, engine_too_small=0, engine_error=0)])
        (run / 'results' / model / f'babilong_{t}_1k.json').write_text(json.dumps(res))
        (run / 'predictions' / model / f'babilong_{t}_1k.json').write_text(json.dumps(preds))
    return run


def test_longctx_report_at_leaderboard_size_writes_every_file(tmp_path):
    """5,000 discordant pairs (qa1-qa5, 1,000 samples each, every pair discordant): the exact McNemar test that
    overflowed at about 1,030 discordant pairs now runs, and `longctx-report` writes every file."""
    from report_runs import report_cli
    strong = write_run(tmp_path, 'strong', lambda t, i: i % 5 != 0)      # 80%
    weak = write_run(tmp_path, 'weak', lambda t, i: i % 5 == 0)          # 20%, right exactly where strong is wrong
    out = tmp_path / 'merged'
    proc = report_cli(strong, weak, '-o', out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ('longctx_report.md', 'longctx_report.csv', 'longctx_report.json', 'longctx_compare.md',
                 'longctx_compare.csv', 'longctx_compare.json', 'longctx_leaderboard.html'):
        assert (out / name).stat().st_size > 0, name
    row = by_key(read_csv(out / 'longctx_compare.csv'))['strong', 'weak', 'babilong', 'qa1-qa5', '1k']
    assert row['method'] == 'mcnemar' and int(row['pairs']) == int(row['clusters']) == 5000
    test = binomtest(4000, 5000, 0.5)
    ci = test.proportion_ci(0.95, method='exact')
    assert float(row['diff']) == pytest.approx(60.0) and float(row['p']) == pytest.approx(test.pvalue, abs=1e-300)
    assert float(row['lo']) == pytest.approx(100.0 * (2 * ci.low - 1), abs=1e-3) and row['significant'] == '1'
    board = json.load(open(out / 'longctx_compare.json'))['leaderboard']
    assert [(e['model'], e['rank']) for e in board] == [('strong', 1), ('weak', 2)]
    assert board[1]['vs']['a'] == 'strong' and board[1]['vs']['diff'] == pytest.approx(60.0)
