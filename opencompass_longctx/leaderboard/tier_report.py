"""The tier report, typed: report -> benchmark -> row -> cell, built once (:func:`.build.build`) and read by attribute
by every writer (:mod:`opencompass_longctx.writers`), the comparison (:mod:`.compare`) and the merge.

A :class:`Cell` holds one (model, benchmark row, tier) entry: its point, its 95% interval, how the interval was made
and on how many clusters it rests, its coverage (how many of the row's datasets it is the mean of) and its marks. A
:class:`RowResult` is a line of the table: its cells by tier, its mean and its two effective lengths
(:class:`Effective`). A :class:`BenchResult` is one benchmark table of the report: its tiers, the source of its
published numbers, its needle-depth grids and its rows. :class:`TierReport` holds them with what the table lists
under it (failures, partial rows, footnotes, notes, unplaced datasets) and, for a merge of runs, the merge's record.

:meth:`TierReport.to_dict` is the report's serialisation: ``longctx_report.json`` is ``json.dumps`` of it.
"""
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

from opencompass_longctx import __version__
from opencompass_longctx.leaderboard.failures import Failure
from opencompass_longctx.leaderboard.placement import Unplaced

NOLIMA, RULER = 'nolima', 'ruler'   # the effective lengths of a row: NoLiMa's (a share of a base) and RULER's
EFFECTIVE = (NOLIMA, RULER)
Grid = List[List[int]]              # [[correct, samples] per needle-depth bin]


@dataclass
class Cell:
    """One (model, benchmark, row, tier) entry of the main table."""
    score: Optional[float] = None
    ci_lo: Optional[float] = None   # the 95% interval, percent, inside [0, 100] (None: none, ``few_clusters`` says why)
    ci_hi: Optional[float] = None
    n: int = 0
    status: str = 'ok'          # ok | n/a | missing | failed (a task log holds the failure)
    reason: str = ''
    tasks: Dict[str, float] = field(default_factory=dict)
    cells_used: int = 0         # a row's mean: over how many of the datasets it has (0: not a mean of datasets)
    cells_total: int = 0
    marks: List[str] = field(default_factory=list)   # footnote marks (``TierReport.footnotes`` says what each means)
    ci_method: str = ''         # wilson | clustered (:mod:`.units`): how the interval was made
    clusters: int = 0           # the independent units the interval rests on (samples, or clusters)
    units: Dict[str, float] = field(default_factory=dict)  # {dataset unit: weight} (for resampling; not written)
    caveat: str = ''            # the mark of a tier its model runs beyond its engine's support (:mod:`.caveats`)

    @property
    def few_clusters(self) -> bool:
        """A clustered cell on fewer than ``MIN_CLUSTERS`` clusters: it has no interval, and says so."""
        return self.ci_method == 'clustered' and self.ci_lo is None and self.status == 'ok'

    def interval_text(self) -> str:
        """'[55.0, 67.9]' (the one form every table prints), '[? 4 clusters]' for a clustered cell on too few
        clusters, '' for none."""
        if self.ci_lo is not None:
            return f'[{self.ci_lo:.1f}, {self.ci_hi:.1f}]'
        if self.few_clusters:
            return f'[? {self.clusters} cluster{"s" * (self.clusters != 1)}]'
        return ''

    def text(self, with_ci: bool = False) -> str:
        return self._text(with_ci) + ''.join(f' {m}' for m in self.marks) + self.caveat

    def _text(self, with_ci: bool) -> str:
        if self.status == 'n/a':
            return 'N/A'
        if self.status == 'failed':
            return 'FAIL'
        if self.status == 'missing' and 0 < self.cells_used < self.cells_total:
            return f'- ({self.cells_used}/{self.cells_total})'   # some of the row's datasets were not run
        if self.status == 'missing' or self.score is None:
            return '-'
        interval = self.interval_text() if with_ci else ''
        return (f'{self.score:.1f}' + (f' {interval}' if interval else '')
                + (f' ({self.cells_used}/{self.cells_total})' if self.cells_used < self.cells_total else ''))

    def to_dict(self) -> dict:
        out = asdict(self)
        del out['units'], out['caveat']      # the resampling's bookkeeping; the caveat is written as its mark
        if self.caveat:
            out['mark'] = self.caveat
        return out


@dataclass
class Effective:
    """One effective length of a row: the longest tier that it and every shorter tier pass (``contiguous``; '<X'
    when the first tier X fails; None: nothing to judge), the longest passing tier anywhere (``raw``), the threshold
    (None: no base to take a share of), NoLiMa's base score, and the 95% interval [lo, hi] in tiers; none where a
    clustered cell of the row rests on fewer than ``MIN_CLUSTERS`` clusters (``few_clusters``: the fewest): a
    resample of so few clusters would print a tight interval that means nothing."""
    contiguous: Optional[str] = None
    raw: Optional[str] = None
    threshold: Optional[float] = None
    base: Optional[float] = None
    interval: Optional[List[str]] = None
    few_clusters: int = 0

    def text(self) -> str:
        """'16k [8k-32k]': the effective length and its 95% interval in tiers (the interval left out where it is the
        point itself); '-': nothing to judge. The one form the table, the comparison and the page print."""
        if not self.contiguous:
            return '-'
        if self.few_clusters:
            return f'{self.contiguous} [? {self.few_clusters} cluster{"s" * (self.few_clusters != 1)}]'
        lo_hi = self.interval
        if not lo_hi or None in tuple(lo_hi)[:2] or list(lo_hi)[:2] == [self.contiguous, self.contiguous]:
            return self.contiguous
        return f'{self.contiguous} [{lo_hi[0]}-{lo_hi[1]}]'

    def to_dict(self, kind: str) -> dict:
        """NoLiMa's records its base; an interval is recorded where there is a threshold to pass."""
        out = dict(contiguous=self.contiguous, raw=self.raw, threshold=self.threshold)
        if kind == NOLIMA:
            out['base'] = self.base
        if self.threshold is not None:
            out['interval'] = self.interval
        if self.few_clusters:
            out['few_clusters'] = self.few_clusters
        return out


@dataclass
class RowResult:
    model: str
    bench: str
    row: str
    cells: Dict[str, Cell]
    mean: Optional[float] = None
    mean_note: str = ''
    effective: Dict[str, Effective] = field(default_factory=dict)   # {NOLIMA: ..., RULER: ...}
    published_name: Optional[str] = None
    published: Dict[str, float] = field(default_factory=dict)
    datasets: Dict[str, Dict[str, str]] = field(default_factory=dict)  # {tier: {task: the dataset abbr read}}

    @property
    def filled(self) -> bool:
        """Some cell has a score, a FAIL or a partial '- (2/5)' (a row without any is a block of '-')."""
        return any(c.status in ('ok', 'failed') or c.cells_used for c in self.cells.values())

    def to_dict(self) -> dict:
        return dict(model=self.model, bench=self.bench, row=self.row,
                    cells={t: c.to_dict() for t, c in self.cells.items()}, mean=self.mean, mean_note=self.mean_note,
                    effective={k: e.to_dict(k) for k, e in self.effective.items()},
                    published_name=self.published_name, published=self.published, datasets=self.datasets)


@dataclass
class BenchResult:
    """One benchmark table of the report (a :class:`opencompass_longctx.spec.Bench`): its tiers in size order, where
    its published numbers come from, each model's needle-depth grids ({model: {tier: grid}}, where its samples
    record a depth) and its rows, in the report's order."""
    name: str
    tiers: List[str]
    reference: Optional[str] = None
    depth: Dict[str, Dict[str, Grid]] = field(default_factory=dict)
    rows: List[RowResult] = field(default_factory=list)


@dataclass
class ResultPrint:
    """What a merged result was checked by (:class:`.merge.Fingerprint`), and the run it was read from."""
    run: str
    rows: Optional[str]
    design: Optional[str]
    mode: str
    scoring: str
    samples: int


@dataclass
class MergeRecord:
    """What a merge of runs adds to the report: the runs, the merge's notes, each model's identity and the
    fingerprint of every result shown."""
    runs: List[str]
    notes: List[str] = field(default_factory=list)
    identities: Dict[str, dict] = field(default_factory=dict)
    fingerprints: Dict[str, ResultPrint] = field(default_factory=dict)   # {'<model>/<dataset abbr>': ...}


@dataclass
class TierReport:
    """Every model x benchmark row x tier of one run (or merged runs), with what the table lists under it."""
    tiers: List[str]                             # every tier of the report, in size order
    benchmarks: Dict[str, BenchResult]           # in the order the run names them
    rows: List[RowResult]                        # model by model, each model's benchmarks in the specs' order
    ruler_threshold: float
    nolima_ratio: float
    notes: List[str] = field(default_factory=list)
    partial: List[str] = field(default_factory=list)
    footnotes: Dict[str, List[str]] = field(default_factory=dict)   # {mark: what each marked cell is}
    failures: List[Failure] = field(default_factory=list)
    models_without_published_counterpart: List[str] = field(default_factory=list)
    package_version: str = __version__
    unplaced: Optional[List[Unplaced]] = None    # None: not checked
    merge: Optional[MergeRecord] = None          # None: one run, read by its own summarizer

    @property
    def shown_rows(self) -> List[RowResult]:
        """The rows, less the (benchmark, row)s where no model has anything at any tier (e.g. NoLiMa's two-hop split
        of a run with no two-hop sample): they would be a block of '-'."""
        filled = {(r.bench, r.row) for r in self.rows if r.filled}
        return [r for r in self.rows if (r.bench, r.row) in filled]

    @property
    def by_key(self) -> Dict[Tuple[str, str, str], RowResult]:
        """{(model, benchmark, row): its row}."""
        return {(r.model, r.bench, r.row): r for r in self.rows}

    @property
    def models(self) -> List[str]:
        return list(dict.fromkeys(r.model for r in self.rows))

    @property
    def runs(self) -> List[str]:
        return self.merge.runs if self.merge else []

    def to_dict(self) -> dict:
        """The report as ``longctx_report.json`` holds it."""
        out = dict(tiers=self.tiers, rows=[r.to_dict() for r in self.rows], notes=self.notes,
                   package_version=self.package_version, ruler_threshold=self.ruler_threshold,
                   nolima_ratio=self.nolima_ratio,
                   models_without_published_counterpart=self.models_without_published_counterpart,
                   failures=[asdict(f) for f in self.failures], partial=self.partial,
                   depth={b.name: b.depth for b in self.benchmarks.values() if b.depth}, footnotes=self.footnotes,
                   bench_tiers={b.name: b.tiers for b in self.benchmarks.values()},
                   references={b.name: b.reference for b in self.benchmarks.values()})
        if self.unplaced is not None:
            out['unplaced'] = [u.to_dict() for u in self.unplaced]
        if self.merge is not None:
            out.update(runs=self.merge.runs, merge_notes=self.merge.notes, model_identities=self.merge.identities,
                       fingerprints={k: asdict(v) for k, v in self.merge.fingerprints.items()})
        return out
