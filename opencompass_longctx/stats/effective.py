"""The effective length: the one rule (:func:`passing_run`) and its thresholds, read by the tier table and by
NoLiMa's own figures (:mod:`opencompass_longctx.nolima.metrics`), and the 95% interval of an effective length over
resampled tier scores. Pure functions of scores and tiers (numpy only)."""
from typing import Dict, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

RULER_THRESHOLD = 85.6     # RULER: Llama-2-7B's score at 4K
NOLIMA_RATIO = 0.85        # NoLiMa: 85% of the model's own short-context base score
# The effective length's interval resamples whole clusters (:class:`opencompass_longctx.leaderboard.units.Resampler`)
BOOTSTRAP = 1000         # resamples for the effective-length interval
BOOT_SEED = 29
K = TypeVar('K')


def passing_run(scores: Sequence[Tuple[K, Optional[float]]], threshold: float) -> Tuple[Optional[K], Optional[K]]:
    """The one effective-length rule, over scores in increasing length order ([(length, score or None)]).

    Returns (contiguous, raw): ``contiguous`` is the last length of the run of scores >= threshold that starts at
    the first length (a None, i.e. N/A or missing, ends the run); ``raw`` is the last length that scores >=
    threshold anywhere. Either is None when no length qualifies.
    """
    contiguous = None
    for length, score in scores:
        if score is None or score < threshold:
            break
        contiguous = length
    raw = None
    for length, score in scores:
        if score is not None and score >= threshold:
            raw = length
    return contiguous, raw


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


def holding_point(interval: Optional[List[str]], point: Optional[str], tiers: Sequence[str]) -> Optional[List[str]]:
    """The effective length's interval widened, where the resamples left it out, to hold the point itself (the
    percentile interval of a step function can miss its own point when the point sits at a rare resample value)."""
    if not interval or point is None:
        return interval
    order = [f'<{tiers[0]}'] + list(tiers)
    if point not in order or interval[0] not in order or interval[1] not in order:
        return interval
    at = order.index
    return [order[min(at(interval[0]), at(point))], order[max(at(interval[1]), at(point))]]
