"""The tier report's formats: Markdown (with its legend), CSV and JSON of a
:class:`~opencompass_longctx.leaderboard.tier_report.TierReport`, and the files and plots :func:`write` puts in a
run's summary folder. Every table of this package writes its Markdown cells through :func:`md_cell`."""
import csv
import io
import json
import os
from typing import Collection, Dict, List, Optional, Sequence

from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS
from opencompass_longctx.leaderboard.placement import Unplaced
from opencompass_longctx.leaderboard.tier_report import NOLIMA, RULER, Cell, TierReport
from opencompass_longctx.spec import all_specs
from opencompass_longctx.stats.effective import BOOTSTRAP
from opencompass_longctx.stats.intervals import MIN_CLUSTERS
from opencompass_longctx.util import plural


def _units(benches: Collection[str]) -> str:
    """What 1k is in each of these benchmark tables' benchmarks (its spec's ``units``)."""
    return '; '.join(spec.units for spec in all_specs()
                     if spec.units and any(b.name in benches for b in spec.summary))


def _legend(report: TierReport) -> List[str]:
    ratio, ruler = report.nolima_ratio, report.ruler_threshold
    bases = '; '.join(f'{b.name} {", ".join(b.base_tiers)}' for b in BENCHMARKS
                      if b.name in report.benchmarks and not b.paper_base)
    return [
        '',
        'How to read this table:',
        '- A tier column is the score (%) at that context length and its 95% confidence interval [lo, hi], always '
        'inside [0, 100] (asymmetric near 0 and 100). '
        f'A tier is a token budget: {_units(report.benchmarks)}.',
        '- The intervals rest on how each benchmark\'s samples are related: where samples of a cell share text (a '
        'cluster), the interval is cluster-robust ("clustered": the bias-reduced CR2 variance over the clusters, '
        'a Wilson interval at its effective sample size, its critical value from a working model of the clusters), '
        'and "Samples per cell" says how many clusters it rests on; where every sample stands alone it is the Wilson '
        f'score interval ("wilson"). [? k clusters]: fewer than {MIN_CLUSTERS} clusters, too few for an interval. '
        + '; '.join(f'{b.name}: {b.relation}' for b in BENCHMARKS if b.name in report.benchmarks) + '.',
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
        'cluster at every tier at once; the base score recomputed on each resample); shown when it is not the point. '
        '[? k clusters] after it: a cell of the row rests on fewer than 10 clusters, too few to resample.',
        '- <X (e.g. <0k, <1k): the first tier, X, already scores below the threshold. An effective length of - : '
        'nothing to judge (no base score, or no result).',
        '- published / measured - published: the authors\' number for the model\'s published counterpart, and the '
        'difference, only where the row is complete at that tier (- (k/n): a mean over k of its n datasets, not '
        'the number the authors published).',
    ]


def md_cell(text) -> str:
    """A value as the text of one Markdown table cell: ``|`` escaped (it would end the cell and shift every column
    after it), a backslash doubled (so an escape stays what was written), line breaks as spaces (a break would end
    the row). Every cell a table of this package writes goes through here."""
    return (str(text).replace('\\', '\\\\').replace('|', '\\|').replace('\r\n', ' ').replace('\n', ' ')
            .replace('\r', ' '))


def md_row(cells) -> str:
    """One Markdown table row of escaped cells (:func:`md_cell`)."""
    return '| ' + ' | '.join(md_cell(c) for c in cells) + ' |'


def published_diff(cell: Optional[Cell], published: Optional[float]) -> str:
    """'measured - published' at one tier: only where the row is complete there; a partial mean (k of its n
    datasets) is not the number the authors published, so it reads ``- (k/n)``."""
    if published is None or cell is None or cell.status != 'ok':
        return ''
    if cell.cells_used < cell.cells_total:
        return f'- ({cell.cells_used}/{cell.cells_total})'
    return f'{cell.score - published:+.1f}'


def to_markdown(report: TierReport, with_ci: bool = True) -> str:
    tiers = report.tiers
    ratio = report.nolima_ratio
    head = ['model', 'benchmark', 'row'] + tiers + ['mean', 'base (thr)', f'eff. len (NoLiMa {100 * ratio:g}% base)',
                                                    f'eff. len (RULER >= {report.ruler_threshold:g})']
    lines = [md_row(head), '|' + '---|' * len(head)]
    shown = report.shown_rows
    kept = {id(r) for r in shown}
    left_out = list(dict.fromkeys(f'{r.bench} {r.row}' for r in report.rows if id(r) not in kept))
    for r in shown:
        eff_n, eff_r = r.effective[NOLIMA], r.effective[RULER]
        cells = [r.cells[t].text(with_ci) if t in r.cells else '' for t in tiers]
        mean = '-' if r.mean is None else f'{r.mean:.1f}' + ('*' if r.mean_note else '')
        base = ('-' if eff_n.base is None else f'{eff_n.base:.1f}'
                + ('' if eff_n.threshold is None else f' ({eff_n.threshold:.1f})'))
        lines.append(md_row([r.model, r.bench, r.row] + cells + [mean, base, eff_n.text(), eff_r.text()]))
        if r.published_name:
            pub = [f'{r.published[t]:g}' if t in r.published else '' for t in tiers]
            diff = [published_diff(r.cells.get(t), r.published.get(t)) for t in tiers]
            lines.append(md_row(['', '', f'published: {r.published_name}'] + pub + [''] * 4))
            lines.append(md_row(['', '', 'measured - published'] + diff + [''] * 4))
    out = '\n'.join(lines)
    counts = [f'{r.model}/{r.bench}/{r.row}/{t}: n={c.n}' + (f' in {plural(c.clusters, "cluster")}'
                                                              if c.ci_method == 'clustered' else '')
              for r in report.rows for t, c in r.cells.items() if c.status == 'ok']
    na = [f'{r.model}/{r.bench}/{r.row}/{t}: {c.status.upper()} ({c.reason})' for r in report.rows
          for t, c in r.cells.items() if c.status in ('n/a', 'missing')]  # FAIL: listed with its exception above
    foot = [f'Left out (no value for any model): {", ".join(left_out)}.'] if left_out else []
    if report.failures:
        foot += ['', 'Failed or missing (datasets of the run without a usable result):']
        foot += [f'- {f.line()}' for f in report.failures]
    if report.partial:
        foot += ['', 'Partial rows:'] + [f'- {x}' for x in report.partial]
    for mark, why in report.footnotes.items():
        foot += ['', f'{mark} Not comparable with the other models\' cells of its column (another data set or '
                 'scoring: see the fingerprints in the JSON):'] + [f'- {x}' for x in why]
    merge = report.merge
    if merge and (len(merge.runs) > 1 or merge.notes):
        foot += ['', f'Runs merged ({len(merge.runs)}):'] + [f'- {r}' for r in merge.runs]
        foot += [f'- {x}' for x in merge.notes]
    foot += _legend(report)
    if counts:
        foot += ['', 'Samples per cell: ' + '; '.join(counts)]
    if na:
        foot += ['', 'Not applicable / missing cells:'] + [f'- {x}' for x in na]
    if report.notes:
        foot += ['', 'Notes:'] + [f'- {x}' for x in report.notes]
    published = {r.bench for r in shown if r.published_name}
    for b in BENCHMARKS:   # in the specs' order, only where a model of the table has a published counterpart
        mine = report.benchmarks.get(b.name)
        if mine and mine.reference and b.name in published:
            foot.append(f'Published {b.name} numbers: {mine.reference}.')
    return out + '\n' + '\n'.join(foot) + '\n' + unplaced_section(report.unplaced or [])


def unplaced_section(found: Sequence[Unplaced]) -> str:
    """The Markdown section that lists the datasets no cell reads (empty when there are none)."""
    if not found:
        return ''
    head = (f'Not in the tier table ({len(found)} dataset(s) of the run that no cell reads; their scores are only in '
            "OpenCompass's own summary):")
    return '\n'.join(['', head] + [f'- {u.line()}' for u in found]) + '\n'


def to_csv(report: TierReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(['model', 'benchmark', 'row', 'tier', 'score', 'ci_lo', 'ci_hi', 'n', 'status', 'reason', 'published',
                'published_name', 'diff', 'cells_used', 'cells_total', 'marks', 'ci_method', 'clusters'])
    for r in report.rows:
        for t in report.tiers:
            if t not in r.cells:
                continue
            c = r.cells[t]
            pub = r.published.get(t)
            w.writerow([r.model, r.bench, r.row, t, '' if c.score is None else round(c.score, 4),
                        '' if c.ci_lo is None else round(c.ci_lo, 4), '' if c.ci_hi is None else round(c.ci_hi, 4),
                        c.n, c.status, c.reason, '' if pub is None else pub, r.published_name or '',
                        '' if pub is None or c.score is None or c.cells_used < c.cells_total else round(c.score - pub, 4),
                        c.cells_used or '', c.cells_total or '', ' '.join(c.marks), c.ci_method,
                        c.clusters if c.status == 'ok' else ''])
    return buf.getvalue()


def to_json(report: TierReport) -> str:
    """``longctx_report.json``: the report's own serialisation (:meth:`TierReport.to_dict`)."""
    return json.dumps(report.to_dict(), indent=1, sort_keys=True)


def render(report: TierReport) -> Dict[str, str]:
    """The tier table as Markdown, CSV and JSON text: {'md', 'csv', 'json'}."""
    return {'md': to_markdown(report), 'csv': to_csv(report), 'json': to_json(report)}


def save(texts: Dict[str, str], out_dir: str, stem: str) -> Dict[str, str]:
    """``texts`` ({extension: text}) written as ``<out_dir>/<stem>.<extension>``; their paths by extension."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for ext, text in texts.items():
        paths[ext] = os.path.join(out_dir, f'{stem}.{ext}')
        with open(paths[ext], 'w', encoding='utf-8') as f:
            f.write(text)
    return paths


def write(report: TierReport, out_dir: str, stem: str, plots: bool = True) -> Dict[str, str]:
    """The tier table's files (:func:`render`, :func:`save`) and, with ``plots``, its plots; their paths."""
    paths = save(render(report), out_dir, stem)
    if plots:
        from opencompass_longctx.writers.plots import plot_report
        paths['plots'] = plot_report(report, os.path.join(out_dir, f'{stem}_plots'))
    return paths
