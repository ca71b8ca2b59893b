"""The leaderboard page read at a glance (issue 37): one color scale every cell is read against (monotone, text
readable on every step, N/A / FAIL / no result never on the scale), the heatmaps' data from the report (each
dataset's score, FAIL from the task's own failure, N/A, partial means, depths), and the page in a real headless
browser: heatmaps and the leaderboard colored by score (the computed colors), nothing wider than a 1400 px window,
the screenshot the whole document."""
import json
import os

import pytest

from opencompass_longctx.writers import browser, heatmaps as hm, html, plots
from opencompass_longctx.leaderboard.failures import Failure
from report_runs import report
from test_report_html import need_chromium
from test_report_page import MODELS, NASTY, board_and_table, make_report


def _grid(rep, bench, model):
    g = hm.task_grid(rep, bench, model)
    return {line.label: line for line in g.lines}


def test_the_scale_is_monotone_and_its_text_reads_on_every_step():
    lum = [hm.luminance(hm.scale_rgb(k)) for k in range(101)]
    assert all(a < b for a, b in zip(lum, lum[1:]))   # a higher score is always lighter: one reading, also in grey
    for k in range(101):
        bg = hm.scale_rgb(k)
        assert hm.contrast(bg, hm.text_rgb(bg)) >= 4.5, (k, bg)   # WCAG AA for small text
    assert hm.scale_rgb(0) == (0x44, 0x01, 0x54) and hm.scale_rgb(100) == (0xfd, 0xe7, 0x25)
    assert hm.scale_rgb(-3) == hm.scale_rgb(0) and hm.scale_rgb(140) == hm.scale_rgb(100)
    css = hm.scale_css()
    assert css.count('.s') >= 101 and '.s55{background:' in css
    # cells that are not scores never take a scale color
    assert {hm.HeatCell(s).css() for s in ('n/a', 'failed', 'missing')} == {'hna', 'hfail', 'hnone'}
    assert hm.HeatCell('ok', 0.0).css() == 's0' and hm.HeatCell('ok', 55.4, partial='1/6').css() == 's55 hpart'


def test_task_grid_holds_each_datasets_score_na_partial_and_its_own_failure(tmp_path):
    rep = make_report(tmp_path / 'run')
    lines = _grid(rep, 'babilong', 'tied-a')
    assert list(lines) == ['qa1', 'qa2', 'qa3', 'qa4', 'qa5', 'qa1-qa5 (mean)']
    assert [lines['qa3'].cells[t].score for t in ('0k', '1k', '2k')] == [80.0, 50.0, 0.0]
    assert lines['qa1-qa5 (mean)'].mean and not lines['qa1'].mean
    assert lines['qa1'].cells['2k'].css() == 's0' and lines['qa1'].cells['2k'].text() == '0'   # a real 0
    org = _grid(rep, 'babilong', 'org/model')
    assert org['qa2'].cells['2k'].status == 'n/a' and org['qa2'].cells['2k'].text() == 'N/A'
    nasty = _grid(rep, 'babilong', NASTY)
    assert nasty['qa1'].cells['1k'].status == 'missing' and nasty['qa1'].cells['1k'].text() == '-'
    # LongBioBench: the one cell run, then its category's mean over 1 of its 6 cells (partial, marked)
    bio = _grid(rep, 'longbio', 'tied-a')
    assert list(bio) == ['standard', 'understanding (mean)']
    assert bio['understanding (mean)'].cells['1k'].partial == '1/6'
    assert 'hpart' in bio['understanding (mean)'].cells['1k'].css()
    # NoLiMa: a line per shown row (two-hop has no value for any model: left out, as in the tier table)
    assert list(_grid(rep, 'nolima', 'tied-a')) == ['main', 'main one-hop']
    # a task that failed is FAIL; its row's other datasets have no score of their own in the report: '-', not 0
    row = next(r for r in rep.rows if (r.model, r.bench, r.row) == ('tied-a', 'babilong', 'qa1-qa5'))
    row.cells['1k'].status, row.cells['1k'].tasks, row.cells['1k'].reason = 'failed', {}, 'qa3: boom'
    rep.failures = [Failure('tied-a', 'babilong_qa3_1k', 'infer', 'RuntimeError: boom')]
    lines = _grid(rep, 'babilong', 'tied-a')
    assert lines['qa3'].cells['1k'].css() == 'hfail' and 'boom' in lines['qa3'].cells['1k'].title
    assert lines['qa1'].cells['1k'].css() == 'hnone' and lines['qa1'].cells['0k'].score == 80.0


def test_depth_grids_keep_the_depths_that_have_samples(tmp_path):
    rep = make_report(tmp_path / 'run')
    grids = hm.depth_grids(rep)
    assert set(grids) == {('nolima', m) for m in MODELS}
    lines = {line.label: line for line in grids['nolima', 'tied-a'].lines}
    # the one-hop samples sit at depths 0.1 (correct) and 0.7 (wrong): two bins, 100 and 0
    assert {k: v.cells['1k'].score for k, v in lines.items()} == {'10-20%': 100.0, '70-80%': 0.0}
    assert '1/1 correct' in lines['10-20%'].cells['1k'].title
    assert plots.heatmaps(rep)[0]['counts'][1][0] == (1, 1)


def test_heatmap_html_is_escaped_and_carries_what_it_shows(tmp_path):
    rep = make_report(tmp_path / 'run')
    board, table = board_and_table()
    raw = html.page(rep, table, board, [])
    assert '<script' not in raw and '&lt;script&gt;' in raw
    assert raw.count('<table class="heat"') == 3 * len(MODELS) + len(MODELS)   # 3 benchmarks + NoLiMa's depths
    assert f'data-model="{html._e(NASTY)}"' in raw and 'data-line="qa1-qa5 (mean)"' in raw
    # the colored leaderboard: one per ranked benchmark, in the board's order, ranks and differences shown
    assert raw.count('<table class="lb"') == 1 and raw.index('id="leaderboard"') < raw.index('class="heat"')
    assert '+13.3 [+5.0, +20.0] *' in raw and '+6.7 [+6.7, +6.7]<' in raw   # not testable: no star
    # every symbol the tables use is in the key
    for symbol in ('‡', '†', '[? k clusters]', '(k/n)', 'N/A', 'FAIL', '-: no result', '[lo, hi]'):
        assert symbol in raw, symbol


def _colors_js():
    """For every colored cell (heatmaps and leaderboards): its table, line, text, computed colors and outline."""
    return ('Array.from(document.querySelectorAll("table.heat td, table.lb td[data-tier]")).map(function (td) {'
            ' var s = getComputedStyle(td), t = td.closest("table"), tr = td.closest("tr");'
            ' return {kind: t.className, model: t.dataset.model || tr.dataset.model, line: tr.dataset.line || "",'
            ' text: td.firstChild ? td.firstChild.textContent : "", cls: td.className, bg: s.backgroundColor,'
            ' image: s.backgroundImage, fg: s.color, outline: s.outlineStyle}; })')


def _rgb(css):
    return tuple(int(x) for x in css[css.index('(') + 1:css.index(')')].split(',')[:3])


@pytest.mark.browser
def test_page_in_a_browser_colors_every_cell_by_its_score_and_fits_1400px(tmp_path):
    need_chromium()
    rep = make_report(tmp_path / 'run')
    board, table = board_and_table()
    page = tmp_path / 'page.html'
    page.write_text(html.page(rep, table, board, plots.plot_report(rep, str(tmp_path / 'plots'))), encoding='utf-8')
    found = browser.probe(str(page), 1400, _colors_js())
    assert found['window'] == 1400 and found['width'] <= 1400, found   # nothing sticks out of the window
    cells = found['extra']
    heat = [c for c in cells if c['kind'] == 'heat']
    assert {c['model'] for c in heat} == set(MODELS)   # the nasty abbr as itself, escaped in the file
    scored = [c for c in cells if c['text'].replace('.', '').isdigit()]
    assert len(scored) > 50
    for c in scored:   # the computed background is the scale's color of the number shown in the cell
        assert _rgb(c['bg']) == hm.scale_rgb(round(float(c['text']))), c
        assert hm.contrast(_rgb(c['bg']), _rgb(c['fg'])) >= 4.5, c
    by_text = {c['text']: c for c in heat}
    assert _rgb(by_text['0']['bg']) == hm.scale_rgb(0) != _rgb(by_text['80']['bg'])   # a 0 is a color, dark
    na = [c for c in cells if c['text'] == 'N/A']
    assert na and all('repeating-linear-gradient' in c['image'] for c in na)   # N/A hatched, never a low score
    assert all(_rgb(c['bg']) not in {hm.scale_rgb(k) for k in range(101)} for c in na)
    none = [c for c in heat if c['text'] == '-']
    assert none and all(_rgb(c['bg']) == (255, 255, 255) for c in none)
    partial = [c for c in heat if 'hpart' in c['cls']]
    assert partial and all('linear-gradient' in c['image'] for c in partial)   # the corner mark


@pytest.mark.e2e
@pytest.mark.browser
def test_report_of_many_models_fits_the_window_and_the_screenshot_is_the_whole_page(tmp_path):
    """A finished run of 14 models (long and nasty abbrs), through longctx-report --screenshot: the page is no
    wider than 1400 px, and its picture is the whole document."""
    need_chromium()
    from opencompass_longctx.demo.synthetic_run import write_run
    models = [f'org/model-{k:02d}' + ('-with-a-very-long-name-for-a-checkpoint-v1.5-instruct' if k % 5 == 0 else '')
              for k in range(13)] + [NASTY]
    tiers = {'babilong': ['0k', '2k', '8k', '32k', '128k'], 'nolima': ['250', '1k', '4k', '16k'],
             'longbio': ['0k', '2k', '8k']}
    run = write_run(str(tmp_path / 'work' / '20260101_000000'), models,
                    lambda m, b, t: max(0.05, 0.95 - 0.05 * models.index(m) - 0.1 * tiers[b].index(t)), tiers,
                    samples=12, entries=8, per_entry=3)
    out = tmp_path / 'out'
    proc = report(run, '-o', out, '--screenshot', '--allow-unplaced')
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = out / 'longctx_leaderboard.html'
    found = browser.probe(str(page), 1400, 'document.querySelectorAll("table.heat").length')
    assert found['width'] <= 1400 and found['window'] == 1400, found
    assert found['extra'] == 3 * len(models) + len(models)
    w, h = browser.png_size(str(out / 'longctx_leaderboard.png'))
    assert w == 1400 and abs(h - found['height']) <= 0.1 * found['height'], (w, h, found)
    top = browser.screenshot(str(page), str(tmp_path / 'top.png'), until='leaderboard')
    assert browser.png_size(top)[1] < h
    keep = os.environ.get('LONGCTX_KEEP_PAGE')
    if keep:
        import shutil
        os.makedirs(keep, exist_ok=True)
        shutil.copy(page, keep)
        (tmp_path / 'found.json').write_text(json.dumps(found))


@pytest.mark.browser
@pytest.mark.parametrize('until', [None, 'leaderboard'])
def test_screenshot_measures_before_it_shoots(tmp_path, until):
    need_chromium()
    page = tmp_path / 'p.html'
    page.write_text('<!DOCTYPE html><html><body style="margin:0"><table><tr><td>x</td></tr></table>'
                    '<div id="leaderboard" style="height:700px">top</div><div style="height:2300px">rest</div>'
                    '</body></html>', encoding='utf-8')
    shot = browser.screenshot(str(page), str(tmp_path / 'p.png'), 1400, until=until)
    w, h = browser.png_size(shot)
    assert w == 1400 and (abs(h - 3000) < 60 if until is None else 700 < h < 800), (w, h)
