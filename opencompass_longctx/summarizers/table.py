"""The cross-benchmark tier table: built from a finished run's result files (no OpenCompass import).

For every model: one row per benchmark row (BABILong qa1-qa5 and qa1-qa10, ...), one column per tier in size
order, the mean over the model's tiers, sample counts and 95% confidence intervals, two effective lengths
(NoLiMa's: longest tier >= 85% of the model's own short-context base; RULER's: longest tier >= a fixed
threshold), and the published number beside the measured one where the model has a published counterpart.
A tier the model cannot hold (tier above its max_seq_len, or every sample over its length) is N/A, never 0,
and is left out of means; a dataset with no usable result is shown as missing ('-', with the reason), one whose
task failed as FAIL (with the exception and the task log, read from the run's logs).
"""
import json
import math
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from opencompass_longctx import __version__
from opencompass_longctx.tiers import parse_tier, sort_tiers
from opencompass_longctx.stats.intervals import binomial_interval
from opencompass_longctx.summarizers.metrics import NOLIMA_RATIO, RULER_THRESHOLD, effective_length, nolima_threshold
from opencompass_longctx.summarizers.failures import Failure, find_failures, incomplete_reason
from opencompass_longctx.summarizers.intervals import (Resampler, Unit, cell_interval, combine, effective_intervals, make_unit,
                        nonfinite_sample, paper_base_by_cluster)
from opencompass_longctx.summarizers.intervals import detail_value as _detail_value   # one reader of OpenCompass's per-sample values
from opencompass_longctx.summarizers.rows import BENCHMARKS, Bench, Cell, bench_by_name, classify
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
DEPTH_BINS = 10


@dataclass
class ModelInfo:
    abbr: str
    max_seq_len: Optional[int] = None


@dataclass
class RowResult:
    model: str
    bench: str
    row: str
    cells: Dict[str, Cell]
    mean: Optional[float] = None
    mean_note: str = ''
    effective: Dict[str, Dict[str, Optional[str]]] = field(default_factory=dict)
    published_name: Optional[str] = None
    published: Dict[str, float] = field(default_factory=dict)
    datasets: Dict[str, Dict[str, str]] = field(default_factory=dict)  # {tier: {task: the dataset abbr read}}


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


def _first(v):
    """OpenCompass stores non-numeric results of each replica in a list: take the first."""
    return v[0] if isinstance(v, list) and v else v


def _preview(v, limit: int = 40) -> str:
    text = json.dumps(v)[:limit]
    return f'{text}... ({type(v).__name__})' if len(text) == limit else f'{text} ({type(v).__name__})'


def read_result(path: str) -> Optional[dict]:
    """A result file as a dict; None when there is none; ``{'error': why, 'unreadable': True}`` when it cannot
    be parsed or is not a JSON object (a truncated file, ``[]``)."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding='utf-8') as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        return {'error': f'unreadable result file {path} ({e})', 'unreadable': True}
    if not isinstance(res, dict):
        return {'error': f'result file {path} holds {_preview(res)}, not a JSON object', 'unreadable': True}
    return res


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def table_problem(res: dict, metric: str) -> Optional[str]:
    """Why a parsed result cannot make a table cell (a score, counts or details of the wrong type), or None."""
    counts = _first(res.get('counts'))
    if counts not in (None, [], {}):
        if not isinstance(counts, dict):
            return f'counts is {_preview(counts)}, not an object'
        for key in ('n', 'over_length', 'engine_too_small', 'engine_error'):
            v = counts.get(key, 0)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
                return f'counts.{key} is {_preview(v)}, not a whole number'
    details = res.get('details')
    if details is not None and not (isinstance(details, list) and all(isinstance(d, dict) for d in details)):
        return f'details is {_preview(details)}, not a list of per-sample objects'
    if metric in res and not _number(res[metric]):
        return f'{metric} is {_preview(res[metric])}, not a number'
    return nonfinite_sample(res)


class Results:
    """The result files of one run (``<work_dir>/results/<model>/<abbr>.json``), each read at most once.
    ``names``: {the model abbr shown: the abbr the run wrote its files under}, for a model renamed in a merge."""

    def __init__(self, work_dir: str, names: Optional[Dict[str, str]] = None):
        self.work_dir = work_dir
        self.names = dict(names or {})
        self._memo: Dict[tuple, Optional[dict]] = {}

    def path(self, model: str, abbr: str) -> str:
        return os.path.join(self.work_dir, 'results', self.names.get(model, model), f'{abbr}.json')

    def get(self, model: str, abbr: str) -> Optional[dict]:
        if (model, abbr) not in self._memo:
            self._memo[(model, abbr)] = read_result(self.path(model, abbr))
        return self._memo[(model, abbr)]


def _with_units(cell: Cell, data: Optional[Dict[str, Unit]], key: str, unit) -> Cell:
    """The cell read from one dataset unit (registered in ``data`` for its interval and the resampling)."""
    if data is not None:
        data[key] = unit()
        cell.units = {key: 1.0}
        cell.set_interval(*cell_interval(cell.score, cell.units, data))
    return cell


def detail_cell(res: Optional[dict], key: str, value: str, bench: Optional[Bench] = None, task: str = '',
                data: Optional[Dict[str, Unit]] = None, unit_key: str = '') -> Cell:
    """Accuracy over the per-sample details whose ``key`` equals ``value`` (over-length ones left out)."""
    if not res or 'error' in res or not res.get('details'):
        return Cell(status='missing', reason='no per-sample details')
    hits = [bool(_detail_value(d, 'correct')) for d in res['details']
            if _detail_value(d, key) == value and not _detail_value(d, 'over_length')]
    if not hits:
        return Cell(status='missing', reason=f'no sample with {key}={value}')
    mean, n = 100.0 * sum(hits) / len(hits), len(hits)
    cell = Cell(score=mean, n=n)
    if data is None or bench is None:   # else the interval of its unit (once, in _with_units)
        cell.set_interval(binomial_interval([(1.0, mean / 100, n)]), n, 'wilson')
    return _with_units(cell, data if bench else None, f'{unit_key}|{key}={value}',
                       lambda: make_unit(bench, res, task, mean, n, keep=(key, value)))


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
            depth, correct = _detail_value(d, 'depth'), _detail_value(d, 'correct')
            if not _number(depth) or correct is None or _detail_value(d, 'over_length'):
                continue
            b = min(max(int(depth * bins), 0), bins - 1)
            grid[b][0] += bool(correct)
            grid[b][1] += 1
            any_depth = True
    return grid if any_depth else None


def task_cell(bench: Bench, res: Optional[dict], tier: str, model: ModelInfo, notes: List[str],
              abbr: str, failure: Optional[Failure] = None, data: Optional[Dict[str, Unit]] = None,
              task: str = '') -> Cell:
    """One dataset's cell; with ``data``, its samples are registered there as a unit (:mod:`.intervals`)."""
    tier_tokens = parse_tier(tier).tokens(bench.tier_unit)
    if failure is not None and failure.stage in ('infer', 'eval') and failure.log:
        return Cell(status='failed', reason=f'{abbr}: {failure.stage} failed: {failure.reason} (log: {failure.log})')
    if res is None:
        if model.max_seq_len and tier_tokens > model.max_seq_len:
            return Cell(status='n/a', reason=f'tier ({tier_tokens} tokens) > max_seq_len {model.max_seq_len}')
        return Cell(status='missing', reason=f'no result for {abbr}')
    if 'error' in res:
        return Cell(status='missing', reason=f'{abbr}: {res["error"]}')
    counts = _first(res.get('counts')) or {}
    n = int(counts.get('n', len(res.get('details') or [])))
    over = int(counts.get('over_length', 0))
    incomplete = incomplete_reason(abbr, counts, n)
    if incomplete:
        return Cell(status='missing', n=n, reason=incomplete)
    if n and over >= n:
        return Cell(status='n/a', n=n, reason=f'all {n} samples longer than the model can hold')
    version = _first(res.get('package_version'))
    if version != __version__:
        notes.append(f'{model.abbr}/{abbr}: written by opencompass-longctx '
                     f'{version or "(an older version that did not record it)"}, now {__version__}')
    if bench.metric not in res:
        return Cell(status='missing', reason=f'{abbr}: no {bench.metric!r} in the result')
    cell = Cell(score=float(res[bench.metric]), n=n - over, reason=f'{over} over-length' if over else '')

    def unit():
        u = make_unit(bench, res, task, cell.score, n - over)
        if u.note:
            notes.append(f'{model.abbr}/{abbr}: interval: {u.note}')
        return u
    return _with_units(cell, data, f'{tier}|{abbr}', unit)


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
    return _mean_cell([cells[t] for t in row_tasks], row_tasks, data, cells_used=len(row_tasks), cells_total=total)


def _mean_cell(parts: Sequence[Cell], names: Sequence[str], data: Optional[Dict[str, Unit]], **counts) -> Cell:
    """The mean of scored cells with its interval: from their units when every part has them (:mod:`.intervals`),
    else the Wilson interval of independent parts."""
    k = len(parts)
    out = Cell(score=sum(c.score for c in parts) / k, n=sum(c.n for c in parts),
               tasks={n: c.score for n, c in zip(names, parts)}, **counts)
    if data is not None and parts and all(c.units for c in parts):
        out.units = combine([c.units for c in parts])
        out.set_interval(*cell_interval(out.score, out.units, data))
    else:
        out.set_interval(binomial_interval([(1 / k, c.score / 100, c.n) for c in parts]), out.n, 'wilson')
    return out


def rows_mean_cell(parts: Sequence[Cell], names: Sequence[str], data: Optional[Dict[str, Unit]] = None) -> Cell:
    """The mean of other rows of the same tier (e.g. LongBioBench's mean of its three categories)."""
    bad = [(n, c) for n, c in zip(names, parts) if c.status != 'ok']
    if bad:
        return Cell(status=_bad_status([c for _, c in bad]), reason='; '.join(f'{n}: {c.reason}' for n, c in bad))
    return _mean_cell(parts, names, data, cells_used=sum(c.cells_used for c in parts),
                      cells_total=sum(c.cells_total for c in parts))


INCOMPARABLE = '‡'


def row_task_names(bench: Bench, row) -> Tuple[str, ...]:
    """The datasets' task names a row is made of (a mean of other rows: theirs)."""
    if row.of_rows:
        rows = {r.name: r for r in bench.rows}
        return tuple(t for name in row.of_rows for t in row_task_names(bench, rows[name]))
    return tuple(row.tasks)


def checked_reader(results: Results, abbrs: Sequence[str]):
    """``result(model, abbr)``: the parsed result, or an ``{'error': ...}`` entry when it is one of the table's own
    and cannot make a cell (``table_problem``); each file checked once."""
    found = classify(abbrs, all_abbrs=True)
    bench_of = {a: bench_by_name(b) for b, by_tier in found.items() for t in by_tier.values() for c in t.values()
                for a in c}
    checked: Dict[Tuple[str, str], Optional[dict]] = {}

    def result(model: str, abbr: str) -> Optional[dict]:
        if (model, abbr) not in checked:
            res = results.get(model, abbr)
            if res is not None and 'error' not in res and abbr in bench_of:
                problem = table_problem(res, bench_of[abbr].metric)
                if problem:
                    res = {'error': f'unusable result file {results.path(model, abbr)}: {problem}', 'unreadable': True}
            checked[model, abbr] = res
        return checked[model, abbr]
    return result


def build(work_dir: str, models: Sequence[ModelInfo], abbrs: Sequence[str],
          ruler_threshold: float = RULER_THRESHOLD, nolima_ratio: float = NOLIMA_RATIO,
          model_aliases: Optional[Dict[str, Dict[str, str]]] = None,
          expected: Optional[Sequence[Tuple[str, str]]] = None, results: Optional[Results] = None,
          failures: Optional[List[Failure]] = None, marks: Optional[Dict[Tuple[str, str], str]] = None) -> dict:
    """The report as plain data: {'tiers', 'rows': [RowResult...], 'notes', 'failures', ...}.

    ``expected``: the (model abbr, dataset abbr) pairs the run was meant to produce (all datasets of the run,
    not only the table's); each one without a usable result is listed in 'failures' with the reason read from
    the run's task logs. None: no failure detection. ``results``: a reader shared with the caller (each result
    file is read once). ``failures``: found by the caller (a merge of runs: each run's own logs) instead.
    ``marks``: {(model, dataset abbr): why} of results whose numbers are not comparable with the other models'
    (:mod:`.merge`): each cell that reads one is marked ``‡`` with a footnote.
    """
    found = classify(abbrs, all_abbrs=True)
    results = results or Results(work_dir)
    result = checked_reader(results, abbrs)
    if failures is None:
        failures = find_failures(work_dir, expected, result) if expected is not None else []
    t = _Table(found, result, {(f.model, f.dataset): f for f in failures}, marks or {}, load_aliases(model_aliases),
               ruler_threshold, nolima_ratio, None if expected is None else set(expected))
    rows = [rr for model in models for bench in BENCHMARKS if bench.name in found
            for rr in _bench_rows(t, model, bench)]
    unmatched = sorted({m.abbr for m in models} - {r.model for r in rows if r.published_name})
    return {'tiers': sort_tiers({tier for b in found.values() for tier in b}), 'rows': rows,
            'notes': sorted(set(t.notes)), 'package_version': __version__,
            'ruler_threshold': ruler_threshold, 'nolima_ratio': nolima_ratio,
            'models_without_published_counterpart': unmatched,
            'failures': failures, 'partial': list(t.partial), 'depth': t.depth,
            'footnotes': {INCOMPARABLE: list(t.footnotes)} if t.footnotes else {},
            'bench_tiers': {b: sort_tiers(by_tier) for b, by_tier in found.items()},
            'references': {b.name: (load_references(b.name) or {}).get('source') for b in BENCHMARKS
                           if b.name in found}}


@dataclass
class _Table:
    """What :func:`build` reads (the run's datasets by benchmark, tier and task; one reader of the results) and
    gathers while it makes the rows (notes, footnotes, partial rows, depth grids)."""
    found: Dict
    result: Callable
    failed: Dict
    marks: Dict
    aliases: Dict
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
    data: Dict[str, Unit] = {}   # this model's dataset units of the benchmark (:mod:`.intervals`)
    task_cells = {tier: {task: task_cell(bench, result(model.abbr, abbr), tier, model, t.notes, abbr,
                                         t.failed.get((model.abbr, abbr)), data, task)
                         for task, abbr in mine[tier].items()} for tier in tiers}
    mb = _ModelBench(model, bench, tiers, mine, task_cells, data)
    sampler = Resampler(data, f'{model.abbr}/{bench.name}')
    for tier in tiers:
        grid = depth_bins([result(model.abbr, a) for a in mine[tier].values()])
        if grid:
            t.depth.setdefault(bench.name, {}).setdefault(model.abbr, {})[tier] = grid
    refs = load_references(bench.name)
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
        rr = _row_result(t, mb, row, cells, row_tasks, sampler)
        published = ((refs or {}).get('rows', {}).get(row.name) or {}).get(pub_name) if pub_name else None
        if published:
            rr.published_name = pub_name
            rr.published = {tier: float(v) for tier, v in published.items()}
        rows.append(rr)
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


def _row_result(t: _Table, mb: _ModelBench, row, cells: Dict[str, Cell], row_tasks, sampler) -> RowResult:
    """A row's result: its cells, mean, base score, the NoLiMa and RULER effective lengths and their intervals."""
    bench, tiers, mine = mb.bench, mb.tiers, mb.mine
    ok = [c.score for c in cells.values() if c.status == 'ok']
    rr = RowResult(mb.model.abbr, bench.name, row.name, cells, datasets={
                       tier: {k: a for k, a in mine[tier].items() if k in row_tasks} for tier in tiers},
                   mean=sum(ok) / len(ok) if ok else None,
                   mean_note='' if len(ok) == len([c for c in cells.values() if c.status != 'n/a'])
                   else 'over the tiers with results')
    series = [(tier, cells[tier].score if cells[tier].status == 'ok' else None) for tier in tiers]
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
    thr = nolima_threshold(base, t.nolima_ratio)
    rr.effective = {
        'nolima': dict(effective_length(series, thr) if thr is not None else {'contiguous': None, 'raw': None},
                       base=base, threshold=thr),
        'ruler': dict(effective_length(series, t.ruler_threshold), threshold=t.ruler_threshold),
    }
    effective_intervals(rr, tiers, sampler, bench.base_tiers, by_cluster, t.nolima_ratio)
    return rr
