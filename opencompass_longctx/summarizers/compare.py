"""Which model is better: paired differences over the samples both models ran, and a ranking with rank groups.

For two models A and B, per benchmark row and tier of the tier table, the difference A - B (percentage points) is
taken over the samples both ran, matched by their identity: for a dataset both models read, a hash of the
sample's prompt text and gold answer (the prompt without the model wrapper's rendering, as the merge's
fingerprint); for datasets copied per model tokenizer (``<dataset>@<model>``, NoLiMa), the sample's position and
gold answer (the copies list the same needles at the same depths in the same order; their haystacks differ by
design). A row over several datasets weights them as the table does (the mean of its datasets, or of its rows);
``tier='mean'`` is the row's mean over the tiers both models have.

Samples that are not scored answers are left out of the pair, and counted in ``excluded`` by reason: over-length
(the prompt was not sent), engine too small, engine error (:mod:`opencompass_longctx.overlength`), on either
side; so are samples only one model has (``unmatched``).

The interval (95%) and the test:

* ``mcnemar``: when every value is 0/1 and every pair weighs the same (one dataset, or datasets with equal
  numbers of pairs), the exact McNemar test: of the m discordant pairs, b favour A; p = the two-sided exact
  binomial test of b ~ Bin(m, 1/2). The interval is exact given m: Clopper-Pearson for b/m, times m/n, so it
  excludes 0 exactly when p < 0.05.
* ``bootstrap``: otherwise (unequal weights, or non-0/1 values), a paired bootstrap: the pairs resampled with
  replacement within each dataset (``RESAMPLES`` times, seeded per cell so a table is reproducible), the
  percentile interval; no p.

``*`` marks an interval that excludes 0. The ranking of a benchmark (its ``mean`` row, else its first) orders
models by effective length (RULER's fixed threshold by default), then mean; a model whose paired difference from
the leader of the current rank group is not significant joins that group, otherwise it starts the next one.
"""
import math
import random
import zlib
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..overlength import ENGINE_ERROR, ENGINE_TOO_SMALL, OVER_LENGTH
from ..tiers import parse_tier
from .merge import MergedResults, _sha, per_model_copy, prompt_text, read_predictions
from .report import _detail_value, row_task_names
from .specs import bench_by_name

RESAMPLES = 2000
SEED = 19
LEVEL = 0.95
_MARKERS = {OVER_LENGTH: 'over-length', ENGINE_TOO_SMALL: 'engine too small', ENGINE_ERROR: 'engine error'}
_HEADLINE_KEY = {'citation': 'citation_hit', 'answer': 'answer_hit'}


class NotPaired(Exception):
    pass


@dataclass
class Paired:
    a: str
    b: str
    bench: str
    row: str
    tier: str
    diff: Optional[float] = None
    lo: Optional[float] = None
    hi: Optional[float] = None
    method: str = ''
    p: Optional[float] = None
    pairs: int = 0
    excluded: Dict[str, int] = field(default_factory=dict)
    unmatched: int = 0
    note: str = ''

    @property
    def significant(self) -> bool:
        return self.lo is not None and (self.lo > 0 or self.hi < 0)


# ---------------------------------------------------------------------------------------------- statistics
def binom_tail(k: int, n: int, p: float, upper: bool) -> float:
    """P(X >= k) (upper) or P(X <= k) for X ~ Bin(n, p)."""
    ks = range(k, n + 1) if upper else range(0, k + 1)
    return min(1.0, sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in ks))


def mcnemar_p(b: int, c: int) -> float:
    m = b + c
    if not m:
        return 1.0
    return min(1.0, 2 * min(binom_tail(b, m, 0.5, True), binom_tail(b, m, 0.5, False)))


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> Tuple[float, float]:
    """The exact interval for a binomial proportion (bisection on the binomial tails)."""
    a = (1 - level) / 2

    def solve(f, lo=0.0, hi=1.0):  # f increasing in p: the p where f(p) = a
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < a else (lo, mid)
        return (lo + hi) / 2
    lower = 0.0 if k == 0 else solve(lambda p: binom_tail(k, n, p, True))
    upper = 1.0 if k == n else solve(lambda p: -binom_tail(k, n, p, False) + 2 * a)  # P(X<=k) decreasing
    return lower, upper


def mcnemar(pairs: Sequence[Tuple[float, float]]) -> Tuple[float, float, float, float]:
    """(diff, lo, hi, p) in percentage points for 0/1 pairs of equal weight."""
    n = len(pairs)
    b = sum(1 for x, y in pairs if x > y)
    c = sum(1 for x, y in pairs if x < y)
    m = b + c
    diff = 100.0 * (b - c) / n
    if not m:
        return diff, 0.0, 0.0, 1.0
    pl, pu = clopper_pearson(b, m)
    return diff, 100.0 * m / n * (2 * pl - 1), 100.0 * m / n * (2 * pu - 1), mcnemar_p(b, c)


def weighted_diff(strata: Sequence[Tuple[float, Sequence[Tuple[float, float]]]]) -> float:
    return 100.0 * sum(w * sum(x - y for x, y in s) / len(s) for w, s in strata)


def bootstrap(strata: Sequence[Tuple[float, Sequence[Tuple[float, float]]]], seed: int,
              resamples: int = RESAMPLES) -> Tuple[float, float, float]:
    """(diff, lo, hi): the stratified paired bootstrap percentile interval."""
    rng = random.Random(seed)
    diffs = [[x - y for x, y in s] for _, s in strata]
    stats = []
    for _ in range(resamples):
        stats.append(100.0 * sum(w * sum(rng.choice(d) for _ in d) / len(d) for (w, _), d in zip(strata, diffs)))
    stats.sort()
    a = (1 - LEVEL) / 2
    return weighted_diff(strata), stats[int(math.floor(a * resamples))], stats[int(math.ceil((1 - a) * resamples)) - 1]


# ---------------------------------------------------------------------------------------------- samples
def _value_key(res: dict) -> str:
    head = _detail_value(res, 'headline')
    return _HEADLINE_KEY.get(head, 'correct')


def units(results: MergedResults, model: str, abbr: str, metric: str,
          detail_filter: Tuple[str, str] = ()) -> List[Tuple[tuple, Optional[float], str]]:
    """[(identity, value 0..1 or None, status)] per sample of a result; NotPaired when its score cannot be read
    back from its per-sample details."""
    res = results.get(model, abbr)
    if not res or 'error' in res or not isinstance(res.get('details'), list):
        raise NotPaired(f'{model}/{abbr}: no per-sample details')
    details = res['details']
    run = results.run_of(model, abbr)
    preds = read_predictions(run.path, model, abbr)
    if preds is not None and len(preds) != len(details):
        preds = None
    key = _value_key(res)
    rows = []
    for i, d in enumerate(details):
        pred = preds[i].get('prediction') if preds else None
        status = _MARKERS.get(pred) if isinstance(pred, str) else None
        status = status or ('over-length' if _detail_value(d, 'over_length') else 'scored')
        gold = preds[i].get('gold') if preds else _detail_value(d, 'answer')
        if per_model_copy(abbr) or not preds:
            ident = _sha([i, gold])
        else:
            ident = _sha([prompt_text(preds[i].get('origin_prompt')), gold])
        v = _detail_value(d, key)
        value = float(v) if status == 'scored' and isinstance(v, (bool, int, float)) else None
        group = _detail_value(d, 'sample') if status == 'scored' else None
        rows.append(dict(ident=ident, value=value, status=status, group=(i,) if group is None else ('s', group),
                         keep=not detail_filter or _detail_value(d, detail_filter[0]) == detail_filter[1]))
    for collapse in (True, False):
        out, seen = [], {}
        groups: Dict[tuple, List[dict]] = {}
        for r in rows:
            groups.setdefault(r['group'] if collapse else (id(r),), []).append(r)
        if collapse and any(len({(r['value'], r['status']) for r in g}) > 1 for g in groups.values()):
            continue
        for g in groups.values():
            r = g[0]
            k = seen[r['ident']] = seen.get(r['ident'], -1) + 1
            out.append(((r['ident'], k), r['value'], r['status'], r['keep']))
        scored = [v for _, v, s, _ in out if s == 'scored']
        if scored and None not in scored and (metric not in res or abs(100.0 * sum(scored) / len(scored)
                                                                       - float(res[metric])) < 1e-6):
            return [(i, v, s) for i, v, s, keep in out if keep]
    raise NotPaired(f'{model}/{abbr}: its {metric} is not the mean of its per-sample {key!r} values')


def pair_units(ua, ub) -> Tuple[List[Tuple[float, float]], Dict[str, int], int]:
    """(pairs of scored values, excluded counts by reason, samples only one side has)."""
    a, b = {i: (v, s) for i, v, s in ua}, {i: (v, s) for i, v, s in ub}
    pairs, excluded = [], {}
    for i in a.keys() & b.keys():
        (va, sa), (vb, sb) = a[i], b[i]
        if sa == 'scored' and sb == 'scored':
            pairs.append((va, vb))
        else:
            reason = sa if sa != 'scored' else sb
            excluded[reason] = excluded.get(reason, 0) + 1
    return pairs, excluded, len(a.keys() ^ b.keys())


# ---------------------------------------------------------------------------------------------- the table
class Comparer:
    def __init__(self, report: dict, results: MergedResults, marks: Dict[Tuple[str, str], str],
                 resamples: int = RESAMPLES):
        self.report, self.results, self.marks, self.resamples = report, results, marks, resamples
        self.rows = {(r.model, r.bench, r.row): r for r in report['rows']}
        self.fps = report.get('fingerprints') or {}
        self._memo: Dict[tuple, Paired] = {}

    def models(self) -> List[str]:
        return list(dict.fromkeys(r.model for r in self.report['rows']))

    def _strata(self, a: str, b: str, bench: str, row: str, tier: str, out: Paired):
        spec = bench_by_name(bench)
        rspec = next(r for r in spec.rows if r.name == row)
        ra, rb = self.rows[a, bench, row], self.rows[b, bench, row]
        subrows = ([next(r for r in spec.rows if r.name == n) for n in rspec.of_rows] if rspec.of_rows else [rspec])
        strata, notes = [], []
        for sub in subrows:
            tasks = [t for t in row_task_names(spec, sub) if t in ra.datasets.get(tier, {})
                     and t in rb.datasets.get(tier, {})
                     and ra.cells[tier].status == 'ok' and rb.cells[tier].status == 'ok']
            mine = []
            for t in tasks:
                da, db = ra.datasets[tier][t], rb.datasets[tier][t]
                fa, fb = self.fps.get(f'{a}/{da}'), self.fps.get(f'{b}/{db}')
                if fa and fb and fa['mode'] != fb['mode']:
                    notes.append(f'{t}: not compared (the scoring differs)')
                    continue
                try:
                    ua = units(self.results, a, da, spec.metric, rspec.detail_filter)
                    ub = units(self.results, b, db, spec.metric, rspec.detail_filter)
                except NotPaired as e:
                    notes.append(str(e))
                    continue
                pairs, excl, unmatched = pair_units(ua, ub)
                for k, v in excl.items():
                    out.excluded[k] = out.excluded.get(k, 0) + v
                out.unmatched += unmatched
                if (a, da) in self.marks or (b, db) in self.marks:
                    notes.append(f'{t}: the datasets differ; over the {len(pairs)} samples both have')
                if pairs:
                    mine.append(pairs)
            strata += [(1.0 / len(subrows) / len(mine), p) for p in mine]
        return strata, notes

    def compare(self, a: str, b: str, bench: str, row: str, tier: str) -> Paired:
        key = (a, b, bench, row, tier)
        if key in self._memo:
            return self._memo[key]
        out = Paired(a, b, bench, row, tier)
        ra, rb = self.rows.get((a, bench, row)), self.rows.get((b, bench, row))
        if ra is None or rb is None:
            out.note = f'not compared: {a if ra is None else b} has no {bench} {row} row'
            self._memo[key] = out
            return out
        tiers = ([t for t in self.report['bench_tiers'][bench] if t in ra.cells and t in rb.cells
                  and ra.cells[t].status == 'ok' and rb.cells[t].status == 'ok'] if tier == 'mean' else [tier])
        strata, notes = [], []
        for t in tiers:
            s, n = self._strata(a, b, bench, row, t, out)
            strata += [(w / len(tiers), p) for w, p in s]
            notes += [f'{t}: {x}' if tier == 'mean' else x for x in n]
        if tier != 'mean':
            bad = [f'{m} {c.status.upper()}' for m, c in ((a, ra.cells.get(tier)), (b, rb.cells.get(tier)))
                   if c is not None and c.status != 'ok']
            if bad:
                notes.insert(0, 'not compared: ' + ', '.join(bad))
        if strata:
            total = sum(w for w, _ in strata)
            strata = [(w / total, p) for w, p in strata]
            flat = [xy for _, p in strata for xy in p]
            out.pairs = len(flat)
            binary = all(v in (0.0, 1.0) for xy in flat for v in xy)
            per_pair = {round(w / len(p), 12) for w, p in strata}
            if binary and len(per_pair) == 1:
                out.method = 'mcnemar'
                out.diff, out.lo, out.hi, out.p = mcnemar(flat)
            else:
                out.method = 'bootstrap'
                seed = SEED ^ zlib.crc32('/'.join(key).encode())
                out.diff, out.lo, out.hi = bootstrap(strata, seed, self.resamples)
        elif not notes:
            notes.append('not compared: no tier where both have a score' if not tiers else
                         'no samples both models scored')
        out.note = '; '.join(dict.fromkeys(notes))
        self._memo[key] = out
        return out

    def table(self, pairs: Sequence[Tuple[str, str]]) -> List[Paired]:
        out = []
        for a, b in pairs:
            for (m, bench, row), r in self.rows.items():
                if m != a or (b, bench, row) not in self.rows:
                    continue
                if not any(c.status == 'ok' for x in (r, self.rows[b, bench, row]) for c in x.cells.values()):
                    continue  # no score on either side (the tier table says why)
                tiers = [t for t in self.report['bench_tiers'][bench] if t in r.cells]
                out += [self.compare(a, b, bench, row, t) for t in tiers + ['mean']]
        return out

    def leaderboard(self, rank_by: str = 'ruler') -> List[dict]:
        out = []
        for bench in self.report['bench_tiers']:
            spec = bench_by_name(bench)
            present = [r.name for r in spec.rows if any(k[1:] == (bench, r.name) for k in self.rows)]
            ok = [n for n in present if any(c.status == 'ok' for k, r in self.rows.items() if k[1:] == (bench, n)
                                            for c in r.cells.values())]
            if not ok:
                continue
            row = 'mean' if 'mean' in ok else ok[0]
            entries = [r for k, r in self.rows.items() if k[1:] == (bench, row)]

            def length(r):
                eff = r.effective.get(rank_by, {}).get('contiguous')
                if eff is None:
                    return -2
                return -1 if eff.startswith('<') else parse_tier(eff).tokens(spec.tier_unit)
            entries.sort(key=lambda r: (length(r), -math.inf if r.mean is None else r.mean), reverse=True)
            group, leader = 0, None
            for r in entries:
                vs, against = None, leader.model if leader is not None else None
                if leader is not None:
                    vs = self.compare(leader.model, r.model, bench, row, 'mean')
                if leader is None or vs is None or vs.lo is None or vs.significant:
                    group, leader = group + 1, r
                    if vs is not None and vs.lo is None:
                        vs.note = vs.note or 'no paired samples with the group leader'
                out.append(dict(bench=bench, row=row, rank=group, model=r.model,
                                effective=r.effective.get(rank_by, {}).get('contiguous'), mean=r.mean,
                                vs=None if vs is None else asdict(vs), leader=against))
        return out


# ---------------------------------------------------------------------------------------------- output
def _num(v: Optional[float], fmt: str = '+.1f') -> str:
    return '' if v is None else format(v, fmt)


def interval_text(p: Paired) -> str:
    return '' if p.lo is None else f'[{p.lo:+.1f}, {p.hi:+.1f}]'


def excluded_text(p: Paired) -> str:
    parts = [f'{v} {k}' for k, v in sorted(p.excluded.items())]
    if p.unmatched:
        parts.append(f'{p.unmatched} in one model only')
    return ', '.join(parts) or '0'


def to_markdown(table: Sequence[Paired], board: Sequence[dict], rank_by: str = 'ruler') -> str:
    lines = ['Paired differences A - B (percentage points) over the samples both models ran, 95% interval; '
             '* = the interval excludes 0 (method: mcnemar = exact McNemar test and its exact interval, for 0/1 '
             f'scores of equal weight; bootstrap = paired bootstrap within datasets, {RESAMPLES} resamples, seeded)',
             '', '| A | B | benchmark | row | tier | A - B | 95% interval | method | p | pairs | excluded | note |',
             '|' + '---|' * 12]
    for p in table:
        lines.append('| ' + ' | '.join([p.a, p.b, p.bench, p.row, p.tier,
                                        _num(p.diff) + (' *' if p.significant else ''), interval_text(p), p.method,
                                        _num(p.p, '.3g'), str(p.pairs), excluded_text(p), p.note]) + ' |')
    lines += ['', f'Leaderboard per benchmark (by effective length, {rank_by}, then mean; models in one rank group '
              'are not significantly different from its leader, paired over their common tiers)', '',
              '| benchmark | row | rank | model | eff. len | mean | vs leader | 95% interval | method |',
              '|' + '---|' * 9]
    for e in board:
        vs = e['vs'] or {}
        lines.append('| ' + ' | '.join([e['bench'], e['row'], str(e['rank']), e['model'], e['effective'] or '-',
                                        _num(e['mean'], '.1f') or '-',
                                        '' if not vs else (f'{vs["diff"]:+.1f} ({e["leader"]} - {e["model"]})'
                                                           if vs['diff'] is not None else vs['note']),
                                        '' if not vs or vs['lo'] is None else f'[{vs["lo"]:+.1f}, {vs["hi"]:+.1f}]',
                                        vs.get('method', '')]) + ' |')
    return '\n'.join(lines) + '\n'


def to_csv(table: Sequence[Paired]) -> str:
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(['a', 'b', 'benchmark', 'row', 'tier', 'diff', 'lo', 'hi', 'significant', 'method', 'p', 'pairs',
                'excluded', 'unmatched', 'note'])
    for p in table:
        w.writerow([p.a, p.b, p.bench, p.row, p.tier, _num(p.diff, '.4f'), _num(p.lo, '.4f'), _num(p.hi, '.4f'),
                    int(p.significant), p.method, _num(p.p, '.6g'), p.pairs, excluded_text(p), p.unmatched, p.note])
    return buf.getvalue()


def to_json(table: Sequence[Paired], board: Sequence[dict]) -> str:
    import json
    rows = [dict(asdict(p), significant=p.significant) for p in table]
    return json.dumps({'method': {'level': LEVEL, 'resamples': RESAMPLES, 'seed': SEED}, 'paired': rows,
                       'leaderboard': list(board)}, indent=1, sort_keys=True)
