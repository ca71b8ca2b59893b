"""Benchmark: the paired comparison's statistics (opencompass_longctx.stats.paired): false-positive rate and time.

    python bench/bench_compare.py [--reps 2000]

1. False-positive rate at the 5% level of two models of equal ability on one NoLiMa tier (58 needle entries x 130
   prompts; each model's per-entry logit ~ N(0, sd), correlated 0.5 between the models), for the clustered
   sign-flip test and for McNemar taken over the 7,540 pairs as if they were independent (the method the
   comparison used for every 0/1 row of equal weight).
2. Time of the exact McNemar test at 10^5 pairs, and of the clustered sign-flip test (with its interval) on 5,000
   independent pairs of unequal weight and on 7,540 NoLiMa-like pairs.
"""
import argparse
import time

import numpy as np

from opencompass_longctx.stats import paired as stats
ENTRIES, PER_ENTRY = 58, 130


def outcomes(rng, reps, sd):
    z, own = rng.normal(size=(reps, ENTRIES, 1)), rng.normal(size=(reps, ENTRIES, 2))
    p = 1 / (1 + np.exp(-sd * (np.sqrt(0.5) * z + np.sqrt(0.5) * own)))
    won = rng.random((reps, ENTRIES, PER_ENTRY, 2)) < p[:, :, None, :]
    return won[..., 0].reshape(reps, -1), won[..., 1].reshape(reps, -1)


def false_positives(reps: int):
    cluster = np.repeat(np.arange(ENTRIES), PER_ENTRY)
    w = np.full(cluster.size, 1.0 / cluster.size)
    print('| logit sd | sign-flip over entries | McNemar over pairs |')
    print('|---|---|---|')
    for sd in (0.0, 0.5, 1.0, 2.0):
        a, b = outcomes(np.random.default_rng(int(10 * sd) + 1), reps, sd)
        flip = np.mean([stats.flip_p(stats.cluster_sums(x.astype(float) - y, w, cluster)[0]) < 0.05
                        for x, y in zip(a, b)])
        naive = np.mean([stats.mcnemar(int(np.sum(x & ~y)), int(np.sum(~x & y)), x.size).p < 0.05
                         for x, y in zip(a, b)])
        print(f'| {sd:g} | {100 * flip:.1f}% | {100 * naive:.1f}% |')


def timed(what, fn, repeat=5):
    best = min(_once(fn) for _ in range(repeat))
    print(f'{what}: {1000 * best:.1f} ms')


def _once(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timings():
    rng = np.random.default_rng(0)
    timed('exact McNemar, 10^5 pairs (48,000 discordant)', lambda: stats.mcnemar(24_500, 23_500, 100_000))
    d = (rng.random(5000) < 0.6).astype(float) - (rng.random(5000) < 0.55)
    w = np.repeat([0.3, 0.2, 0.2, 0.2, 0.1], 1000) / 1000
    timed('sign-flip + interval, 5,000 independent pairs of unequal weight',
          lambda: stats.sign_flip(d, w, np.arange(5000)))
    a, b = outcomes(rng, 1, 1.0)
    cluster = np.repeat(np.arange(ENTRIES), PER_ENTRY)
    timed('sign-flip + interval, 7,540 NoLiMa-like pairs in 58 clusters',
          lambda: stats.sign_flip(a[0].astype(float) - b[0], np.full(cluster.size, 1 / cluster.size), cluster))


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--reps', type=int, default=2000)
    args = ap.parse_args()
    false_positives(args.reps)
    timings()
