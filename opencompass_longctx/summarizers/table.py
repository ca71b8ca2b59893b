"""The cross-benchmark tier table: built from a finished run's result files (no OpenCompass import).

For every model: one row per benchmark row (BABILong qa1-qa5 and qa1-qa10, ...), one column per tier in size
order, the mean over the model's tiers, sample counts and 95% confidence intervals, two effective lengths
(NoLiMa's: longest tier >= 85% of the model's own short-context base; RULER's: longest tier >= a fixed
threshold), and the published number beside the measured one where the model has a published counterpart.
A tier the model cannot hold (tier above its max_seq_len, or every sample over its length) is N/A, never 0,
and is left out of means; a dataset with no usable result is shown as missing ('-', with the reason), one whose
task failed as FAIL (with the exception and the task log, read from the run's logs).
"""
import csv
import io
import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx import __version__
from opencompass_longctx.tiers import parse_tier, sort_tiers
from opencompass_longctx.summarizers.metrics import (BOOTSTRAP, MIN_CLUSTERS, NOLIMA_RATIO, RULER_THRESHOLD, effective_length, mean_with_ci,
                      nolima_threshold)
from opencompass_longctx.summarizers.failures import Failure, find_failures, incomplete_reason
from opencompass_longctx.summarizers.intervals import (Resampler, Unit, cell_interval, combine, effective_intervals, make_unit,
                        paper_base_by_cluster)
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
    return None


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
        cell.ci95, cell.clusters, cell.ci_method = cell_interval(cell.score, cell.units, data)
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
    mean, ci, n = mean_with_ci([(100.0 * sum(hits) / len(hits), len(hits))])
    cell = Cell(score=mean, ci95=ci, n=n, ci_method='binomial', clusters=n)
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
    mean, ci, n = mean_with_ci([(cells[t].score, cells[t].n) for t in row_tasks])
    out = Cell(score=mean, ci95=ci, n=n, tasks={t: cells[t].score for t in row_tasks},
               cells_used=len(row_tasks), cells_total=total, ci_method='binomial', clusters=n)
    return _mean_interval(out, [cells[t] for t in row_tasks], data)


def _mean_interval(out: Cell, parts: Sequence[Cell], data: Optional[Dict[str, Unit]]) -> Cell:
    """The interval of a mean of cells from their units (when every part has them)."""
    if data is not None and parts and all(c.units for c in parts):
        out.units = combine([c.units for c in parts])
        out.ci95, out.clusters, out.ci_method = cell_interval(out.score, out.units, data)
    return out


def rows_mean_cell(parts: Sequence[Cell], names: Sequence[str], data: Optional[Dict[str, Unit]] = None) -> Cell:
    """The mean of other rows of the same tier (e.g. LongBioBench's mean of its three categories)."""
    bad = [(n, c) for n, c in zip(names, parts) if c.status != 'ok']
    if bad:
        return Cell(status=_bad_status([c for _, c in bad]), reason='; '.join(f'{n}: {c.reason}' for n, c in bad))
    k = len(parts)
    ci = (None if any(c.ci95 is None for c in parts)
          else (sum(c.ci95 ** 2 for c in parts)) ** 0.5 / k)
    out = Cell(score=sum(c.score for c in parts) / k, ci95=ci, n=sum(c.n for c in parts),
               tasks={n: c.score for n, c in zip(names, parts)}, ci_method='binomial', clusters=sum(c.n for c in parts),
               cells_used=sum(c.cells_used for c in parts), cells_total=sum(c.cells_total for c in parts))
    return _mean_interval(out, parts, data)


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
    aliases = load_aliases(model_aliases)
    results = results or Results(work_dir)
    result = checked_reader(results, abbrs)

    if failures is None:
        failures = find_failures(work_dir, expected, result) if expected is not None else []
    failed = {(f.model, f.dataset): f for f in failures}
    notes: List[str] = []
    footnotes: Dict[str, None] = {}
    partial: Dict[str, None] = {}
    rows: List[RowResult] = []
    depth: Dict[str, Dict[str, Dict[str, List[List[int]]]]] = {}
    all_tiers = sort_tiers({t for b in found.values() for t in b})
    for model in models:
        for bench in BENCHMARKS:
            if bench.name not in found:
                continue
            tiers = sort_tiers(found[bench.name])
            # this model's dataset for each (tier, task): the one with a result, else the first
            mine = {tier: {task: next((a for a in cands if result(model.abbr, a) is not None),
                                      cands[0]) for task, cands in found[bench.name][tier].items()}
                    for tier in tiers}
            data: Dict[str, Unit] = {}   # this model's dataset units of the benchmark (:mod:`.intervals`)
            task_cells = {tier: {task: task_cell(bench, result(model.abbr, abbr), tier, model,
                                                 notes, abbr, failed.get((model.abbr, abbr)), data, task)
                                 for task, abbr in mine[tier].items()} for tier in tiers}
            sampler = Resampler(data, f'{model.abbr}/{bench.name}')
            for tier in tiers:
                grid = depth_bins([result(model.abbr, a) for a in mine[tier].values()])
                if grid:
                    depth.setdefault(bench.name, {}).setdefault(model.abbr, {})[tier] = grid
            refs = load_references(bench.name)
            pub_name = aliases.get(bench.name, {}).get(model.abbr)
            done: Dict[str, Dict[str, Cell]] = {}
            shown_tasks: set = set()
            for row in bench.rows:
                if row.of_rows:
                    cells = {tier: rows_mean_cell([done[r][tier] for r in row.of_rows], row.of_rows, data)
                             for tier in tiers}
                elif row.detail_filter:  # a split of one dataset: FAIL or N/A as the dataset, else its details
                    (task,) = row.tasks
                    cells = {tier: (Cell(status='missing', reason=f'not run: {task}') if task not in mine[tier]
                                    else task_cells[tier][task] if task_cells[tier][task].status in ('failed', 'n/a')
                                    else detail_cell(result(model.abbr, mine[tier][task]), *row.detail_filter,
                                                     bench, task, data, f'{tier}|{mine[tier][task]}'))
                             for tier in tiers}
                else:
                    cells = {tier: row_cell(row.tasks, task_cells[tier], row.partial_ok, data) for tier in tiers}
                row_partial = []
                for tier, c in cells.items():
                    if not row.of_rows and not row.detail_filter and c.cells_used < c.cells_total:
                        left = ', '.join(t for t in row.tasks if t not in mine[tier])
                        row_partial.append(f'{bench.name} {row.name} at {tier}: ' + (
                            f'the mean of {c.cells_used} of its {c.cells_total} cells (not run at this tier: '
                            f'{left})' if c.status == 'ok' else
                            f'{c.cells_used} of its {c.cells_total} datasets were run (not run at this tier: '
                            f'{left}); the row is the mean of all of them, so it has no score there'))
                done[row.name] = cells
                row_tasks = row_task_names(bench, row)
                for tier, c in cells.items():
                    why = [marks[model.abbr, a] for a in (mine[tier].get(t) for t in row_tasks)
                           if (model.abbr, a) in (marks or {})]
                    if why and c.status == 'ok' and INCOMPARABLE not in c.marks:
                        c.marks.append(INCOMPARABLE)
                        footnotes.update(dict.fromkeys(why))
                present = {t for tier in tiers for t in row_tasks if t in mine[tier]}
                if (all(c.status == 'missing' and c.reason.startswith('not run') for c in cells.values())
                        and present <= shown_tasks):
                    continue  # the run has no dataset of this row at any tier, or an earlier row shows them all
                shown_tasks |= present
                partial.update(dict.fromkeys(row_partial))
                ok = [c.score for c in cells.values() if c.status == 'ok']
                rr = RowResult(model.abbr, bench.name, row.name, cells, datasets={
                                   t: {k: a for k, a in mine[t].items() if k in row_tasks} for t in tiers},
                               mean=sum(ok) / len(ok) if ok else None,
                               mean_note='' if len(ok) == len([c for c in cells.values() if c.status != 'n/a'])
                               else 'over the tiers with results')
                series = [(t, cells[t].score if cells[t].status == 'ok' else None) for t in tiers]
                base_scores = [cells[t].score for t in bench.base_tiers if t in cells and cells[t].status == 'ok']
                base = max(base_scores) if base_scores else None
                by_cluster = None
                if bench.paper_base and len(row.tasks) == 1 and not row.detail_filter:
                    base_abbrs = [mine[t][row.tasks[0]] for t in bench.base_tiers if t in mine and row.tasks[0] in mine[t]]
                    own = paper_base(bench, result, model.abbr, base_abbrs)
                    if own:
                        base = own
                        by_cluster = paper_base_by_cluster(
                            bench, [(row.tasks[0], (result(model.abbr, a) or {}).get('details') or [])
                                    for a in base_abbrs], bench.paper_base) or ({}, {})
                thr = nolima_threshold(base, nolima_ratio)
                rr.effective = {
                    'nolima': dict(effective_length(series, thr) if thr is not None else
                                   {'contiguous': None, 'raw': None}, base=base, threshold=thr),
                    'ruler': dict(effective_length(series, ruler_threshold), threshold=ruler_threshold),
                }
                effective_intervals(rr, tiers, sampler, bench.base_tiers, by_cluster, nolima_ratio)
                published = ((refs or {}).get('rows', {}).get(row.name) or {}).get(pub_name) if pub_name else None
                if published:
                    rr.published_name = pub_name
                    rr.published = {t: float(v) for t, v in published.items()}
                rows.append(rr)
    unmatched = sorted({m.abbr for m in models} - {r.model for r in rows if r.published_name})
    return {'tiers': all_tiers, 'rows': rows, 'notes': sorted(set(notes)), 'package_version': __version__,
            'ruler_threshold': ruler_threshold, 'nolima_ratio': nolima_ratio,
            'models_without_published_counterpart': unmatched,
            'failures': failures, 'partial': list(partial), 'depth': depth,
            'footnotes': {INCOMPARABLE: list(footnotes)} if footnotes else {},
            'bench_tiers': {b: sort_tiers(by_tier) for b, by_tier in found.items()},
            'references': {b.name: (load_references(b.name) or {}).get('source') for b in BENCHMARKS
                           if b.name in found}}


def _legend(report: dict) -> List[str]:
    ratio, ruler = report['nolima_ratio'], report['ruler_threshold']
    bases = '; '.join(f'{b.name} {", ".join(b.base_tiers)}' for b in BENCHMARKS
                      if b.name in report['references'] and not b.paper_base)
    return [
        '',
        'How to read this table:',
        '- A tier column is the score (%) at that context length, ± the half-width of its 95% confidence interval. '
        'A tier is a token budget: 1k = 1000 tokens for BABILong and NoLiMa (NoLiMa counts '
        "in the model's own tokenizer), 1024 for LongBioBench; 250 and 500 are NoLiMa's short lengths.",
        '- The intervals rest on how each benchmark\'s samples are related: where samples of a cell share text (a '
        'cluster), the interval is cluster-robust (CR1 over the clusters, Student\'s t with clusters - 1 degrees of '
        'freedom), and "Samples per cell" says how many clusters it rests on; where every sample stands alone it is '
        f'binomial (Agresti-Coull). ±? (k clusters): fewer than {MIN_CLUSTERS} clusters, too few for an interval. '
        + '; '.join(f'{b.name}: {b.relation}' for b in BENCHMARKS if b.name in report['references']) + '.',
        '- N/A: the model cannot hold that tier (the tier is above its max_seq_len, or every prompt was longer than '
        'it can take). N/A is left out of the mean, and it ends an effective-length run.',
        '- -: no result (not run for this model, or its result file cannot be used: the reason is listed below).',
        '- FAIL: the dataset\'s task failed; its exception and task log are listed above, under "Failed or missing".',
        '- (k/n) after a score: a mean over k of the n datasets the row has (the others were not run at that '
        'tier, e.g. LongBioBench cells too big for it); see "Partial rows".',
        '- mean: the mean over the tiers; * = over the tiers with a result only (some are missing or failed).',
        f'- base (thr): the model\'s short-context base score and the threshold {ratio:g} x base. NoLiMa rows use '
        'the paper\'s base (for each needle pair the best of 250, 500 and 1k, averaged over pairs); other rows the '
        f'best score at their benchmark\'s base tiers ({bases or "none in this run"}).',
        f'- eff. len (NoLiMa {100 * ratio:g}% base): the longest tier such that it and every shorter tier in the '
        'table score >= thr.',
        f'- eff. len (RULER >= {ruler:g}): the same with a fixed threshold of {ruler:g} (RULER: Llama-2-7B\'s score '
        'at 4k).',
        f'- [lo-hi] after an effective length: its 95% interval, from {BOOTSTRAP} resamples of whole clusters (each '
        'cluster at every tier at once; the base score recomputed on each resample); shown when it is not the point.',
        '- <X (e.g. <0k, <1k): the first tier, X, already scores below the threshold. An effective length of - : '
        'nothing to judge (no base score, or no result).',
        '- published / measured - published: the authors\' number for the model\'s published counterpart, and the '
        'difference.',
    ]


def effective_text(eff: Optional[dict]) -> str:
    """'16k [8k-32k]': an effective length and its 95% interval in tiers (the interval left out where it is the
    point itself); '-': nothing to judge. The one form the table, the comparison and the page print."""
    point = (eff or {}).get('contiguous')
    if not point:
        return '-'
    lo_hi = (eff or {}).get('interval')
    if not lo_hi or None in tuple(lo_hi)[:2] or list(lo_hi)[:2] == [point, point]:
        return point
    return f'{point} [{lo_hi[0]}-{lo_hi[1]}]'


def shown_rows(report: dict) -> list:
    """The tier table's rows, less the (benchmark, row)s where no model has anything at any tier (e.g. NoLiMa's
    two-hop split of a run with no two-hop sample): they would be a block of '-'."""
    filled = {(r.bench, r.row) for r in report['rows']   # a score, a FAIL or a partial '- (2/5)' keeps the row
              if any(c.status in ('ok', 'failed') or c.cells_used for c in r.cells.values())}
    return [r for r in report['rows'] if (r.bench, r.row) in filled]


def to_markdown(report: dict, with_ci: bool = True) -> str:
    tiers = report['tiers']
    ratio = report['nolima_ratio']
    head = ['model', 'benchmark', 'row'] + tiers + ['mean', 'base (thr)', f'eff. len (NoLiMa {100 * ratio:g}% base)',
                                                    f'eff. len (RULER >= {report["ruler_threshold"]:g})']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    shown = shown_rows(report)
    kept = {id(r) for r in shown}
    left_out = list(dict.fromkeys(f'{r.bench} {r.row}' for r in report['rows'] if id(r) not in kept))
    for r in shown:
        eff_n, eff_r = r.effective['nolima'], r.effective['ruler']
        cells = [r.cells[t].text(with_ci) if t in r.cells else '' for t in tiers]
        mean = '-' if r.mean is None else f'{r.mean:.1f}' + ('*' if r.mean_note else '')
        base = ('-' if eff_n['base'] is None else f'{eff_n["base"]:.1f}'
                + ('' if eff_n['threshold'] is None else f' ({eff_n["threshold"]:.1f})'))
        lines.append('| ' + ' | '.join([r.model, r.bench, r.row] + cells + [
            mean, base, effective_text(eff_n), effective_text(eff_r)]) + ' |')
        if r.published_name:
            pub = [f'{r.published[t]:g}' if t in r.published else '' for t in tiers]
            diff = [f'{r.cells[t].score - r.published[t]:+.1f}' if t in r.published and t in r.cells
                    and r.cells[t].status == 'ok' else '' for t in tiers]
            lines.append('| ' + ' | '.join(['', '', f'published: {r.published_name}'] + pub + [''] * 4) + ' |')
            lines.append('| ' + ' | '.join(['', '', 'measured - published'] + diff + [''] * 4) + ' |')
    out = '\n'.join(lines)
    counts = [f'{r.model}/{r.bench}/{r.row}/{t}: n={c.n}' + (f' in {c.clusters} clusters'
                                                              if c.ci_method == 'clustered' else '')
              for r in report['rows'] for t, c in r.cells.items() if c.status == 'ok']
    na = [f'{r.model}/{r.bench}/{r.row}/{t}: {c.status.upper()} ({c.reason})' for r in report['rows']
          for t, c in r.cells.items() if c.status in ('n/a', 'missing')]  # FAIL: listed with its exception above
    foot = [f'Left out (no value for any model): {", ".join(left_out)}.'] if left_out else []
    if report.get('failures'):
        foot += ['', 'Failed or missing (datasets of the run without a usable result):']
        foot += [f'- {f.line()}' for f in report['failures']]
    if report.get('partial'):
        foot += ['', 'Partial rows:'] + [f'- {x}' for x in report['partial']]
    for mark, why in (report.get('footnotes') or {}).items():
        foot += ['', f'{mark} Not comparable with the other models\' cells of its column (another data set or '
                 'scoring: see the fingerprints in the JSON):'] + [f'- {x}' for x in why]
    if len(report.get('runs') or []) > 1 or report.get('merge_notes'):
        foot += ['', f'Runs merged ({len(report["runs"])}):'] + [f'- {r}' for r in report['runs']]
        foot += [f'- {x}' for x in report.get('merge_notes', [])]
    foot += _legend(report)
    if counts:
        foot += ['', 'Samples per cell: ' + '; '.join(counts)]
    if na:
        foot += ['', 'Not applicable / missing cells:'] + [f'- {x}' for x in na]
    if report['notes']:
        foot += ['', 'Notes:'] + [f'- {x}' for x in report['notes']]
    published = {r.bench for r in shown if r.published_name}
    for bench, src in report['references'].items():
        if src and bench in published:   # only where a model of the table has a published counterpart
            foot.append(f'Published {bench} numbers: {src}.')
    return out + '\n' + '\n'.join(foot) + '\n'


def to_csv(report: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(['model', 'benchmark', 'row', 'tier', 'score', 'ci95', 'n', 'status', 'reason', 'published',
                'published_name', 'diff', 'cells_used', 'cells_total', 'marks', 'ci_method', 'clusters'])
    for r in report['rows']:
        for t in report['tiers']:
            if t not in r.cells:
                continue
            c = r.cells[t]
            pub = r.published.get(t)
            w.writerow([r.model, r.bench, r.row, t, '' if c.score is None else round(c.score, 4),
                        '' if c.ci95 is None else round(c.ci95, 4), c.n, c.status, c.reason,
                        '' if pub is None else pub, r.published_name or '',
                        '' if pub is None or c.score is None else round(c.score - pub, 4),
                        c.cells_used or '', c.cells_total or '', ' '.join(c.marks), c.ci_method,
                        c.clusters if c.status == 'ok' else ''])
    return buf.getvalue()


def to_json(report: dict) -> str:
    data = dict(report)
    data['rows'] = [asdict(r) for r in report['rows']]
    for r in data['rows']:
        for c in r['cells'].values():
            c.pop('units', None)   # the resampling's bookkeeping
    data['failures'] = [asdict(f) for f in report.get('failures', [])]
    return json.dumps(data, indent=1, sort_keys=True)


def write(report: dict, out_dir: str, stem: str, plots: bool = True) -> Dict[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for ext, text in (('md', to_markdown(report)), ('csv', to_csv(report)), ('json', to_json(report))):
        paths[ext] = os.path.join(out_dir, f'{stem}.{ext}')
        with open(paths[ext], 'w', encoding='utf-8') as f:
            f.write(text)
    if plots:
        from opencompass_longctx.summarizers.plots import plot_report
        paths['plots'] = plot_report(report, os.path.join(out_dir, f'{stem}_plots'))
    return paths
