"""Aggregate statistics for the tier table (pure functions, no OpenCompass import)."""
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from opencompass_longctx.effective import NOLIMA_RATIO, RULER_THRESHOLD, passing_run  # noqa: F401 (read through here)

Z95 = 1.959963984540054


def mean_with_ci(task_scores: Sequence[Tuple[float, int]]) -> Tuple[float, Optional[float], int]:
    """Mean of task accuracies (percent) with the half-width of its 95% confidence interval.

    Each task's accuracy over n samples is binomial; its variance is estimated Agresti-Coull style,
    p~(1-p~)/(n+4) with p~ = (x+2)/(n+4), so a task at 0% or 100% does not get a zero-width interval. The mean
    of k tasks has variance sum(var) / k^2. Returns (mean, ci95 half-width or None when a task has no
    samples, total n).
    """
    k = len(task_scores)
    if not k:
        raise ValueError('no task scores')
    mean = sum(s for s, _ in task_scores) / k
    if any(n <= 0 for _, n in task_scores):
        return mean, None, sum(max(n, 0) for _, n in task_scores)
    tilde = [((s / 100) * n + 2) / (n + 4) for s, n in task_scores]
    var = sum(p * (1 - p) / (n + 4) for p, (_, n) in zip(tilde, task_scores)) / k ** 2
    return mean, 100 * Z95 * math.sqrt(var), sum(n for _, n in task_scores)


def effective_length(scores: Sequence[Tuple[str, Optional[float]]], threshold: float) -> Dict[str, Optional[str]]:
    """Effective length over tiers in increasing order (the tier table's form of ``passing_run``).

    ``scores`` is [(tier, score or None for N/A/missing)]. ``contiguous``: the longest tier such that it and
    every shorter tier score >= threshold (a N/A or missing tier ends the run); ``raw``: the longest tier that
    scores >= threshold anywhere. '<first tier' (e.g. '<1k') when the first tier already fails; None when
    there is nothing to judge.
    """
    if all(s is None for _, s in scores):
        return {'contiguous': None, 'raw': None}
    contiguous, raw = passing_run(scores, threshold)
    first = scores[0][0]
    return {'contiguous': contiguous or f'<{first}', 'raw': raw or f'<{first}'}


def nolima_threshold(base: Optional[float], ratio: float = NOLIMA_RATIO) -> Optional[float]:
    """85% of the base score; None when there is no base, or it is 0 (every tier would pass)."""
    return None if not base else ratio * base


# ---------------------------------------------------------------------------------------------- clustered samples
# Samples that share text (NoLiMa's prompts of one needle entry) are not independent draws: the interval of a mean
# over them rests on the clusters, not on the samples (specs/statistics.md). A mean over datasets is a sum over
# clusters of each cluster's contribution T_c (its samples' deviations from their dataset's mean, weighted as the
# mean weighs them); its cluster-robust (Liang-Zeger, "CR1") variance is G/(G-1) * sum_c T_c^2 over the G clusters,
# and the interval uses Student's t with G-1 degrees of freedom. With one sample per cluster this is the binomial
# variance p(1-p)/(n-1); the table then uses the binomial form above (Agresti-Coull, so 0% and 100% are not
# zero-width), which is the same interval up to its small-sample adjustment.
MIN_CLUSTERS = 10        # fewer: no interval is printed, the cell says how many clusters it rests on
BOOTSTRAP = 1000         # resamples for the effective-length interval
BOOT_SEED = 29


def t95(df):
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom (numpy arrays accepted)."""
    from scipy.stats import t
    return t.ppf(0.975, df)


def cluster_contributions(sums, counts):
    """Each cluster's contribution T_c to the error of one dataset's mean (a fraction): (S_c - N_c * mean) / N,
    from each cluster's sum of sample values S_c and sample count N_c. Arrays (..., G): any leading axes are
    independent datasets or replications (vectorised)."""
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    n = counts.sum(axis=-1, keepdims=True)
    return (sums - counts * (sums.sum(axis=-1, keepdims=True) / n)) / n


def cluster_halfwidth(contributions, clusters=None):
    """The 95% half-width (percentage points) of a mean from its clusters' contributions (..., G): CR1 variance
    G/(G-1) sum T_c^2, Student's t with G-1 degrees of freedom. ``clusters``: G when some entries of the last axis
    are not clusters of this mean (padding), else the axis length."""
    contributions = np.asarray(contributions, dtype=float)
    g = contributions.shape[-1] if clusters is None else np.asarray(clusters)
    var = g / (g - 1) * (contributions ** 2).sum(axis=-1)
    return 100 * t95(g - 1) * np.sqrt(var)


def clustered_ci(score: float, contributions: Sequence[float]) -> Tuple[Optional[float], int, str]:
    """(half-width or None, clusters it rests on, ``'clustered'``) of a mean (percent) whose error is the sum over
    clusters of ``contributions``: CR1 over the clusters; no interval (None) under ``MIN_CLUSTERS`` clusters; when
    every cluster contributes nothing (all answers alike, e.g. 100%), Agresti-Coull over the clusters, so a cell at
    0% or 100% is not zero-width."""
    g = len(contributions)
    if g < MIN_CLUSTERS:
        return None, g, 'clustered'
    half = float(cluster_halfwidth(np.asarray(contributions)))
    if half == 0:
        half = mean_with_ci([(score, g)])[1]
    return half, g, 'clustered'


def effective_interval(reps, tiers: Sequence[str], thresholds) -> Optional[List[str]]:
    """The 95% interval [lo, hi] of the contiguous effective length over resampled tier scores ``reps`` (B x tiers,
    NaN for a tier without a score) and thresholds (one, or B): the 2.5% and 97.5% quantiles of the resampled
    effective lengths, in tier order ('<first' below the first tier). None when there is nothing to judge."""
    reps = np.asarray(reps, dtype=float)
    thr = np.broadcast_to(np.asarray(thresholds, dtype=float), reps.shape[:1])
    ok = ~np.isnan(thr)
    if not ok.any() or not reps.size:
        return None
    passing = np.nan_to_num(reps[ok], nan=-np.inf) >= thr[ok, None]
    # the index of the last tier of the passing run from the first (-1: the first tier fails)
    run = np.cumprod(passing, axis=1).sum(axis=1) - 1
    lo, hi = np.quantile(run, [0.025, 0.975], method='inverted_cdf')
    name = lambda i: tiers[int(i)] if i >= 0 else f'<{tiers[0]}'  # noqa: E731
    return [name(lo), name(hi)]
