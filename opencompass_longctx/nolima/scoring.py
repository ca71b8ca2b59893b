"""NoLiMa per-test scoring (no OpenCompass import), as the authors' evaluation code (docs/faithfulness.md#nolima).

* ``contains`` (the headline, all the authors' run configs use it): some gold string is a case-sensitive raw
  substring of the response; no stripping, lower-casing or word boundary ("yuki" fails, a list of names that
  includes the gold one passes).
* ``EM``: the stripped response equals a gold string.
* ``lastline_contains`` / ``lastline_EM``: the same on the last line of the stripped response (for CoT); as in
  the authors' code that line itself is not stripped again, so ``'Answer:\\n Yuki '`` is no ``lastline_EM`` match
  (its last line is ``' Yuki'``).

Before scoring, reasoning traces are removed (``strip_think=True``): ``<think>...</think>`` blocks, any text
up to a closing ``</think>`` whose opening tag was in the prompt, and an unfinished ``<think>`` to the end. A
response that is ``None`` (blocked by a content filter or failed request) or empty counts as wrong and is
counted separately; so is a prediction that is not a string.
"""
import re
from typing import Dict, List, Optional, Sequence

from opencompass_longctx import overlength
from opencompass_longctx.nolima.needles import NoLiMaError
METRICS = ('contains', 'EM', 'lastline_contains', 'lastline_EM')
_THINK = re.compile(r'<think>.*?</think>', re.DOTALL)


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise NoLiMaError(f'unknown NoLiMa metric {metric!r}; choose one of {", ".join(METRICS)}')
    return metric


def strip_reasoning(text: str):
    """(answer text, status): status is None, 'stripped' or 'unfinished' (a trace cut off before </think>)."""
    status = None
    if '<think>' in text or '</think>' in text:
        status = 'stripped'
        text = _THINK.sub('', text)
        if '</think>' in text:  # opening tag was part of the prompt / chat template
            text = text.rsplit('</think>', 1)[1]
        if '<think>' in text:  # never closed: the budget ran out inside the trace
            text = text.split('<think>', 1)[0]
            status = 'unfinished'
    return text, status


def _last_line(text: str) -> str:
    """The authors' last line: of the stripped response, split at '\\n', not stripped itself."""
    return text.strip().split('\n')[-1]


def metric_values(response: str, golds: Sequence[str]) -> Dict[str, bool]:
    last = _last_line(response)
    stripped = response.strip()
    return {
        'contains': any(g in response for g in golds),
        'EM': any(stripped == g for g in golds),
        'lastline_contains': any(g in last for g in golds),
        'lastline_EM': any(last == g for g in golds),
    }


def score_one(prediction, golds: Sequence[str], metric: str = 'contains', strip_think: bool = True) -> Dict:
    """Score one response; never raises for a bad prediction (it is wrong and labelled)."""
    check_metric(metric)
    detail = {'pred': prediction, 'answer': list(golds)}
    if prediction is None:
        status, values = 'blocked', None
    elif not isinstance(prediction, str):
        status, values = 'invalid', None
        detail['reason'] = f'prediction is {type(prediction).__name__}, not a string'
    elif not prediction.strip():
        status, values = 'empty', None
    else:
        text, think = strip_reasoning(prediction) if strip_think else (prediction, None)
        if think:
            detail['reasoning'] = think
            detail['scored_text'] = text
        status = 'ok' if text.strip() else 'empty_after_reasoning'
        values = metric_values(text, golds) if text.strip() else None
    values = values or {m: False for m in METRICS}
    detail.update(values)
    detail['status'] = status
    detail['correct'] = bool(values[metric])
    return detail


def check_predictions(predictions, n_references: int) -> list:
    """The predictions as a list, or a clear error (not a list, empty, wrong length)."""
    return overlength.check_predictions(predictions, n_references, error=NoLiMaError)


def score_many(predictions, gold_lists: List[List[str]], metric: str = 'contains', strip_think: bool = True,
               meta: Optional[List[Dict]] = None) -> Dict:
    """Headline accuracy (percent) in ``metric``, all four metrics, counts and per-sample details."""
    check_metric(metric)
    predictions = check_predictions(predictions, len(gold_lists))
    for i, g in enumerate(gold_lists):
        if not isinstance(g, (list, tuple)) or not g or not all(isinstance(x, str) and x for x in g):
            raise NoLiMaError(f'reference #{i} must be a non-empty list of gold strings, got {g!r}')
    details = []
    for i, (p, g) in enumerate(zip(predictions, gold_lists)):
        d = score_one(p, g, metric, strip_think)
        if meta is not None:
            d.update(meta[i])
        details.append(d)
    n = len(details)
    count = {s: sum(d['status'] == s for d in details) for s in ('blocked', 'empty', 'empty_after_reasoning',
                                                                 'invalid')}
    return {
        'accuracy': 100.0 * sum(d['correct'] for d in details) / n,
        'metrics': {m: 100.0 * sum(d[m] for d in details) / n for m in METRICS},
        'counts': dict(n=n, correct=sum(d['correct'] for d in details), **count,
                       reasoning_stripped=sum('reasoning' in d for d in details),
                       unfinished_reasoning=sum(d.get('reasoning') == 'unfinished' for d in details)),
        'details': details,
    }
