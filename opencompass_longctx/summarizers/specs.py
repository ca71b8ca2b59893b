"""How each benchmark's dataset abbreviations map to table rows and tiers (no OpenCompass import).

One entry per benchmark: a regular expression that reads the task and the tier from a dataset abbr, the rows
of the main table (each the mean of the listed tasks' scores; the first row is the headline used for effective
length), the tiers that make the model's short-context base, and the name of the metric in the results file.
A dataset whose abbr matches no entry, or whose tier part is not a tier, is left to OpenCompass's own table.
"""
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..tiers import TierError, parse_tier


@dataclass(frozen=True)
class Row:
    """A table row: the mean of some tasks' scores, or (``of_rows``) the mean of other rows of the same tier.

    By default every task must be there (the BABILong leaderboard's avg needs all of qa1-qa5); with
    ``partial_ok`` the row is the mean of the tasks the tier has (LongBioBench leaves the n=5/10 cells out of
    its smallest tiers).
    """
    name: str
    tasks: Tuple[str, ...] = ()
    partial_ok: bool = False
    of_rows: Tuple[str, ...] = ()
    detail_filter: Tuple[str, str] = ()   # (key, value): accuracy over the per-sample details that match


@dataclass(frozen=True)
class Bench:
    name: str
    pattern: str
    rows: Tuple[Row, ...]
    base_tiers: Tuple[str, ...]
    metric: str = 'accuracy'
    tier_unit: int = 1000
    notes: str = ''
    # 'nolima': the base score is NoLiMa's per-pair one, computed from the per-test details
    # (opencompass_longctx.nolima.metrics), not the best row score at base_tiers
    paper_base: Optional[str] = None

    def match(self, abbr: str) -> Optional[Tuple[str, str]]:
        m = re.match(self.pattern, abbr)
        if not m:
            return None
        try:
            tier = parse_tier(m.group('tier')).name
        except TierError:
            return None
        return m.group('task'), tier


def _qa(n: int) -> Tuple[str, ...]:
    return tuple(f'qa{i}' for i in range(1, n + 1))


_TIER = r'(?P<tier>[0-9.]+[kKmM]?)'


def _longbio_rows() -> Tuple[Row, ...]:
    from ..longbio.catalogue import LONGBIO_CATEGORIES, LONGBIO_CELLS
    cats = tuple(Row(cat, tuple(c['cell'] for c in LONGBIO_CELLS if c['category'] == cat), partial_ok=True)
                 for cat in LONGBIO_CATEGORIES)
    return cats + (Row('mean', of_rows=tuple(LONGBIO_CATEGORIES)),)


BENCHMARKS: List[Bench] = [
    Bench(name='babilong', pattern=r'^babilong_(?P<task>qa\d+)_' + _TIER + '$',
          rows=(Row('qa1-qa5', _qa(5)), Row('qa1-qa10', _qa(10))), base_tiers=('0k',),
          notes='accuracy (%), official scoring; rows are means over tasks'),
    Bench(name='longbio', pattern=r'^longbio_(?!strict_)(?P<task>[a-z_0-9]+?)_' + _TIER + '$',
          rows=_longbio_rows(), base_tiers=('0k', '1k', '2k'), tier_unit=1024,
          notes='accuracy (%), compat mode; categories are means over their cells, mean over the categories'),
    Bench(name='nolima', pattern=r'^nolima_(?P<task>main|hard|cot|mc|direct|distractor)_' + _TIER + r'(?:@.+)?$',
          rows=(Row('main', ('main',)), Row('main one-hop', ('main',), detail_filter=('question_type', 'onehop')),
                Row('main two-hop', ('main',), detail_filter=('question_type', 'twohop')))
          + tuple(Row(v, (v,)) for v in ('hard', 'cot', 'mc', 'direct', 'distractor')),
          base_tiers=('250', '500', '1k'), paper_base='nolima',
          notes="accuracy (%), contains; 1k = 1000 tokens of the model's tokenizer"),
    Bench(name='longbio_strict', pattern=r'^longbio_strict_(?P<task>[a-z_0-9]+?)_' + _TIER + '$',
          rows=_longbio_rows(), base_tiers=('0k', '1k', '2k'), tier_unit=1024,
          notes='accuracy (%), strict mode (the authors\' bugs fixed)'),
]


def bench_by_name(name: str) -> Bench:
    for b in BENCHMARKS:
        if b.name == name:
            return b
    raise KeyError(name)


@dataclass
class Cell:
    """One (model, benchmark, row, tier) entry of the main table."""
    score: Optional[float] = None
    ci95: Optional[float] = None
    n: int = 0
    status: str = 'ok'          # ok | n/a | missing | failed (a task log holds the failure)
    reason: str = ''
    tasks: Dict[str, float] = field(default_factory=dict)
    cells_used: int = 0         # a row's mean: over how many of the datasets it has (0: not a mean of datasets)
    cells_total: int = 0
    marks: List[str] = field(default_factory=list)   # footnote marks (report['footnotes'] says what each means)

    def text(self, with_ci: bool = False) -> str:
        return self._text(with_ci) + ''.join(f' {m}' for m in self.marks)

    def _text(self, with_ci: bool) -> str:
        if self.status == 'n/a':
            return 'N/A'
        if self.status == 'failed':
            return 'FAIL'
        if self.status == 'missing' or self.score is None:
            return '-'
        return (f'{self.score:.1f}' + (f' ±{self.ci95:.1f}' if with_ci and self.ci95 is not None else '')
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
