"""Rank intervals of a leaderboard: which ranks each model can hold, given which differences are real.

**By score** (:func:`rank_intervals`): every pair of models is tested (paired, over the samples both ran:
:mod:`.paired`), and Holm's step-down correction runs over all those tests at once, so the chance that any
difference called significant is not real stays at most 5% for the whole ranking. A model's rank interval is
[1 + the number of models significantly better, K - the number significantly worse]: Chatbot Arena's "rank (UB)" is
its first end, and it is the confidence set for ranks that Mogstad, Romano, Shaikh and Wilhelm (Review of Economic
Studies 2023) derive from simultaneous pairwise tests (their stepwise max-t procedure is sharper; Holm is the simple
valid member of that family, docs/leaderboard.md "Ranks"). It works at any leaderboard size because every p value it
reads is exact or analytic (no Monte Carlo floor above Holm's smallest threshold 0.05 / pairs; an exact sign flip's
own floor, 2/2^G over G clusters, can be: the ranking then says so).

**By effective length** (:func:`length_rank_intervals`): [1 + the models whose effective-length interval lies
wholly above this model's, K - those wholly below] (Arena's rule on the effective length's own 95% intervals; no
multiplicity correction: the intervals are each 95%).

Either way the models are listed by their best rank (Chatbot Arena's convention), so a model listed higher never
shows a worse best rank than one below it: a model significantly beaten by one other lists below a model with a
point lower that nobody beats significantly.
"""
from typing import Dict, Hashable, List, Optional, Sequence, Tuple


def holm(ps: Sequence[float]) -> List[float]:
    """Holm's step-down adjusted p values (same order as given): a comparison is significant at level alpha
    after the correction when its adjusted p < alpha; the family-wise error rate stays at most alpha."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def rank_intervals(models: Sequence[Hashable], better: Dict[Tuple[Hashable, Hashable], bool]) \
        -> Dict[Hashable, Tuple[int, int]]:
    """{model: (best rank, worst rank)} from ``better``: {(x, y): True} for each pair where x is significantly
    better than y (after the correction)."""
    k = len(models)
    above = {m: sum(1 for x in models if better.get((x, m))) for m in models}
    below = {m: sum(1 for y in models if better.get((m, y))) for m in models}
    return {m: (1 + above[m], k - below[m]) for m in models}


def length_rank_intervals(spans: Dict[Hashable, Optional[Tuple[float, float]]]) -> Dict[Hashable, Tuple[int, int]]:
    """{model: (best rank, worst rank)} from each model's effective-length interval (lo, hi) in tokens (None: no
    effective length; such a model is ranked below every model that has one)."""
    have = {m: s for m, s in spans.items() if s is not None}
    k = len(spans)
    out = {}
    for m, s in spans.items():
        if s is None:
            out[m] = (len(have) + 1, k)
            continue
        above = sum(1 for x, o in have.items() if x != m and o[0] > s[1])
        below = sum(1 for x, o in have.items() if x != m and o[1] < s[0]) + (k - len(have))
        out[m] = (1 + above, k - below)
    return out


def rank_text(span: Optional[Tuple[int, int]]) -> str:
    """'3' or '2-5'; '' for none."""
    if not span:
        return ''
    lo, hi = span
    return str(lo) if lo == hi else f'{lo}-{hi}'
