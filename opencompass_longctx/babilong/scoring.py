"""BABILong answer scoring in three named modes (no OpenCompass import: usable stand-alone).

* ``official``: the authors' strict label-set rule (babilong/metrics.py ``compare_answers``), quirks included:
  labels are matched as substrings of the first sentence (text before the first '.') of the lowercased
  output, cut at ``<context>``/``<example>`` (the cut at "Question" never fires because the text is already
  lowercase); labels that occur in the question are ignored; correct iff the target is the only label left,
  or for qa8 lists (a target with a comma, longer than 3 characters) iff exactly the listed items are left.
  Known consequences: qa7 "none" is never correct (it contains "one"); "no" matches inside "not"/"know".
* ``fixed``: the same label-set rule with the bugs fixed: labels match as whole words, a newline also
  ends the first sentence, the "question" cut works, spaces around commas are ignored (so qa19 "s, e"
  matches "s,e"), so qa7 "none" and yes/no answers score as intended.
* ``lenient``: the older substring rule OpenCompass's built-in evaluator uses (target substring of the
  first sentence), kept only for comparison with old OpenCompass numbers.
"""
import re
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.errors import ScoringError

MODES = ('official', 'fixed', 'lenient')

_LOCATIONS = ['bathroom', 'bedroom', 'garden', 'hallway', 'kitchen', 'office']
_YES_NO = ['yes', 'no']
# Answer label sets per task (facts from the authors' TASK_LABELS, babilong/metrics.py).
TASK_LABELS: Dict[str, List[str]] = {
    'qa1': _LOCATIONS, 'qa2': _LOCATIONS, 'qa3': _LOCATIONS, 'qa4': _LOCATIONS,
    'qa5': ['Bill', 'Fred', 'Jeff', 'Mary', 'apple', 'football', 'milk'],
    'qa6': _YES_NO,
    'qa7': ['none', 'one', 'three', 'two'],
    'qa8': ['apple', 'football', 'milk', 'nothing'],
    'qa9': _YES_NO,
    'qa10': ['maybe', 'no', 'yes'],
    'qa11': _LOCATIONS, 'qa12': _LOCATIONS, 'qa13': _LOCATIONS,
    'qa14': ['bedroom', 'cinema', 'kitchen', 'office', 'park', 'school'],
    'qa15': ['cat', 'mouse', 'sheep', 'wolf'],
    'qa16': ['gray', 'green', 'white', 'yellow'],
    'qa17': _YES_NO, 'qa18': _YES_NO,
    'qa19': ['e,e', 'e,n', 'e,s', 'n,e', 'n,n', 'n,w', 's,e', 's,s', 's,w', 'w,n', 'w,s', 'w,w'],
    'qa20': ['bedroom', 'bored', 'garden', 'hungry', 'kitchen', 'thirsty', 'tired'],
}


def _check(task: str, mode: str):
    if mode not in MODES:
        raise ScoringError(f'unknown BABILong scoring mode {mode!r}; choose one of {MODES}')
    if task not in TASK_LABELS:
        raise ScoringError(f'unknown BABILong task {task!r}; choose one of qa1..qa20')


def _first_sentence(output: str, mode: str) -> str:
    out = output.lower().split('.')[0]
    if mode == 'fixed':
        out = out.split('\n')[0]
    out = out.split('<context>')[0].split('<example>')[0]
    # The authors cut at 'Question' after lowercasing, so the cut never fires ('official' keeps that).
    out = out.split('question' if mode == 'fixed' else 'Question')[0]
    if mode == 'fixed':
        out = re.sub(r'\s*,\s*', ',', out)
    return out


def _labels_in(text: str, labels: Sequence[str], whole_words: bool) -> set:
    if not whole_words:
        return {lab for lab in labels if lab in text}
    return {lab for lab in labels if re.search(r'(?<![a-z0-9])' + re.escape(lab) + r'(?![a-z0-9])', text)}


def score_one(prediction, target: str, question: str, task: str, mode: str = 'official') -> Dict:
    """Score one answer. A prediction that is None, not a string or empty counts as wrong (never raises)."""
    _check(task, mode)
    detail = {'pred': prediction, 'answer': target, 'mode': mode}
    if not isinstance(prediction, str) or not prediction.strip():
        detail.update(correct=False, invalid_prediction=True,
                      reason='empty prediction' if isinstance(prediction, str) or prediction is None
                      else f'prediction is {type(prediction).__name__}, not a string')
        return detail
    target_l = str(target).lower().strip()
    if mode == 'lenient':
        out = _first_sentence(prediction, mode)
        detail['correct'] = target_l in out
        return detail
    whole = mode == 'fixed'
    labels = [lab.lower() for lab in TASK_LABELS[task]]
    out = _first_sentence(prediction.strip() if whole else prediction, mode)
    in_question = _labels_in(str(question).lower(), labels, whole)
    in_output = _labels_in(out, labels, whole) - in_question
    if ',' in target_l and len(target_l) > 3:
        parts = [p.strip() for p in target_l.split(',')] if whole else target_l.split(',')
        correct = all(p in in_output for p in parts) and len(in_output) == len(parts)
    else:
        correct = target_l in in_output and len(in_output) == 1
    detail.update(correct=bool(correct), labels_in_output=sorted(in_output),
                  labels_in_question=sorted(in_question))
    return detail


def score_many(predictions, targets, questions, tasks, mode: str = 'official') -> Dict:
    """Accuracy (percent) and per-sample details; invalid predictions are counted, scored 0."""
    if not (len(predictions) == len(targets) == len(questions) == len(tasks)):
        raise ScoringError(f'length mismatch: {len(predictions)} predictions, {len(targets)} targets, '
                           f'{len(questions)} questions, {len(tasks)} tasks')
    details = [score_one(p, t, q, k, mode) for p, t, q, k in zip(predictions, targets, questions, tasks)]
    n = len(details)
    correct = sum(d['correct'] for d in details)
    return {'accuracy': 100.0 * correct / n if n else 0.0, 'n': n, 'correct': correct,
            'invalid_predictions': sum(bool(d.get('invalid_prediction')) for d in details),
            'details': details}


def accuracy(predictions, targets, questions, task: str, mode: str = 'official',
             tasks: Optional[Sequence[str]] = None) -> float:
    return score_many(predictions, targets, questions, tasks or [task] * len(predictions), mode)['accuracy']
