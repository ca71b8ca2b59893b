"""Aggregate statistics for the tier table (pure functions, no OpenCompass import)."""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from opencompass_longctx.effective import NOLIMA_RATIO, RULER_THRESHOLD, passing_run  # noqa: F401 (read through here)


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


# The effective length's interval (:mod:`.intervals` resamples whole clusters); the cells' intervals are
# :mod:`opencompass_longctx.stats.intervals`'.
BOOTSTRAP = 1000         # resamples for the effective-length interval
BOOT_SEED = 29


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
