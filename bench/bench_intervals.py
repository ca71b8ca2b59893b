"""Benchmark: coverage of the tier table's 95% intervals (summarizers/metrics.py), old and new, by simulation.

    python bench/bench_intervals.py [--reps 2000]

1. One NoLiMa tier: 58 needle entries x 130 prompts, each entry's accuracy expit(N(0, sd)) (truth 50%), for
   logit sd 0, 0.5, 1 and 2: how often the binomial interval over 7,540 samples (the table before) and the
   cluster-robust interval over the entries (the table now) cover the truth, and their mean half-widths.
2. Independent BABILong-like rows (qa1-qa5, 100 stories per task): the binomial interval of the row's mean.
3. The time report.build takes with the resampling, on a NoLiMa-sized model (12 tiers x 7,540 samples).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from opencompass_longctx.summarizers import formats
from opencompass_longctx.summarizers import table as rp
from opencompass_longctx.summarizers.metrics import cluster_contributions, cluster_halfwidth, mean_with_ci
ENTRIES, PER_ENTRY = 58, 130


def nolima_coverage(reps: int) -> None:
    print('| logit sd | binomial over samples covers | half-width | clustered by entry covers | half-width |')
    print('|---|---|---|---|---|')
    for sd in (0.0, 0.5, 1.0, 2.0):
        rng = np.random.default_rng(int(10 * sd) + 7)
        p = 1 / (1 + np.exp(-rng.normal(0, sd, (reps, ENTRIES))))
        sums = rng.binomial(PER_ENTRY, p).astype(float)
        counts = np.full((reps, ENTRIES), PER_ENTRY)
        est = 100 * sums.sum(1) / counts.sum(1)
        new = cluster_halfwidth(cluster_contributions(sums, counts))
        old = np.array([mean_with_ci([(e, ENTRIES * PER_ENTRY)])[1] for e in est])
        cov = lambda h: 100 * np.mean(np.abs(est - 50.0) <= h)  # noqa: E731
        print(f'| {sd:g} | {cov(old):.1f}% | {old.mean():.2f} | {cov(new):.1f}% | {new.mean():.2f} |')


def babilong_coverage(reps: int) -> None:
    rng = np.random.default_rng(11)
    truth = np.array([0.9, 0.7, 0.55, 0.35, 0.6])
    scores = 100 * (rng.random((reps, 5, 100)) < truth[None, :, None]).mean(axis=2)
    halves = np.array([mean_with_ci([(s, 100) for s in row])[1] for row in scores])
    cov = 100 * np.mean(np.abs(scores.mean(axis=1) - 100 * truth.mean()) <= halves)
    print(f'\nBABILong-like qa1-qa5 row, 100 independent stories per task: binomial interval covers {cov:.1f}% '
          f'(mean half-width {halves.mean():.2f})')


def build_time() -> None:
    rng = np.random.default_rng(1)
    tiers = ['250', '500', '1k', '2k', '4k', '8k', '16k', '32k', '64k', '128k', '256k', '512k']
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, 'results', 'm'))
        p = 1 / (1 + np.exp(-rng.normal(0, 1, ENTRIES)))
        for tier in tiers:
            details = [{'entry_id': f'e{e}', 'pair': f'e{e}', 'haystack': f'b{k % 5}', 'correct': bool(rng.random() < p[e]),
                        'context_length': rp.parse_tier(tier).tokens(1000)} for e in range(ENTRIES)
                       for k in range(PER_ENTRY)]
            with open(os.path.join(work, 'results', 'm', f'nolima_main_{tier}.json'), 'w') as f:
                json.dump({'accuracy': 100 * np.mean([d['correct'] for d in details]), 'details': details,
                           'counts': {'n': len(details)}, 'package_version': rp.__version__}, f)
        start = time.perf_counter()
        report = rp.build(work, [rp.ModelInfo('m', 10 ** 6)], [f'nolima_main_{t}' for t in tiers])
        took = time.perf_counter() - start
    row = [r for r in report['rows'] if r.row == 'main'][0]
    print(f'\nreport.build on one NoLiMa model, 12 tiers x 7,540 samples: {took:.2f} s; effective length '
          f'{formats.effective_text(row.effective["nolima"])}, cell 4k {row.cells["4k"].text(True)} '
          f'({row.cells["4k"].clusters} clusters)')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--reps', type=int, default=2000)
    args = ap.parse_args(argv)
    nolima_coverage(args.reps)
    babilong_coverage(args.reps)
    build_time()
    return 0


if __name__ == '__main__':
    sys.exit(main())
