"""The tier report, built once from a run's (or merged runs') result files (no OpenCompass import).

For every model: one row per benchmark row (BABILong qa1-qa5 and qa1-qa10, ...), one column per tier in size
order, the mean over the model's tiers, sample counts and 95% confidence intervals, two effective lengths
(NoLiMa's: longest tier >= 85% of the model's own short-context base; RULER's: longest tier >= a fixed
threshold), and the published number beside the measured one where the model has a published counterpart.
A tier the model cannot hold (tier above its max_seq_len, or every sample over its length) is N/A, never 0,
and is left out of means; a dataset with no usable result is shown as missing ('-', with the reason), one whose
task failed as FAIL (with the exception and the task log, read from the run's logs).

Each cell is made once, with its interval (:mod:`.units`: from the dataset units it is the mean of); each row once,
with its effective lengths and their intervals; :func:`build` returns them as a
:class:`~.tier_report.TierReport`, which nothing changes afterwards.
"""
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from opencompass_longctx import __version__
from opencompass_longctx.tiers import parse_tier, sort_tiers
from opencompass_longctx.stats.effective import NOLIMA_RATIO, RULER_THRESHOLD
from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS, Bench, classify
from opencompass_longctx.leaderboard.caveats import mark_caveats
from opencompass_longctx.leaderboard.failures import Failure, find_failures, incomplete_reason
from opencompass_longctx.leaderboard.placement import Unplaced
from opencompass_longctx.leaderboard.results import Results, checked_reader, first, number
from opencompass_longctx.leaderboard.tier_report import BenchResult, Cell, MergeRecord, RowResult, TierReport
from opencompass_longctx.leaderboard.units import (Resampler, Unit, dataset_cell, detail_value, independent_cell,
                                                  make_unit, mean_cell, paper_base_by_cluster, row_effective, unit_cell)
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
DEPTH_BINS = 10
INCOMPARABLE = '‡'


@dataclass
class ModelInfo:
    abbr: str
    max_seq_len: Optional[int] = None


def load_references(bench: str) -> Optional[dict]:
    path = os.path.join(_DATA, f'references_{bench}.json')
    if not os.path.isfile(path):
        return None
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def load_aliases(extra: Optional[Dict[str, Dict[str, str]]] = None) -> Dict[str, Dict[str, str]]:
    with open(os.path.join(_DATA, 'model_aliases.json'), encoding='utf-8') as f:
        aliases = {k: dict(v) for k, v in json.load(f).items() if not k.startswith('_')}
    for bench, mapping in (extra or {}).items():
        aliases.setdefault(bench, {}).update(mapping)
    return aliases


def detail_cell(res: Optional[dict], key: str, value: str, bench: Optional[Bench] = None, task: str = '',
                data: Optional[Dict[str, Unit]] = None, unit_key: str = '') -> Cell:
    """Accuracy over the per-sample details whose ``key`` equals ``value`` (over-length ones left out)."""
    if not res or 'error' in res or not res.get('details'):
        return Cell(status='missing', reason='no per-sample details')
    hits = [bool(detail_value(d, 'correct')) for d in res['details']
            if detail_value(d, key) == value and not detail_value(d, 'over_length')]
    if not hits:
        return Cell(status='missing', reason=f'no sample with {key}={value}')
    mean, n = 100.0 * sum(hits) / len(hits), len(hits)
    if data is None or bench is None:
        return independent_cell(mean, n)
    return unit_cell(data, f'{unit_key}|{key}={value}', make_unit(bench, res, task, mean, n, keep=(key, value)),
                      score=mean, n=n)


def paper_base(bench: Bench, read, model: str, abbrs: Sequence[str]) -> Optional[float]:
    """The benchmark's own base score (its spec's ``paper_base``) over the per-sample details of ``abbrs``."""
    if bench.paper_base is None:
        return None
    return bench.paper_base([d for abbr in abbrs for d in (read(model, abbr) or {}).get('details', [])])


def depth_bins(results: Sequence[Optional[dict]], bins: int = DEPTH_BINS) -> Optional[List[List[int]]]:
    """[[correct, n] per needle-depth bin] over the per-sample details that record a depth in [0, 1] (over-length
    samples left out); None when no sample has one."""
    grid = [[0, 0] for _ in range(bins)]
    any_depth = False
    for res in results:
        for d in (res or {}).get('details') or []:
            depth, correct = detail_value(d, 'depth'), detail_value(d, 'correct')
            if not number(depth) or correct is None or detail_value(d, 'over_length'):
                continue
            b = min(max(int(depth * bins), 0), bins - 1)
            grid[b][0] += bool(correct)
            grid[b][1] += 1
            any_depth = True
    return grid if any_depth else None


def task_cell(bench: Bench, res: Optional[dict], tier: str, model: ModelInfo, notes: List[str],
              abbr: str, failure: Optional[Failure] = None, data: Optional[Dict[str, Unit]] = None,
              task: str = '') -> Cell:
    """One dataset's cell; with ``data``, its samples are registered there as a unit (:mod:`.units`) for the
    intervals of the rows made of it."""
    tier_tokens = parse_tier(tier).tokens(bench.tier_unit)
    if failure is not None and failure.stage in ('infer', 'eval') and failure.log:
        return Cell(status='failed', reason=f'{abbr}: {failure.stage} failed: {failure.reason} (log: {failure.log})')
    if res is None:
        if model.max_seq_len and tier_tokens > model.max_seq_len:
            return Cell(status='n/a', reason=f'tier ({tier_tokens} tokens) > max_seq_len {model.max_seq_len}')
        return Cell(status='missing', reason=f'no result for {abbr}')
    if 'error' in res:
        return Cell(status='missing', reason=f'{abbr}: {res["error"]}')
    counts = first(res.get('counts')) or {}
    n = int(counts.get('n', len(res.get('details') or [])))
    over = int(counts.get('over_length', 0))
    incomplete = incomplete_reason(abbr, counts, n)
    if incomplete:
        return Cell(status='missing', n=n, reason=incomplete)
    if n and over >= n:
        return Cell(status='n/a', n=n, reason=f'all {n} samples longer than the model can hold')
    version = first(res.get('package_version'))
    if version != __version__:
        notes.append(f'{model.abbr}/{abbr}: written by opencompass-longctx '
                     f'{version or "(an older version that did not record it)"}, now {__version__}')
    if bench.metric not in res:
        return Cell(status='missing', reason=f'{abbr}: no {bench.metric!r} in the result')
    score, reason = float(res[bench.metric]), f'{over} over-length' if over else ''
    if data is None:
        return Cell(score=score, n=n - over, reason=reason)
    unit = make_unit(bench, res, task, score, n - over)
    if unit.note:
        notes.append(f'{model.abbr}/{abbr}: interval: {unit.note}')
    return dataset_cell(data, f'{tier}|{abbr}', unit, score=score, n=n - over, reason=reason)


def _bad_status(cells: Sequence[Cell]) -> str:
    """The status of a mean over cells that are not all ok: a failure shows first, then N/A, then missing."""
    return next(s for s in ('failed', 'n/a', 'missing') if any(c.status == s for c in cells))


def row_cell(row_tasks: Sequence[str], cells: Dict[str, Cell], partial_ok: bool = False,
             data: Optional[Dict[str, Unit]] = None) -> Cell:
    total = len(row_tasks)
    missing = [t for t in row_tasks if t not in cells]
    if partial_ok and len(missing) < len(row_tasks):
        row_tasks, missing = [t for t in row_tasks if t in cells], []
    if missing and len(missing) < total:   # some of the row's datasets ran at this tier: say which did not
        return Cell(status='missing', reason=f'not run at this tier: {", ".join(missing)}',
                    cells_used=total - len(missing), cells_total=total)
    if missing:
        return Cell(status='missing', reason=f'not run: {", ".join(missing)}')
    bad = [t for t in row_tasks if cells[t].status != 'ok']
    if bad:
        status = _bad_status([cells[t] for t in bad])
        return Cell(status=status, reason='; '.join(cells[t].reason if status == 'missing' else
                                                    f'{t}: {cells[t].reason}' for t in bad
                                                    if cells[t].status == status))
    return mean_cell([cells[t] for t in row_tasks], row_tasks, data, cells_used=len(row_tasks), cells_total=total)


def rows_mean_cell(parts: Sequence[Cell], names: Sequence[str], data: Optional[Dict[str, Unit]] = None) -> Cell:
    """The mean of other rows of the same tier (e.g. LongBioBench's mean of its three categories)."""
    bad = [(n, c) for n, c in zip(names, parts) if c.status != 'ok']
    if bad:
        return Cell(status=_bad_status([c for _, c in bad]), reason='; '.join(f'{n}: {c.reason}' for n, c in bad))
    return mean_cell(parts, names, data, cells_used=sum(c.cells_used for c in parts),
                     cells_total=sum(c.cells_total for c in parts))


def row_task_names(bench: Bench, row) -> Tuple[str, ...]:
    """The datasets' task names a row is made of (a mean of other rows: theirs)."""
    if row.of_rows:
        rows = {r.name: r for r in bench.rows}
        return tuple(t for name in row.of_rows for t in row_task_names(bench, rows[name]))
    return tuple(row.tasks)


def build(work_dir: str, models: Sequence[ModelInfo], abbrs: Sequence[str],
          ruler_threshold: float = RULER_THRESHOLD, nolima_ratio: float = NOLIMA_RATIO,
          model_aliases: Optional[Dict[str, Dict[str, str]]] = None,
          expected: Optional[Sequence[Tuple[str, str]]] = None, results: Optional[Results] = None,
          failures: Optional[List[Failure]] = None, marks: Optional[Dict[Tuple[str, str], str]] = None,
          model_cfgs: Optional[Dict[str, dict]] = None, unplaced: Optional[List[Unplaced]] = None,
          merge: Optional[MergeRecord] = None) -> TierReport:
    """The tier report of ``models`` on the datasets ``abbrs`` (each one a benchmark's table reads).

    ``expected``: the (model abbr, dataset abbr) pairs the run was meant to produce (all datasets of the run,
    not only the table's); each one without a usable result is listed in ``failures`` with the reason read from
    the run's task logs. None: no failure detection. ``results``: a reader shared with the caller (each result
    file is read once). ``failures``: found by the caller (a merge of runs: each run's own logs) instead.
    ``marks``: {(model, dataset abbr): why} of results whose numbers are not comparable with the other models'
    (:mod:`.merge`): each cell that reads one is marked ``‡`` with a footnote. ``model_cfgs``: {model abbr: its
    config}, for the cells at tiers a model runs beyond its engine's support (:mod:`.caveats`; None: not marked).
    ``unplaced`` (the datasets no cell reads, :mod:`.placement`) and ``merge`` (a merge's record) are kept as given.
    """
    found = classify(abbrs, all_abbrs=True)
    results = results or Results(work_dir)
    result = checked_reader(results, found)
    if failures is None:
        failures = find_failures(work_dir, expected, result) if expected is not None else []
    refs = {b.name: load_references(b.name) for b in BENCHMARKS if b.name in found}
    t = _Table(found, result, {(f.model, f.dataset): f for f in failures}, marks or {}, load_aliases(model_aliases),
               refs, ruler_threshold, nolima_ratio, None if expected is None else set(expected))
    rows = [rr for model in models for bench in BENCHMARKS if bench.name in found
            for rr in _bench_rows(t, model, bench)]
    caveats = mark_caveats(rows, model_cfgs) if model_cfgs is not None else []
    unmatched = sorted({m.abbr for m in models} - {r.model for r in rows if r.published_name})
    benchmarks = {name: BenchResult(name, sort_tiers(by_tier), (refs[name] or {}).get('source'),
                                    t.depth.get(name, {}), [r for r in rows if r.bench == name])
                  for name, by_tier in found.items()}
    return TierReport(tiers=sort_tiers({tier for b in found.values() for tier in b}), benchmarks=benchmarks,
                      rows=rows, ruler_threshold=ruler_threshold, nolima_ratio=nolima_ratio,
                      notes=sorted(set(t.notes)) + caveats, partial=list(t.partial),
                      footnotes={INCOMPARABLE: list(t.footnotes)} if t.footnotes else {}, failures=failures,
                      models_without_published_counterpart=unmatched, unplaced=unplaced, merge=merge)


@dataclass
class _Table:
    """What :func:`build` reads (the run's datasets by benchmark, tier and task; one reader of the results; the
    published numbers) and gathers while it makes the rows (notes, footnotes, partial rows, depth grids)."""
    found: Dict
    result: Callable
    failed: Dict
    marks: Dict
    aliases: Dict
    references: Dict[str, Optional[dict]]
    ruler_threshold: float
    nolima_ratio: float
    expected: Optional[set] = None     # the (model, dataset abbr) pairs the runs made (None: not known)
    notes: List[str] = field(default_factory=list)
    footnotes: Dict[str, None] = field(default_factory=dict)
    partial: Dict[str, None] = field(default_factory=dict)
    depth: Dict = field(default_factory=dict)


@dataclass
class _ModelBench:
    """One model's datasets of one benchmark: per tier the dataset of each task (``mine``), each task's cell, the
    dataset units the intervals resample (``data``) and the rows made so far (``done``)."""
    model: ModelInfo
    bench: Bench
    tiers: List[str]
    mine: Dict[str, Dict[str, str]]
    task_cells: Dict[str, Dict[str, Cell]]
    data: Dict
    done: Dict[str, Dict[str, Cell]] = field(default_factory=dict)


def _bench_rows(t: _Table, model: ModelInfo, bench: Bench) -> List[RowResult]:
    """The rows of one model on one benchmark."""
    found, result = t.found[bench.name], t.result
    tiers = sort_tiers(found)
    mine = {tier: _own_datasets(t, model, found[tier]) for tier in tiers}
    data: Dict[str, Unit] = {}   # this model's dataset units of the benchmark (:mod:`.units`)
    task_cells = {tier: {task: task_cell(bench, result(model.abbr, abbr), tier, model, t.notes, abbr,
                                         t.failed.get((model.abbr, abbr)), data, task)
                         for task, abbr in mine[tier].items()} for tier in tiers}
    mb = _ModelBench(model, bench, tiers, mine, task_cells, data)
    sampler = Resampler(data, f'{model.abbr}/{bench.name}')
    for tier in tiers:
        grid = depth_bins([result(model.abbr, a) for a in mine[tier].values()])
        if grid:
            t.depth.setdefault(bench.name, {}).setdefault(model.abbr, {})[tier] = grid
    refs = t.references[bench.name]
    pub_name = t.aliases.get(bench.name, {}).get(model.abbr)
    rows, shown_tasks = [], set()
    for row in bench.rows:
        cells = _row_cells(t, mb, row)
        mb.done[row.name] = cells
        row_tasks = row_task_names(bench, row)
        _mark_incomparable(t, mb, cells, row_tasks)
        present = {task for tier in tiers for task in row_tasks if task in mine[tier]}
        if (all(c.status == 'missing' and c.reason.startswith('not run') for c in cells.values())
                and present <= shown_tasks):
            continue  # the run has no dataset of this row at any tier, or an earlier row shows them all
        shown_tasks |= present
        t.partial.update(dict.fromkeys(_partial_notes(mb, row, cells)))
        published = ((refs or {}).get('rows', {}).get(row.name) or {}).get(pub_name) if pub_name else None
        rows.append(_row_result(t, mb, row, cells, row_tasks, sampler, pub_name if published else None,
                                {tier: float(v) for tier, v in published.items()} if published else {}))
    return rows


def _own_datasets(t: _Table, model: ModelInfo, by_task: Dict[str, List[str]]) -> Dict[str, str]:
    """This model's dataset of each task at one tier (the one with a result, else one its run made, else the first),
    over the tasks its run made there: in a merge, a task only another model's run made is not this model's (its row
    is then a partial mean, as in its own run's table). At a tier where its run made none, every task (each cell
    N/A above its max_seq_len, else missing)."""
    def made(a: str) -> bool:
        return t.expected is None or (model.abbr, a) in t.expected or t.result(model.abbr, a) is not None

    def pick(cands: List[str]) -> str:
        return next((a for a in cands if t.result(model.abbr, a) is not None), next(filter(made, cands), cands[0]))
    own = {task: pick(cands) for task, cands in by_task.items() if any(map(made, cands))}
    return own or {task: pick(cands) for task, cands in by_task.items()}


def _row_cells(t: _Table, mb: _ModelBench, row) -> Dict[str, Cell]:
    """A row's cell at each tier: the mean of earlier rows, a split of one dataset's details, or its tasks' mean."""
    if row.of_rows:
        return {tier: rows_mean_cell([mb.done[r][tier] for r in row.of_rows], row.of_rows, mb.data)
                for tier in mb.tiers}
    if row.detail_filter:  # a split of one dataset: FAIL or N/A as the dataset, else its details
        (task,) = row.tasks
        return {tier: (Cell(status='missing', reason=f'not run: {task}') if task not in mb.mine[tier]
                       else mb.task_cells[tier][task] if mb.task_cells[tier][task].status in ('failed', 'n/a')
                       else detail_cell(t.result(mb.model.abbr, mb.mine[tier][task]), *row.detail_filter,
                                        mb.bench, task, mb.data, f'{tier}|{mb.mine[tier][task]}'))
                for tier in mb.tiers}
    return {tier: row_cell(row.tasks, mb.task_cells[tier], row.partial_ok, mb.data) for tier in mb.tiers}


def _partial_notes(mb: _ModelBench, row, cells: Dict[str, Cell]) -> List[str]:
    """A note for each tier where a row of several tasks had only some of them run."""
    notes = []
    for tier, c in cells.items():
        if not row.of_rows and not row.detail_filter and c.cells_used < c.cells_total:
            left = ', '.join(task for task in row.tasks if task not in mb.mine[tier])
            notes.append(f'{mb.bench.name} {row.name} at {tier}: ' + (
                f'the mean of {c.cells_used} of its {c.cells_total} cells (not run at this tier: {left})'
                if c.status == 'ok' else
                f'{c.cells_used} of its {c.cells_total} datasets were run (not run at this tier: {left}); the row '
                'is the mean of all of them, so it has no score there'))
    return notes


def _mark_incomparable(t: _Table, mb: _ModelBench, cells: Dict[str, Cell], row_tasks) -> None:
    """Mark ``‡`` each scored cell that reads a result the merge found not comparable (the reasons are footnotes)."""
    for tier, c in cells.items():
        why = [t.marks[mb.model.abbr, a] for a in (mb.mine[tier].get(task) for task in row_tasks)
               if (mb.model.abbr, a) in t.marks]
        if why and c.status == 'ok' and INCOMPARABLE not in c.marks:
            c.marks.append(INCOMPARABLE)
            t.footnotes.update(dict.fromkeys(why))


def _row_result(t: _Table, mb: _ModelBench, row, cells: Dict[str, Cell], row_tasks, sampler: Resampler,
                published_name: Optional[str], published: Dict[str, float]) -> RowResult:
    """A row's result: its cells, mean, base score, the NoLiMa and RULER effective lengths and their intervals."""
    bench, tiers, mine = mb.bench, mb.tiers, mb.mine
    ok = [c.score for c in cells.values() if c.status == 'ok']
    base_scores = [cells[tier].score for tier in bench.base_tiers if tier in cells and cells[tier].status == 'ok']
    base = max(base_scores) if base_scores else None
    by_cluster = None
    if bench.paper_base and len(row.tasks) == 1 and not row.detail_filter:
        base_abbrs = [mine[tier][row.tasks[0]] for tier in bench.base_tiers
                      if tier in mine and row.tasks[0] in mine[tier]]
        own = paper_base(bench, t.result, mb.model.abbr, base_abbrs)
        if own:
            base = own
            by_cluster = paper_base_by_cluster(
                bench, [(row.tasks[0], (t.result(mb.model.abbr, a) or {}).get('details') or [])
                        for a in base_abbrs], bench.paper_base) or ({}, {})
    return RowResult(mb.model.abbr, bench.name, row.name, cells,
                     mean=sum(ok) / len(ok) if ok else None,
                     mean_note='' if len(ok) == len([c for c in cells.values() if c.status != 'n/a'])
                     else 'over the tiers with results',
                     effective=row_effective(cells, tiers, sampler, bench.base_tiers, base, by_cluster, t.nolima_ratio,
                                             t.ruler_threshold),
                     published_name=published_name, published=published,
                     datasets={tier: {k: a for k, a in mine[tier].items() if k in row_tasks} for tier in tiers})
