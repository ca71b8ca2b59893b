"""LongBioBench scoring in two named modes (no OpenCompass import: usable stand-alone).

``compat`` is the authors' evaluator (docs/faithfulness.md#longbiobench):
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
  absent, applies when the authors would have treated the model as a base model (its name lacks "instruct"),
  to every score their GeneralEvaluator and IDKEvaluator make: retrieval, calculation, rank, multihop and both
  halves of IDK (the answerable half, which they take from the standard run, and the refusal check). Their
  twodiff and citation evaluators do not cut. So for such a name ``The answer is not stated`` (no final period)
  is no refusal: the cut leaves ``not state``.

``strict`` fixes what docs/faithfulness.md#longbiobench lists: the output is cut at the first ``Question: `` when there is one
(a base model's continuation into the next demo question is never scored) and never loses a character
otherwise; rank reads only the final ordered list (:func:`final_ranked_names`); "not explicitly stated" is a
refusal too, and the answerable half of IDK must answer without refusing; twodiff takes the last two people the
output names (a rationale may name others). Containment supersets cannot occur: no pool value is a substring of
another.

Every scorer returns a dict with ``correct`` (bool) and never raises on a bad prediction: ``None``,
non-strings and empty strings score 0 and are flagged ``invalid_prediction``; a calculation answer whose last
digit run is too long for Python's int (over 4,300 digits) is a wrong answer with a ``reason``.
"""
import re
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.errors import ScoringError

MODES = ('compat', 'strict')
_REFUSAL_STRICT = re.compile(r'\bnot\s+(?:explicitly\s+)?stated\b', re.IGNORECASE)


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


QUESTION_MARKER = 'Question: '


def authors_cut(pred: str) -> str:
    """The authors' base-model truncation, off-by-one included: no marker -> the last character is dropped."""
    return pred[:pred.find(QUESTION_MARKER)]


def strict_cut(pred: str) -> str:
    """strict: the text before the first ``Question: `` (a base model's continuation), else all of it."""
    i = pred.find(QUESTION_MARKER)
    return pred if i < 0 else pred[:i]


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


def last_int_hit(pred: str, gold: int, mode: str) -> Dict:
    nums = re.findall(r'\d+', pred)
    if not nums:
        return {'correct': False}
    try:
        value = int(nums[-1])
    except ValueError:   # beyond Python's int digit limit (4,300 by default): no age difference
        return {'correct': False, 'reason': f'the last number has {len(nums[-1])} digits'}
    if mode == 'compat' and not value:   # the authors' `if pred and ...`
        return {'correct': False}
    return {'correct': value == int(gold)}


def refusal(pred: str, mode: str) -> bool:
    if mode == 'compat':
        return 'not stated' in pred.lower()
    return _REFUSAL_STRICT.search(pred) is not None


# What may stand between two names of one written list: white space, list punctuation, brackets and quotes,
# numbering ("1.", "2)"), bullets, "<" and arrows, "and", "then", "followed by".
_LIST_GAP = re.compile(r"(?:[\s,;:'\"\[\]().*<\u2192-]|->|\d+[.)]|\band\b|\bthen\b|\bfollowed\s+by\b)*",
                       re.IGNORECASE)


def final_ranked_names(pred: str, names: Sequence[str]) -> Optional[List[str]]:
    """strict rank: the people of the output's final ordered list, in the output's order; None without one.

    The output's mentions of the people (whole words, case-insensitive, the longest name first) form runs: a run
    continues while only list separators (``_LIST_GAP``) stand between two mentions and no person repeats. The
    final list is the last run that names every person once, so a bracketed list, a numbered list, one name per
    line, a comma-separated list or a list followed by more text all count, while a rationale that restates the
    people in question order before the answer does not."""
    by_low = {n.lower(): n for n in names}
    alternatives = '|'.join(re.escape(n) for n in sorted(by_low, key=len, reverse=True))
    final, run, prev_end = None, [], 0
    for m in re.finditer(r'(?<!\w)(?:' + alternatives + r')(?!\w)', pred, re.IGNORECASE):
        name = by_low[m.group(0).lower()]
        if run and (name in run or not _LIST_GAP.fullmatch(pred, prev_end, m.start())):
            run = []
        run.append(name)
        prev_end = m.end()
        if len(run) == len(by_low):
            final = list(run)
    return final


def rank_strict_hit(pred: str, gold: Sequence[str]) -> bool:
    """All names in the final list, in the gold order."""
    return final_ranked_names(pred, gold) == list(gold)


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
            out.update(answer_hit=False, citation_hit=False)
        return out
    if mode == 'strict':
        text = strict_cut(pred)
    else:
        text = authors_cut(pred) if truncate else pred
    whole = text if mode == 'strict' else pred   # the authors' twodiff and citation scores read the whole output
    if kind == 'list':
        return {'correct': list_hit(text, label['items'])}
    if kind == 'str':
        return {'correct': substring_hit(text, label['value'])}
    if kind == 'int':
        return last_int_hit(text, label['value'], mode)
    if kind == 'rank':
        hit = list_hit if mode == 'compat' else rank_strict_hit
        return {'correct': hit(text, label['items'])}
    if kind == 'twodiff':
        return twodiff_hit(whole, label['roster'], label['diff'], mode)
    if kind == 'cite':
        def hit(items):
            return substring_hit(whole, items[0]) if len(items) == 1 else list_hit(whole, items)
        a, c = hit(label['items']), hit(label['cites'])
        return {'correct': a and c, 'answer_hit': a, 'citation_hit': c}
    if kind == 'refusal':
        return {'correct': refusal(text, mode)}
    if kind == 'answer':   # IDK answerable half
        hit = list_hit(text, label['items'])
        if mode == 'strict':
            hit = hit and not refusal(text, mode)
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
        subs = {'answer': [d['answer_hit'] for d in details], 'citation': [d['citation_hit'] for d in details],
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
