"""NoLiMa aggregate metrics (no OpenCompass import), the paper's (docs/leaderboard.md: base score, threshold, effective length). Not computed in the authors' repository.

* ``acc(L)``: mean over all tests at length L (58 pairs x 5 haystacks x 26 depths);
* base score: mean over pairs of max over L in {250, 500, 1000} of (mean over the haystacks of the pair's
  accuracy at L);
* threshold = 0.85 x base;
* effective length: the largest reported L (>= 1K) with acc(L) >= threshold, counted *contiguously from 1K*
  (the reported tables' convention; "<1K" when 1K already fails), and the raw largest passing L;
* table marks: a score >= threshold is underlined, one < 0.5 x base is italic.

All values are percentages. Worked example (GPT-4o): base 99.3 -> threshold 84.4; 1K 98.1, 2K 98.0, 4K 95.7,
8K 89.2 pass, 16K 81.6 fails -> effective length 8K.
"""
from collections import defaultdict
from typing import Dict, Iterable, List, Mapping, Optional

from opencompass_longctx.stats.effective import NOLIMA_RATIO, passing_run
from opencompass_longctx.nolima.needles import NoLiMaError
BASE_LENGTHS = (250, 500, 1000)
THRESHOLD_RATIO = NOLIMA_RATIO
MIN_REPORTED_LENGTH = 1000


def length_label(L: int) -> str:
    """1000 -> '1K', 32000 -> '32K', 250 -> '250', 128000 -> '128K'."""
    L = int(L)
    return f'{L // 1000}K' if L >= 1000 and L % 1000 == 0 else str(L)


def threshold(base: float, ratio: float = THRESHOLD_RATIO) -> float:
    return ratio * base


def per_pair_haystack(records: Iterable[Mapping]) -> Dict[int, Dict[str, Dict[str, float]]]:
    """{L: {pair: {haystack: accuracy %}}} from per-test records with context_length, pair, haystack, correct."""
    acc = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        acc[int(r['context_length'])][str(r['pair'])][str(r['haystack'])].append(bool(r['correct']))
    return {L: {p: {h: 100.0 * sum(v) / len(v) for h, v in hs.items()} for p, hs in ps.items()}
            for L, ps in acc.items()}


def accuracy_by_length(records: Iterable[Mapping]) -> Dict[int, float]:
    acc = defaultdict(list)
    for r in records:
        acc[int(r['context_length'])].append(bool(r['correct']))
    return {L: 100.0 * sum(v) / len(v) for L, v in sorted(acc.items())}


def base_score(pair_scores: Mapping[int, Mapping[str, Mapping[str, float]]],
               base_lengths=BASE_LENGTHS) -> Optional[float]:
    """Mean over pairs of the best (over the base lengths present) haystack-mean accuracy; None without any
    base length. A pair missing at some base length uses the lengths where it was run."""
    present = [L for L in base_lengths if L in pair_scores]
    if not present:
        return None
    pairs = sorted({p for L in present for p in pair_scores[L]})
    best = []
    for p in pairs:
        means = [sum(pair_scores[L][p].values()) / len(pair_scores[L][p]) for L in present if p in pair_scores[L]]
        best.append(max(means))
    return sum(best) / len(best)


def effective_length(acc_by_length: Mapping[int, float], base: float, ratio: float = THRESHOLD_RATIO,
                     min_length: int = MIN_REPORTED_LENGTH) -> Dict:
    """Effective length from per-length accuracies (percent) and the base score.

    Returns ``threshold``, ``contiguous`` (largest L of the passing run that starts at ``min_length``; None
    when ``min_length`` fails or was not run), ``raw`` (largest passing L >= min_length, None if none),
    ``label`` ('8K', '<1K', or '-' when ``min_length`` was not run) and per-length marks.
    """
    if base is None:
        raise NoLiMaError('effective length needs a base score (run the 250, 500 and 1K tiers)')
    thr = threshold(base, ratio)
    lengths = sorted(int(L) for L in acc_by_length if int(L) >= min_length)
    starts = bool(lengths) and lengths[0] == min_length  # the run counts from min_length only
    contiguous, raw = passing_run([(L, acc_by_length[L]) for L in lengths], thr)
    contiguous = contiguous if starts else None
    if contiguous is not None:
        label = length_label(contiguous)
    elif starts:
        label = f'<{length_label(min_length)}'
    else:
        label = '-'
    marks = {L: {'score': acc_by_length[L], 'underline': acc_by_length[L] >= thr,
                 'italic': acc_by_length[L] < 0.5 * base} for L in sorted(int(x) for x in acc_by_length)}
    return {'base': base, 'threshold': thr, 'contiguous': contiguous, 'raw': raw, 'label': label,
            'raw_label': length_label(raw) if raw else f'<{length_label(min_length)}' if lengths else '-',
            'marks': marks}


def _split_acc(records: List[Mapping], key: str) -> Dict[str, Dict[int, float]]:
    groups = defaultdict(list)
    for r in records:
        groups[str(r.get(key))].append(r)
    return {k: accuracy_by_length(v) for k, v in sorted(groups.items())}


def report(records: Iterable[Mapping]) -> Dict:
    """Everything for one (model, variant): acc(L), base score, threshold, effective length and breakdowns
    by question type, order, depth, haystack and keyword group (records: per-test dicts as in the evaluator's
    details)."""
    records = list(records)
    if not records:
        raise NoLiMaError('no NoLiMa results to report')
    acc = accuracy_by_length(records)
    base = base_score(per_pair_haystack(records))
    n = {str(L): sum(int(r['context_length']) == L for r in records) for L in acc}
    out = {'accuracy': {str(L): v for L, v in acc.items()}, 'n': n, 'base': base}
    if base is not None:
        eff = effective_length(acc, base)
        out.update(threshold=eff['threshold'], effective_length=eff['label'],
                   effective_length_tokens=eff['contiguous'], raw_effective_length=eff['raw_label'],
                   raw_effective_length_tokens=eff['raw'],
                   marks={str(L): m for L, m in eff['marks'].items()})
    for key, name in (('question_type', 'by_question_type'), ('order', 'by_order'), ('haystack', 'by_haystack'),
                      ('depth_index', 'by_depth'), ('group', 'by_group')):
        if key != 'group' or any('group' in r for r in records):
            out[name] = {k: {str(L): v for L, v in d.items()} for k, d in _split_acc(records, key).items()}
    return out


def format_row(acc_by_length: Mapping[int, float], base: Optional[float], lengths: List[int]) -> List[str]:
    """Table cells as the README writes them: <ins>x</ins> if >= threshold, *x* if < 0.5 x base."""
    cells = []
    for L in lengths:
        if L not in acc_by_length:
            cells.append('-')
            continue
        v = acc_by_length[L]
        s = f'{v:.1f}'
        if base is not None and L >= MIN_REPORTED_LENGTH:
            if v >= threshold(base):
                s = f'<ins>{s}</ins>'
            elif v < 0.5 * base:
                s = f'*{s}*'
        cells.append(s)
    return cells


def base_from_details(details: Iterable[Mapping]) -> Optional[float]:
    """NoLiMa's base score (per pair, best haystack) from the evaluator's per-sample details of the base tiers
    (values as OpenCompass stores them, possibly one-element lists; over-length samples left out); None when no
    base tier was scored (the summary table then falls back to its own base)."""
    def value(d, key):
        v = d.get(key)
        return v[0] if isinstance(v, list) and v else v
    records = []
    for d in details:
        r = {k: value(d, k) for k in ('pair', 'haystack', 'context_length', 'correct', 'over_length')}
        if r['pair'] is not None and not r['over_length']:
            records.append(r)
    try:
        return report(records)['base'] if records else None
    except Exception:  # noqa: BLE001 - no base tiers run: fall back to the table's own base
        return None
