"""LongBioBench scoring in two named modes (no OpenCompass import: usable stand-alone).

``compat`` is the authors' evaluator (spec section 2):
* lists (retrieval answers, rank names): ordered, all-or-nothing, case-insensitive; each item is searched
  (``re.escape``) after the end of the previous match; a str answer (multihop) is a case-insensitive substring;
* calculation: the last integer of the output equals the gold (an extracted 0 counts as a miss, as written);
* twodiff: walk the context's bios in order, collect each full name that is a case-sensitive substring of the
  output (once); exactly two names must be found and their ages must differ by the asked difference;
* idk: the answerable half is the standard question's hit on the same data, the refusal half is
  "not stated" (case-insensitive) in the output; the sample counts when both hold;
* citation: the values and the "[k]" citations (0-based bio numbers) are each scored with the list rule
  (a single item: a plain case-insensitive substring);
* the base-model cut ``pred[:pred.find("Question: ")]``, which drops the last character when the marker is
  absent, applies (to the retrieval, calculation, rank, multihop and IDK-answer scores) when the authors
  would have treated the model as a base model: its name lacks "instruct".

``strict`` fixes what spec section 9 lists: no last-character cut; rank reads only the final list (the last
bracketed list, else the text after the last " is "); "not explicitly stated" is a refusal too, and the
answerable half of IDK must answer without refusing; twodiff takes the last two people the output names (a
rationale may name others). Containment supersets cannot occur: no pool value is a substring of another.

Every scorer returns a dict with ``correct`` (bool) and never raises on a bad prediction: ``None``,
non-strings and empty strings score 0 and are flagged ``invalid_prediction``.
"""
import re
from typing import Dict, Optional, Sequence

MODES = ('compat', 'strict')
_REFUSAL_STRICT = re.compile(r'\bnot\s+(?:explicitly\s+)?stated\b', re.IGNORECASE)


class ScoringError(ValueError):
    pass


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ScoringError(f'unknown LongBioBench scoring mode {mode!r}; modes: {MODES}')
    return mode


def invalid_reason(pred) -> Optional[str]:
    if pred is None:
        return 'prediction is None'
    if not isinstance(pred, str):
        return f'prediction is {type(pred).__name__}, not a string'
    if not pred.strip():
        return 'empty prediction'
    return None


def authors_cut(pred: str) -> str:
    """The authors' base-model truncation, off-by-one included: no marker -> the last character is dropped."""
    return pred[:pred.find('Question: ')]


def truncate_for(model_name: Optional[str]) -> bool:
    """The authors treat a model as base (and cut its output) when its name lacks 'instruct'."""
    return model_name is not None and 'instruct' not in model_name.lower()


def list_hit(pred: str, items: Sequence[str]) -> bool:
    """Ordered, all-or-nothing, case-insensitive subsequence match (the authors' rule)."""
    cursor = 0
    for item in items:
        m = re.search(re.escape(str(item)), pred[cursor:], re.IGNORECASE)
        if m is None:
            return False
        cursor += m.end()
    return True


def substring_hit(pred: str, ref: str) -> bool:
    return ref.strip().lower() in pred.lower()


def last_int_hit(pred: str, gold: int, mode: str) -> bool:
    nums = re.findall(r'\d+', pred)
    if not nums:
        return False
    value = int(nums[-1])
    if mode == 'compat' and not value:   # the authors' `if pred and ...`
        return False
    return value == int(gold)


def refusal(pred: str, mode: str) -> bool:
    if mode == 'compat':
        return 'not stated' in pred.lower()
    return _REFUSAL_STRICT.search(pred) is not None


def final_list_segment(pred: str) -> str:
    """strict rank: the last bracketed list, else the text after the last ' is ', else the last line."""
    lists = re.findall(r'\[([^\[\]]*)\]', pred)
    if lists:
        return lists[-1]
    i = pred.lower().rfind(' is ')
    if i >= 0:
        return pred[i + 4:]
    lines = [ln for ln in pred.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ''


def _name_positions(text: str, names: Sequence[str]) -> Dict[str, int]:
    low = text.lower()
    out = {}
    for nm in names:
        m = re.search(r'(?<![\w])' + re.escape(nm.lower()) + r'(?![\w])', low)
        if m:
            out[nm] = m.start()
    return out


def rank_strict_hit(pred: str, gold: Sequence[str]) -> bool:
    """All names in the final list, in the gold order."""
    pos = _name_positions(final_list_segment(pred), gold)
    return len(pos) == len(gold) and sorted(gold, key=pos.get) == list(gold)


def twodiff_hit(pred: str, roster: Sequence[Sequence], diff: int, mode: str) -> Dict:
    ages = {name: age for name, age in roster}
    if mode == 'compat':
        found = []
        for name, _ in roster:             # context order, case-sensitive, each name once
            if name in pred and name not in found:
                found.append(name)
        pair = found if len(found) == 2 else None
    else:                                  # the two people named last
        last = {}
        low = pred.lower()
        for name, _ in roster:
            ms = [m.start() for m in re.finditer(r'(?<![\w])' + re.escape(name.lower()) + r'(?![\w])', low)]
            if ms:
                last[name] = ms[-1]
        found = sorted(last, key=last.get)
        pair = found[-2:] if len(found) >= 2 else None
    ok = bool(pair) and all(ages.get(p) is not None for p in pair) and abs(ages[pair[0]] - ages[pair[1]]) == int(diff)
    return {'correct': ok, 'found': found}


def score_row(pred, label: Dict, mode: str, truncate: bool = False) -> Dict:
    """Score one prediction against one row label (see generator._main_label). Never raises on the prediction."""
    check_mode(mode)
    kind = label.get('kind')
    reason = invalid_reason(pred)
    if reason:
        out = {'correct': False, 'invalid_prediction': True, 'reason': reason}
        if kind == 'cite':
            out.update(answer=False, citation=False)
        return out
    cut = authors_cut(pred) if (mode == 'compat' and truncate) else pred
    if kind == 'list':
        return {'correct': list_hit(cut, label['items'])}
    if kind == 'str':
        return {'correct': substring_hit(cut, label['value'])}
    if kind == 'int':
        return {'correct': last_int_hit(cut, label['value'], mode)}
    if kind == 'rank':
        return {'correct': list_hit(cut, label['items']) if mode == 'compat' else rank_strict_hit(pred, label['items'])}
    if kind == 'twodiff':
        return twodiff_hit(pred, label['roster'], label['diff'], mode)
    if kind == 'cite':
        def hit(items):
            return substring_hit(pred, items[0]) if len(items) == 1 else list_hit(pred, items)
        a, c = hit(label['items']), hit(label['cites'])
        return {'correct': a and c, 'answer': a, 'citation': c}
    if kind == 'refusal':
        return {'correct': refusal(pred, mode)}
    if kind == 'answer':   # IDK answerable half
        hit = list_hit(cut, label['items'])
        if mode == 'strict':
            hit = hit and not refusal(pred, mode)
        return {'correct': hit}
    raise ScoringError(f'unknown label kind {kind!r}')


HEADLINES = {'citation': {'compat': 'citation', 'strict': 'both'}, 'idk': {'compat': 'both', 'strict': 'both'}}


def score_cell(predictions: Sequence, labels: Sequence[Dict], rows: Sequence[str], samples: Sequence[int],
               task: str, mode: str, truncate: bool = False, headline: Optional[str] = None) -> Dict:
    """Score all rows of one cell. Returns accuracy (headline, %), sub-metrics, counts and per-row details."""
    check_mode(mode)
    if not (len(predictions) == len(labels) == len(rows) == len(samples)):
        raise ScoringError('predictions, labels, rows and samples differ in length')
    per_row = [score_row(p, lab, mode, truncate) for p, lab in zip(predictions, labels)]
    details = [dict(r, pred=p, row=k, sample=s) for r, p, k, s in zip(per_row, predictions, rows, samples)]
    invalid = sum(bool(r.get('invalid_prediction')) for r in per_row)
    if task == 'idk':
        by = {}
        for d in details:
            by.setdefault(d['sample'], {})[d['row']] = d
        if any(set(v) != {'answerable', 'unanswerable'} for v in by.values()):
            raise ScoringError('idk rows must come in answerable/unanswerable pairs per sample')
        subs = {'answer': [v['answerable']['correct'] for v in by.values()],
                'refusal': [v['unanswerable']['correct'] for v in by.values()]}
        subs['both'] = [a and r for a, r in zip(subs['answer'], subs['refusal'])]
        both = dict(zip(by, subs['both']))
        for d in details:
            d['row_correct'] = d['correct']
            d['correct'] = both[d['sample']]
    elif task == 'citation':
        subs = {'answer': [d['answer'] for d in details], 'citation': [d['citation'] for d in details],
                'both': [d['correct'] for d in details]}
    else:
        subs = None
    n = len(set(samples))
    if subs:
        head = headline or HEADLINES[task][mode]
        if head not in subs:
            raise ScoringError(f'headline {head!r} is not a sub-metric of {task}: {sorted(subs)}')
        metrics = {k: 100.0 * sum(v) / max(len(v), 1) for k, v in subs.items()}
        acc, correct = metrics[head], sum(subs[head])
    else:
        head = 'accuracy'
        metrics = None
        correct = sum(d['correct'] for d in details)
        acc = 100.0 * correct / max(len(details), 1)
    return {'accuracy': acc, 'headline': head, 'submetrics': metrics,
            'counts': {'samples': n, 'rows': len(details), 'correct': int(correct), 'invalid_predictions': invalid},
            'details': details}


def oracle_prediction(label: Dict) -> str:
    """A correct answer in the authors' demo style (ending with a period, so that the compat base-model cut
    removes only the period). Used by the tests and as a worked example of what each cell expects."""
    kind = label['kind']
    if kind in ('list', 'answer'):
        return 'Based on the provided context, ' + '; '.join(label['items']) + '.'
    if kind == 'str':
        return f"Based on the provided context, the answer is {label['value']}."
    if kind == 'int':
        return f"The age difference is {label['value']}."
    if kind == 'rank':
        return f"The names list after ranking is {list(label['items'])!r}."
    if kind == 'twodiff':
        a, b = label['ref_names']
        return f'{a} and {b} satisfy the question.'
    if kind == 'cite':
        return ' '.join(f'{a} {c}.' for a, c in zip(label['items'], label['cites']))
    if kind == 'refusal':
        return 'The answer is not stated.'
    raise ScoringError(f'unknown label kind {kind!r}')
