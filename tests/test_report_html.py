"""The merged leaderboard as one self-contained HTML page (issue 19), opened in a real headless browser (Debian's
chromium): the rendered DOM's cells show the numbers of the CSV files; a screenshot is kept beside the page."""
import json
import os
import re
from html.parser import HTMLParser

import pytest

from opencompass_longctx.writers.html import CHROMIUM_INSTALL, dump_dom, find_chromium
from report_runs import read_csv, report, report_runs  # noqa: F401 (report_runs: the fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


def need_chromium():
    if find_chromium():
        return
    msg = f'no headless browser for the leaderboard page test: install Debian\'s chromium ({CHROMIUM_INSTALL})'
    if os.environ.get('CI'):
        pytest.fail(msg)
    pytest.skip(msg)


class Cells(HTMLParser):
    """Every <td> with data-* attributes: {attrs: text}; and every src/href the page refers to."""

    def __init__(self):
        super().__init__()
        self.cells, self.refs, self._at, self._text = {}, [], None, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.refs += [(tag, attrs[k]) for k in ('src', 'href') if k in attrs]
        if tag == 'td':
            self._at = tuple(sorted((k[5:], v) for k, v in attrs.items() if k.startswith('data-')))
            self._text = []

    def handle_data(self, data):
        if self._at is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == 'td' and self._at is not None:
            if self._at:
                self.cells[self._at] = ''.join(self._text).strip()
            self._at = None


def test_the_page_renders_the_csv_numbers_offline(report_runs, tmp_path):
    need_chromium()
    out = tmp_path / 'merged'
    proc = report(report_runs['tiny'], report_runs['rule'], '-o', out, '--screenshot')
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = out / 'longctx_leaderboard.html'
    dom = Cells()
    dom.feed(dump_dom(str(page)))
    # self-contained: no reference leaves the file (plots are data: URIs, links go to the page's own sections), no
    # script or stylesheet is loaded
    assert dom.refs and all(ref.startswith(('data:image/png;base64,', '#')) for _, ref in dom.refs), dom.refs[:3]
    assert any(ref.startswith('data:') for _, ref in dom.refs)
    assert not re.search(r'<(script|link)\b', page.read_text())
    # the tier table: each cell shows the CSV's score (or N/A / -), with its interval
    tier_rows = read_csv(out / 'longctx_report.csv')
    assert len(tier_rows) > 20
    filled = {(r['benchmark'], r['row']) for r in tier_rows if r['status'] in ('ok', 'failed') or r['cells_used']}
    for r in tier_rows:
        key = tuple(sorted(dict(bench=r['benchmark'], model=r['model'], row=r['row'], tier=r['tier']).items()))
        if (r['benchmark'], r['row']) not in filled:  # nothing for any model (all '-'): left out of the page
            assert key not in dom.cells, r
            continue
        text = dom.cells[key]
        if r['status'] == 'ok' and r['ci_lo']:
            assert text.startswith(f"{float(r['score']):.1f} [{float(r['ci_lo']):.1f}, {float(r['ci_hi']):.1f}]"), (r, text)
            assert 0 <= float(r['ci_lo']) <= float(r['score']) <= float(r['ci_hi']) <= 100, r
        elif r['status'] == 'ok':   # a clustered cell on too few clusters: no interval, and it says so
            assert r['ci_method'] == 'clustered' and int(r['clusters']) < 10, r
            k = int(r['clusters'])
            assert text.startswith(f"{float(r['score']):.1f} [? {k} cluster{'s' * (k != 1)}]"), (r, text)
        else:
            assert text == {'n/a': 'N/A', 'missing': '-', 'failed': 'FAIL'}[r['status']], (r, text)
    # the paired table: each difference as in the CSV, starred where the interval excludes 0
    paired = [r for r in read_csv(out / 'longctx_compare.csv') if r['diff']]
    assert paired
    for r in paired:
        text = dom.cells[tuple(sorted(dict(a=r['a'], b=r['b'], bench=r['benchmark'], row=r['row'],
                                           tier=r['tier']).items()))]
        assert text == f"{float(r['diff']):+.1f}" + (' *' if r['significant'] == '1' else ''), (r, text)
    assert dom.cells[(('bench', 'babilong'), ('rank', '1'))] == 'rule-reader'
    # the ranking names its direction (leader - model), and agrees in sign with the paired table's own order
    board = json.loads((out / 'longctx_compare.json').read_text())['leaderboard']
    behind = [e for e in board if e['vs'] and e['vs']['diff'] is not None]
    assert behind
    for e in behind:
        vs = e['vs']
        text = dom.cells[(('bench', e['bench']), ('model', e['model']), ('vs', 'leader'))]
        assert text.startswith(f"{vs['a']} - {vs['b']} = {vs['diff']:+.1f}") and vs['a'] == e['leader'], (e, text)
        (row,) = [r for r in paired if r['benchmark'] == e['bench'] and r['row'] == e['row'] and r['tier'] == 'mean'
                  and {r['a'], r['b']} == {vs['a'], vs['b']}]
        sign = 1 if (row['a'], row['b']) == (vs['a'], vs['b']) else -1
        assert abs(sign * float(row['diff']) - vs['diff']) < 0.05, (row, vs)
    shot = out / 'longctx_leaderboard.png'  # kept beside the page, in the merged summary directory
    assert shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and shot.stat().st_size > 20000
