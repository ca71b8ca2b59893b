"""The tier table's formats: Markdown (with its legend), CSV and JSON of a report that
:func:`opencompass_longctx.summarizers.table.build` made, and the files and plots :func:`write` puts in a run's
summary folder."""
import csv
import io
import json
import os
from dataclasses import asdict
from typing import Dict, List, Optional

from opencompass_longctx.spec import all_specs
from opencompass_longctx.stats.intervals import MIN_CLUSTERS
from opencompass_longctx.summarizers.metrics import BOOTSTRAP
from opencompass_longctx.summarizers.rows import BENCHMARKS
from opencompass_longctx.util import plural


def _units(report: dict) -> str:
    """What 1k is in each benchmark of the report (its spec's ``units``)."""
    return '; '.join(spec.units for spec in all_specs()
                     if spec.units and any(b.name in report['references'] for b in spec.summary))


def _legend(report: dict) -> List[str]:
    ratio, ruler = report['nolima_ratio'], report['ruler_threshold']
    bases = '; '.join(f'{b.name} {", ".join(b.base_tiers)}' for b in BENCHMARKS
                      if b.name in report['references'] and not b.paper_base)
    return [
        '',
        'How to read this table:',
        '- A tier column is the score (%) at that context length and its 95% confidence interval [lo, hi], always '
        'inside [0, 100] (asymmetric near 0 and 100). '
        f'A tier is a token budget: {_units(report)}.',
        '- The intervals rest on how each benchmark\'s samples are related: where samples of a cell share text (a '
        'cluster), the interval is cluster-robust ("clustered": the bias-reduced CR2 variance over the clusters, '
        'a Wilson interval at its effective sample size, its critical value from a working model of the clusters), '
        'and "Samples per cell" says how many clusters it rests on; where every sample stands alone it is the Wilson '
        f'score interval ("wilson"). [? k clusters]: fewer than {MIN_CLUSTERS} clusters, too few for an interval. '
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
        'difference, only where the row is complete at that tier (- (k/n): a mean over k of its n datasets, not '
        'the number the authors published).',
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


def md_cell(text) -> str:
    """A value as the text of one Markdown table cell: ``|`` escaped (it would end the cell and shift every column
    after it), a backslash doubled (so an escape stays what was written), line breaks as spaces (a break would end
    the row). Every cell a table of this package writes goes through here."""
    return (str(text).replace('\\', '\\\\').replace('|', '\\|').replace('\r\n', ' ').replace('\n', ' ')
            .replace('\r', ' '))


def md_row(cells) -> str:
    """One Markdown table row of escaped cells (:func:`md_cell`)."""
    return '| ' + ' | '.join(md_cell(c) for c in cells) + ' |'


def published_diff(cell, published: Optional[float]) -> str:
    """'measured - published' at one tier: only where the row is complete there; a partial mean (k of its n
    datasets) is not the number the authors published, so it reads ``- (k/n)``."""
    if published is None or cell is None or cell.status != 'ok':
        return ''
    if cell.cells_used < cell.cells_total:
        return f'- ({cell.cells_used}/{cell.cells_total})'
    return f'{cell.score - published:+.1f}'


def to_markdown(report: dict, with_ci: bool = True) -> str:
    tiers = report['tiers']
    ratio = report['nolima_ratio']
    head = ['model', 'benchmark', 'row'] + tiers + ['mean', 'base (thr)', f'eff. len (NoLiMa {100 * ratio:g}% base)',
                                                    f'eff. len (RULER >= {report["ruler_threshold"]:g})']
    lines = [md_row(head), '|' + '---|' * len(head)]
    shown = shown_rows(report)
    kept = {id(r) for r in shown}
    left_out = list(dict.fromkeys(f'{r.bench} {r.row}' for r in report['rows'] if id(r) not in kept))
    for r in shown:
        eff_n, eff_r = r.effective['nolima'], r.effective['ruler']
        cells = [r.cells[t].text(with_ci) if t in r.cells else '' for t in tiers]
        mean = '-' if r.mean is None else f'{r.mean:.1f}' + ('*' if r.mean_note else '')
        base = ('-' if eff_n['base'] is None else f'{eff_n["base"]:.1f}'
                + ('' if eff_n['threshold'] is None else f' ({eff_n["threshold"]:.1f})'))
        lines.append(md_row([r.model, r.bench, r.row] + cells + [mean, base, effective_text(eff_n),
                                                                 effective_text(eff_r)]))
        if r.published_name:
            pub = [f'{r.published[t]:g}' if t in r.published else '' for t in tiers]
            diff = [published_diff(r.cells.get(t), r.published.get(t)) for t in tiers]
            lines.append(md_row(['', '', f'published: {r.published_name}'] + pub + [''] * 4))
            lines.append(md_row(['', '', 'measured - published'] + diff + [''] * 4))
    out = '\n'.join(lines)
    counts = [f'{r.model}/{r.bench}/{r.row}/{t}: n={c.n}' + (f' in {plural(c.clusters, "cluster")}'
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
    w.writerow(['model', 'benchmark', 'row', 'tier', 'score', 'ci_lo', 'ci_hi', 'n', 'status', 'reason', 'published',
                'published_name', 'diff', 'cells_used', 'cells_total', 'marks', 'ci_method', 'clusters'])
    for r in report['rows']:
        for t in report['tiers']:
            if t not in r.cells:
                continue
            c = r.cells[t]
            pub = r.published.get(t)
            w.writerow([r.model, r.bench, r.row, t, '' if c.score is None else round(c.score, 4),
                        '' if c.ci_lo is None else round(c.ci_lo, 4), '' if c.ci_hi is None else round(c.ci_hi, 4), c.n, c.status, c.reason,
                        '' if pub is None else pub, r.published_name or '',
                        '' if pub is None or c.score is None or c.cells_used < c.cells_total else round(c.score - pub, 4),
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
