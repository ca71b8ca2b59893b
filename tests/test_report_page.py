"""What a reader of the leaderboard page and its plots sees (issue 26, issue 27 item 5): every difference names
its direction, every model stays visible on the plots (tied models, a score of 0, N/A and partial cells marked per
model), rows with no value anywhere are left out, and any model abbr (``org/model``, ``<script>``, quotes, ``..``,
leading dots) gives safe plot files and escaped HTML. The page is rendered in a real headless browser."""
import json
import os
from dataclasses import asdict, fields
from html.parser import HTMLParser

import pytest

from opencompass_longctx import __version__
from opencompass_longctx.writers import html, plots
from opencompass_longctx.leaderboard.compare import Paired
from opencompass_longctx.leaderboard.build import ModelInfo, build
from report_runs import CONFIG, report, report_runs  # noqa: F401 (report_runs: the fixture)
from test_report_html import need_chromium

NASTY = 'org/m <script>alert("x")</script> \'q\''
MODELS = ['tied-a', 'tied-b', 'org/model', NASTY]
BABI = {'tied-a': (80.0, 50.0, 0.0), 'tied-b': (80.0, 50.0, 0.0), 'org/model': (60.0, 40.0, None),
        NASTY: (20.0, None, None)}


def _write(work, model, abbr, acc, n=10, details=None):
    d = work / 'results' / model
    d.mkdir(parents=True, exist_ok=True)
    (d / f'{abbr}.json').write_text(json.dumps({
        'accuracy': acc, 'counts': [{'n': n, 'over_length': 0}], 'package_version': [__version__],
        'details': details or []}), encoding='utf-8')


def make_report(work):
    """Two tied models (a 0 at 2k), ``org/model`` that cannot hold 2k (N/A), a nasty abbr; LongBioBench with one
    of its 15 cells (a partial row, 1/6); NoLiMa with one-hop samples only (an empty two-hop row)."""
    abbrs = [f'babilong_qa{i}_{t}' for t in ('0k', '1k', '2k') for i in range(1, 6)]
    abbrs += ['longbio_standard_1k', 'nolima_main_1k']
    onehop = [{'question_type': ['onehop'], 'correct': [c], 'depth': [d]} for c, d in ((True, 0.1), (False, 0.7))]
    for m in MODELS:
        for t, acc in zip(('0k', '1k', '2k'), BABI[m]):
            for i in range(1, 6):
                if acc is not None:
                    _write(work, m, f'babilong_qa{i}_{t}', acc)
        _write(work, m, 'longbio_standard_1k', 100.0 if m.startswith('tied') else 30.0)
        _write(work, m, 'nolima_main_1k', 50.0, n=2, details=onehop)
    models = [ModelInfo(m, 1500 if m in ('org/model', NASTY) else 131072) for m in MODELS]
    return build(str(work), models, abbrs)


def _paired(*args, **kw) -> Paired:
    """A Paired with the fields this version of compare.py has (``clusters`` and ``testable`` are newer)."""
    names = {f.name for f in fields(Paired)}
    return Paired(*args, **{k: v for k, v in kw.items() if k in names})


def board_and_table():
    """A ranking and paired table as compare.py gives them: the leader first in ``vs`` (vs.a - vs.b), the paired
    table in the other order; one comparison with no variance ('not testable', a zero-width interval at +6.7)."""
    untestable = _paired('tied-a', 'tied-b', 'babilong', 'qa1-qa5', 'mean', diff=6.7, lo=6.7, hi=6.7,
                         method='not testable', pairs=15, note='no variance', testable=False, clusters=15)
    lead = _paired('tied-a', 'org/model', 'babilong', 'qa1-qa5', 'mean', diff=13.3, lo=5.0, hi=20.0,
                   method='mcnemar', p=0.01, pairs=30, clusters=30)
    nasty = _paired('tied-a', NASTY, 'babilong', 'qa1-qa5', 'mean', diff=60.0, lo=40.0, hi=70.0, method='mcnemar',
                    p=0.001, pairs=30, clusters=30)
    entry = dict(bench='babilong', row='qa1-qa5', effective='1k', mean=40.0)
    board = [dict(entry, rank=1, model='tied-a', vs=None, leader=None),
             dict(entry, rank=1, model='tied-b', vs=dict(asdict(untestable), testable=False, clusters=15),
                  leader='tied-a'),
             dict(entry, rank=2, model='org/model', vs=dict(asdict(lead), clusters=30), leader='tied-a'),
             dict(entry, rank=3, model=NASTY, vs=dict(asdict(nasty), clusters=30), leader='tied-a')]
    reverse = _paired('org/model', 'tied-a', 'babilong', 'qa1-qa5', 'mean', diff=-13.3, lo=-20.0, hi=-5.0,
                      method='mcnemar', p=0.01, pairs=30, clusters=30)
    return board, [reverse, untestable]


class Dom(HTMLParser):
    """The rendered page's <td> cells (text, title) keyed by their data-* attributes; all <tr> rows as texts."""

    def __init__(self):
        super().__init__()
        self.cells, self.rows, self.tags, self._td, self._row = {}, [], [], None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == 'tr':
            self._row = []
        if tag == 'td':
            self._td = (tuple(sorted((k[5:], v) for k, v in attrs.items() if k.startswith('data-'))),
                        attrs.get('title'), [])

    def handle_data(self, data):
        if self._td is not None:
            self._td[2].append(data)

    def handle_endtag(self, tag):
        if tag == 'td' and self._td is not None:
            key, title, text = self._td
            text = ''.join(text).strip()
            if key:
                self.cells[key] = (text, title)
            self._row.append(text)
            self._td = None
        if tag == 'tr' and self._row is not None:
            self.rows.append(self._row)
            self._row = None


def _key(**kw):
    return tuple(sorted(kw.items()))


def test_file_part_is_safe_and_keeps_names_apart():
    names = ['org/model', 'org model', 'org_model', 'org:model', '..', '.hidden', '../../etc', 'ü-model', NASTY,
             'a' * 200, 'plain-1.5b']
    parts = [plots.file_part(n) for n in names]
    assert len(set(parts)) == len(names), parts
    for n, p in zip(names, parts):
        assert os.path.basename(p) == p and not p.startswith('.') and '..' not in p and len(p) < 80, (n, p)
        assert all(ch.isascii() and (ch.isalnum() or ch in '_.-') for ch in p), (n, p)
    assert plots.file_part('plain-1.5b') == 'plain-1.5b' and plots.file_part('org/model').startswith('org_model-')


def test_plots_keep_every_model_visible_and_mark_na_and_partial(tmp_path, monkeypatch):
    rep = make_report(tmp_path / 'run')
    out = tmp_path / 'plots'
    written = plots.plot_report(rep, str(out))  # the old code: FileNotFoundError for depth_nolima_org/model.png
    assert written and all(os.path.dirname(p) == str(out) for p in written), written
    assert sorted(os.listdir(out)) == sorted(os.path.basename(p) for p in written)
    assert len([p for p in written if os.path.basename(p).startswith('depth_nolima_')]) == len(MODELS)
    assert not (tmp_path / 'plots' / 'org').exists()

    drawn = {}
    monkeypatch.setattr(plots, '_save', lambda plt, fig, out_dir, name: drawn.setdefault(name, fig) and name)
    plots.plot_report(rep, str(tmp_path / 'again'))
    ax = drawn['score_vs_tier_babilong_qa1-qa5.png'].axes[0]
    assert ax.get_ylim()[0] < -5  # a score of 0 is a point above the axis' lower edge, not the edge itself
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # the legend lists the models from the best mean over their own tiers (org/model: 50, tied: 43.3, nasty: 20)
    assert labels[:4] == ['org/model', 'tied-a', 'tied-b', NASTY], labels
    assert 'band: 95% interval' in labels
    lines = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_label() in MODELS}  # each model's data line
    a, b = lines['tied-a'], lines['tied-b']
    assert list(a.get_ydata()) == list(b.get_ydata()) == [80.0, 50.0, 0.0]  # tied, and 0 drawn
    assert (a.get_marker(), a.get_linestyle()) != (b.get_marker(), b.get_linestyle())
    assert all(xa != xb for xa, xb in zip(a.get_xdata(), b.get_xdata()))  # side by side, not one over the other
    # N/A at 2k for org/model: a mark of its own colour and marker below 0, labelled N/A
    org = lines['org/model']
    na = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [plots.NA_Y] and ln.get_color() == org.get_color()]
    assert len(na) == 1 and abs(na[0].get_xdata()[0] - 2) < 0.3 and na[0].get_marker() == org.get_marker()
    assert [t.get_text() for t in ax.texts].count('N/A') == 2  # 2k: org/model and the nasty abbr
    # the partial LongBioBench row: a hollow marker with its k/n, and the legend says what hollow means
    lb = drawn['score_vs_tier_longbio_understanding.png'].axes[0]
    assert '1/6' in [t.get_text() for t in lb.texts]
    assert any(ln.get_markerfacecolor() == 'white' and list(ln.get_ydata()) == [100.0] for ln in lb.get_lines())
    assert any('k/n' in t.get_text() for t in lb.get_legend().get_texts())


def test_plots_drawn_in_a_worker_are_the_plots_drawn_here(tmp_path, monkeypatch):
    """longctx-report draws the plots in a spawned worker while it compares (start_plots): the same files, byte for
    byte, as drawing them in this process; with one core they are drawn here, before start_plots returns."""
    rep = make_report(tmp_path / 'run')
    here = plots.plot_report(rep, str(tmp_path / 'here'))
    monkeypatch.setattr('opencompass_longctx.parallel.available_cores', lambda: 2)
    pending = plots.start_plots(rep, str(tmp_path / 'worker'))
    there = pending()
    assert [os.path.basename(p) for p in there] == [os.path.basename(p) for p in here] and len(here) > 1
    assert all(open(a, 'rb').read() == open(b, 'rb').read() for a, b in zip(here, there))
    monkeypatch.setattr('opencompass_longctx.parallel.available_cores', lambda: 1)
    monkeypatch.setattr('concurrent.futures.ProcessPoolExecutor', None)   # no worker may be started
    pending = plots.start_plots(rep, str(tmp_path / 'one-core'))
    assert sorted(os.listdir(tmp_path / 'one-core')) == sorted(os.path.basename(p) for p in here)
    assert [os.path.basename(p) for p in pending()] == [os.path.basename(p) for p in here]


@pytest.mark.browser
def test_page_in_a_browser_states_directions_hides_empty_rows_and_escapes_names(tmp_path):
    need_chromium()
    rep = make_report(tmp_path / 'run')
    assert any(r.row == 'main two-hop' for r in rep.rows)  # in the report, with no value for any model
    board, table = board_and_table()
    written = plots.plot_report(rep, str(tmp_path / 'plots'))
    page = tmp_path / 'page.html'
    page.write_text(html.page(rep, table, board, written), encoding='utf-8')
    raw = page.read_text(encoding='utf-8')
    assert '<script' not in raw and '&lt;script&gt;' in raw
    dom = Dom()
    text = html.dump_dom(str(page))
    dom.feed(text)
    assert 'script' not in dom.tags
    # the ranking: leader - model, the same sign the paired table gives under its own order
    vs = {m: dom.cells[_key(bench='babilong', model=m, vs='leader')][0] for m in ('tied-b', 'org/model', NASTY)}
    assert vs['org/model'] == 'tied-a - org/model = +13.3 *', vs
    assert vs[NASTY] == f'tied-a - {NASTY} = +60.0 *', vs  # escaped in the file, the name itself in the browser
    assert vs['tied-b'] == 'tied-a - tied-b = +6.7', vs  # not testable: never starred
    (untestable_row,) = [r for r in dom.rows if r[:2] == ['tied-a', 'tied-b']]
    assert 'not testable' in untestable_row and '+6.7' in untestable_row
    cell, title = dom.cells[_key(a='org/model', b='tied-a', bench='babilong', row='qa1-qa5', tier='mean')]
    assert cell == '-13.3 *' and title == 'org/model - tied-a = -13.3'
    # rows with no value for any model are left out (and named once); rows with values stay
    shown = {(r[1], r[2]) for r in dom.rows if len(r) > 3 and r[0] in MODELS}
    assert ('nolima', 'main two-hop') not in shown and ('longbio', 'mean') not in shown
    assert {('nolima', 'main'), ('nolima', 'main one-hop'), ('babilong', 'qa1-qa5'),
            ('longbio', 'understanding')} <= shown
    flat = ' '.join(text.split())   # (under each benchmark's full table)
    assert 'Left out (no value for any model): longbio mean.' in flat
    assert 'Left out (no value for any model): nolima main two-hop.' in flat
    assert 'Published numbers' not in text  # no model of this run has a published counterpart
    # the cells: N/A, a zero, a partial mean, the nasty abbr's cells keyed by its real name
    cells = {t: dom.cells[_key(model='org/model', bench='babilong', row='qa1-qa5', tier=t)][0] for t in ('0k', '2k')}
    assert cells['2k'] == 'N/A' and cells['0k'].startswith('60.0 [')
    assert dom.cells[_key(model='tied-a', bench='babilong', row='qa1-qa5', tier='2k')][0].startswith('0.0 [0.0, ')
    assert dom.cells[_key(model='tied-a', bench='longbio', row='understanding', tier='1k')][0].endswith('(1/6)')
    assert dom.cells[_key(model=NASTY, bench='babilong', row='qa1-qa5', tier='0k')][0].startswith('20.0 [')
    shot = html.screenshot(str(page), str(tmp_path / 'page.png'))
    assert os.path.getsize(shot) > 20000
    keep = os.environ.get('LONGCTX_KEEP_PAGE')  # a directory: keep the page and its screenshot there to look at
    if keep:
        import shutil
        os.makedirs(keep, exist_ok=True)
        for p in [page, shot] + written:
            shutil.copy(p, keep)


def test_new_statistics_show_when_the_report_has_them(tmp_path):
    """Cell.ci_method / Cell.clusters and the effective length's interval (report.build adds them): the page shows
    them in the legend, each cell's title and the eff. len column, and works without them."""
    rep = make_report(tmp_path / 'run')
    for r in rep.rows:   # a report written before the statistics had methods and effective-length intervals
        for c in r.cells.values():
            c.ci_method, c.clusters = '', 0
        for eff in r.effective.values():
            eff.interval = None
    before = html.page(rep, [], [], [])
    assert 'Intervals in this table' not in before
    for r in rep.rows:
        for c in r.cells.values():
            c.ci_method, c.clusters = 'cluster bootstrap', 58
        r.effective['ruler'].interval = ['1k', '2k']
    dom = Dom()
    dom.feed(html.page(rep, [], [], []))
    text, title = dom.cells[_key(model='tied-a', bench='babilong', row='qa1-qa5', tier='0k')]
    assert title.startswith('95% interval: cluster bootstrap; 58 clusters; n=50'), title
    eff = dom.cells[_key(model='tied-a', bench='babilong', row='qa1-qa5', eff='ruler')][0]
    assert eff == f"{rep.rows[0].effective['ruler'].contiguous} [1k-2k]"
    assert 'Intervals in this table: cluster bootstrap' in html.page(rep, [], [], [])


@pytest.mark.e2e
@pytest.mark.browser
def test_a_real_run_under_a_nested_abbr_writes_its_plots_and_page(report_runs, tmp_path):
    """`opencompass` with the abbr 'org/.rule reader ü v1..2' and plots on (the old plots.py: FileNotFoundError,
    exit 1), then `longctx-report` of that run and the tiny model's: every plot inside its directory, the page
    shows the abbr as written."""
    from conftest import run_opencompass
    need_chromium()
    nested = 'org/.rule reader ü v1..2'
    root = report_runs['root']
    env = {'LONGCTX_TEST_DATA': str(root / 'babilong'), 'NOLIMA_TEST_DATA': str(root / 'nolima'),
           'LONGCTX_CACHE_DIR': str(root / 'cache'), 'LONGCTX_REPORT_MODEL': 'rule', 'LONGCTX_REPORT_TIERS': '0k',
           'LONGCTX_REPORT_ABBR': nested}
    work = tmp_path / 'out_nested_plots'
    proc = run_opencompass([str(CONFIG.with_name('report_run_abbr_plots.py')), '-w', str(work)], root, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = [os.path.join(work, d) for d in os.listdir(work)]
    (plot_dir,) = [os.path.join(run, 'summary', d) for d in os.listdir(os.path.join(run, 'summary'))
                   if d.endswith('_plots')]
    files = os.listdir(plot_dir)
    assert any(f.startswith('depth_nolima_org_.rule_reader_v1.2-') for f in files), files
    assert all(os.path.isfile(os.path.join(plot_dir, f)) for f in files)  # no nested folder from the abbr
    out = tmp_path / 'merged'
    proc = report(run, report_runs['tiny'], '-o', out)
    assert proc.returncode == 0 and 'Traceback' not in proc.stderr, proc.stderr[-3000:]
    plots_out = out / 'longctx_report_plots'
    assert all(p.is_file() for p in plots_out.iterdir()) and not (plots_out / 'org').exists()
    dom = Dom()
    dom.feed(html.dump_dom(str(out / 'longctx_leaderboard.html')))
    assert dom.cells[_key(model=nested, bench='babilong', row='qa1-qa5', tier='0k')][0].startswith('40.0')
    ranked = [t for k, (t, _) in dom.cells.items() if ('vs', 'leader') in k and t]
    assert ranked and all(' - ' in t and ' = ' in t for t in ranked if t[0] not in 'n'), ranked
