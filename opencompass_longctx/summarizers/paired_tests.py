"""Paired tests of two models on the same samples when samples share text (clusters): pure numpy and scipy.

A comparison is the weighted mean of per-sample differences d_i = A_i - B_i (values 0..1), each sample weighing
its dataset's share of the row divided by the dataset's pair count, as the tier table weighs its datasets. The
samples fall into clusters (``Bench.cluster_keys``: NoLiMa's needle entry, across its datasets and tiers; every
sample its own cluster where the benchmark declares none). A cluster's contribution is T_c = sum of w_i d_i over
its samples, and the difference is sum_c T_c.

* :func:`sign_flip`: the test is a sign-flip permutation over clusters. If the two models are equally good on
  every cluster, swapping A and B within a cluster (all its samples at once) does not change the distribution of
  the data, so sum_c e_c T_c with random signs e_c = +-1 is the statistic's null distribution; p is the share of
  sign vectors whose |sum| reaches the observed one (every one of the 2^G vectors for G <= ``EXACT_UP_TO``
  clusters, else ``RESAMPLES`` seeded random ones, (1 + hits) / (1 + draws)). It needs no variance formula and
  no normal approximation, and it is exact for few clusters. The 95% interval is the same test inverted: the
  shifts delta that it does not reject when every difference is taken as d_i - delta, found by bisection with the
  same sign vectors. So the interval and the test agree (the interval excludes 0 when p < 0.05), which a CR1
  normal interval beside a permutation p would not guarantee with few clusters. (A cluster bootstrap was the
  other choice: with few clusters its percentile interval is too narrow, and it would be a second procedure.)
* :func:`mcnemar`: where the samples are independent (no clusters declared), every value is 0/1 and every pair
  weighs the same: the exact McNemar test (scipy's exact binomial test of the discordant pairs, any size) and the
  Clopper-Pearson interval of b/m (scipy), times m/n.

"Not testable" (never significant): fewer than two clusters, or every cluster has the same (weighted mean)
difference (e.g. all differences 0, or one cluster): there is no variance to judge the difference against, and
every resampling interval collapses to the point. A test over fewer than ``MIN_CLUSTERS`` clusters is computed
but never called significant (its p rests on too few independent units to trust its level in practice).

:func:`holm` is Holm's step-down adjustment, used by the rank groups over the comparisons of one ranking.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

LEVEL = 0.95
ALPHA = 1 - LEVEL
RESAMPLES = 2000
SEED = 19
EXACT_UP_TO = 10        # clusters: every one of the 2^G sign vectors is enumerated (1024 at most)
MIN_CLUSTERS = 10       # fewer: the test is shown, never starred
_CHUNK = 4_000_000      # sign entries drawn at once (memory)
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
        return self.testable and self.p is not None and self.p < ALPHA and self.clusters >= MIN_CLUSTERS


def few_clusters_note(clusters: int) -> str:
    return (f'only {clusters} clusters: too few for a test to be trusted (shown, not starred)'
            if clusters < MIN_CLUSTERS else '')


def mcnemar(b: int, c: int, n: int) -> Test:
    """Exact McNemar test of n independent 0/1 pairs of equal weight: b pairs favour A, c favour B."""
    from scipy.stats import binomtest
    m = b + c
    diff = 100.0 * (b - c) / n
    if not m:
        return Test(diff, clusters=n, note='not testable: the two models agree on every sample')
    test = binomtest(b, m, 0.5)
    ci = test.proportion_ci(LEVEL, method='exact')
    scale = 100.0 * m / n
    return Test(diff, scale * (2 * ci.low - 1), scale * (2 * ci.high - 1), float(test.pvalue), 'mcnemar', n, True,
                few_clusters_note(n))


def _flip_sums(columns: np.ndarray, resamples: int, seed: int) -> Tuple[np.ndarray, bool]:
    """(E @ columns, exact) over the sign vectors E (rows): all 2^G of them for G <= ``EXACT_UP_TO`` clusters, else
    ``resamples`` seeded random ones (the same ones for the same G and seed, whatever the columns)."""
    g = columns.shape[0]
    if g <= EXACT_UP_TO:
        flips = (np.arange(2 ** g)[:, None] >> np.arange(g)) & 1
        return (1.0 - 2.0 * flips) @ columns, True
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK // g)
    parts = [np.where(rng.random((min(rows, resamples - start), g)) < 0.5, -1.0, 1.0) @ columns
             for start in range(0, resamples, rows)]
    return np.concatenate(parts), False


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


def flip_p(t: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED):
    """The sign-flip p value of cluster sums ``t`` (one row per replication, or one vector): the test of
    :func:`sign_flip`, without its interval."""
    rows = np.atleast_2d(np.asarray(t, dtype=float))
    sums, exact = _flip_sums(rows.T, resamples, seed)
    observed = np.abs(rows.sum(axis=1))
    hits = np.count_nonzero(np.abs(sums) >= observed - 1e-12 * np.maximum(1.0, observed), axis=0)
    p = hits / len(sums) if exact else (1 + hits) / (1 + len(sums))
    return p if np.ndim(t) == 2 else float(p[0])


def _p_at(a: np.ndarray, b: np.ndarray, theta: float, delta: float, exact: bool) -> float:
    """The sign-flip p value of the differences shifted by delta (d_i - delta)."""
    observed = abs(theta - delta)
    hits = int(np.count_nonzero(np.abs(a - delta * b) >= observed - 1e-12 * max(1.0, observed)))
    return hits / len(a) if exact else (1 + hits) / (1 + len(a))


def _bound(a, b, theta: float, exact: bool, end: float) -> float:
    """The last shift from theta towards ``end`` that the test does not reject (bisection)."""
    if _p_at(a, b, theta, end, exact) >= ALPHA:
        return end
    inside, outside = theta, end
    for _ in range(60):
        mid = (inside + outside) / 2
        inside, outside = (mid, outside) if _p_at(a, b, theta, mid, exact) >= ALPHA else (inside, mid)
    return inside


def sign_flip(d: np.ndarray, w: np.ndarray, cluster: np.ndarray, resamples: int = RESAMPLES,
              seed: int = SEED) -> Test:
    """The clustered paired test (module docstring): ``d`` per-sample differences (values 0..1, so d in [-1, 1]),
    ``w`` their weights (summing to 1), ``cluster`` their cluster codes (integers)."""
    t, wc = cluster_sums(d, w, cluster)
    theta = float(t.sum())
    g = len(t)
    if g < 2:
        return Test(100.0 * theta, clusters=g,
                    note=f'not testable: {"one cluster" if g else "no cluster"}, no variance between clusters')
    means = t / wc
    if np.ptp(means) <= 1e-12:
        return Test(100.0 * theta, clusters=g, note=f'not testable: every one of the {g} clusters has the same '
                    f'difference ({100.0 * means[0]:+.1f}): no variance to judge it against')
    sums, exact = _flip_sums(np.stack([t, wc], axis=1), resamples, seed)
    a, b = sums[:, 0], sums[:, 1]
    p = _p_at(a, b, theta, 0.0, exact)
    lo, hi = _bound(a, b, theta, exact, -1.0), _bound(a, b, theta, exact, 1.0)
    return Test(100.0 * theta, 100.0 * lo, 100.0 * hi, p, 'sign-flip', g, True, few_clusters_note(g))


def holm(ps: Sequence[float]) -> List[float]:
    """Holm's step-down adjusted p values (same order as given): a comparison is significant at level alpha
    after the correction when its adjusted p < alpha; the family-wise error rate stays at most alpha."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out
