"""Paired tests of two models on the same samples, when samples share text (clusters): pure numpy and scipy.

A comparison is the weighted mean of per-sample differences d_i = A_i - B_i (values 0..1), each sample weighing
its dataset's share of the row divided by the dataset's pair count, as the tier table weighs its datasets. The
samples fall into clusters (``Bench.cluster_keys``: NoLiMa's needle entry, across its datasets and tiers; every
sample its own cluster where the benchmark declares none). A cluster's contribution is T_c = sum of w_i d_i over
its samples, and the difference is theta = sum_c T_c.

* :func:`sign_flip`: if the two models are equally good on every cluster, swapping A and B within a cluster (all its
  samples at once) does not change the distribution of the data, so sum_c e_c T_c with random signs e_c = +-1 is
  the statistic's null distribution; p is the share of sign vectors whose |sum| reaches the observed one.
  - G <= ``EXACT_UP_TO`` clusters where the models differ (a tied cluster adds nothing to any signed sum): every
    one of the 2^G sign vectors, counted exactly (two halves of the clusters enumerated and matched by sorting, so
    2^20 vectors cost two lists of 1,024). Exact at any G: a uniform win over G clusters gets p = 2/2^G (0.031 at
    G = 6, 0.0078 at G = 8). The 95% interval is the test inverted (the shifts delta it does not reject when every
    difference is taken as d_i - delta), found by bisection where there are at most ``EXACT_UP_TO`` clusters in
    all. With more clusters in all but at most ``EXACT_UP_TO`` that differ, the normal form below, its p the larger
    of the normal and the exact p (4 clusters that differ among 30: 0.125, not the normal 0.046).
  - more clusters that differ: the normal approximation of the same distribution (mean 0, variance sum_c T_c^2, a
    sum of many bounded independent terms): p = 2 Phi(-|theta| / sqrt(sum_c T_c^2)), and its inversion in closed
    form (the roots of (theta - delta)^2 = z^2 sum_c (T_c - delta W_c)^2). Analytic, so p has no resolution floor:
    a Monte Carlo p from B draws cannot go below 1/(B + 1), which Holm's correction over a leaderboard's pairs
    needs (docs/leaderboard.md, "How two models are compared").
* :func:`mcnemar`: where the samples are independent (no clusters declared), every value is 0/1 and every pair
  weighs the same: the exact McNemar test (the exact binomial test of the discordant pairs) and the
  Clopper-Pearson interval of b/m, times m/n.

"Not testable" (never significant): fewer than ``MIN_TESTABLE`` clusters, where no sign flip can give p < 0.05
(the smallest p is 2/2^G = 1/16 at G = 5), or no cluster at all. Equal models on every cluster give p = 1.
"""
import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

LEVEL = 0.95
ALPHA = 1 - LEVEL
Z95 = 1.959963984540054
EXACT_UP_TO = 20        # clusters that differ: every one of the 2^G sign vectors is counted
TIE = 1e-12             # a cluster sum this small (the weights sum to 1) is rounding, not a difference
MIN_TESTABLE = 6        # fewer clusters: no sign flip can reach p < 0.05 (2/2^5 = 0.0625)
NOT_TESTABLE = 'not testable'


@dataclass
class Test:
    diff: float                  # percentage points
    lo: Optional[float] = None
    hi: Optional[float] = None
    p: Optional[float] = None
    method: str = NOT_TESTABLE
    clusters: int = 0
    testable: bool = False
    note: str = ''

    @property
    def significant(self) -> bool:
        return self.testable and self.p is not None and self.p < ALPHA


def mcnemar(b: int, c: int, n: int) -> Test:
    """Exact McNemar test of n independent 0/1 pairs of equal weight: b pairs favour A, c favour B."""
    from scipy.special import betainc, betaincinv   # (the binomial and beta distributions' own functions)
    m = b + c
    diff = 100.0 * (b - c) / n
    if not m:
        return Test(diff, 0.0, 0.0, 1.0, 'mcnemar', n, True, 'the two models agree on every sample')
    k = min(b, c)
    p = 1.0 if k == m else min(1.0, 2.0 * float(betainc(m - k, k + 1, 0.5)))   # 2 P(Bin(m, 1/2) <= k)
    lo = 0.0 if b == 0 else float(betaincinv(b, m - b + 1, ALPHA / 2))        # Clopper-Pearson of b / m
    hi = 1.0 if b == m else float(betaincinv(b + 1, m - b, 1 - ALPHA / 2))
    scale = 100.0 * m / n
    return Test(diff, scale * (2 * lo - 1), scale * (2 * hi - 1), p, 'mcnemar', n, True)


def cluster_sums(d: np.ndarray, w: np.ndarray, cluster: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(T_c, W_c): each cluster's sum of w_i d_i and of w_i (clusters in the order of their sorted codes); ``d``
    may have a leading axis of replications (then T has one row per replication)."""
    codes, inv = np.unique(np.asarray(cluster), return_inverse=True)
    w = np.asarray(w, dtype=float)
    wd = np.asarray(d, dtype=float) * w
    if wd.ndim == 1:
        return np.bincount(inv, weights=wd, minlength=len(codes)), np.bincount(inv, weights=w, minlength=len(codes))
    onehot = np.zeros((len(inv), len(codes)))
    onehot[np.arange(len(inv)), inv] = 1.0
    return wd @ onehot, w @ onehot


def _half_sums(x: np.ndarray) -> np.ndarray:
    """Every signed sum of ``x`` (2^len(x) of them)."""
    g = len(x)
    signs = 1.0 - 2.0 * ((np.arange(2 ** g)[:, None] >> np.arange(g)) & 1)
    return signs @ x


def exact_flip_p(t: np.ndarray) -> float:
    """The share of the 2^G sign vectors e with |sum e_c t_c| >= |sum t_c| (two halves enumerated and matched)."""
    t = np.asarray(t, dtype=float)
    observed = abs(float(t.sum()))
    cut = observed - 1e-12 * max(1.0, observed)
    if cut <= 0:
        return 1.0
    half = len(t) // 2
    left, right = _half_sums(t[:half]), np.sort(_half_sums(t[half:]))
    # count (a, b) with a + b >= cut or a + b <= -cut
    above = len(right) - np.searchsorted(right, cut - left, side='left')
    below = np.searchsorted(right, -cut - left, side='right')
    return float((above + below).sum()) / 2.0 ** len(t)


def normal_flip_p(t: np.ndarray) -> float:
    from scipy.stats import norm
    t = np.asarray(t, dtype=float)
    scale, observed = math.sqrt(float(t @ t)), abs(float(t.sum()))
    if scale == 0 or observed <= TIE * max(1.0, float(np.abs(t).sum())):
        return 1.0
    return min(1.0, 2.0 * float(norm.sf(observed / scale)))


def differing(t) -> np.ndarray:
    """The cluster sums where the two models differ (a tied cluster adds nothing to any signed sum)."""
    t = np.asarray(t, dtype=float)
    return t[np.abs(t) > TIE]


def flip_p(t) -> float:
    """The sign-flip p value of cluster sums ``t``: exact where at most ``EXACT_UP_TO`` clusters differ (4 clusters
    that differ among 30 tied ones get the exact p of 4 clusters, not a normal approximation of 30), else normal."""
    d = differing(t)
    return exact_flip_p(d) if len(d) <= EXACT_UP_TO else normal_flip_p(d)


def _exact_bound(t, wc, theta: float, end: float) -> float:
    """The last shift from theta towards ``end`` that the exact test does not reject (bisection)."""
    rejects = lambda delta: exact_flip_p(t - delta * wc) < ALPHA   # noqa: E731
    if not rejects(end):
        return end
    inside, outside = theta, end
    for _ in range(50):
        mid = (inside + outside) / 2
        inside, outside = (mid, outside) if not rejects(mid) else (inside, mid)
    return inside


def _normal_bounds(t, wc, theta: float) -> Tuple[float, float]:
    """The stretch of [-1, 1] around theta of the shifts delta that the normal test does not reject:
    f(delta) = (theta - delta)^2 - z^2 sum_c (T_c - delta W_c)^2 <= 0 (f(theta) <= 0 always). Where one cluster
    carries most of the weight (a = 1 - z^2 sum_c W_c^2 <= 0) the accepted shifts are two rays, not an interval:
    the one that holds theta is given (never the whole of [-1, 1] beside a p that rejects 0)."""
    z2 = Z95 ** 2
    a = 1.0 - z2 * float(wc @ wc)
    b = -2.0 * (theta - z2 * float(t @ wc))
    c = theta ** 2 - z2 * float(t @ t)
    disc = b * b - 4 * a * c
    if abs(a) < 1e-12:                           # f linear: one ray
        lo, hi = (-1.0, 1.0) if b == 0 else ((-1.0, -c / b) if b > 0 else (-c / b, 1.0))
    elif disc <= 0:                              # f of one sign: all shifts (a < 0), or theta alone (rounding)
        lo, hi = (-1.0, 1.0) if a < 0 else (theta, theta)
    else:
        r1, r2 = sorted(((-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)))
        lo, hi = (r1, r2) if a > 0 else ((-1.0, r1) if theta <= (r1 + r2) / 2 else (r2, 1.0))
    return max(-1.0, min(lo, theta)), min(1.0, max(hi, theta))


def sign_flip(d: np.ndarray, w: np.ndarray, cluster: np.ndarray) -> Test:
    """The clustered paired test (module docstring): ``d`` per-sample differences (values 0..1, so d in [-1, 1]),
    ``w`` their weights (summing to 1), ``cluster`` their cluster codes (integers)."""
    t, wc = cluster_sums(d, w, cluster)
    t = np.where(np.abs(t) > TIE, t, 0.0)       # rounding in a tied cluster is no difference
    theta = float(t.sum())
    g = len(t)
    if g < MIN_TESTABLE:
        return Test(100.0 * theta, clusters=g, note=(
            f'not testable: {g} cluster{"s" * (g != 1)}; with fewer than {MIN_TESTABLE} no sign-flip test can reach '
            f'p < {ALPHA:g} (its smallest p is 2/2^{g} = {2 / 2 ** g:.3g})' if g else 'not testable: no cluster'))
    if g <= EXACT_UP_TO:
        p = exact_flip_p(t)
        lo, hi = _exact_bound(t, wc, theta, -1.0), _exact_bound(t, wc, theta, 1.0)
        method = 'sign-flip'
    else:
        # the interval is the normal inversion; p the normal p, or, where at most EXACT_UP_TO clusters differ (the
        # normal approximation of so few is poor), the larger of it and the exact p: valid, and never a p below
        # 0.05 beside an interval across 0
        p = max(normal_flip_p(t), flip_p(t))
        lo, hi = _normal_bounds(t, wc, theta)
        method = 'sign-flip (normal)'
        if p >= ALPHA:       # the interval agrees with the test: it holds 0 where the test does not reject 0
            lo, hi = min(lo, 0.0), max(hi, 0.0)
    note = 'the two models agree on every cluster' if not np.any(t) else ''
    return Test(100.0 * theta, 100.0 * min(lo, theta), 100.0 * max(hi, theta), p, method, g, True, note)
