"""The paired comparison's statistics, proved by simulation (specs/statistics.md): the clustered sign-flip test keeps
its false-positive rate on NoLiMa's structure where McNemar does not, finds a real difference, agrees with its
interval; exact McNemar at leaderboard size; a comparison with no variance is never significant; the rank groups
follow Holm's correction and the effective-length intervals."""
import time

import numpy as np
import pytest

from opencompass_longctx.summarizers import paired_tests as stats
from opencompass_longctx.summarizers.compare import Comparer, Paired, paired_test
from opencompass_longctx.summarizers.table import RowResult
from opencompass_longctx.summarizers.rows import Cell
ENTRIES, PER_ENTRY = 58, 130          # a NoLiMa tier: 58 needle entries x (5 haystacks x 26 depths)
REPS = 2000                           # at 5%: +-0.49 points sd; 6% is 2 sd above


def nolima_like(rng, reps, sd, shift=0.0):
    """Two models' 0/1 outcomes on one tier: per entry, each model's logit ~ N(0, sd) (correlated 0.5 between
    the models: entries hard for one are often hard for the other), ``shift`` added to A's."""
    z = rng.normal(size=(reps, ENTRIES, 1))
    own = rng.normal(size=(reps, ENTRIES, 2))
    logit = sd * (np.sqrt(0.5) * z + np.sqrt(0.5) * own) + np.array([shift, 0.0])
    p = 1 / (1 + np.exp(-logit))                                     # (reps, entries, model)
    u = rng.random((reps, ENTRIES, PER_ENTRY, 2))
    won = u < p[:, :, None, :]
    return won[..., 0].reshape(reps, -1), won[..., 1].reshape(reps, -1)


def clustered_p(a, b):
    cluster = np.repeat(np.arange(ENTRIES), PER_ENTRY)
    w = np.full(cluster.size, 1.0 / cluster.size)
    t, _ = stats.cluster_sums(a.astype(float) - b, w, cluster)
    return stats.flip_p(t)


def mcnemar_p(a, b):
    return np.array([stats.mcnemar(int(np.sum(x & ~y)), int(np.sum(~x & y)), x.size).p for x, y in zip(a, b)])


@pytest.mark.parametrize('sd', [1.0, 2.0])
def test_clustered_test_keeps_its_false_positive_rate_where_mcnemar_does_not(sd):
    rng = np.random.default_rng(int(sd * 100))
    a, b = nolima_like(rng, REPS, sd)
    rate = float(np.mean(clustered_p(a, b) < 0.05))
    assert 0.035 <= rate <= 0.06, rate
    old = float(np.mean(mcnemar_p(a[:300], b[:300]) < 0.05))   # the old method: pairs taken as independent
    assert old > 0.3, old
    print(f'logit sd {sd}: false-positive rate sign-flip {rate:.3f} ({REPS} reps), McNemar {old:.3f} (300 reps)')


def test_clustered_test_finds_a_real_difference():
    a, b = nolima_like(np.random.default_rng(7), 300, 1.0, shift=0.7)
    power = float(np.mean(clustered_p(a, b) < 0.05))
    assert power > 0.8, power


def test_the_interval_agrees_with_the_test():
    """Over replications with and without a difference: the interval excludes 0 exactly when p < 0.05."""
    rng = np.random.default_rng(3)
    cluster = np.repeat(np.arange(ENTRIES), PER_ENTRY)
    w = np.full(cluster.size, 1.0 / cluster.size)
    for shift in (0.0, 0.4):
        a, b = nolima_like(rng, 40, 1.0, shift)
        for x, y in zip(a, b):
            test = stats.sign_flip(x.astype(float) - y, w, cluster)
            assert test.testable and test.clusters == ENTRIES
            assert test.lo <= test.diff <= test.hi
            assert (test.lo > 0 or test.hi < 0) == (test.p < 0.05) == test.significant


def test_exact_mcnemar_at_leaderboard_size_in_well_under_a_second():
    rng = np.random.default_rng(0)
    a, b = rng.random(100_000) < 0.6, rng.random(100_000) < 0.59
    strata = [(1.0, [(float(x), float(y), None) for x, y in zip(a, b)])]
    start = time.perf_counter()
    test = paired_test(strata)
    took = time.perf_counter() - start
    assert test.method == 'mcnemar' and test.clusters == 100_000 and took < 1.0, took   # (the pairing in Python)
    wins, losses = int(np.sum(a & ~b)), int(np.sum(~a & b))
    start = time.perf_counter()
    assert stats.mcnemar(wins, losses, 100_000) == test
    exact = time.perf_counter() - start
    assert exact < 0.1, exact
    z = (wins - losses) / np.sqrt(wins + losses)                    # the normal approximation, for a sanity check
    from scipy.stats import norm
    assert test.p == pytest.approx(2 * norm.sf(abs(z)), rel=0.05)
    assert test.lo < test.diff < test.hi and test.diff == pytest.approx(100.0 * (wins - losses) / 100_000)
    print(f'exact McNemar on 10^5 pairs ({wins + losses} discordant): {exact * 1000:.1f} ms, '
          f'{took * 1000:.0f} ms with the pairing')


def test_a_comparison_with_no_variance_is_never_significant():
    one = paired_test([(1.0, [(1.0, 0.0, ('c', 'e1'))] * 40)])
    assert one.method == 'not testable' and not one.testable and one.clusters == 1 and one.p is None
    assert 'one cluster' in one.note
    same = paired_test([(0.5, [(1.0, 0.0, ('c', str(i))) for i in range(12)]),
                        (0.5, [(1.0, 0.0, ('c', str(i))) for i in range(12, 30)])])
    assert same.method == 'not testable' and 'same difference (+100.0)' in same.note
    # the issue's LongBioBench case: one discordant sample of 15, alone in its dataset (unequal pair counts):
    # the old stratified bootstrap gave a zero-width interval above 0 and starred it
    strata = [(1 / 6, [(1.0, 0.0, None)])] + [(1 / 6, [(1.0, 1.0, None), (0.0, 0.0, None), (1.0, 1.0, None)])] * 4 \
        + [(1 / 6, [(0.0, 0.0, None), (1.0, 1.0, None)])]
    assert sum(len(p) for _, p in strata) == 15
    issue = paired_test(strata)
    assert issue.method == 'sign-flip' and issue.testable and issue.p == 1.0
    assert not Paired('a', 'b', 'longbio', 'mean', '1k', diff=issue.diff, lo=issue.lo, hi=issue.hi, p=issue.p,
                      method=issue.method, clusters=issue.clusters).significant
    # McNemar with no discordant pair: nothing to test
    tie = paired_test([(1.0, [(1.0, 1.0, None)] * 20)])
    assert tie.method == 'not testable' and not tie.significant


def test_a_clustered_difference_is_not_starred_where_mcnemar_would_star_it():
    """Three needle entries where A wins 60 of 130 prompts, ties elsewhere: 180 discordant pairs, all for A, but
    they rest on three entries (a sign flip of three clusters cannot reach p < 0.25)."""
    pairs = [(1.0 if e < 3 and k < 60 else 0.0, 0.0, ('c', str(e))) for e in range(ENTRIES) for k in range(PER_ENTRY)]
    naive = paired_test([(1.0, [(x, y, None) for x, y, _ in pairs])])
    assert naive.method == 'mcnemar' and naive.significant
    clustered = paired_test([(1.0, pairs)])
    assert clustered.method == 'sign-flip' and clustered.clusters == ENTRIES
    assert clustered.p > 0.2 and not clustered.significant
    few = paired_test([(1.0, [(float(k % 2), 0.0, ('c', str(k % 6))) for k in range(60)])])
    assert few.clusters == 6 and 'only 6 clusters' in few.note and not few.significant


def test_holm_step_down():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.001, 0.5]) == pytest.approx([0.002, 0.5])


# ---------------------------------------------------------------------------------------------- rank groups
def _board(models, comparisons):
    """A ranking from rows and given comparisons (the memo of Comparer.compare, as if computed from samples)."""
    rows = [RowResult(m, 'babilong', 'qa1-qa5', {'1k': Cell(score=mean)}, mean=mean,
                      effective={'ruler': dict(contiguous=eff, interval=interval)})
            for m, mean, eff, interval in models]
    comparer = Comparer({'rows': rows, 'bench_tiers': {'babilong': ['1k']}}, None, {})
    for (a, b), (diff, p) in comparisons.items():
        comparer._memo[a, b, 'babilong', 'qa1-qa5', 'mean'] = Paired(
            a, b, 'babilong', 'qa1-qa5', 'mean', diff=diff, lo=diff - 1, hi=diff + 1, p=p, method='sign-flip',
            clusters=58)
    return {e['model']: e for e in comparer.leaderboard('ruler')}


def test_rank_groups_follow_holm_not_the_raw_p():
    models = [('m1', 60.0, '<1k', None), ('m2', 50.0, '<1k', None), ('m3', 40.0, '<1k', None)]
    raw = {('m1', 'm2'): (10.0, 0.03), ('m1', 'm3'): (20.0, 0.2), ('m2', 'm3'): (10.0, 0.9)}
    board = _board(models, raw)
    assert [board[m]['rank'] for m in ('m1', 'm2', 'm3')] == [1, 1, 1]     # 0.03 x 3 = 0.09 after Holm
    assert board['m2']['vs']['p_holm'] == pytest.approx(0.09) and board['m2']['decision'].startswith('joins')
    board = _board(models, {**raw, ('m1', 'm2'): (10.0, 0.001)})
    assert board['m2']['rank'] == 2 and board['m2']['vs']['significant']
    assert board['m2']['leader'] == board['m2']['vs']['a'] == 'm1' and board['m2']['direction'] == 'leader - model'


def test_rank_groups_do_not_split_models_whose_effective_length_intervals_overlap():
    comparisons = {('m1', 'm2'): (8.0, 0.0005)}
    overlap = _board([('m1', 80.0, '16k', ['8k', '32k']), ('m2', 72.0, '8k', ['4k', '16k'])], comparisons)
    assert overlap['m2']['rank'] == 1 and 'intervals overlap' in overlap['m2']['decision']
    apart = _board([('m1', 80.0, '32k', ['16k', '64k']), ('m2', 72.0, '8k', ['4k', '8k'])], comparisons)
    assert apart['m2']['rank'] == 2 and apart['m2']['effective_interval'] == ['4k', '8k']
    # no interval (a report without one): the points, so different lengths split on the test alone
    points = _board([('m1', 80.0, '16k', None), ('m2', 72.0, '8k', None)], comparisons)
    assert points['m2']['rank'] == 2
    # the same effective length: the mean orders them and the test alone decides
    same = _board([('m1', 80.0, '16k', ['8k', '32k']), ('m2', 72.0, '16k', ['8k', '32k'])], comparisons)
    assert same['m2']['rank'] == 2
