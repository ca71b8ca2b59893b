"""Which model is better: paired differences over the samples both models ran, and ranks with rank intervals.

For two models A and B, per benchmark row and tier of the tier table, the difference A - B (percentage points) is
taken over the samples both ran, matched by their identity: for a dataset both models read, a hash of the
sample's prompt text and gold answer (the prompt without the model wrapper's rendering, as the merge's
fingerprint); for datasets copied per model tokenizer (``<dataset>@<model>``, NoLiMa), the sample's position and
gold answer (the copies list the same needles at the same depths in the same order; their haystacks differ by
design). A row over several datasets weights them as the table does (the mean of its datasets, or of its rows);
``tier='mean'`` is the row's mean over the tiers both models have (the cells they share, never a tier only one has).

Samples that are not scored answers are left out of the pair, and counted in ``excluded`` by reason: over-length
(the prompt was not sent), engine too small, engine error (:mod:`opencompass_longctx.overlength`), on either
side; so are samples only one model has (``unmatched``).

The test and its 95% interval (:mod:`opencompass_longctx.stats.paired`) rest on the benchmark's own statement of how
its samples are related (``Bench.cluster_of``, read from each sample's details): NoLiMa's samples of one needle entry
are one cluster across its datasets and tiers, BABILong's story at one position of a task one cluster across its
tiers, LongBioBench's samples of one seed one cluster across its cells and tiers. Where every cluster holds one pair
(independent pairs: one BABILong tier), every value is 0/1 and every pair weighs the same: the exact McNemar test
(``mcnemar``); otherwise the sign-flip test over clusters (``sign-flip``: exact up to 20 clusters; ``sign-flip
(normal)``: its normal approximation above). ``*`` marks p < 0.05. A test over fewer than 6 clusters is ``not
testable`` (no sign flip can reach p < 0.05 there) and never significant.

The leaderboard (:meth:`Comparer.leaderboard`) ranks each benchmark's ranking row (its ``mean`` row, else its
first) per tier and overall, with rank intervals from all pairwise tests under Holm's correction
(:mod:`opencompass_longctx.stats.ranks`). Their Markdown, CSV and JSON: :mod:`opencompass_longctx.writers.comparison`.
"""
import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from opencompass_longctx.errors import LongCtxError
from opencompass_longctx.leaderboard.benchmarks import bench_by_name
from opencompass_longctx.leaderboard.build import row_task_names
from opencompass_longctx.leaderboard.merge import MergedResults
from opencompass_longctx.leaderboard.runs import Seen, per_model_copy
from opencompass_longctx.leaderboard.tier_report import Effective, TierReport
from opencompass_longctx.leaderboard.units import detail_value, value_key
from opencompass_longctx.overlength import ENGINE_ERROR, ENGINE_TOO_SMALL, OVER_LENGTH
from opencompass_longctx.stats import paired as stats
from opencompass_longctx.stats.ranks import holm, length_rank_intervals, rank_intervals, rank_text
from opencompass_longctx.tiers import parse_tier
LEVEL = stats.LEVEL
STATUS = ('scored', 'over-length', 'engine too small', 'engine error')
_MARKERS = {OVER_LENGTH: 1, ENGINE_TOO_SMALL: 2, ENGINE_ERROR: 3}
DIRECTION = 'leader - model'
RANK_BY = ('score', 'ruler', 'nolima')
FULL_TABLE_UP_TO = 10     # models: every pair on every row; above, the comparisons the ranks rest on


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
    testable: bool = True     # False: no test at this level could reject (method 'not testable')
    clusters: int = 0         # how many clusters (independent units) the test rests on

    @property
    def significant(self) -> bool:
        """p < 0.05 from a testable comparison (the interval then excludes 0)."""
        return self.testable and self.method != stats.NOT_TESTABLE and self.p is not None and self.p < stats.ALPHA


@dataclass
class Samples:
    """One model's scored samples of one dataset (a split of it where the row filters its details), as arrays:
    ``key`` the sample's identity code (unique), ``value`` in [0, 1] (NaN where not scored), ``status`` an index of
    :data:`STATUS`, ``cluster`` the sample's cluster code (-1: none declared)."""
    key: np.ndarray
    value: np.ndarray
    status: np.ndarray
    cluster: np.ndarray


# ---------------------------------------------------------------------------------------------- samples
class Codes(dict):
    """Interned identities: the same text gets the same integer code (shared by every model of a comparison)."""

    def of(self, key) -> int:
        return self.setdefault(key, len(self))


def _cluster(bench, task: str, d: dict, position: int, where: str):
    """The sample's cluster (``Bench.cluster_of``; None: the benchmark declares none)."""
    try:
        return bench.cluster_of(d, task, position)
    except KeyError as e:
        raise NotPaired(f'{where}: its per-sample details have no {e.args[0]!r}, which names the clusters of this '
                        'benchmark (results written by an older version: evaluate the run again with '
                        '`opencompass ... -r` to compare it)') from None


def _seen(results: MergedResults, model: str, abbr: str) -> Optional[List[Seen]]:
    """The chosen result's predictions as the merge read them once (prompt digest, gold, prediction per sample);
    None where there are none or they cannot be read (the samples are then paired by position)."""
    run = results.run_of(model, abbr)
    fp = run.fingerprint(model, abbr) if run is not None else None
    return fp.seen if fp is not None else None


def units(results: MergedResults, model: str, abbr: str, metric: str, detail_filter: Tuple[str, str] = (),
          bench=None, idents: Optional[Codes] = None, clusters: Optional[Codes] = None) -> Samples:
    """The samples of a result (:class:`Samples`); NotPaired when its score cannot be read back from its
    per-sample details, a value is not a finite number, or a clustered benchmark's details do not name the cluster.
    ``idents``, ``clusters``: the code books shared by the models compared (fresh ones when not given)."""
    idents, clusters = idents if idents is not None else Codes(), clusters if clusters is not None else Codes()
    res = results.get(model, abbr)
    if not res or 'error' in res or not isinstance(res.get('details'), list):
        raise NotPaired(f'{model}/{abbr}: no per-sample details')
    details = res['details']
    seen = _seen(results, model, abbr)
    if seen is not None and len(seen) != len(details):
        seen = None
    key = value_key(res)
    task = bench.match(abbr)[0] if bench is not None and bench.match(abbr) else ''
    rows = []
    for i, d in enumerate(details):
        pred = seen[i].prediction if seen else None
        status = _MARKERS.get(pred, 0) if isinstance(pred, str) else 0
        status = status or (1 if detail_value(d, 'over_length') else 0)
        gold = seen[i].gold if seen else detail_value(d, 'answer')
        # the sample's identity, interned in this process (:class:`Codes`): a digest of the prompt, not its text
        ident = (i, repr(gold)) if per_model_copy(abbr) or not seen else (seen[i].digest, repr(gold))
        v = detail_value(d, key)
        value = float(v) if status == 0 and isinstance(v, (bool, int, float)) else None
        if value is not None and not math.isfinite(value):
            raise NotPaired(f'{model}/{abbr}: sample {i} has {key} = {value!r}, not a number in [0, 1]')
        group = detail_value(d, 'sample') if status == 0 else None
        cluster = _cluster(bench, task, d, i, f'{model}/{abbr}') if status == 0 and bench is not None else None
        rows.append(dict(ident=ident, value=value, status=status, group=(i,) if group is None else ('s', group),
                         cluster=-1 if cluster is None else clusters.of(cluster),
                         keep=not detail_filter or detail_value(d, detail_filter[0]) == detail_filter[1]))
    for collapse in (True, False):
        groups: Dict[tuple, List[dict]] = {}
        for r in rows:
            groups.setdefault(r['group'] if collapse else (id(r),), []).append(r)
        if collapse and any(len({(r['value'], r['status']) for r in g}) > 1 for g in groups.values()):
            continue
        out, seen = [], {}
        for g in groups.values():
            r = g[0]
            k = seen[r['ident']] = seen.get(r['ident'], -1) + 1
            out.append((idents.of((r['ident'], k)), r['value'], r['status'], r['keep'], r['cluster']))
        scored = [v for _, v, st, _, _ in out if st == 0]
        if scored and None not in scored and (metric not in res or abs(100.0 * sum(scored) / len(scored)
                                                                       - float(res[metric])) < 1e-6):
            kept = [x for x in out if x[3]]
            return Samples(np.array([x[0] for x in kept], dtype=np.int64),
                           np.array([np.nan if x[1] is None else x[1] for x in kept], dtype=float),
                           np.array([x[2] for x in kept], dtype=np.int8),
                           np.array([x[4] for x in kept], dtype=np.int64))
    raise NotPaired(f'{model}/{abbr}: its {metric} is not the mean of its per-sample {key!r} values')


def pair_units(ua: Samples, ub: Samples) -> Tuple[np.ndarray, np.ndarray, np.ndarray, Dict[str, int], int]:
    """(A's values, B's values, A's clusters) of the samples both scored, in A's sample order; excluded counts by
    reason (a marker or over-length on either side); the number of samples only one side has."""
    if len(ua.key) == len(ub.key) and np.array_equal(ua.key, ub.key):   # the same samples in the same order
        ia = ib = np.arange(len(ua.key))
    else:
        _, ia, ib = np.intersect1d(ua.key, ub.key, assume_unique=True, return_indices=True)
        order = np.argsort(ia, kind='stable')
        ia, ib = ia[order], ib[order]
    sa, sb = ua.status[ia], ub.status[ib]
    both = (sa == 0) & (sb == 0)
    reason = np.where(sa != 0, sa, sb)[~both]
    excluded = {STATUS[k]: int(c) for k, c in enumerate(np.bincount(reason, minlength=len(STATUS))) if k and c}
    unmatched = len(ua.key) + len(ub.key) - 2 * len(ia)
    return ua.value[ia][both], ub.value[ib][both], ua.cluster[ia][both], excluded, unmatched


def paired_test(strata: Sequence[Tuple[float, np.ndarray, np.ndarray, np.ndarray]]) -> stats.Test:
    """The test of [(dataset weight, A values, B values, clusters (-1: none))]: exact McNemar where the pairs are
    independent (every cluster holds one pair: a benchmark that declares no clusters, or BABILong's stories within
    one tier), every value is 0/1 and every pair weighs the same; else the sign flip over clusters (a sample
    without a cluster is its own)."""
    total = sum(w for w, *_ in strata)
    d = np.concatenate([np.asarray(a, float) - np.asarray(b, float) for _, a, b, _ in strata])
    w = np.concatenate([np.full(len(a), weight / total / len(a)) for weight, a, _, _ in strata])
    values = np.concatenate([np.concatenate([np.asarray(a, float), np.asarray(b, float)]) for _, a, b, _ in strata])
    cl = np.concatenate([np.asarray(c, np.int64) for *_, c in strata])
    own = cl < 0
    if own.all():
        cl, independent = np.arange(len(d)), True
    else:
        cl = np.where(own, cl.max(initial=0) + 1 + np.cumsum(own), cl)   # a sample without a cluster is its own
        independent = len(np.unique(cl)) == len(d)
    binary = bool(np.all((values == 0) | (values == 1)))
    if independent and binary and np.ptp(w) <= 1e-12 * w.max():
        return stats.mcnemar(int(np.sum(d > 0)), int(np.sum(d < 0)), len(d))
    return stats.sign_flip(d, w, cl)


# ---------------------------------------------------------------------------------------------- the table
class Comparer:
    def __init__(self, report: TierReport, results: MergedResults, marks: Dict[Tuple[str, str], str]):
        self.report, self.results, self.marks = report, results, marks
        self.rows = report.by_key
        self.fps = report.merge.fingerprints if report.merge else {}
        self._memo: Dict[tuple, Paired] = {}
        self._unit_memo: Dict[tuple, object] = {}
        self.idents, self.clusters = Codes(), Codes()

    def models(self) -> List[str]:
        return self.report.models

    def _units(self, model: str, abbr: str, spec, detail_filter: Tuple[str, str]) -> Samples:
        key = (model, abbr, detail_filter)
        if key not in self._unit_memo:
            try:
                self._unit_memo[key] = units(self.results, model, abbr, spec.metric, detail_filter, spec,
                                             self.idents, self.clusters)
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
                if fa and fb and fa.mode != fb.mode:
                    notes.append(f'{t}: not compared (the scoring differs)')
                    continue
                try:
                    ua = self._units(a, da, spec, rspec.detail_filter)
                    ub = self._units(b, db, spec, rspec.detail_filter)
                except NotPaired as e:
                    notes.append(str(e))
                    continue
                va, vb, cl, excl, unmatched = pair_units(ua, ub)
                for k, v in excl.items():
                    out.excluded[k] = out.excluded.get(k, 0) + v
                out.unmatched += unmatched
                if (a, da) in self.marks or (b, db) in self.marks:
                    notes.append(f'{t}: the datasets differ; over the {len(va)} samples both have')
                if len(va):
                    mine.append((va, vb, cl))
            strata += [(1.0 / len(subrows) / len(mine), *x) for x in mine]
        return strata, notes

    def shared_tiers(self, a: str, b: str, bench: str, row: str) -> List[str]:
        """The tiers where both models have a score on the row (the cells a comparison over tiers rests on)."""
        ra, rb = self.rows.get((a, bench, row)), self.rows.get((b, bench, row))
        if ra is None or rb is None:
            return []
        return [t for t in self.report.benchmarks[bench].tiers if t in ra.cells and t in rb.cells
                and ra.cells[t].status == 'ok' and rb.cells[t].status == 'ok']

    def compare(self, a: str, b: str, bench: str, row: str, tier: str) -> Paired:
        key = (a, b, bench, row, tier)
        if key in self._memo:
            return self._memo[key]
        flipped = self._memo.get((b, a, bench, row, tier))
        if flipped is not None:   # the same comparison the other way round
            out = _reversed(flipped)
            self._memo[key] = out
            return out
        out = Paired(a, b, bench, row, tier)
        ra, rb = self.rows.get((a, bench, row)), self.rows.get((b, bench, row))
        if ra is None or rb is None:
            out.note = f'not compared: {a if ra is None else b} has no {bench} {row} row'
            out.testable = False
            self._memo[key] = out
            return out
        tiers = self.shared_tiers(a, b, bench, row) if tier == 'mean' else [tier]
        strata, notes = [], []
        for t in tiers:
            s, n = self._strata(a, b, bench, row, t, out)
            strata += [(w / len(tiers), *x) for w, *x in s]
            notes += [f'{t}: {x}' if tier == 'mean' else x for x in n]
        if tier != 'mean':
            bad = [f'{m} {c.status.upper()}' for m, c in ((a, ra.cells.get(tier)), (b, rb.cells.get(tier)))
                   if c is not None and c.status != 'ok']
            if bad:
                notes.insert(0, 'not compared: ' + ', '.join(bad))
        if strata:
            test = paired_test(strata)
            out.pairs = sum(len(x[1]) for x in strata)
            out.diff, out.lo, out.hi, out.p = test.diff, test.lo, test.hi, test.p
            out.method, out.clusters, out.testable = test.method, test.clusters, test.testable
            if test.note:
                notes.insert(0, test.note)
        else:
            out.testable = False
            if not notes:
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
                tiers = [t for t in self.report.benchmarks[bench].tiers if t in r.cells]
                out += [self.compare(a, b, bench, row, t) for t in tiers + ['mean']]
        return out

    def ranked_table(self) -> List[Paired]:
        """The comparisons the leaderboard's ranks rest on (each pair once, per tier and over tiers), in the
        ranking rows' order; call :meth:`leaderboard` first."""
        keep, seen, out = set(self.ranking_rows()), set(), []
        for (a, b, bench, row, tier), p in self._memo.items():
            pair = (frozenset((a, b)), bench, row, tier)
            if (bench, row) in keep and pair not in seen:
                seen.add(pair)
                out.append(p)
        return out

    def ranking_rows(self) -> List[Tuple[str, str]]:
        """(benchmark, row) of each benchmark's ranking: its ``mean`` row, else its first row with a score."""
        out = []
        for bench in self.report.benchmarks:
            spec = bench_by_name(bench)
            ok = [r.name for r in spec.rows if any(c.status == 'ok' for k, x in self.rows.items()
                                                   if k[1:] == (bench, r.name) for c in x.cells.values())]
            if ok:
                out.append((bench, 'mean' if 'mean' in ok else ok[0]))
        return out

    def leaderboard(self, rank_by: str = 'score') -> List[dict]:
        """The ranking of each benchmark's ranking row, one entry per model, in rank order (:data:`opencompass_longctx.writers.comparison.RANK_RULE`).

        ``rank_by='score'``: by the paired tests. Per tier, the models with a score there; overall, every pair
        compared on the tiers both have (``tier='mean'``). Holm's correction runs over every pair of one ranking
        (one tier, or overall); a model's rank interval is [1 + models significantly better, K - models
        significantly worse] (:func:`..stats.ranks.rank_intervals`). The order: by best rank, then by pairwise wins
        on the shared tiers (a model better than another on the tiers both have wins that pair), then the mean of its
        own tiers. ``rank_by='ruler'`` or ``'nolima'``: by that effective length, its rank interval from the
        effective lengths' 95% intervals (:func:`..stats.ranks.length_rank_intervals`), listed by best rank, then
        length; a length on too few clusters to resample last."""
        if rank_by not in RANK_BY:
            raise ValueError(f'rank_by {rank_by!r}: one of {", ".join(RANK_BY)}')
        out = []
        for bench, row in self.ranking_rows():
            out += self._ranking(bench, row, rank_by)
        return out

    def family(self, models: Sequence[str], bench: str, row: str, tier: str):
        """(rank intervals, {(a, b): the comparison}, {(a, b): its Holm-adjusted p}) of every pair of ``models``."""
        tests = {(x, y): self.compare(x, y, bench, row, tier) for x, y in itertools.combinations(models, 2)}
        fam = [k for k, p in tests.items() if p.testable and p.p is not None and p.diff is not None]
        adjusted = dict(zip(fam, holm([tests[k].p for k in fam])))
        better = {}
        for (x, y), q in adjusted.items():
            if q < stats.ALPHA and tests[x, y].significant:
                better[(x, y) if tests[x, y].diff > 0 else (y, x)] = True
        return rank_intervals(models, better), tests, adjusted

    def _ranking(self, bench: str, row: str, rank_by: str) -> List[dict]:
        spec = bench_by_name(bench)
        rows = [r for k, r in self.rows.items() if k[1:] == (bench, row)
                and any(c.status == 'ok' for c in r.cells.values())]
        models = [r.model for r in rows]
        by_model = {r.model: r for r in rows}
        tiers = self.report.benchmarks[bench].tiers
        tier_ranks = {}
        for t in tiers:
            have = [r.model for r in rows if t in r.cells and r.cells[t].status == 'ok']
            if have:
                tier_ranks[t] = self.family(have, bench, row, t)[0]
        ranks, tests, adjusted = self.family(models, bench, row, 'mean')
        wins = {m: 0 for m in models}
        for (x, y), p in tests.items():
            if p.diff is not None and p.diff != 0:
                wins[x if p.diff > 0 else y] += 1
                wins[y if p.diff > 0 else x] -= 1
        own = {m: -math.inf if by_model[m].mean is None else by_model[m].mean for m in models}
        if rank_by == 'score':
            point = {m: (False, -wins[m], -own[m]) for m in models}
        else:   # a length on too few clusters to resample can take any rank: listed after those that are ranked
            effs = {m: by_model[m].effective.get(rank_by) or Effective() for m in models}
            ranks = length_rank_intervals({m: _span(e, spec.tier_unit) for m, e in effs.items()})
            point = {m: (bool(effs[m].few_clusters), -_length(effs[m].contiguous, spec.tier_unit), -own[m])
                     for m in models}
        # listed by best rank first (Chatbot Arena's convention), then the point order: a model listed higher never
        # shows a worse best rank than one below it
        order = sorted(models, key=lambda m: (point[m][0], ranks[m][0], point[m][1:]))
        most = max((len(self.shared_tiers(m, m, bench, row)) for m in models), default=0)
        leader = order[0] if order else None
        out = []
        for m in order:
            r = by_model[m]
            vs = None if m == leader else self.compare(leader, m, bench, row, 'mean')
            p_holm = None if vs is None else adjusted.get((leader, m), adjusted.get((m, leader)))
            mine = self.shared_tiers(m, m, bench, row)
            eff = r.effective.get('ruler' if rank_by == 'score' else rank_by) or Effective()
            lo, hi = ranks[m]
            out.append(dict(
                bench=bench, row=row, rank=lo, rank_hi=hi, rank_text=rank_text((lo, hi)), model=m,
                rank_by=rank_by, tier_ranks={t: list(tr[m]) for t, tr in tier_ranks.items() if m in tr},
                tiers=mine, partial=len(mine) < most, mean=r.mean,
                effective=eff.contiguous, effective_interval=eff.interval, effective_few=eff.few_clusters,
                leader=leader if vs is not None else None, direction=vs and DIRECTION,
                decision=_decision(m, lo, hi, len(models), tests, adjusted, rank_by, len(mine), most),
                vs=None if vs is None else dict(asdict(vs), significant=vs.significant and p_holm is not None
                                                and p_holm < stats.ALPHA, p_holm=p_holm, direction=DIRECTION)))
        return out


def _reversed(p: Paired) -> Paired:
    """B - A from A - B (the same samples and test; the interval turned round)."""
    flip = (lambda v: None if v is None else -v)  # noqa: E731
    return Paired(p.b, p.a, p.bench, p.row, p.tier, flip(p.diff), flip(p.hi), flip(p.lo), p.method, p.p, p.pairs,
                  dict(p.excluded), p.unmatched, p.note, p.testable, p.clusters)


def _decision(m: str, lo: int, hi: int, k: int, tests: dict, adjusted: dict, rank_by: str, tiers: int,
              most: int) -> str:
    """Why the model holds the ranks it holds, in one line."""
    partial = f'; ranked on its {tiers} of {most} tiers' if tiers < most else ''
    if rank_by != 'score':
        return (f'ranks {rank_text((lo, hi))} of {k}: by {rank_by} effective length (its 95% interval against the '
                f'others\')' + partial)
    better = sorted((x if p.diff > 0 else y) for (x, y), p in tests.items() if m in (x, y) and p.diff is not None
                    and adjusted.get((x, y), 1.0) < stats.ALPHA and p.significant and (x if p.diff > 0 else y) != m)
    worse = sum(1 for (x, y), p in tests.items() if m in (x, y) and p.diff is not None
                and adjusted.get((x, y), 1.0) < stats.ALPHA and p.significant and (x if p.diff > 0 else y) == m)
    named = ', '.join(better[:3]) + (f' and {len(better) - 3} more' if len(better) > 3 else '')
    partial += _floor_note(tests, adjusted)
    return (f'ranks {rank_text((lo, hi))} of {k}: {len(better)} significantly better' + (f' ({named})' if better else '')
            + f', {worse} significantly worse (Holm over the {len(adjusted)} testable pair{"s" * (len(adjusted) != 1)})'
            + partial)


def _floor_note(tests: dict, adjusted: dict) -> str:
    """Where every test of the ranking is an exact sign flip whose smallest possible p (2/2^G over G clusters) is
    not below Holm's smallest threshold (0.05 / pairs), no pair can ever be told apart: say so, or the ranking
    reads as "all equal"."""
    exact = [p for k, p in tests.items() if k in adjusted]
    if not exact or any(p.method != 'sign-flip' for p in exact):
        return ''
    g = max(p.clusters for p in exact)
    if 2 / 2 ** g < stats.ALPHA / len(adjusted):
        return ''
    return (f'; no pair of this ranking can be told apart: over {g} clusters a sign-flip p is at least 2/2^{g} = '
            f'{2 / 2 ** g:.2g}, not below Holm\'s smallest threshold {stats.ALPHA:g}/{len(adjusted)} = '
            f'{stats.ALPHA / len(adjusted):.2g} (more clusters, or fewer models, would be)')


def _length(tier: Optional[str], unit: int) -> float:
    """A tier name (or '<first') as tokens for ordering: '<X' below every tier, None below that."""
    if tier is None:
        return -2
    return -1 if tier.startswith('<') else parse_tier(tier).tokens(unit)


def _span(eff: Effective, unit: int) -> Optional[Tuple[float, float]]:
    """(lo, hi) of an effective length's 95% interval in tokens; the point twice where there is no interval; any
    length where its row rests on too few clusters to tell."""
    point, interval = eff.contiguous, eff.interval
    if point is None:
        return None
    if eff.few_clusters:
        return -math.inf, math.inf
    if not interval or None in tuple(interval)[:2]:
        return _length(point, unit), _length(point, unit)
    return _length(interval[0], unit), _length(interval[1], unit)
