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
    says so, and the unequal datasets (2 pairs in qa1, 3 in the others) take the seeded paired bootstrap."""
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
    assert row['excluded'] == '1 over-length' and int(row['pairs']) == 14 and row['method'] == 'bootstrap'
    per_task = []
    for t in TASKS:
        a = correct(report_runs['rule'], 'rule-reader', f'babilong_{t}_0k')
        b = correct(str(run), 'tiny-chat', f'babilong_{t}_0k')
        pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
        per_task.append(sum(x - y for x, y in pairs) / len(pairs))
    assert float(row['diff']) == pytest.approx(100.0 * sum(per_task) / len(per_task))  # as the table weighs tasks
    assert float(row['lo']) <= float(row['diff']) <= float(row['hi'])
    assert {(k[0], k[1]) for k in outs[0]} == {('rule-reader', 'tiny-chat')}  # --compare: that pair only


def test_the_ranking_groups_models_that_are_not_significantly_different(report_runs, compared):
    out, _ = compared
    board = json.load(open(out / 'longctx_compare.json'))['leaderboard']
    ranks = {(e['bench'], e['model']): e['rank'] for e in board}
    # BABILong: the rule reader leads (40.0 vs 0.0, McNemar p < 0.05): two groups
    assert ranks['babilong', 'rule-reader'] == 1 and ranks['babilong', 'tiny-chat'] == 2
    # NoLiMa: both 0.0 on the same 6 samples: one group
    assert ranks['nolima', 'rule-reader'] == ranks['nolima', 'tiny-chat'] == 1
    md = (out / 'longctx_compare.md').read_text()
    assert '| babilong | qa1-qa5 | 2 | tiny-chat | <0k | 0.0 | +40.0 (rule-reader - tiny-chat) |' in md


def test_compare_with_an_unknown_model_is_a_clear_error(report_runs, tmp_path):
    proc = report(report_runs['tiny'], report_runs['rule'], '-o', tmp_path / 'm', '--compare', 'tiny-chat', 'gpt-5')
    assert proc.returncode == 2 and not os.path.exists(tmp_path / 'm')
    assert "longctx-report: error: --compare: unknown model 'gpt-5'; the runs have: tiny-chat, rule-reader" in \
        proc.stderr
