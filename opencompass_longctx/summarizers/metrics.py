"""Aggregate statistics for the tier table (pure functions, no OpenCompass import)."""
import math
from typing import Dict, Optional, Sequence, Tuple, TypeVar

RULER_THRESHOLD = 85.6     # RULER: Llama-2-7B's score at 4K
NOLIMA_RATIO = 0.85        # NoLiMa: 85% of the model's own short-context base score
Z95 = 1.959963984540054
K = TypeVar('K')


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
