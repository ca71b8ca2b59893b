"""Scores as colored HTML tables: the one color scale of the leaderboard page, and the per-model heatmaps (task x tier,
variant x tier, needle depth x tier) the field reads long-context results in (BABILong publishes one task x length
grid per model; NoLiMa and RULER color a model x length table by score).

Why HTML tables and not images: a table with cell backgrounds is a few bytes per cell, stays crisp at any zoom,
can be searched and copied, and shows the number in every cell. The page stays one self-contained file.

One scale for every benchmark: viridis (perceptually uniform, readable for the common color-vision deficiencies
and in grey), 0 dark to 100 light, in 101 steps (one CSS class per integer score, ``s0`` ... ``s100``). Each step's
text is black or white, whichever contrasts more with it (at least 4.5:1 on every step, WCAG AA). Cells that are not
a score never take a scale color: N/A is hatched grey, FAIL is white with a heavy dashed border, ``-`` (no result) is
white; a partial mean (k of the row's n datasets) keeps its color and gets a corner mark in its text color.

What each heatmap shows is computed as plain data first (:class:`Grid` of :class:`Line` of :class:`HeatCell`, from
the report's rows: a row's per-dataset scores are ``Cell.tasks``), then written (:func:`heat_table`).
"""
import html
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS, bench_by_name
from opencompass_longctx.leaderboard.tier_report import Cell, RowResult, TierReport

# viridis at 0, 0.1, ..., 1 (matplotlib's table): interpolated linearly in between
VIRIDIS = ('#440154', '#482475', '#414487', '#355f8d', '#2a788e', '#21918c', '#22a884', '#44bf70', '#7ad151',
           '#bddf26', '#fde725')
BLACK, WHITE = (0, 0, 0), (255, 255, 255)
NA_BG = 'repeating-linear-gradient(135deg, #d9d9d9 0 3px, #f4f4f4 3px 7px)'


def _rgb(hex_color: str) -> Tuple[int, int, int]:
    return tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))


def scale_rgb(score: float) -> Tuple[int, int, int]:
    """The scale's color of a score (percent; clipped to [0, 100])."""
    x = min(max(float(score), 0.0), 100.0) / 10.0
    k = min(int(x), 9)
    a, b, f = _rgb(VIRIDIS[k]), _rgb(VIRIDIS[k + 1]), x - k
    return tuple(round(a[i] + (b[i] - a[i]) * f) for i in range(3))


def luminance(rgb: Sequence[int]) -> float:
    """WCAG relative luminance."""
    lin = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: Sequence[int], b: Sequence[int]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_rgb(bg: Sequence[int]) -> Tuple[int, int, int]:
    """Black or white: whichever reads better on ``bg``."""
    return BLACK if contrast(bg, BLACK) >= contrast(bg, WHITE) else WHITE


def _hex(rgb: Sequence[int]) -> str:
    return '#' + ''.join(f'{c:02x}' for c in rgb)


def score_class(score: float) -> str:
    """The CSS class of a score's color step."""
    return f's{round(min(max(float(score), 0.0), 100.0))}'


def scale_css() -> str:
    """One rule per color step, and the cells that are not scores."""
    rules = [f'.s{k}{{background:{_hex(scale_rgb(k))};color:{_hex(text_rgb(scale_rgb(k)))}}}' for k in range(101)]
    rules += [f'.hna{{background:{NA_BG};color:#333}}', '.hfail{background:#fff;color:#000;font-weight:bold;'
              'outline:2px dashed #000;outline-offset:-3px}', '.hnone{background:#fff;color:#777}',
              '.hpart{background-image:linear-gradient(135deg,currentColor 0 7px,transparent 7px);'
              'background-repeat:no-repeat}']
    return '\n'.join(rules)


def legend_bar() -> str:
    """The scale as one strip, 0 to 100, with its ticks: the key every colored cell is read against."""
    stops = ', '.join(f'{_hex(scale_rgb(k))} {k}%' for k in range(0, 101, 10))
    ticks = ''.join(f'<span style="left:{k}%">{k}</span>' for k in range(0, 101, 20))
    return (f'<span class="bar"><span class="strip" style="background:linear-gradient(90deg, {stops})"></span>'
            f'<span class="ticks">{ticks}</span></span>')


# ---------------------------------------------------------------------------------------------- data
@dataclass
class HeatCell:
    status: str                     # ok | n/a | failed | missing
    score: Optional[float] = None
    title: str = ''
    partial: str = ''               # 'k/n': a mean over k of the row's n datasets
    marks: List[str] = field(default_factory=list)

    def css(self) -> str:
        if self.status == 'ok' and self.score is not None:
            return score_class(self.score) + (' hpart' if self.partial else '')
        return {'n/a': 'hna', 'failed': 'hfail'}.get(self.status, 'hnone')

    def text(self, digits: int = 0) -> str:
        if self.status == 'ok' and self.score is not None:
            return f'{self.score:.{digits}f}' + ''.join(self.marks)
        return {'n/a': 'N/A', 'failed': 'FAIL'}.get(self.status, '-')


@dataclass
class Line:
    label: str
    cells: Dict[str, HeatCell]
    mean: bool = False              # a mean of the lines above it (drawn apart from them)


@dataclass
class Grid:
    kind: str                       # task | depth
    bench: str
    model: str
    tiers: List[str]
    lines: List[Line]


def cell_of(c: Optional[Cell], title: str) -> HeatCell:
    """A table cell (:class:`~opencompass_longctx.leaderboard.tier_report.Cell`) as a heatmap cell; its title says
    the score, interval and counts."""
    if c is None:
        return HeatCell('missing', title=f'{title}: not run')
    partial = f'{c.cells_used}/{c.cells_total}' if c.cells_used < c.cells_total else ''
    note = '; '.join(x for x in (c.interval_text() and f'95% interval {c.interval_text()}',
                                 f'n={c.n}' if c.n else '', partial and f'mean over {partial} datasets',
                                 c.reason) if x)
    marks = [m for m in c.marks]
    if c.few_clusters:
        marks.append('?')
    return HeatCell(c.status if c.status != 'ok' or c.score is not None else 'missing', c.score,
                    f'{title}: {c.text(True)}' + (f' ({note})' if note else ''), partial if c.status == 'ok' else '',
                    marks)


def task_cell(r: RowResult, tier: str, task: str, failed: Dict[Tuple[str, str], object]) -> HeatCell:
    """One dataset's cell, read from the row that holds it: its score inside the row's mean (``Cell.tasks``); FAIL
    where its own task failed; N/A where the row is N/A at that tier; else no result (with the row's reason)."""
    title = f'{task} at {tier}'
    abbr = (r.datasets.get(tier) or {}).get(task)
    c = r.cells.get(tier)
    if abbr is None or c is None:
        return HeatCell('missing', title=f'{title}: not run')
    if c.status == 'ok' and task in c.tasks:
        return HeatCell('ok', c.tasks[task], f'{title}: {c.tasks[task]:.1f} ({abbr})', marks=list(c.marks))
    failure = failed.get((r.model, abbr))
    if failure is not None and getattr(failure, 'stage', '') != 'result':
        return HeatCell('failed', title=f'{title}: FAIL ({failure.line()})')
    if c.status == 'n/a':
        return HeatCell('n/a', title=f'{title}: N/A ({c.reason})')
    return HeatCell('missing', title=f'{title}: no score of its own in the report ({c.status}: {c.reason})')


def task_grid(report: TierReport, bench: str, model: str) -> Optional[Grid]:
    """The model's task x tier grid of a benchmark, in the order of the benchmark's rows: a row of several datasets
    gives one line per dataset that any model ran, then its mean; a row of one dataset (NoLiMa's variants), a split
    of one (one-hop, two-hop) or a mean of other rows (LongBioBench's ``mean``) gives one line. Rows with no value
    for any model are left out (as in the tier table). None: the model has no row of the benchmark."""
    spec = bench_by_name(bench)
    shown = {(r.bench, r.row) for r in report.shown_rows}
    rows = {r.row: r for r in report.benchmarks[bench].rows if r.model == model and (bench, r.row) in shown}
    if not rows:
        return None
    ran = {task for r in report.benchmarks[bench].rows for by_task in r.datasets.values() for task in by_task}
    failed = {(f.model, f.dataset): f for f in report.failures}
    tiers = report.benchmarks[bench].tiers
    lines, done = [], set()
    for row in spec.rows:
        r = rows.get(row.name)
        if r is None:
            continue
        if len(row.tasks) > 1 and not row.detail_filter:
            new = [t for t in row.tasks if t in ran and t not in done]
            lines += [Line(t, {tier: task_cell(r, tier, t, failed) for tier in tiers}) for t in new]
            done.update(new)
        single = len(row.tasks) == 1 or bool(row.detail_filter)
        label = row.name if single or 'mean' in row.name else f'{row.name} (mean)'
        lines.append(Line(label, {tier: cell_of(r.cells.get(tier), f'{row.name} at {tier}') for tier in tiers},
                          mean=not single))
    return Grid('task', bench, model, tiers, lines)


def depth_label(b: int, bins: int) -> str:
    """Depth bin ``b`` of ``bins``: '20-30%'."""
    return f'{100 * b // bins}-{100 * (b + 1) // bins}%'


def depth_counts(report: TierReport) -> List[dict]:
    """One entry per (benchmark, model) with per-sample depths, the benchmarks in the specs' order: {bench, model,
    tiers, grid, counts} where grid[bin][j] is the accuracy (%) of the samples in that depth bin at tiers[j], or None
    (no sample there), and counts[bin][j] its (correct, samples). Read by the page's heatmaps and the PNG plots."""
    out = []
    for bench in (report.benchmarks[b.name] for b in BENCHMARKS if b.name in report.benchmarks):
        tiers = bench.tiers
        for model, by_tier in bench.depth.items():
            bins = len(next(iter(by_tier.values())))
            counts = [[tuple(by_tier[t][b]) if t in by_tier else (0, 0) for t in tiers] for b in range(bins)]
            grid = [[100.0 * c / n if n else None for c, n in row] for row in counts]
            out.append(dict(bench=bench.name, model=model, tiers=tiers, grid=grid, counts=counts))
    return out


def depth_grids(report: TierReport) -> Dict[Tuple[str, str], Grid]:
    """{(benchmark, model): its needle depth x tier grid} where the benchmark records each sample's depth
    (:func:`depth_counts`: the share of correct samples per depth bin; blank where no sample fell)."""
    out = {}
    for h in depth_counts(report):
        bins = len(h['grid'])
        lines = []
        for b, (row, counts) in enumerate(zip(h['grid'], h['counts'])):
            label = depth_label(b, bins)
            cells = {t: HeatCell('missing', title=f'depth {label} at {t}: no sample') if v is None else
                     HeatCell('ok', v, f'depth {label} at {t}: {v:.1f} ({k[0]}/{k[1]} correct)')
                     for t, v, k in zip(h['tiers'], row, counts)}
            if any(c.status == 'ok' for c in cells.values()):   # a depth no sample of the model fell at: left out
                lines.append(Line(label, cells))
        out[h['bench'], h['model']] = Grid('depth', h['bench'], h['model'], h['tiers'], lines)
    return out


# ---------------------------------------------------------------------------------------------- HTML
def _e(v) -> str:
    return html.escape('' if v is None else str(v))


def heat_td(cell: HeatCell, digits: int = 0, extra: str = '', classes: str = '', attrs: str = '') -> str:
    """One colored cell: its class (the color step, or N/A / FAIL / none), its number, its title; ``extra``: HTML
    after the number, ``classes``: more CSS classes, ``attrs``: more attributes (both already escaped)."""
    klass = cell.css() + (f' {classes}' if classes else '')
    return f'<td class="{klass}"{attrs} title="{_e(cell.title)}">{_e(cell.text(digits))}{extra}</td>'


def heat_table(grid: Grid, caption: str) -> List[str]:
    """A heatmap as a table: one line per task (or depth bin), one column per tier, the score in each cell. The
    table carries its benchmark, model and kind, each line its label (``data-*``), for readers and tests."""
    cols = grid.tiers   # every model's grid of a benchmark has the same columns
    out = [f'<table class="heat" data-grid="{_e(grid.kind)}" data-bench="{_e(grid.bench)}" '
           f'data-model="{_e(grid.model)}">', f'<caption>{_e(caption)}</caption>',
           '<tr><th></th>' + ''.join(f'<th>{_e(t)}</th>' for t in cols) + '</tr>']
    for line in grid.lines:
        klass = ' class="mean"' if line.mean else ''
        out.append(f'<tr{klass} data-line="{_e(line.label)}"><th>{_e(line.label)}</th>'
                   + ''.join(heat_td(line.cells[t]) for t in cols) + '</tr>')
    return out + ['</table>']
