"""Coverage of the tier table's 95% interval by simulation with a known truth, for the tests and
``bench/bench_intervals.py`` alike.

A cell of ``N`` samples in ``g`` clusters (balanced, or one cluster holding the share ``dominant``); each cluster's
accuracy ``expit(N(mu, sd))``; outcomes binomial. The truth is the expected accuracy over clusters. Each replication
is scored by the interval the table prints (:func:`.intervals.clustered_interval`, bounded CR2) and by CR1 with
Student's t on G - 1 degrees of freedom (the table's interval up to issue 40), for the before/after figures.
"""
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np
from scipy.stats import t as student

from opencompass_longctx.stats import intervals as I

N = 500


def cluster_sizes(g: int, dominant: Optional[float], n: int = N) -> np.ndarray:
    """``n`` samples in ``g`` clusters: as equal as integers allow, or one holding ``round(dominant * n)``."""
    if dominant is None:
        s = np.full(g, n // g)
        s[: n - s.sum()] += 1
        return s
    big = int(round(dominant * n))
    rest = np.full(g - 1, (n - big) // (g - 1))
    rest[: n - big - rest.sum()] += 1
    return np.concatenate([[big], rest])


@lru_cache(maxsize=None)
def truth(mu: float, sd: float) -> float:
    """The expected accuracy (percent) of a cluster whose logit is N(mu, sd)."""
    z = np.random.default_rng(0).normal(mu, sd, 400_000)
    return 100 * float(np.mean(1 / (1 + np.exp(-z))))


@dataclass(frozen=True)
class Coverage:
    covered: float          # share of replications whose printed interval holds the truth
    width: float            # its mean width, points
    inside: float           # share of printed intervals inside [0, 100]
    covered_cr1: float      # the same for CR1 with t(G - 1)
    width_cr1: float
    outside_cr1: float      # share of CR1 intervals that leave [0, 100]


def simulate(g: int, dominant: Optional[float], sd: float, mu: float, reps: int = 2000, seed: int = 1,
             n: int = N) -> Coverage:
    rng = np.random.default_rng(seed)
    sizes = cluster_sizes(g, dominant, n).astype(float)
    p = 1 / (1 + np.exp(-rng.normal(mu, sd, (reps, g))))
    correct = rng.binomial(sizes.astype(int), p).astype(float)
    target = truth(mu, sd)
    t = student.ppf(0.975, g - 1)
    hit = inside = hit_cr1 = outside_cr1 = 0
    width = width_cr1 = 0.0
    for row in correct:
        b = I.clustered_interval(I.ClusterTable(np.arange(g), np.zeros(g, dtype=np.int64), sizes, row, row,
                                                np.array([1.0])))
        hit += b.contains(target)
        inside += 0 <= b.lo <= b.hi <= 100
        width += b.hi - b.lo
        est = 100 * row.sum() / sizes.sum()
        contrib = (row - sizes * est / 100) / sizes.sum()
        half = 100 * t * math.sqrt(g / (g - 1) * float(contrib @ contrib))
        hit_cr1 += abs(est - target) <= half
        width_cr1 += 2 * half
        outside_cr1 += est - half < 0 or est + half > 100
    return Coverage(hit / reps, width / reps, inside / reps, hit_cr1 / reps, width_cr1 / reps, outside_cr1 / reps)
