"""The paired comparison and the ranks (opencompass_longctx.stats.paired, .ranks; leaderboard.compare), proved by
simulation and on synthetic finished runs (opencompass_longctx.demo.synthetic_run) at leaderboard size:

* the clustered sign-flip test keeps its false-positive rate on NoLiMa's structure where McNemar does not; exact
  enumeration up to 20 clusters, a uniform win over G clusters is p = 2/2^G; not testable only under 6 clusters;
* rank intervals from every pair under Holm's correction split a leaderboard of 15, 20 and 50 models (issue 40's
  cases), keep the family-wise error under the null, and rank on the tiers two models share."""
import itertools
import time

import numpy as np
import pytest

from opencompass_longctx.demo.synthetic_run import write_run
from opencompass_longctx.stats import paired as stats
from opencompass_longctx.stats.ranks import holm, length_rank_intervals, rank_intervals
from opencompass_longctx.leaderboard.compare import Comparer, paired_test
ENTRIES, PER_ENTRY = 58, 130          # a NoLiMa tier: 58 needle entries x (5 haystacks x 26 depths)
REPS = 2000                           # at 5%: +-0.49 points sd


def nolima_like(rng, reps, sd, shift=0.0):
    """Two models' 0/1 outcomes on one tier: per entry, each model's logit ~ N(0, sd) (correlated 0.5 between
    the models), ``shift`` added to A's."""
    z = rng.normal(size=(reps, ENTRIES, 1))
    own = rng.normal(size=(reps, ENTRIES, 2))
    logit = sd * (np.sqrt(0.5) * z + np.sqrt(0.5) * own) + np.array([shift, 0.0])
    p = 1 / (1 + np.exp(-logit))
    won = rng.random((reps, ENTRIES, PER_ENTRY, 2)) < p[:, :, None, :]
    return won[..., 0].reshape(reps, -1), won[..., 1].reshape(reps, -1)


def clustered_p(a, b):
    cluster = np.repeat(np.arange(ENTRIES), PER_ENTRY)
    w = np.full(cluster.size, 1.0 / cluster.size)
    return np.array([stats.flip_p(stats.cluster_sums(x.astype(float) - y, w, cluster)[0]) for x, y in zip(a, b)])


@pytest.mark.parametrize('sd', [1.0, 2.0])
def test_clustered_test_keeps_its_false_positive_rate_where_mcnemar_does_not(sd):
    rng = np.random.default_rng(int(sd * 100))
    a, b = nolima_like(rng, REPS, sd)
    rate = float(np.mean(clustered_p(a, b) < 0.05))
    assert 0.035 <= rate <= 0.065, rate
    old = float(np.mean([stats.mcnemar(int(np.sum(x & ~y)), int(np.sum(~x & y)), x.size).p < 0.05
                         for x, y in zip(a[:300], b[:300])]))
    assert old > 0.3, old
    print(f'logit sd {sd}: false-positive rate sign-flip {rate:.3f} ({REPS} reps), McNemar {old:.3f} (300 reps)')


def test_clustered_test_finds_a_real_difference():
    a, b = nolima_like(np.random.default_rng(7), 300, 1.0, shift=0.7)
    assert float(np.mean(clustered_p(a, b) < 0.05)) > 0.8


def test_the_interval_agrees_with_the_test():
    """Exact (12 clusters) and normal (58): the interval excludes 0 exactly when p < 0.05."""
    rng = np.random.default_rng(3)
    for g in (12, ENTRIES):
        cluster = np.repeat(np.arange(g), 40)
        w = np.full(cluster.size, 1.0 / cluster.size)
        for shift in (0.0, 0.25, 0.5):
            for _ in range(30):
                p = 1 / (1 + np.exp(-rng.normal(shift, 1.0, g)))
                d = (rng.random(cluster.size) < p[cluster]).astype(float) - (rng.random(cluster.size) < 0.5)
                test = stats.sign_flip(d, w, cluster)
                assert test.testable and test.clusters == g
                assert test.lo <= test.diff <= test.hi
                assert (test.lo > 0 or test.hi < 0) == (test.p < 0.05) == test.significant, test


def test_a_dominant_cluster_a_tie_and_a_few_differing_clusters_read_as_the_test_says():
    """Shapes the random grid above does not draw: (1) one cluster holding 60% of the samples, beyond the exact
    range: the normal inversion's accepted shifts are two rays; the interval is the one that holds the difference,
    so it excludes 0 when p does (it was [-100, 100] beside p = 3.5e-7); (2) partial credit that sums to a tie on
    every cluster up to rounding: p = 1, never significant; (3) 4 clusters that differ among 30 tied ones: the exact
    p of 4 clusters (0.125), not the normal approximation of 30 (0.046), and never a p below 0.05 beside an interval
    across 0."""
    sizes = np.r_[600, [16] * 25]
    cluster = np.repeat(np.arange(26), sizes)
    d = np.zeros(sizes.sum())
    d[:6] = 1
    for start in np.r_[0, np.cumsum(sizes)[:-1]][1:]:
        d[start:start + 8] = 1
    dominated = stats.sign_flip(d, np.full(d.size, 1 / d.size), cluster)
    assert dominated.significant and dominated.method == 'sign-flip (normal)'
    assert 0 < dominated.lo <= dominated.diff <= dominated.hi <= 100
    tie = stats.sign_flip(np.tile([.1, .2, -.3], 30), np.full(90, 1 / 90), np.repeat(np.arange(30), 3))
    assert tie.diff == 0 and tie.p == 1 and not tie.significant and 'agree' in tie.note
    few = np.zeros(300)
    few[[0, 10, 20, 30]] = 1
    four = stats.sign_flip(few, np.full(300, 1 / 300), np.repeat(np.arange(30), 10))
    assert four.p == pytest.approx(2 / 16) and not four.significant and four.method == 'sign-flip (normal)'
    assert four.lo <= 0 <= four.hi
    # 7 of 25 clusters differ, one of them dominant: the exact p alone (0.016) would sit beside an interval across 0;
    # the larger of the exact and the normal p agrees with the interval
    sizes = np.r_[200, [10] * 24]
    cluster = np.repeat(np.arange(25), sizes)
    d = np.zeros(sizes.sum())
    for c, start in enumerate(np.r_[0, np.cumsum(sizes)[:-1]][:7]):
        d[start:start + (60 if c == 0 else 2)] = 1
    mixed = stats.sign_flip(d, np.full(d.size, 1 / d.size), cluster)
    assert mixed.p >= stats.exact_flip_p(stats.differing(stats.cluster_sums(d, np.full(d.size, 1 / d.size),
                                                                             cluster)[0]))
    assert (mixed.lo > 0 or mixed.hi < 0) == mixed.significant, mixed
    # the same through paired_test: independent samples of two datasets of unequal size (no McNemar)
    b = np.ones(100)
    b[:4] = 0
    uneven = paired_test([(1, np.ones(100), b, np.full(100, -1)), (1, np.ones(97), np.ones(97), np.full(97, -1))])
    assert uneven.p == pytest.approx(0.125) and not uneven.significant


def test_exact_enumeration_counts_every_sign_vector():
    rng = np.random.default_rng(1)
    for g in (1, 5, 9, 12):
        t = rng.normal(0.3, 1.0, g)
        signs = 1 - 2 * ((np.arange(2 ** g)[:, None] >> np.arange(g)) & 1)
        brute = np.mean(np.abs(signs @ t) >= abs(t.sum()) - 1e-12)
        assert stats.exact_flip_p(t) == pytest.approx(brute)
    # above the exact range, the normal approximation: within 0.03 of the exact p, and not below it in the tail
    # (where Holm's thresholds sit) by more than 10%
    for shift in (0.2, 0.5, 0.8, 1.1):
        t = rng.normal(shift, 1.0, 22)
        exact, normal = stats.exact_flip_p(t), stats.normal_flip_p(t)
        assert abs(normal - exact) < 0.03 and (exact > 0.1 or normal >= 0.9 * exact), (shift, exact, normal)


def test_a_uniform_win_is_a_result_not_untestable():
    """Issue 40: A beats B by 5 points on each of 8 clusters: exact p = 2/2^8, significant."""
    cluster = np.repeat(np.arange(8), 20)
    d = np.where(np.arange(160) % 20 == 0, 1.0, 0.0)              # 1 of 20 samples per cluster: +5 points each
    test = stats.sign_flip(d, np.full(160, 1 / 160), cluster)
    assert test.diff == pytest.approx(5.0) and test.p == pytest.approx(2 / 256) and test.significant
    assert test.method == 'sign-flip' and test.lo > 0
    for g in (6, 10, 20):
        c = np.repeat(np.arange(g), 10)
        assert stats.sign_flip(np.full(g * 10, 0.1), np.full(g * 10, 1 / (g * 10)), c).p == pytest.approx(2 / 2 ** g)
    few = stats.sign_flip(np.ones(50), np.full(50, 0.02), np.repeat(np.arange(5), 10))
    assert not few.testable and not few.significant and 'fewer than 6' in few.note and few.diff == pytest.approx(100)


def test_mcnemar_is_exact_and_fast_at_leaderboard_size():
    from scipy.stats import binomtest
    rng = np.random.default_rng(0)
    a, b = rng.random(100_000) < 0.6, rng.random(100_000) < 0.59
    start = time.perf_counter()
    test = paired_test([(1.0, a.astype(float), b.astype(float), np.full(a.size, -1))])
    took = time.perf_counter() - start
    wins, losses = int(np.sum(a & ~b)), int(np.sum(~a & b))
    ref = binomtest(wins, wins + losses, 0.5)
    assert test.method == 'mcnemar' and test.p == pytest.approx(ref.pvalue, rel=1e-6) and took < 0.5, took
    ci = ref.proportion_ci(0.95, method='exact')
    m = wins + losses
    assert (test.lo, test.hi) == pytest.approx((100 * m / 1e5 * (2 * ci.low - 1), 100 * m / 1e5 * (2 * ci.high - 1)))
    assert paired_test([(1.0, np.ones(20), np.ones(20), np.full(20, -1))]).p == 1.0


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.001, 0.5]) == pytest.approx([0.002, 0.5])


def test_rank_intervals_count_the_models_significantly_better_and_worse():
    better = {('a', 'b'): True, ('a', 'c'): True, ('b', 'c'): True}
    assert rank_intervals(['a', 'b', 'c', 'd'], better) == {'a': (1, 2), 'b': (2, 3), 'c': (3, 4), 'd': (1, 4)}
    spans = {'a': (8, 32), 'b': (4, 16), 'c': (1, 2), 'd': None}
    assert length_rank_intervals(spans) == {'a': (1, 2), 'b': (1, 2), 'c': (3, 3), 'd': (4, 4)}


def test_the_pairwise_rule_can_rank_a_model_with_a_higher_point_below_one_with_a_lower():
    """C (79.25%) significantly better than A (76.25%: C's 12 discordant pairs all won); B (75.25%) 1 point below A,
    told apart from neither: A's best rank is 2, B's 1, so the list is by best rank (C, B, A), not by point."""
    ps = {('C', 'A'): stats.mcnemar(12, 0, 400).p, ('C', 'B'): stats.mcnemar(58, 42, 400).p,
          ('A', 'B'): stats.mcnemar(42, 38, 400).p}
    better = {k: True for k, q in zip(ps, holm(list(ps.values()))) if q < 0.05}
    assert rank_intervals(['C', 'A', 'B'], better) == {'C': (1, 2), 'A': (2, 3), 'B': (1, 3)}


def listed_in_order(board):
    """No entry shows a better best rank than an entry listed above it (the list is by best rank)."""
    for up, down in zip(board, board[1:]):
        assert up['rank'] <= down['rank'], (up, down)
    return True


def test_the_rank_procedure_keeps_its_family_wise_error_under_the_null():
    """10 equal models at 70% on 400 independent samples each: the share of replications in which any pair is
    called different after Holm stays at most 5% (+ the noise of 400 replications)."""
    rng = np.random.default_rng(12)
    any_split = 0
    for _ in range(400):
        won = rng.random((10, 400)) < 0.7
        ps = [stats.mcnemar(int(np.sum(won[i] & ~won[j])), int(np.sum(~won[i] & won[j])), 400).p
              for i, j in itertools.combinations(range(10), 2)]
        any_split += min(holm(ps)) < 0.05
    assert any_split / 400 <= 0.075, any_split / 400


# ---------------------------------------------------------------------------------------------- leaderboards
def board_of(tmp_path, acc, tiers, samples, **kw):
    """The leaderboard of a synthetic run, through the report's own merge, table and comparison."""
    from opencompass_longctx.leaderboard.merge import build_merged, merge
    run = write_run(str(tmp_path / 'run' / '20261204_000000'), list(acc), lambda m, b, t: acc[m](b, t)
                    if callable(acc[m]) else acc[m], tiers, samples=samples, **kw)
    merged = merge([run])
    report = build_merged(merged, 85.6, 0.85)
    comparer = Comparer(report, merged.results, merged.marks)
    return comparer.leaderboard('score'), comparer


def test_15_models_one_30_points_stronger_is_alone_at_rank_1(tmp_path):
    """Issue 40: BABILong qa1-qa5 at 0k and 1k, 400 samples a model; one at 91.5%, 14 at 51-64%."""
    acc = {f'm{i:02d}': (0.915 if i == 0 else 0.51 + 0.01 * i) for i in range(15)}
    board, _ = board_of(tmp_path, acc, {'babilong': ['0k', '1k']}, 40)
    assert board[0]['model'] == 'm00' and (board[0]['rank'], board[0]['rank_hi']) == (1, 1)
    assert all(e['rank'] >= 2 for e in board[1:])


def test_20_models_5_points_apart_get_at_least_10_distinct_ranks(tmp_path):
    """Issue 40: 1,000 independent samples each (qa1-qa5 x 200 at one tier), 97.5% down to 2.5%."""
    acc = {f'm{i:02d}': 0.975 - 0.05 * i for i in range(20)}
    board, _ = board_of(tmp_path, acc, {'babilong': ['0k']}, 200)
    ranks = [e['rank'] for e in board]
    assert len(set(ranks)) >= 10, ranks
    assert [e['model'] for e in board][:3] == ['m00', 'm01', 'm02'] and listed_in_order(board)
    print('distinct ranks of 20 models 5 points apart:', len(set(ranks)), [e['rank_text'] for e in board])


def test_50_models_best_and_worst_never_share_a_rank_and_no_significant_model_shares_the_leaders(tmp_path):
    """Issue 40: 50 models from 98% down to 2% (a 46-point gap from the middle to either end)."""
    acc = {f'm{i:02d}': 0.98 - 0.02 * i for i in range(49)}
    board, _ = board_of(tmp_path, acc, {'babilong': ['0k']}, 40)
    best, worst = board[0], board[-1]
    assert best['rank_hi'] < worst['rank'] and listed_in_order(board)
    for e in board[1:]:
        if e['vs']['significant']:
            assert e['rank'] >= 2, e
            assert 'significantly better' in e['decision'] and e['vs']['p_holm'] < 0.05


def test_ranks_rest_on_the_tiers_both_models_have(tmp_path):
    """Issue 40: a model at 90% on 0k only is not ranked above one at 97% on 0k and 50% on 1k; the difference to
    the leader is over the shared tier (+7), in the leader - model direction."""
    acc = {'short': lambda b, t: 0.90, 'both': lambda b, t: 0.97 if t == '0k' else 0.5}
    from opencompass_longctx.leaderboard.merge import build_merged, merge
    run = write_run(str(tmp_path / 'run' / '20261204_000000'), list(acc), lambda m, b, t: acc[m](b, t),
                    {'babilong': ['0k', '1k']}, samples=200)
    import os
    import shutil
    for f in os.listdir(os.path.join(run, 'results', 'short')):
        if '_1k' in f:   # the short model did not run 1k
            os.remove(os.path.join(run, 'results', 'short', f))
            shutil.move(os.path.join(run, 'predictions', 'short', f), os.path.join(str(tmp_path), f))
    merged = merge([run])
    report = build_merged(merged, 85.6, 0.85)
    board = Comparer(report, merged.results, merged.marks).leaderboard('score')
    assert [e['model'] for e in board] == ['both', 'short']
    short = board[1]
    assert short['vs']['diff'] == pytest.approx(100 * (np.mean([0.97]) - 0.90), abs=4)
    assert short['vs']['diff'] > 0 and short['tiers'] == ['0k'] and short['partial']
    assert 'ranked on its 1 of 2 tiers' in short['decision']


def test_the_showcase_run_ranks_its_made_up_models_as_their_abilities_say(tmp_path, capsys):
    """``python -m opencompass_longctx.demo.synthetic_run DIR`` (the README's leaderboard picture): the run it prints
    ranks the steadiest strong model alone first and the weakest two last, on every benchmark."""
    from opencompass_longctx.demo import synthetic_run
    from opencompass_longctx.leaderboard.merge import build_merged, merge
    assert synthetic_run.main([str(tmp_path / 'work'), '--samples', '40']) == 0
    run = capsys.readouterr().out.strip()
    assert run.startswith(str(tmp_path / 'work'))
    merged = merge([run])
    report = build_merged(merged, 85.6, 0.85)
    longbio = [r for r in report.rows if r.bench == 'longbio']
    assert len(longbio) == 8 * 4 and not report.partial            # 3 categories + mean per model, none partial
    assert all(c.status == 'ok' and c.cells_used == c.cells_total for r in longbio for c in r.cells.values())
    comparer = Comparer(report, merged.results, merged.marks)
    for bench in ('babilong', 'nolima', 'longbio'):
        board = [e for e in comparer.leaderboard('score') if e['bench'] == bench]
        assert [e['model'] for e in board][0] == 'steady-70b' and board[0]['rank_hi'] == 1, board[:2]
        assert {e['model'] for e in board[-2:]} == {'tiny-1b', 'short-window-8b'}
        assert all(e['rank'] >= 2 for e in board[1:]) and listed_in_order(board)
