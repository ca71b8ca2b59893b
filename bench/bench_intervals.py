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

from opencompass_longctx.stats import coverage
from opencompass_longctx.stats import intervals as I


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
                    c = coverage.simulate(g, dominant, sd, mu, args.reps)
                    covered.append(c.covered)
                    print(f'| {g} | {"yes" if dominant else "no"} | {sd:g} | {100 / (1 + math.exp(-mu)):.0f}% | '
                          f'{100 * c.covered_cr1:.1f}% ({c.width_cr1:.1f}) | {100 * c.covered:.1f}% ({c.width:.1f}) | '
                          f'{100 * c.outside_cr1:.1f}% |')
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
