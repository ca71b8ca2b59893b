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

The test and its 95% interval (:mod:`.paired_tests`) rest on the benchmark's own statement of how its samples
are related (``Bench.cluster_of``, read from each sample's details): NoLiMa's samples of one needle entry are one
cluster across its datasets and tiers, BABILong's story at one position of a task one cluster across its tiers,
LongBioBench's samples of one seed one cluster across its cells and tiers. The test is a sign-flip permutation over
clusters with the interval from the same test inverted (``sign-flip``). Where every cluster holds one pair (the
pairs are independent: one BABILong tier), every value is 0/1 and every pair weighs the same, the exact McNemar
test (``mcnemar``); otherwise (unequal weights, non-0/1 values) the sign flip over clusters. A comparison with no variance (one cluster; every cluster the same
difference) is ``not testable`` and never significant; one over fewer than ten clusters is shown, not starred.

``*`` marks a significant difference (p < 0.05, testable, at least ten clusters). The ranking of a benchmark (its
``mean`` row, else its first) and its rank groups: :meth:`Comparer.leaderboard`.
"""
import math
import zlib
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from opencompass_longctx.overlength import ENGINE_ERROR, ENGINE_TOO_SMALL, OVER_LENGTH
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.summarizers import paired_tests as stats
from opencompass_longctx.summarizers.merge import MergedResults, ReportInputError, content_sha, per_model_copy, prompt_text, read_predictions
from opencompass_longctx.summarizers.intervals import detail_value, value_key
from opencompass_longctx.summarizers.formats import effective_text
from opencompass_longctx.summarizers.table import row_task_names
from opencompass_longctx.summarizers.rows import bench_by_name
from opencompass_longctx.errors import LongCtxError
RESAMPLES = stats.RESAMPLES
SEED = stats.SEED
LEVEL = stats.LEVEL
_MARKERS = {OVER_LENGTH: 'over-length', ENGINE_TOO_SMALL: 'engine too small', ENGINE_ERROR: 'engine error'}
DIRECTION = 'leader - model'


class NotPaired(LongCtxError):
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
    testable: bool = True     # False: no variance to test the difference against (method 'not testable')
    clusters: int = 0         # how many clusters (independent units) the test rests on

    @property
    def significant(self) -> bool:
        """p < 0.05 from a testable comparison over at least ``MIN_CLUSTERS`` clusters (the interval then
        excludes 0)."""
        return (self.testable and self.method != stats.NOT_TESTABLE and self.p is not None and self.p < stats.ALPHA
                and self.clusters >= stats.MIN_CLUSTERS)


# ---------------------------------------------------------------------------------------------- samples
def _cluster(bench, task: str, d: dict, position: int, where: str) -> Optional[tuple]:
    """The sample's cluster (``Bench.cluster_of``; None: the benchmark declares none)."""
    try:
        c = bench.cluster_of(d, task, position)
    except KeyError as e:
        raise NotPaired(f'{where}: its per-sample details have no {e.args[0]!r}, which names the clusters of this '
                        'benchmark (results written by an older version: evaluate the run again with '
                        '`opencompass ... -r` to compare it)') from None
    return None if c is None else ('c', c)


def _predictions(results: MergedResults, model: str, abbr: str) -> Optional[List[dict]]:
    run = results.run_of(model, abbr)
    try:
        return read_predictions(run.path, model, abbr)
    except (OSError, ValueError, ReportInputError) as e:   # an unreadable file: no pairing by prompt
        raise NotPaired(f'{model}/{abbr}: {e}') from e


def units(results: MergedResults, model: str, abbr: str, metric: str, detail_filter: Tuple[str, str] = (),
          bench=None) -> List[Tuple[tuple, Optional[float], str, Optional[tuple]]]:
    """[(identity, value 0..1 or None, status, cluster or None)] per sample of a result; NotPaired when its score
    cannot be read back from its per-sample details (or a clustered benchmark's details do not name the cluster)."""
    res = results.get(model, abbr)
    if not res or 'error' in res or not isinstance(res.get('details'), list):
        raise NotPaired(f'{model}/{abbr}: no per-sample details')
    details = res['details']
    preds = _predictions(results, model, abbr)
    if preds is not None and len(preds) != len(details):
        preds = None
    key = value_key(res)
    task = bench.match(abbr)[0] if bench is not None and bench.match(abbr) else ''
    rows = []
    for i, d in enumerate(details):
        pred = preds[i].get('prediction') if preds else None
        status = _MARKERS.get(pred) if isinstance(pred, str) else None
        status = status or ('over-length' if detail_value(d, 'over_length') else 'scored')
        gold = preds[i].get('gold') if preds else detail_value(d, 'answer')
        if per_model_copy(abbr) or not preds:
            ident = content_sha([i, gold])
        else:
            ident = content_sha([prompt_text(preds[i].get('origin_prompt')), gold])
        v = detail_value(d, key)
        value = float(v) if status == 'scored' and isinstance(v, (bool, int, float)) else None
        group = detail_value(d, 'sample') if status == 'scored' else None
        cluster = (_cluster(bench, task, d, i, f'{model}/{abbr}') if status == 'scored' and bench is not None
                   else None)
        rows.append(dict(ident=ident, value=value, status=status, group=(i,) if group is None else ('s', group),
                         cluster=cluster,
                         keep=not detail_filter or detail_value(d, detail_filter[0]) == detail_filter[1]))
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
            out.append(((r['ident'], k), r['value'], r['status'], r['keep'], r['cluster']))
        scored = [v for _, v, s, _, _ in out if s == 'scored']
        if scored and None not in scored and (metric not in res or abs(100.0 * sum(scored) / len(scored)
                                                                       - float(res[metric])) < 1e-6):
            return [(i, v, s, c) for i, v, s, keep, c in out if keep]
    raise NotPaired(f'{model}/{abbr}: its {metric} is not the mean of its per-sample {key!r} values')


def pair_units(ua, ub) -> Tuple[List[Tuple[float, float, Optional[tuple]]], Dict[str, int], int]:
    """(pairs of scored values with A's cluster, in A's sample order; excluded counts by reason; samples only one
    side has)."""
    a, b = {i: (v, s, c) for i, v, s, c in ua}, {i: (v, s) for i, v, s, _ in ub}
    pairs, excluded = [], {}
    for i in (i for i, *_ in ua if i in b):
        (va, sa, cluster), (vb, sb) = a[i], b[i]
        if sa == 'scored' and sb == 'scored':
            pairs.append((va, vb, cluster))
        else:
            reason = sa if sa != 'scored' else sb
            excluded[reason] = excluded.get(reason, 0) + 1
    return pairs, excluded, len(a.keys() ^ b.keys())


def paired_test(strata: Sequence[Tuple[float, Sequence[Tuple[float, float, Optional[tuple]]]]],
                resamples: int = RESAMPLES, seed: int = SEED) -> stats.Test:
    """The test of [(dataset weight, [(A value, B value, cluster or None)])]: exact McNemar where the pairs are
    independent (every cluster holds one pair: a benchmark that declares no clusters, or BABILong's stories within
    one tier), every value is 0/1 and every pair weighs the same; else the sign flip over clusters (a sample
    without a cluster is its own)."""
    total = sum(w for w, _ in strata)
    d, w, cl, codes = [], [], [], {}
    for s, (weight, pairs) in enumerate(strata):
        for k, (x, y, cluster) in enumerate(pairs):
            d.append(x - y)
            w.append(weight / total / len(pairs))
            cl.append(codes.setdefault((s, k) if cluster is None else cluster, len(codes)))
    binary = all(x in (0.0, 1.0) and y in (0.0, 1.0) for _, pairs in strata for x, y, _ in pairs)
    independent = len(codes) == len(d)
    if independent and binary and len({round(x, 12) for x in w}) == 1:
        return stats.mcnemar(sum(1 for x in d if x > 0), sum(1 for x in d if x < 0), len(d))
    return stats.sign_flip(np.array(d), np.array(w), np.array(cl), resamples, seed)


# ---------------------------------------------------------------------------------------------- the table
class Comparer:
    def __init__(self, report: dict, results: MergedResults, marks: Dict[Tuple[str, str], str],
                 resamples: int = RESAMPLES):
        self.report, self.results, self.marks, self.resamples = report, results, marks, resamples
        self.rows = {(r.model, r.bench, r.row): r for r in report['rows']}
        self.fps = report.get('fingerprints') or {}
        self._memo: Dict[tuple, Paired] = {}
        self._unit_memo: Dict[tuple, list] = {}

    def models(self) -> List[str]:
        return list(dict.fromkeys(r.model for r in self.report['rows']))

    def _units(self, model: str, abbr: str, spec, detail_filter: Tuple[str, str]) -> list:
        key = (model, abbr, detail_filter)
        if key not in self._unit_memo:
            try:
                self._unit_memo[key] = units(self.results, model, abbr, spec.metric, detail_filter, spec)
            except NotPaired as e:
                self._unit_memo[key] = e
        found = self._unit_memo[key]
        if isinstance(found, NotPaired):
            raise found
        return found

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
                    ua = self._units(a, da, spec, rspec.detail_filter)
                    ub = self._units(b, db, spec, rspec.detail_filter)
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
            test = paired_test(strata, self.resamples,
                               SEED ^ zlib.crc32('/'.join(key[2:]).encode()))  # not the names: a rename changes nothing
            out.pairs = sum(len(p) for _, p in strata)
            out.diff, out.lo, out.hi, out.p = test.diff, test.lo, test.hi, test.p
            out.method, out.clusters, out.testable = test.method, test.clusters, test.testable
            if test.note:
                notes.insert(0, test.note)
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
        """The ranking of each benchmark (its ``mean`` row, else its first) and its rank groups.

        Models are ordered by effective length (``rank_by``), then mean. The first model leads group 1; each next
        model is compared with the leader of the current group (``vs``: leader - model, over their common tiers,
        :meth:`compare`) and starts the next group (becoming its leader) only when both hold:

        1. the difference is significant after Holm's step-down correction over every pairwise comparison of this
           benchmark's ranking (adjusted p < 0.05; a comparison that is not testable, or rests on fewer than ten
           clusters, is never significant), and
        2. the effective lengths are apart: their 95% intervals (``effective[rank_by]['interval']``, tiers; the
           point alone where a row has none) do not overlap. When both models have the same effective length the
           order is decided by the mean, and the test alone decides.

        So two models whose scores at the deciding tier differ by noise (overlapping effective-length intervals)
        are never split. A model with no paired sample with the leader starts a new group (nothing says they are
        alike). Each entry says why it joined or split (``decision``).
        """
        out = []
        for bench in self.report['bench_tiers']:
            spec = bench_by_name(bench)
            present = [r.name for r in spec.rows if any(k[1:] == (bench, r.name) for k in self.rows)]
            ok = [n for n in present if any(c.status == 'ok' for k, r in self.rows.items() if k[1:] == (bench, n)
                                            for c in r.cells.values())]
            if ok:
                out += self._ranking(bench, 'mean' if 'mean' in ok else ok[0], rank_by)
        return out

    def _ranking(self, bench: str, row: str, rank_by: str) -> List[dict]:
        unit = bench_by_name(bench).tier_unit
        entries = [r for k, r in self.rows.items() if k[1:] == (bench, row)]
        entries.sort(key=lambda r: (_length(r.effective.get(rank_by, {}).get('contiguous'), unit),
                                    -math.inf if r.mean is None else r.mean), reverse=True)
        family = [self.compare(x.model, y.model, bench, row, 'mean') for i, x in enumerate(entries)
                  for y in entries[i + 1:]]
        family = [p for p in family if p.testable and p.p is not None]
        adjusted = dict(zip(map(id, family), stats.holm([p.p for p in family])))
        out, group, leader = [], 0, None
        for r in entries:
            vs, decision = None, 'leads the ranking'
            if leader is not None:
                vs = self.compare(leader.model, r.model, bench, row, 'mean')
                split, decision = _split(vs, adjusted.get(id(vs)), leader.effective.get(rank_by) or {},
                                         r.effective.get(rank_by) or {}, unit)
            if vs is None or split:
                group, leader = group + 1, r
            eff = r.effective.get(rank_by) or {}
            out.append(dict(bench=bench, row=row, rank=group, model=r.model, effective=eff.get('contiguous'),
                            effective_interval=eff.get('interval'), mean=r.mean, leader=vs and vs.a,
                            direction=vs and DIRECTION, decision=decision,
                            vs=None if vs is None else dict(asdict(vs), significant=vs.significant,
                                                            p_holm=adjusted.get(id(vs)), direction=DIRECTION)))
        return out


def _length(tier: Optional[str], unit: int) -> float:
    """A tier name (or '<first') as tokens for ordering: '<X' below every tier, None below that."""
    if tier is None:
        return -2
    return -1 if tier.startswith('<') else parse_tier(tier).tokens(unit)


def _span(eff: dict, unit: int) -> Optional[Tuple[float, float]]:
    """(lo, hi) of an effective length's 95% interval in tokens; the point twice where there is no interval."""
    point, interval = eff.get('contiguous'), eff.get('interval')
    if point is None:
        return None
    if not interval or None in tuple(interval)[:2]:
        return _length(point, unit), _length(point, unit)
    return _length(interval[0], unit), _length(interval[1], unit)


def _split(vs: Paired, p_holm: Optional[float], lead: dict, mine: dict, unit: int) -> Tuple[bool, str]:
    """(whether the model starts a new rank group, and why): the rule of :meth:`Comparer.leaderboard`."""
    if vs.diff is None:
        vs.note = vs.note or 'no paired samples with the group leader'
        return True, 'new group: no paired samples with the group leader'
    if not vs.significant or p_holm is None or p_holm >= stats.ALPHA:
        why = vs.note if not vs.testable else (f'Holm-adjusted p = {p_holm:.3g}' if p_holm is not None else
                                               'not significant')
        return False, f'joins: not significantly different from the leader ({why})'
    a, b = _span(lead, unit), _span(mine, unit)
    if lead.get('contiguous') != mine.get('contiguous') and a and b and a[0] <= b[1] and b[0] <= a[1]:
        return False, (f'joins: significant (Holm-adjusted p = {p_holm:.3g}), but the effective-length intervals '
                       'overlap')
    return True, f'new group: significant (Holm-adjusted p = {p_holm:.3g})'


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


def method_text(p: Paired) -> str:
    """'sign-flip (58 clusters)', 'mcnemar (7540 pairs)', 'not testable'."""
    if not p.method or p.method == stats.NOT_TESTABLE or not p.clusters:
        return p.method
    return f'{p.method} ({p.clusters} {"pairs" if p.method == "mcnemar" else "clusters"})'


METHODS = ('Methods (95% level): sign-flip = a sign-flip permutation test over clusters (samples that share text, '
           "as the benchmark declares them: NoLiMa's needle entry; else every sample its own), its interval the same "
           f'test inverted ({RESAMPLES} seeded sign vectors, every one for at most {stats.EXACT_UP_TO} clusters); '
           'mcnemar = the exact McNemar test and Clopper-Pearson interval, for independent 0/1 samples of equal '
           'weight; not testable = no variance to judge the difference against (one cluster, or every cluster the '
           f'same difference): never significant. * = p < 0.05 over at least {stats.MIN_CLUSTERS} clusters.')
RANK_RULE = ('Rank groups: models ordered by effective length ({rank_by}), then mean. A model joins the current '
             'group unless its difference from the group\'s leader (leader - model, paired over their common tiers) '
             "is significant after Holm's step-down correction over all pairwise comparisons of the benchmark's "
             'ranking AND (when their effective lengths differ) their effective-length 95% intervals do not overlap.')


def _board_line(e: dict) -> str:
    vs = e['vs'] or {}
    p = Paired(**{k: v for k, v in vs.items() if k in Paired.__dataclass_fields__}) if vs else None
    eff = effective_text(dict(contiguous=e['effective'], interval=e.get('effective_interval')))
    diff = ('' if p is None else f'{p.a} - {p.b} = {p.diff:+.1f}' + (' *' if vs.get('significant') else '')
            if p.diff is not None else p.note)
    return '| ' + ' | '.join([e['bench'], e['row'], str(e['rank']), e['model'], eff, _num(e['mean'], '.1f') or '-',
                              diff, '' if p is None else interval_text(p), '' if p is None else method_text(p),
                              _num(vs.get('p_holm'), '.3g'), e.get('decision', '')]) + ' |'


def to_markdown(table: Sequence[Paired], board: Sequence[dict], rank_by: str = 'ruler') -> str:
    lines = ['Paired differences A - B (percentage points) over the samples both models ran, 95% interval. '
             + METHODS, '',
             '| A | B | benchmark | row | tier | A - B | 95% interval | method | p | pairs | excluded | note |',
             '|' + '---|' * 12]
    for p in table:
        lines.append('| ' + ' | '.join([p.a, p.b, p.bench, p.row, p.tier,
                                        _num(p.diff) + (' *' if p.significant else ''), interval_text(p),
                                        method_text(p), _num(p.p, '.3g'), str(p.pairs), excluded_text(p),
                                        p.note]) + ' |')
    lines += ['', 'Leaderboard per benchmark. ' + RANK_RULE.format(rank_by=rank_by), '',
              '| benchmark | row | rank | model | eff. len (95% interval) | mean | vs leader (leader - model) | '
              '95% interval | method | p (Holm) | decision |', '|' + '---|' * 11]
    lines += [_board_line(e) for e in board]
    return '\n'.join(lines) + '\n'


def to_csv(table: Sequence[Paired]) -> str:
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(['a', 'b', 'benchmark', 'row', 'tier', 'diff', 'lo', 'hi', 'significant', 'testable', 'method', 'p',
                'clusters', 'pairs', 'excluded', 'unmatched', 'note'])
    for p in table:
        w.writerow([p.a, p.b, p.bench, p.row, p.tier, _num(p.diff, '.4f'), _num(p.lo, '.4f'), _num(p.hi, '.4f'),
                    int(p.significant), int(p.testable), p.method, _num(p.p, '.6g'), p.clusters, p.pairs,
                    excluded_text(p), p.unmatched, p.note])
    return buf.getvalue()


def to_json(table: Sequence[Paired], board: Sequence[dict]) -> str:
    import json
    rows = [dict(asdict(p), significant=p.significant) for p in table]
    method = dict(level=LEVEL, resamples=RESAMPLES, seed=SEED, tests=METHODS, min_clusters=stats.MIN_CLUSTERS,
                  rank_groups=RANK_RULE.format(rank_by='rank_by'))
    return json.dumps({'method': method, 'paired': rows, 'leaderboard': list(board)}, indent=1, sort_keys=True)
