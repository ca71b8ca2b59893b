"""The effective-length rule and its thresholds, read by the tier table (:mod:`.summarizers.metrics`) and by
NoLiMa's own figures (:mod:`.nolima.metrics`); pure functions, no imports of the package."""
from typing import Optional, Sequence, Tuple, TypeVar

RULER_THRESHOLD = 85.6     # RULER: Llama-2-7B's score at 4K
NOLIMA_RATIO = 0.85        # NoLiMa: 85% of the model's own short-context base score
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
