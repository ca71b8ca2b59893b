"""95% intervals of a score that lives in [0, 100]: always inside it, asymmetric where they must be.

A table cell is a weighted mean of datasets ("units"), each the mean of its samples' values in [0, 1].

* **Independent samples** (:func:`binomial_interval`): the Wilson score interval at the mean's effective sample
  size n_eff = c(1 - c) / Var, Var = sum_u w_u^2 c_u (1 - c_u) / n_u, each dataset's share read at its Wilson
  centre c_u = (x_u + z^2/2) / (n_u + z^2) and c = sum_u w_u c_u (one dataset: n_eff = n, the plain Wilson
  interval), so a dataset at 0% or 100% still counts its uncertainty.
* **Clustered samples** (:func:`clustered_interval`, samples that share text: docs/leaderboard.md): the
  bias-reduced cluster-robust variance ("CR2", Bell and McCaffrey 2002) of the stratified mean, and a Wilson interval
  at n_eff = p(1 - p) / Var_CR2 whose critical value is the 97.5% point of the studentised mean under a working
  model in which clusters carry a random effect of intraclass correlation rho (Imbens and Kolesar 2016's idea, with
  the working model's exact distribution, simulated, in place of a Satterthwaite degrees-of-freedom fit). rho is
  estimated from the data (within-cluster covariance of the residuals, each cluster weighing the same, plus
  ``RHO_MARGIN`` of its standard error), so the critical value grows where clusters are few, unequal or
  dissimilar and stays near the normal one where they are many and alike.

Why this and not CR1 with Student's t on G - 1 degrees of freedom: when one cluster holds 60% of a cell's samples,
CR1's interval covered the truth 52-62% of the time (issue 40; ``tests/test_stats_intervals.py`` simulates the
grid), and a normal-form interval leaves [0, 100] at the edges. Bell-McCaffrey degrees of freedom alone over-cover
(98-99%) when the clusters are unequal but alike; this form keeps 93-97% on both grids (the test's table).

Cells on fewer than ``MIN_CLUSTERS`` clusters get no interval (too few to read a variance from); the caller says so.
"""
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence, Tuple

import numpy as np

LEVEL = 0.95
Z95 = 1.959963984540054
MIN_CLUSTERS = 10            # fewer: no interval (docs/leaderboard.md)
RHO_MARGIN = 0.1             # standard errors of the between-cluster variance added to its estimate
DRAWS = 8000                 # draws of the working model for one critical value
RHO_STEPS = 50               # the working correlation on a grid of sqrt(rho) in steps of 1/50 (memoised)
SEED = 41


@dataclass(frozen=True)
class Bounds:
    """A 95% interval in percent, inside [0, 100]."""
    lo: float
    hi: float

    def contains(self, x: float) -> bool:
        return self.lo - 1e-9 <= x <= self.hi + 1e-9


def wilson(p: float, n: float, z: float = Z95) -> Bounds:
    """The Wilson score interval of a proportion p in [0, 1] observed on n (effective) samples, in percent."""
    p = min(max(float(p), 0.0), 1.0)
    if not n > 0:
        return Bounds(0.0, 100.0)
    z2n = z * z / n
    center = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    return Bounds(100 * min(max(0.0, center - half), p), 100 * max(min(1.0, center + half), p))   # (holds p exactly)


def binomial_interval(parts: Sequence[Tuple[float, float, float]]) -> Optional[Bounds]:
    """The interval of sum_u w_u p_u over independent samples: ``parts`` = [(w_u, p_u in [0, 1], n_u)] (weights
    summing to 1): Wilson's at the effective sample size (one part: its n). None when a part has no samples."""
    if not parts or any(not n > 0 for _, _, n in parts):
        return None
    p = sum(w * q for w, q, _ in parts)
    if len(parts) == 1:
        return wilson(p, parts[0][2])
    # each part's variance read at its Wilson centre (x + z^2/2) / (n + z^2): a part at 0% or 100% still carries
    # the uncertainty of its n samples (read at its own p it would add none, and a small part at 100% beside a
    # large one at 50% would give an interval as tight as if every part were large)
    z2 = Z95 * Z95
    centre = [(w, (q * n + z2 / 2) / (n + z2), n) for w, q, n in parts]
    var = sum(w * w * c * (1 - c) / n for w, c, n in centre)
    mid = sum(w * c for w, c, _ in centre)
    return wilson(p, mid * (1 - mid) / var)


@dataclass(frozen=True)
class ClusterTable:
    """A stratified mean's samples tallied by (cluster, unit): one entry k per pair that has samples.

    ``cluster[k]``, ``unit[k]``: codes 0..G-1 and 0..U-1; ``n[k]`` samples with values summing to ``s[k]`` and
    squares to ``q[k]``; ``weight[u]``: unit u's share of the mean (summing to 1)."""
    cluster: np.ndarray
    unit: np.ndarray
    n: np.ndarray
    s: np.ndarray
    q: np.ndarray
    weight: np.ndarray

    @property
    def clusters(self) -> int:
        return int(self.cluster.max()) + 1 if self.cluster.size else 0

    def design(self):
        """(per entry: the sample weight a_k = w_u / n_u, the leverage h_k = n_k / n_u, and 1/sqrt(1 - h_k) (0
        where the cluster is the whole unit: its residual is 0)); the unit sizes n_u."""
        n_u = np.bincount(self.unit, weights=self.n, minlength=len(self.weight))
        a = self.weight[self.unit] / n_u[self.unit]
        h = self.n / n_u[self.unit]
        with np.errstate(divide='ignore'):
            adj = np.where(h < 1 - 1e-12, 1 / np.sqrt(np.maximum(1 - h, 1e-300)), 0.0)
        return a, h, adj, n_u


def cr2_variance(t: ClusterTable) -> Tuple[float, float]:
    """(the mean as a fraction, its CR2 variance): sum over clusters of (sum_k a_k r_k / sqrt(1 - h_k))^2, r_k the
    entry's residual sum from its unit's mean (the exact CR2 adjustment of a stratified mean, whose hat matrix is
    block-diagonal by unit)."""
    a, _, adj, n_u = t.design()
    mean_u = np.bincount(t.unit, weights=t.s, minlength=len(t.weight)) / n_u
    r = t.s - t.n * mean_u[t.unit]
    u_g = np.bincount(t.cluster, weights=a * r * adj, minlength=t.clusters)
    return float(t.weight @ mean_u), float(u_g @ u_g)


def working_rho(t: ClusterTable) -> float:
    """The intraclass correlation the critical value assumes: the within-cluster covariance of residuals (each
    cluster's mean of r_i r_j over its pairs of samples i != j, averaged over clusters with two samples or more,
    each weighing the same), plus ``RHO_MARGIN`` standard errors of it, over the samples' variance."""
    n_u = np.bincount(t.unit, weights=t.n, minlength=len(t.weight))
    mean_u = np.bincount(t.unit, weights=t.s, minlength=len(t.weight)) / n_u
    m = mean_u[t.unit]
    g = t.clusters
    r_sum = np.bincount(t.cluster, weights=t.s - t.n * m, minlength=g)
    r_sq = np.bincount(t.cluster, weights=t.q - 2 * m * t.s + t.n * m * m, minlength=g)
    n_g = np.bincount(t.cluster, weights=t.n, minlength=g)
    pairs = n_g >= 2
    if pairs.sum() < 2:
        return 0.0
    tau = (r_sum[pairs] ** 2 - r_sq[pairs]) / (n_g[pairs] * (n_g[pairs] - 1))
    spread = np.mean((r_sum[pairs] / n_g[pairs]) ** 2)
    var_u = np.maximum(np.bincount(t.unit, weights=t.q, minlength=len(t.weight)) / n_u - mean_u ** 2, 0)
    total = float(t.weight @ var_u)
    if total <= 0:
        return 0.0
    tau2 = max(0.0, float(np.mean(tau))) + RHO_MARGIN * math.sqrt(2 / (pairs.sum() - 1)) * spread
    return min(tau2 / total, 0.99)


def critical_value(t: ClusterTable, rho: float) -> float:
    """The 97.5% point of |mean error| / sqrt(Var_CR2) under the working model (normal cluster effects of
    correlation rho, normal sample errors), simulated with ``DRAWS`` seeded draws and memoised by the table's design
    and rho's grid step."""
    step = int(round(math.sqrt(max(rho, 0.0)) * RHO_STEPS))
    key = (t.cluster.tobytes(), t.unit.tobytes(), t.n.astype(float).tobytes(), np.round(t.weight, 12).tobytes())
    return _critical(key, step)


@lru_cache(maxsize=4096)
def _critical(key, step: int) -> float:
    cluster, unit = np.frombuffer(key[0], dtype=np.int64), np.frombuffer(key[1], dtype=np.int64)
    n, weight = np.frombuffer(key[2]), np.frombuffer(key[3])
    t = ClusterTable(cluster, unit, n, np.zeros_like(n), np.zeros_like(n), weight)
    a, _, adj, n_u = t.design()
    rho = (step / RHO_STEPS) ** 2
    g, k, u = t.clusters, len(n), len(weight)
    to_unit = np.zeros((k, u))
    to_unit[np.arange(k), unit] = n / n_u[unit]
    to_cluster = np.zeros((k, g))
    to_cluster[np.arange(k), cluster] = a * adj * n
    rng = np.random.default_rng([SEED, g, k])
    ratios = []
    rows = max(1, min(DRAWS, 2_000_000 // max(k, 1)))
    for start in range(0, DRAWS, rows):
        d = min(rows, DRAWS - start)
        m = math.sqrt(rho) * rng.standard_normal((d, g))[:, cluster] \
            + np.sqrt((1 - rho) / n) * rng.standard_normal((d, k))
        means = m @ to_unit
        err = means @ weight
        u_g = (m - means[:, unit]) @ to_cluster
        ratios.append(np.abs(err) / np.sqrt(np.maximum((u_g * u_g).sum(axis=1), 1e-300)))
    return float(np.quantile(np.concatenate(ratios), LEVEL))


def clustered_interval(t: ClusterTable) -> Optional[Bounds]:
    """The bounded cluster-robust interval of the module docstring; None under ``MIN_CLUSTERS`` clusters."""
    g = t.clusters
    if g < MIN_CLUSTERS:
        return None
    p, var = cr2_variance(t)
    p = min(max(p, 0.0), 1.0)
    n_eff = p * (1 - p) / var if var > 0 and 0 < p < 1 else float(g)
    return wilson(p, n_eff, critical_value(t, working_rho(t)))
