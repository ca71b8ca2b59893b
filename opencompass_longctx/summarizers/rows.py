"""How each benchmark's dataset abbreviations map to table rows and tiers (no OpenCompass import).

One :class:`Bench` per benchmark table, from the benchmarks' specs (:func:`opencompass_longctx.spec.summary_tables`):
a regular expression that reads the task and the tier from a dataset abbr, the rows of the main table (each the
mean of the listed tasks' scores; the first row is the headline used for effective length), the tiers that make
the model's short-context base, and the name of the metric in the results file. A dataset whose abbr matches no
entry, or whose tier part is not a tier, is left to OpenCompass's own table.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.spec import Bench, Row, summary_tables  # noqa: F401 (Row: read by the table code through here)


# Each benchmark describes its tables in its own spec (``<benchmark>/spec.py``); here they are read, in order.
BENCHMARKS: List[Bench] = summary_tables()


def bench_by_name(name: str) -> Bench:
    for b in BENCHMARKS:
        if b.name == name:
            return b
    raise KeyError(name)


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
    marks: List[str] = field(default_factory=list)   # footnote marks (report['footnotes'] says what each means)
    ci_method: str = ''         # wilson | clustered (:mod:`.intervals`): how the interval was made
    clusters: int = 0           # the independent units the interval rests on (samples, or clusters)
    units: Dict[str, float] = field(default_factory=dict)  # {dataset unit: weight} (for resampling; not written)

    @property
    def few_clusters(self) -> bool:
        """A clustered cell on fewer than ``MIN_CLUSTERS`` clusters: it has no interval, and says so."""
        return self.ci_method == 'clustered' and self.ci_lo is None and self.status == 'ok'

    def set_interval(self, bounds, clusters: int, method: str) -> None:
        """Take an interval (:class:`opencompass_longctx.stats.intervals.Bounds` or None)."""
        self.ci_lo, self.ci_hi = (None, None) if bounds is None else (bounds.lo, bounds.hi)
        self.clusters, self.ci_method = clusters, method

    def interval_text(self) -> str:
        """'[55.0, 67.9]' (the one form every table prints), '[? 4 clusters]' for a clustered cell on too few
        clusters, '' for none."""
        if self.ci_lo is not None:
            return f'[{self.ci_lo:.1f}, {self.ci_hi:.1f}]'
        if self.few_clusters:
            return f'[? {self.clusters} cluster{"s" * (self.clusters != 1)}]'
        return ''

    def text(self, with_ci: bool = False) -> str:
        return self._text(with_ci) + ''.join(f' {m}' for m in self.marks)

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


def classify(abbrs: Sequence[str], all_abbrs: bool = False):
    """{bench: {tier: {task: abbr}}} for every abbr a benchmark recognises. With ``all_abbrs`` the values are
    lists: per-model copies of a dataset (NoLiMa's ``nolima_main_4k@<model>``, each made with that model's
    tokenizer) share a task and tier."""
    out: Dict = {}
    for abbr in abbrs:
        for b in BENCHMARKS:
            hit = b.match(abbr)
            if hit:
                task, tier = hit
                slot = out.setdefault(b.name, {}).setdefault(tier, {})
                if all_abbrs:
                    slot.setdefault(task, []).append(abbr)
                else:
                    slot.setdefault(task, abbr)
                break
    return out
