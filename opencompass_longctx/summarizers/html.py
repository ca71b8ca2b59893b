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
from typing import List, Optional, Sequence

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
td.sig { font-weight: bold; background: #e8f4e8; } td.na { color: #888; } td.fail { color: #b00; }
tr.g1 td.rank { background: #dfe9f7; } .small { font-size: 0.8em; color: #555; }
img { max-width: 48%; margin: 0.3em; border: 1px solid #ddd; }
"""


def _e(v) -> str:
    return html.escape('' if v is None else str(v))


def _table(head: Sequence[str], rows: Sequence[Sequence[tuple]], cls: str) -> List[str]:
    """rows: [(text, css class, {data attributes})] per cell."""
    out = [f'<table class="{cls}">', '<tr>' + ''.join(f'<th>{_e(h)}</th>' for h in head) + '</tr>']
    for row in rows:
        cells = []
        for text, klass, data in row:
            attrs = ''.join(f' data-{k}="{_e(v)}"' for k, v in (data or {}).items())
            cells.append(f'<td class="{klass}"{attrs}>{_e(text)}</td>')
        out.append('<tr>' + ''.join(cells) + '</tr>')
    return out + ['</table>']


def _tier_table(report: dict) -> List[str]:
    tiers = report['tiers']
    head = ['model', 'benchmark', 'row'] + tiers + ['mean', 'eff. len (NoLiMa)', 'eff. len (RULER)']
    rows = []
    for r in report['rows']:
        cells = [(r.model, 't', None), (r.bench, 't', None), (r.row, 't', None)]
        for t in tiers:
            c = r.cells.get(t)
            klass = '' if c is None else {'n/a': 'na', 'failed': 'fail', 'missing': 'na'}.get(c.status, '')
            cells.append(('' if c is None else c.text(True), klass,
                          None if c is None else dict(model=r.model, bench=r.bench, row=r.row, tier=t)))
        cells += [('-' if r.mean is None else f'{r.mean:.1f}' + ('*' if r.mean_note else ''), '', None),
                  (r.effective['nolima'].get('contiguous') or '-', '', None),
                  (r.effective['ruler'].get('contiguous') or '-', '', None)]
        rows.append(cells)
    return _table(head, rows, 'tiers')


def _paired_table(table) -> List[str]:
    from .compare import excluded_text, interval_text
    head = ['A', 'B', 'benchmark', 'row', 'tier', 'A - B', '95% interval', 'method', 'p', 'pairs', 'excluded',
            'note']
    rows = []
    for p in table:
        data = dict(a=p.a, b=p.b, bench=p.bench, row=p.row, tier=p.tier)
        rows.append([(p.a, 't', None), (p.b, 't', None), (p.bench, 't', None), (p.row, 't', None),
                     (p.tier, 't', None),
                     ('' if p.diff is None else f'{p.diff:+.1f}' + (' *' if p.significant else ''),
                      'sig' if p.significant else '', data),
                     (interval_text(p), '', None), (p.method, '', None),
                     ('' if p.p is None else f'{p.p:.3g}', '', None), (p.pairs, '', None),
                     (excluded_text(p), '', None), (p.note, 't', None)])
    return _table(head, rows, 'paired')


def _board(board) -> List[str]:
    head = ['benchmark', 'row', 'rank', 'model', 'eff. len', 'mean', 'vs group leader', '95% interval']
    rows = []
    for e in board:
        vs = e['vs'] or {}
        rows.append([(e['bench'], 't', None), (e['row'], 't', None), (e['rank'], 'rank', None),
                     (e['model'], 't', dict(bench=e['bench'], rank=e['rank'])), (e['effective'] or '-', '', None),
                     ('-' if e['mean'] is None else f'{e["mean"]:.1f}', '', None),
                     ('' if not vs else f'{vs["diff"]:+.1f}' if vs['diff'] is not None else vs['note'], '', None),
                     ('' if not vs or vs['lo'] is None else f'[{vs["lo"]:+.1f}, {vs["hi"]:+.1f}]', '', None)])
    return _table(head, rows, 'board')


def _list(title: str, items: Sequence[str]) -> List[str]:
    if not items:
        return []
    return [f'<h2>{_e(title)}</h2>', '<ul class="small">'] + [f'<li>{_e(x)}</li>' for x in items] + ['</ul>']


def page(report: dict, table, board, plots: Sequence[str], rank_by: str = 'ruler') -> str:
    """The page as one string (plots read from their PNG files and inlined)."""
    from .compare import RESAMPLES
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<title>Long-context leaderboard</title>', f'<style>{_CSS}</style></head><body>',
             '<h1>Long-context leaderboard</h1>',
             f'<p class="small">opencompass-longctx {_e(report.get("package_version"))}; '
             f'runs: {_e(", ".join(report.get("runs") or []))}</p>']
    if board:
        parts += ['<h2>Ranking per benchmark</h2>',
                  f'<p class="small">By effective length ({_e(rank_by)}), then mean. Models in one rank group are '
                  'not significantly different from its leader (paired over the tiers both have).</p>']
        parts += _board(board)
    parts += ['<h2>Tier table</h2>', '<p class="small">Score (%) ± the half-width of its 95% interval; N/A: the '
              'model cannot hold the tier; -: no result; FAIL: the task failed; ‡: not comparable with the other '
              'models of the column (see below).</p>']
    parts += _tier_table(report)
    for mark, why in (report.get('footnotes') or {}).items():
        parts += _list(f'{mark} Not comparable', why)
    if table:
        parts += ['<h2>Paired differences</h2>',
                  '<p class="small">A - B in percentage points over the samples both models ran, 95% interval; * and '
                  'bold: the interval excludes 0. mcnemar: exact McNemar test and its exact interval (0/1 scores of '
                  f'equal weight); bootstrap: paired bootstrap within datasets ({RESAMPLES} resamples, seeded).</p>']
        parts += _paired_table(table)
    parts += _list('Failed or missing', [f.line() for f in report.get('failures') or []])
    parts += _list('Runs and merge notes', list(report.get('runs') or []) + list(report.get('merge_notes') or []))
    parts += _list('Notes', list(report.get('partial') or []) + list(report.get('notes') or []))
    if plots:
        parts.append('<h2>Plots</h2><div>')
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
