"""The merged leaderboard as one self-contained HTML page: the ranking, the tier table, the paired differences,
the footnotes and the plots (inline base64 PNG). No external CSS, JavaScript, fonts or images: the page opens
with no network, and can be put on a wiki as one file.

``screenshot`` renders a page with a headless Chromium (Debian's ``chromium``) into a PNG.
"""
import base64
import html
import os
import shutil
import subprocess
import tempfile
from dataclasses import fields
from typing import List, Optional, Sequence

from opencompass_longctx.summarizers.formats import effective_text, shown_rows
CHROMIUM_INSTALL = 'apt-get update && apt-get install -y --no-install-recommends chromium'
CHROMIUM_FLAGS = ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync',
                  '--hide-scrollbars')

_CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th { background: #eee; } td.t { text-align: left; }
td.sig { font-weight: bold; background: #e8f4e8; } td.untestable { color: #888; font-style: italic; } td.na { color: #888; } td.fail { color: #b00; }
tr.g1 td.rank { background: #dfe9f7; } .small { font-size: 0.8em; color: #555; }
img { max-width: 48%; margin: 0.3em; border: 1px solid #ddd; }
"""


def _e(v) -> str:
    return html.escape('' if v is None else str(v))


def _table(head: Sequence[str], rows: Sequence[Sequence[tuple]], cls: str) -> List[str]:
    """rows: [(text, css class, {data attributes}[, title])] per cell; every text and attribute escaped."""
    out = [f'<table class="{cls}">', '<tr>' + ''.join(f'<th>{_e(h)}</th>' for h in head) + '</tr>']
    for row in rows:
        cells = []
        for text, klass, data, *title in row:
            attrs = ''.join(f' data-{k}="{_e(v)}"' for k, v in (data or {}).items())
            attrs += f' title="{_e(title[0])}"' if title and title[0] else ''
            cells.append(f'<td class="{_e(klass)}"{attrs}>{_e(text)}</td>')
        out.append('<tr>' + ''.join(cells) + '</tr>')
    return out + ['</table>']


def interval_note(cell) -> str:
    """How a cell's interval was made (read with getattr: older reports have no method or cluster count)."""
    method, clusters = getattr(cell, 'ci_method', None), getattr(cell, 'clusters', None)
    parts = [f'95% interval: {method}' if method else '']
    parts += [f'{clusters} clusters' if clusters and method != 'wilson' else '', f'n={cell.n}' if cell.n else '',
              cell.reason]
    return '; '.join(p for p in parts if p)


def _tier_table(report: dict, rows: list) -> List[str]:
    tiers = report['tiers']
    head = ['model', 'benchmark', 'row'] + tiers + ['mean', 'eff. len (NoLiMa)', 'eff. len (RULER)']
    out = []
    for r in rows:
        cells = [(r.model, 't', None), (r.bench, 't', None), (r.row, 't', None)]
        for t in tiers:
            c = r.cells.get(t)
            klass = '' if c is None else {'n/a': 'na', 'failed': 'fail', 'missing': 'na'}.get(c.status, '')
            cells.append(('' if c is None else c.text(True), klass,
                          None if c is None else dict(model=r.model, bench=r.bench, row=r.row, tier=t),
                          None if c is None else interval_note(c)))
        cells += [('-' if r.mean is None else f'{r.mean:.1f}' + ('*' if r.mean_note else ''), '', None),
                  (effective_text(r.effective.get('nolima')), '', dict(model=r.model, bench=r.bench, row=r.row,
                                                                        eff='nolima')),
                  (effective_text(r.effective.get('ruler')), '', dict(model=r.model, bench=r.bench, row=r.row,
                                                                       eff='ruler'))]
        out.append(cells)
    return _table(head, out, 'tiers')


def _methods_legend(rows: list) -> str:
    """One line: which interval methods the table's cells rest on, and on how many clusters."""
    seen: dict = {}
    for r in rows:
        for c in r.cells.values():
            method = getattr(c, 'ci_method', None)
            if c.status == 'ok' and method:
                seen.setdefault(method, []).append(getattr(c, 'clusters', None) or 0)
    if not seen:
        return ''
    parts = []
    for method, ks in seen.items():
        ks = [k for k in ks if k] if method != 'wilson' else []
        if method == 'wilson':
            parts.append(f'Wilson, every sample its own ({len(seen[method])} cells)')
            continue
        span = '' if not ks else f', {min(ks)} clusters' if min(ks) == max(ks) else f', {min(ks)}-{max(ks)} clusters'
        parts.append(f'{method} ({len(ks) or "no"} cells{span})' if ks else method)
    return 'Intervals in this table: ' + '; '.join(parts) + ' (hover a cell for its own).'


def testable(p) -> bool:
    """False for a comparison with no variance (the method says 'not testable'): never starred."""
    method = p.get('method') if isinstance(p, dict) else getattr(p, 'method', '')
    flag = p.get('testable') if isinstance(p, dict) else getattr(p, 'testable', None)
    return flag is not False and method != 'not testable'


def starred(p) -> bool:
    """The comparison's own ``significant`` (compare.Paired's rule; a leaderboard entry's ``vs`` is its asdict)."""
    if isinstance(p, dict) and 'significant' in p:
        return testable(p) and bool(p['significant'])
    return testable(p) and _as_paired(p).significant


def _as_paired(p):
    """A leaderboard entry's ``vs`` (asdict of compare.Paired) back as a Paired; a Paired as it is."""
    from opencompass_longctx.summarizers.compare import Paired
    if not isinstance(p, dict):
        return p
    names = {f.name for f in fields(Paired)}
    return Paired(**{k: v for k, v in p.items() if k in names})


def direction_text(a: str, b: str, diff: Optional[float], star: bool = False) -> str:
    """'a - b = +40.0': a difference with the order it was taken in."""
    return '' if diff is None else f'{a} - {b} = {diff:+.1f}' + (' *' if star else '')


def method_text(p) -> str:
    """compare.method_text where compare.py has one ('sign-flip (58 clusters)'), else the method and clusters."""
    from opencompass_longctx.summarizers import compare
    if hasattr(compare, 'method_text'):
        return compare.method_text(_as_paired(p))
    method = (p.get('method') if isinstance(p, dict) else p.method) or ''
    clusters = p.get('clusters') if isinstance(p, dict) else getattr(p, 'clusters', None)
    return method + (f' ({clusters} clusters)' if clusters and method != 'not testable' else '')


def _paired_table(table) -> List[str]:
    from opencompass_longctx.summarizers.compare import excluded_text, interval_text
    head = ['A', 'B', 'benchmark', 'row', 'tier', 'A - B', '95% interval', 'method', 'p', 'pairs', 'excluded',
            'note']
    rows = []
    for p in table:
        data = dict(a=p.a, b=p.b, bench=p.bench, row=p.row, tier=p.tier)
        sig = starred(p)
        rows.append([(p.a, 't', None), (p.b, 't', None), (p.bench, 't', None), (p.row, 't', None),
                     (p.tier, 't', None),
                     ('' if p.diff is None else f'{p.diff:+.1f}' + (' *' if sig else ''), 'sig' if sig else '', data,
                      direction_text(p.a, p.b, p.diff)),
                     (interval_text(p), '', None), (method_text(p), 'untestable' if not testable(p) else '', None),
                     ('' if p.p is None else f'{p.p:.3g}', '', None), (p.pairs, '', None),
                     (excluded_text(p), '', None), (p.note, 't', None)])
    return _table(head, rows, 'paired')


def _board(board, report: dict, rank_by: str) -> List[str]:
    holm = any('p_holm' in (e.get('vs') or {}) for e in board)
    decided = any(e.get('decision') for e in board)
    head = ['benchmark', 'row', 'rank', 'model', 'eff. len', 'mean', 'difference to the group leader',
            '95% interval', 'method'] + ['p (Holm)'] * holm + ['decision'] * decided
    by_row = {(r.model, r.bench, r.row): r for r in report['rows']}
    rows = []
    for e in board:
        vs = e.get('vs') or {}
        mine = by_row.get((e['model'], e['bench'], e['row']))
        eff = dict(mine.effective.get(rank_by) or {}) if mine else {}
        if e.get('effective_interval'):
            eff['interval'] = e['effective_interval']
        p_holm = vs.get('p_holm')
        a, b = vs.get('a', e.get('leader')), vs.get('b', e['model'])
        diff = vs.get('diff')
        text = direction_text(a, b, diff, starred(vs)) if diff is not None else vs.get('note', '')
        rows.append([(e['bench'], 't', None), (e['row'], 't', None), (e['rank'], 'rank', None),
                     (e['model'], 't', dict(bench=e['bench'], rank=e['rank'])),
                     (effective_text(dict(eff, contiguous=e.get('effective'))), '', None),
                     ('-' if e['mean'] is None else f'{e["mean"]:.1f}', '', None),
                     (text, 't', dict(bench=e['bench'], model=e['model'], vs='leader') if vs else None),
                     ('' if not vs or vs.get('lo') is None else f'[{vs["lo"]:+.1f}, {vs["hi"]:+.1f}]', '', None),
                     (method_text(vs) if vs else '', '', None)]
                    + [('' if p_holm is None else f'{p_holm:.3g}', '', None)] * holm
                    + [(e.get('decision') or '', 't', None)] * decided)
    return _table(head, rows, 'board')


def _list(title: str, items: Sequence[str]) -> List[str]:
    if not items:
        return []
    return [f'<h2>{_e(title)}</h2>', '<ul class="small">'] + [f'<li>{_e(x)}</li>' for x in items] + ['</ul>']


def _published(report: dict, rows: list) -> List[str]:
    """The published numbers' sources, only for the benchmarks where a model of the run has one."""
    benches = {r.bench for r in rows if r.published}
    src = report.get('references') or {}
    return _list('Published numbers', [f'{b}: {src[b]}' for b in src if b in benches and src[b]])


def rank_rule(rank_by: str) -> str:
    from opencompass_longctx.summarizers import compare
    rule = getattr(compare, 'RANK_RULE', None)
    return rule.format(rank_by=rank_by) if rule else (
        f'By effective length ({rank_by}), then mean. Models in one rank group are not significantly different '
        'from its leader (paired over the tiers both have).')


def methods_text() -> str:
    """What the paired table's methods mean: compare.py's own words where it has them."""
    from opencompass_longctx.summarizers import compare
    return getattr(compare, 'METHODS', None) or (
        '* and bold: the interval excludes 0; not testable: no variance, never starred. mcnemar: exact McNemar test '
        'and its exact interval (0/1 scores of equal weight); bootstrap: paired bootstrap within datasets '
        f'({compare.RESAMPLES} resamples, seeded).')


def page(report: dict, table, board, plots: Sequence[str], rank_by: str = 'ruler') -> str:
    """The page as one string (plots read from their PNG files and inlined)."""
    rows = shown_rows(report)
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<title>Long-context leaderboard</title>', f'<style>{_CSS}</style></head><body>',
             '<h1>Long-context leaderboard</h1>',
             f'<p class="small">opencompass-longctx {_e(report.get("package_version"))}; '
             f'runs: {_e(", ".join(report.get("runs") or []))}</p>']
    if board:
        parts += ['<h2>Ranking per benchmark</h2>',
                  f'<p class="small">{_e(rank_rule(rank_by))} "leader - model = +4.0": the group leader scores 4.0 '
                  'points more than this model; *: significant; not testable: the difference has no variance to '
                  'test, never starred.</p>']
        parts += _board(board, report, rank_by)
    left_out = sorted({f'{r.bench} {r.row}' for r in report['rows']} - {f'{r.bench} {r.row}' for r in rows})
    parts += ['<h2>Tier table</h2>', '<p class="small">Score (%) ± the half-width of its 95% interval; (k/n): the '
              'mean over k of the row\'s n datasets; N/A: the model cannot hold the tier; -: no result; FAIL: the task '
              'failed; ‡: not comparable with the other models of the column (see below); eff. len: the effective '
              'length and, in brackets, its 95% interval where it has one.</p>']
    legend = _methods_legend(rows)
    if legend:
        parts.append(f'<p class="small">{_e(legend)}</p>')
    parts += _tier_table(report, rows)
    if left_out:
        parts.append(f'<p class="small">Left out (no value for any model): {_e(", ".join(left_out))}.</p>')
    for mark, why in (report.get('footnotes') or {}).items():
        parts += _list(f'{mark} Not comparable', why)
    parts += _published(report, rows)
    if table:
        parts += ['<h2>Paired differences</h2>',
                  '<p class="small">A - B in percentage points over the samples both models ran (positive: A scores '
                  f'more; hover a difference for its names), 95% interval. {_e(methods_text())}</p>']
        parts += _paired_table(table)
    parts += _list('Failed or missing', [f.line() for f in report.get('failures') or []])
    parts += _list('Runs and merge notes', list(report.get('runs') or []) + list(report.get('merge_notes') or []))
    parts += _list('Notes', list(report.get('partial') or []) + list(report.get('notes') or []))
    if plots:
        parts += ['<h2>Plots</h2>', '<p class="small">One marker and line style per model, shifted sideways a little '
                  'so tied models stay visible; hollow marker with k/n: a partial row; marks below the 0 line: N/A or '
                  'FAIL at that tier, in the model\'s colour and marker.</p>', '<div>']
        for p in plots:
            with open(p, 'rb') as f:
                data = base64.b64encode(f.read()).decode()
            parts.append(f'<img alt="{_e(os.path.basename(p))}" src="data:image/png;base64,{data}">')
        parts.append('</div>')
    return '\n'.join(parts + ['</body></html>']) + '\n'


def find_chromium() -> Optional[str]:
    for name in ('chromium', 'chromium-browser', 'google-chrome'):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _chromium(args: Sequence[str], timeout: int = 120) -> subprocess.CompletedProcess:
    exe = find_chromium()
    if exe is None:
        raise RuntimeError(f'no headless browser: install Debian\'s chromium ({CHROMIUM_INSTALL})')
    with tempfile.TemporaryDirectory(prefix='longctx-chromium-') as profile:
        return subprocess.run([exe, *CHROMIUM_FLAGS, f'--user-data-dir={profile}', *args], capture_output=True,
                              text=True, timeout=timeout)


def dump_dom(html_path: str) -> str:
    """The page's DOM after the browser rendered it."""
    proc = _chromium(['--dump-dom', 'file://' + os.path.abspath(html_path)])
    if proc.returncode != 0 or '<table' not in proc.stdout:
        raise RuntimeError(f'chromium could not render {html_path} (exit {proc.returncode}): {proc.stderr[-2000:]}')
    return proc.stdout


def screenshot(html_path: str, png_path: str, width: int = 1400, height: int = 1800) -> str:
    proc = _chromium([f'--screenshot={os.path.abspath(png_path)}', f'--window-size={width},{height}',
                      '--run-all-compositor-stages-before-draw', '--virtual-time-budget=5000',
                      'file://' + os.path.abspath(html_path)])
    if proc.returncode != 0 or not os.path.isfile(png_path):
        raise RuntimeError(f'chromium wrote no screenshot of {html_path} (exit {proc.returncode}): '
                           f'{proc.stderr[-2000:]}')
    return png_path
