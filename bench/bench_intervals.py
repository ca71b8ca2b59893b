"""Benchmark: coverage and width of the tier table's 95% intervals (opencompass_longctx.stats.intervals), before and
after issue 40, by simulation.

    python bench/bench_intervals.py [--reps 2000]

The grid issue 40 measured: 500 samples in G = 10, 12, 15 or 20 clusters, balanced or with one cluster holding 60%
of them; each cluster's accuracy expit(N(mu, sd)), sd 0 to 1, mu 0 (50%) or 2 (about 85%); the truth is the
expected accuracy over clusters. "before": CR1 with Student's t on G - 1 degrees of freedom (the table up to issue
40); "after": the bounded CR2 interval the table prints now. Then the time of one clustered interval.
"""
import argparse
import math
import time

import numpy as np
from scipy.stats import t as student

from opencompass_longctx.stats import intervals as I
N = 500


def sizes(g, dominant):
    if dominant is None:
        s = np.full(g, N // g)
        s[: N - s.sum()] += 1
        return s
    big = int(round(dominant * N))
    rest = np.full(g - 1, (N - big) // (g - 1))
    rest[: N - big - rest.sum()] += 1
    return np.concatenate([[big], rest])


def cell(g, dominant, sd, mu, reps, seed=1):
    rng = np.random.default_rng(seed)
    n = sizes(g, dominant).astype(float)
    p = 1 / (1 + np.exp(-rng.normal(mu, sd, (reps, g))))
    s = rng.binomial(n.astype(int), p).astype(float)
    truth = 100 * float(np.mean(1 / (1 + np.exp(-np.random.default_rng(0).normal(mu, sd, 400_000)))))
    new = old = width_new = width_old = outside_old = 0.0
    for row in s:
        b = I.clustered_interval(I.ClusterTable(np.arange(g), np.zeros(g, dtype=np.int64), n, row, row,
                                                np.array([1.0])))
        new += b.contains(truth)
        width_new += b.hi - b.lo
        est = 100 * row.sum() / n.sum()
        contrib = (row - n * est / 100) / n.sum()
        half = 100 * student.ppf(0.975, g - 1) * math.sqrt(g / (g - 1) * float(contrib @ contrib))
        old += abs(est - truth) <= half
        width_old += 2 * half
        outside_old += est - half < 0 or est + half > 100
    return old / reps, width_old / reps, new / reps, width_new / reps, outside_old / reps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--reps', type=int, default=2000)
    args = ap.parse_args(argv)
    print(f'{args.reps} replications per row; coverage of the 95% interval (width in points)\n')
    print('| clusters | one cluster 60% | cluster sd | mean | before: CR1 | after: bounded CR2 | before outside [0, 100] |')
    print('|---|---|---|---|---|---|---|')
    covered = []
    for dominant in (None, 0.6):
        for g in (10, 12, 15, 20):
            for sd in (0.0, 0.25, 0.5, 1.0):
                for mu in (0.0, 2.0):
                    old, w_old, new, w_new, out_old = cell(g, dominant, sd, mu, args.reps)
                    covered.append(new)
                    print(f'| {g} | {"yes" if dominant else "no"} | {sd:g} | {100 / (1 + math.exp(-mu)):.0f}% | '
                          f'{100 * old:.1f}% ({w_old:.1f}) | {100 * new:.1f}% ({w_new:.1f}) | {100 * out_old:.1f}% |')
    print(f'\nafter: coverage {100 * min(covered):.1f}-{100 * max(covered):.1f}% over the grid')
    rng = np.random.default_rng(0)
    n = np.full(58, 130.0)
    s = rng.binomial(130, 0.6, 58).astype(float)
    table = I.ClusterTable(np.arange(58), np.zeros(58, dtype=np.int64), n, s, s, np.array([1.0]))
    I._critical.cache_clear()
    start = time.perf_counter()
    I.clustered_interval(table)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(100):
        I.clustered_interval(table)
    print(f'one NoLiMa-sized clustered interval (58 entries x 130): {1000 * first:.0f} ms the first time (the '
          f'critical value simulated), {10 * (time.perf_counter() - start):.2f} ms after (memoised)')


if __name__ == '__main__':
    main()
