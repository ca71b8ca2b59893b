"""The cross-benchmark tier table: built from a finished run's result files (no OpenCompass import).

For every model: one row per benchmark row (BABILong qa1-qa5 and qa1-qa10, ...), one column per tier in size
order, the mean over the model's tiers, sample counts and 95% confidence intervals, two effective lengths
(NoLiMa's: longest tier >= 85% of the model's own short-context base; RULER's: longest tier >= a fixed
threshold), and the published number beside the measured one where the model has a published counterpart.
A tier the model cannot hold (tier above its max_seq_len, or every sample over its length) is N/A, never 0,
and is left out of means; a dataset with no result is shown as missing.
"""
import csv
import io
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence

from .. import __version__
from ..tiers import parse_tier, sort_tiers
from .metrics import NOLIMA_RATIO, RULER_THRESHOLD, effective_length, mean_with_ci, nolima_threshold
from .specs import BENCHMARKS, Bench, Cell, classify

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')


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


def read_result(work_dir: str, model: str, abbr: str) -> Optional[dict]:
    path = os.path.join(work_dir, 'results', model, f'{abbr}.json')
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {'error': f'unreadable result file ({e})'}


def _detail_value(d: dict, key: str):
    v = d.get(key)
    return v[0] if isinstance(v, list) and v else v


def detail_cell(res: Optional[dict], key: str, value: str) -> Cell:
    """Accuracy over the per-sample details whose ``key`` equals ``value`` (over-length ones left out)."""
    if not res or 'error' in res or not res.get('details'):
        return Cell(status='missing', reason='no per-sample details')
    hits = [bool(_detail_value(d, 'correct')) for d in res['details']
            if _detail_value(d, key) == value and not _detail_value(d, 'over_length')]
    if not hits:
        return Cell(status='missing', reason=f'no sample with {key}={value}')
    mean, ci, n = mean_with_ci([(100.0 * sum(hits) / len(hits), len(hits))])
    return Cell(score=mean, ci95=ci, n=n)


def paper_base(bench: Bench, read, model: str, abbrs: Sequence[str]) -> Optional[float]:
    if bench.paper_base != 'nolima':
        return None
    from ..nolima import metrics as nm
    records = []
    for abbr in abbrs:
        res = read(model, abbr)
        for d in (res or {}).get('details', []):
            r = {k: _detail_value(d, k) for k in ('pair', 'haystack', 'context_length', 'correct', 'over_length')}
            if r['pair'] is not None and not r['over_length']:
                records.append(r)
    try:
        return nm.report(records)['base'] if records else None
    except Exception:  # noqa: BLE001 - no base tiers run: fall back to the table's own base
        return None


def task_cell(bench: Bench, res: Optional[dict], tier: str, model: ModelInfo, notes: List[str],
              abbr: str) -> Cell:
    tier_tokens = parse_tier(tier).tokens(bench.tier_unit)
    if res is None:
        if model.max_seq_len and tier_tokens > model.max_seq_len:
            return Cell(status='n/a', reason=f'tier ({tier_tokens} tokens) > max_seq_len {model.max_seq_len}')
        return Cell(status='missing', reason=f'no result for {abbr}')
    if 'error' in res:
        return Cell(status='missing', reason=f'{abbr}: {res["error"]}')
    counts = _first(res.get('counts')) or {}
    n = int(counts.get('n', len(res.get('details', [])) or 0))
    over = int(counts.get('over_length', 0))
    if n and over >= n:
        return Cell(status='n/a', n=n, reason=f'all {n} samples longer than the model can hold')
    version = _first(res.get('package_version'))
    if version != __version__:
        notes.append(f'{model.abbr}/{abbr}: written by opencompass-longctx '
                     f'{version or "(an older version that did not record it)"}, now {__version__}')
    if bench.metric not in res:
        return Cell(status='missing', reason=f'{abbr}: no {bench.metric!r} in the result')
    return Cell(score=float(res[bench.metric]), n=n - over, reason=f'{over} over-length' if over else '')


def row_cell(row_tasks: Sequence[str], cells: Dict[str, Cell], partial_ok: bool = False) -> Cell:
    missing = [t for t in row_tasks if t not in cells]
    if partial_ok and len(missing) < len(row_tasks):
        row_tasks, missing = [t for t in row_tasks if t in cells], []
    if missing:
        return Cell(status='missing', reason=f'not run: {", ".join(missing)}')
    na = [t for t in row_tasks if cells[t].status == 'n/a']
    if na:
        return Cell(status='n/a', reason='; '.join(f'{t}: {cells[t].reason}' for t in na))
    bad = [t for t in row_tasks if cells[t].status != 'ok']
    if bad:
        return Cell(status='missing', reason='; '.join(cells[t].reason for t in bad))
    mean, ci, n = mean_with_ci([(cells[t].score, cells[t].n) for t in row_tasks])
    return Cell(score=mean, ci95=ci, n=n, tasks={t: cells[t].score for t in row_tasks})


def rows_mean_cell(parts: Sequence[Cell], names: Sequence[str]) -> Cell:
    """The mean of other rows of the same tier (e.g. LongBioBench's mean of its three categories)."""
    bad = [(n, c) for n, c in zip(names, parts) if c.status != 'ok']
    if bad:
        status = 'n/a' if any(c.status == 'n/a' for _, c in bad) else 'missing'
        return Cell(status=status, reason='; '.join(f'{n}: {c.reason}' for n, c in bad))
    k = len(parts)
    ci = (None if any(c.ci95 is None for c in parts)
          else (sum(c.ci95 ** 2 for c in parts)) ** 0.5 / k)
    return Cell(score=sum(c.score for c in parts) / k, ci95=ci, n=sum(c.n for c in parts),
                tasks={n: c.score for n, c in zip(names, parts)})


def build(work_dir: str, models: Sequence[ModelInfo], abbrs: Sequence[str],
          ruler_threshold: float = RULER_THRESHOLD, nolima_ratio: float = NOLIMA_RATIO,
          model_aliases: Optional[Dict[str, Dict[str, str]]] = None) -> dict:
    """The report as plain data: {'tiers', 'rows': [RowResult...], 'notes', ...}."""
    found = classify(abbrs, all_abbrs=True)
    aliases = load_aliases(model_aliases)
    memo: Dict[tuple, Optional[dict]] = {}

    def result(model: str, abbr: str) -> Optional[dict]:  # each result file is read once per report
        if (model, abbr) not in memo:
            memo[(model, abbr)] = read_result(work_dir, model, abbr)
        return memo[(model, abbr)]

    notes: List[str] = []
    rows: List[RowResult] = []
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
            task_cells = {tier: {task: task_cell(bench, result(model.abbr, abbr), tier, model,
                                                 notes, abbr)
                                 for task, abbr in mine[tier].items()} for tier in tiers}
            refs = load_references(bench.name)
            pub_name = aliases.get(bench.name, {}).get(model.abbr)
            done: Dict[str, Dict[str, Cell]] = {}
            for row in bench.rows:
                if row.of_rows:
                    cells = {tier: rows_mean_cell([done[r][tier] for r in row.of_rows], row.of_rows)
                             for tier in tiers}
                elif row.detail_filter:
                    (task,) = row.tasks
                    cells = {tier: (detail_cell(result(model.abbr, mine[tier][task]),
                                                *row.detail_filter)
                                    if task in mine[tier] else Cell(status='missing', reason=f'not run: {task}'))
                             for tier in tiers}
                else:
                    cells = {tier: row_cell(row.tasks, task_cells[tier], row.partial_ok) for tier in tiers}
                done[row.name] = cells
                if all(c.status == 'missing' and c.reason.startswith('not run') for c in cells.values()):
                    continue  # the run has no dataset of this row at any tier
                ok = [c.score for c in cells.values() if c.status == 'ok']
                rr = RowResult(model.abbr, bench.name, row.name, cells,
                               mean=sum(ok) / len(ok) if ok else None,
                               mean_note='' if len(ok) == len([c for c in cells.values() if c.status != 'n/a'])
                               else 'over the tiers with results')
                series = [(t, cells[t].score if cells[t].status == 'ok' else None) for t in tiers]
                base_scores = [cells[t].score for t in bench.base_tiers if t in cells and cells[t].status == 'ok']
                base = max(base_scores) if base_scores else None
                if bench.paper_base and len(row.tasks) == 1 and not row.detail_filter:
                    base = paper_base(bench, result, model.abbr,
                                      [mine[t][row.tasks[0]] for t in bench.base_tiers
                                       if t in mine and row.tasks[0] in mine[t]]) or base
                thr = nolima_threshold(base, nolima_ratio)
                rr.effective = {
                    'nolima': dict(effective_length(series, thr) if thr is not None else
                                   {'contiguous': None, 'raw': None}, base=base, threshold=thr),
                    'ruler': dict(effective_length(series, ruler_threshold), threshold=ruler_threshold),
                }
                published = ((refs or {}).get('rows', {}).get(row.name) or {}).get(pub_name) if pub_name else None
                if published:
                    rr.published_name = pub_name
                    rr.published = {t: float(v) for t, v in published.items()}
                rows.append(rr)
    unmatched = sorted({m.abbr for m in models} - {r.model for r in rows if r.published_name})
    return {'tiers': all_tiers, 'rows': rows, 'notes': sorted(set(notes)), 'package_version': __version__,
            'ruler_threshold': ruler_threshold, 'nolima_ratio': nolima_ratio,
            'models_without_published_counterpart': unmatched,
            'references': {b.name: (load_references(b.name) or {}).get('source') for b in BENCHMARKS
                           if b.name in found}}


def to_markdown(report: dict, with_ci: bool = True) -> str:
    tiers = report['tiers']
    head = ['model', 'benchmark', 'row'] + tiers + ['mean', 'eff. len (NoLiMa 85% base)',
                                                    f'eff. len (RULER >= {report["ruler_threshold"]:g})']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for r in report['rows']:
        eff_n, eff_r = r.effective['nolima'], r.effective['ruler']
        cells = [r.cells[t].text(with_ci) if t in r.cells else '' for t in tiers]
        mean = '-' if r.mean is None else f'{r.mean:.1f}' + ('*' if r.mean_note else '')
        lines.append('| ' + ' | '.join([r.model, r.bench, r.row] + cells + [
            mean, eff_n['contiguous'] or '-', eff_r['contiguous'] or '-']) + ' |')
        if r.published_name:
            pub = [f'{r.published[t]:g}' if t in r.published else '' for t in tiers]
            diff = [f'{r.cells[t].score - r.published[t]:+.1f}' if t in r.published and t in r.cells
                    and r.cells[t].status == 'ok' else '' for t in tiers]
            lines.append('| ' + ' | '.join(['', '', f'published: {r.published_name}'] + pub + ['', '', '']) + ' |')
            lines.append('| ' + ' | '.join(['', '', 'measured - published'] + diff + ['', '', '']) + ' |')
    out = '\n'.join(lines)
    counts = [f'{r.model}/{r.bench}/{r.row}/{t}: n={c.n}' for r in report['rows'] for t, c in r.cells.items()
              if c.status == 'ok']
    na = [f'{r.model}/{r.bench}/{r.row}/{t}: {c.status.upper()} ({c.reason})' for r in report['rows']
          for t, c in r.cells.items() if c.status != 'ok']
    foot = ['', 'Cells: mean score (%) ± half-width of the 95% confidence interval (binomial, per task). '
            'N/A: the model cannot hold that tier (excluded from means); -: no result. '
            '* mean over the tiers with results.']
    if counts:
        foot.append('Samples per cell: ' + '; '.join(counts))
    if na:
        foot += ['', 'Not applicable / missing:'] + [f'- {x}' for x in na]
    if report['notes']:
        foot += ['', 'Notes:'] + [f'- {x}' for x in report['notes']]
    for bench, src in report['references'].items():
        if src:
            foot.append(f'Published {bench} numbers: {src}.')
    return out + '\n' + '\n'.join(foot) + '\n'


def to_csv(report: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(['model', 'benchmark', 'row', 'tier', 'score', 'ci95', 'n', 'status', 'reason', 'published',
                'published_name', 'diff'])
    for r in report['rows']:
        for t in report['tiers']:
            if t not in r.cells:
                continue
            c = r.cells[t]
            pub = r.published.get(t)
            w.writerow([r.model, r.bench, r.row, t, '' if c.score is None else round(c.score, 4),
                        '' if c.ci95 is None else round(c.ci95, 4), c.n, c.status, c.reason,
                        '' if pub is None else pub, r.published_name or '',
                        '' if pub is None or c.score is None else round(c.score - pub, 4)])
    return buf.getvalue()


def to_json(report: dict) -> str:
    data = dict(report)
    data['rows'] = [asdict(r) for r in report['rows']]
    return json.dumps(data, indent=1, sort_keys=True)


def write(report: dict, out_dir: str, stem: str, plots: bool = True, work_dir: Optional[str] = None) -> Dict[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for ext, text in (('md', to_markdown(report)), ('csv', to_csv(report)), ('json', to_json(report))):
        paths[ext] = os.path.join(out_dir, f'{stem}.{ext}')
        with open(paths[ext], 'w', encoding='utf-8') as f:
            f.write(text)
    if plots:
        from .plots import plot_report
        paths['plots'] = plot_report(report, os.path.join(out_dir, f'{stem}_plots'), work_dir)
    return paths
