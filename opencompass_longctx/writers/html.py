"""The merged leaderboard as one self-contained HTML page, read from the top down:

1. the leaderboard: per benchmark, a model x tier table colored by score, sorted by rank, with the rank interval
   of each model (overall and per tier, from the paired comparisons), its effective length marked in the row and
   its difference to the leader;
2. per benchmark: the score-vs-length plot of its ranking row beside one heatmap per model (task x tier; NoLiMa's
   variants and needle depth x tier), the score in every cell;
3. folded under the pictures (``<details>``): every row's plot, the full tier table with every interval, the
   ranking's reasons, the paired differences; then failures, footnotes and notes.

One color scale for every benchmark (:mod:`.heatmaps`: viridis, readable for color-blind readers, text black or
white by contrast). No external CSS, JavaScript, fonts or images: the plots are inline PNG, the heatmaps are
HTML tables; the page opens with no network and can be put on a wiki as one file. Every name and text is escaped
(a model called ``<script>`` is shown, never run). Every table sits in a box that scrolls sideways on its own, so
nothing is cut and the page is never wider than the window.

The browser side (rendering, measuring, screenshots of the whole page) is :mod:`.browser`.
"""
import base64
import html
import os
from dataclasses import fields
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS, bench_by_name
from opencompass_longctx.leaderboard.compare import FULL_TABLE_UP_TO, Paired
from opencompass_longctx.leaderboard.tier_report import NOLIMA, RULER, Cell, Effective, RowResult, TierReport
from opencompass_longctx.stats.ranks import rank_text
from opencompass_longctx.writers import comparison, heatmaps as hm
from opencompass_longctx.writers.browser import (CHROMIUM_FLAGS, CHROMIUM_INSTALL, dump_dom,  # noqa: F401
                                                 find_chromium, png_size, probe, screenshot)
from opencompass_longctx.writers.plots import depth_plot_file, score_plot_file

NAMES = {'babilong': 'BABILong', 'nolima': 'NoLiMa', 'longbio': 'LongBioBench',
         'longbio_strict': 'LongBioBench (strict mode)'}

RANKED_BY = {'score': 'Ranked by score: every pair of models compared on the samples and tiers both have, '
                      'Holm-corrected over the pairs; a rank interval holds the ranks the model may have at 95%',
             'ruler': 'Ranked by the RULER effective length; a rank interval counts the models whose effective-length '
                      'interval lies wholly above or below',
             'nolima': 'Ranked by the NoLiMa effective length; a rank interval counts the models whose '
                       'effective-length interval lies wholly above or below'}

TABLE_LEGEND = ('Score (%) and its 95% interval [lo, hi], always inside [0, 100]; [? k clusters]: too few clusters '
                'for an interval; (k/n): the mean over k of the row\'s n datasets; N/A: the model cannot hold the tier; '
                'FAIL: the task failed; -: no result; ‡: not comparable with the other models of the column (see the '
                'footnotes); mean with *: over the tiers with a result only; eff. len 16k [8k-32k]: the effective '
                'length and its 95% interval.')

_CSS = """
body { font-family: sans-serif; margin: 16px; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 4px; } h2 { font-size: 1.15em; margin: 1.4em 0 0.4em; }
h3 { font-size: 1em; margin: 0.8em 0 0.3em; }
nav a { margin-right: 1em; }
.small { font-size: 0.8em; color: #555; } .scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.3em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th { background: #eee; } td.t { text-align: left; }
td.sig { font-weight: bold; background: #e8f4e8; } td.untestable { color: #888; font-style: italic; }
td.na { color: #888; } td.fail { color: #b00; }
.boards { display: flex; flex-wrap: wrap; gap: 12px 28px; align-items: flex-start; }
.boards > div { max-width: 100%; }
table.lb td, table.lb th { padding: 3px 6px; }
table.lb td.model { text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 7em; max-width: 18em; }
table.lb td.rank { text-align: left; }
.tr { font-size: 0.72em; opacity: 0.85; margin-left: 3px; }
.rbar { display: block; width: 64px; height: 4px; background: #e3e3e3; margin-top: 2px; }
.rbar span { display: block; height: 4px; background: #555; }
.eff { box-shadow: inset -3px 0 0 #fff, inset -6px 0 0 #000; }
.effci { box-shadow: inset 0 -3px 0 #fff, inset 0 -5px 0 #000; }
.eff.effci { box-shadow: inset -3px 0 0 #fff, inset -6px 0 0 #000, inset 0 -3px 0 #fff, inset 0 -5px 0 #000; }
.key { font-size: 0.8em; color: #333; margin: 8px 0; line-height: 1.9; }
.key table { font-size: 1em; display: inline-table; vertical-align: middle; margin: 0 4px; }
.key td { padding: 0 6px; }
.bar { display: inline-block; vertical-align: middle; width: 240px; margin: 0 18px 10px 8px; position: relative; }
.strip { display: block; height: 12px; border: 1px solid #999; }
.ticks { display: block; position: relative; height: 10px; font-size: 0.85em; }
.ticks span { position: absolute; transform: translateX(-50%); }
.pair { display: flow-root; }
.pair figure { float: left; margin: 0 18px 10px 0; max-width: 100%; }
figcaption { font-size: 0.8em; color: #555; max-width: 640px; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; }
.model-heats { display: inline-flex; flex-wrap: wrap; gap: 6px; align-items: flex-start; vertical-align: top;
  max-width: 100%; margin: 0 14px 10px 0; }
table.heat { font-size: 11px; margin: 0; }
table.heat caption { text-align: left; font-weight: bold; font-size: 1.05em; padding: 2px 0; max-width: 30em;
  overflow-wrap: anywhere; }
table.heat th { background: #fff; border: none; padding: 1px 4px; font-weight: normal; color: #444; }
table.heat td { border: 1px solid #fff; padding: 1px 3px; min-width: 2.1em; text-align: center; }
table.heat tr.mean th { font-style: italic; } table.heat tr.mean td { border-top: 2px solid #222; }
details { margin: 0.6em 0; } summary { cursor: pointer; color: #124; }
"""


def _e(v) -> str:
    return html.escape('' if v is None else str(v))


def _table(head: Sequence[str], rows: Sequence[Sequence[tuple]], cls: str) -> List[str]:
    """rows: [(text, css class, {data attributes}[, title])] per cell; every text and attribute escaped."""
    out = ['<div class="scroll">', f'<table class="{cls}">',
           '<tr>' + ''.join(f'<th>{_e(h)}</th>' for h in head) + '</tr>']
    for row in rows:
        cells = []
        for text, klass, data, *title in row:
            attrs = ''.join(f' data-{k}="{_e(v)}"' for k, v in (data or {}).items())
            attrs += f' title="{_e(title[0])}"' if title and title[0] else ''
            cells.append(f'<td class="{_e(klass)}"{attrs}>{_e(text)}</td>')
        out.append('<tr>' + ''.join(cells) + '</tr>')
    return out + ['</table>', '</div>']


def interval_note(cell: Cell) -> str:
    """How a cell's interval was made, on how many clusters and samples."""
    method, clusters = cell.ci_method, cell.clusters
    parts = [f'95% interval: {method}' if method else '']
    parts += [f'{clusters} clusters' if clusters and method != 'wilson' else '', f'n={cell.n}' if cell.n else '',
              cell.reason]
    return '; '.join(p for p in parts if p)


def _tier_table(tiers: Sequence[str], rows: Sequence[RowResult]) -> List[str]:
    """The full tier table of some rows: each cell's score and 95% interval, its marks; hover for the method."""
    head = ['model', 'benchmark', 'row'] + list(tiers) + ['mean', 'eff. len (NoLiMa)', 'eff. len (RULER)']
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
                  (r.effective[NOLIMA].text(), '', dict(model=r.model, bench=r.bench, row=r.row, eff=NOLIMA)),
                  (r.effective[RULER].text(), '', dict(model=r.model, bench=r.bench, row=r.row, eff=RULER))]
        out.append(cells)
    return _table(head, out, 'tiers')


def _methods_legend(rows: Sequence[RowResult]) -> str:
    """One line: which interval methods the table's cells rest on, and on how many clusters."""
    seen: dict = {}
    for r in rows:
        for c in r.cells.values():
            if c.status == 'ok' and c.ci_method:
                seen.setdefault(c.ci_method, []).append(c.clusters or 0)
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
    if not isinstance(p, dict):
        return p
    names = {f.name for f in fields(Paired)}
    return Paired(**{k: v for k, v in p.items() if k in names})


def direction_text(a: str, b: str, diff: Optional[float], star: bool = False) -> str:
    """'a - b = +40.0': a difference with the order it was taken in."""
    return '' if diff is None else f'{a} - {b} = {diff:+.1f}' + (' *' if star else '')


def method_text(p) -> str:
    """'sign-flip (58 clusters)' of a comparison or a leaderboard entry's ``vs`` (:func:`.comparison.method_text`)."""
    return comparison.method_text(_as_paired(p))


def _paired_table(table: Sequence[Paired]) -> List[str]:
    excluded_text, interval_text = comparison.excluded_text, comparison.interval_text
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


def _board(board, report: TierReport, rank_by: str) -> List[str]:
    holm = any('p_holm' in (e.get('vs') or {}) for e in board)
    decided = any(e.get('decision') for e in board)
    head = ['benchmark', 'row', 'rank', 'model', 'eff. len', 'mean', 'difference to the group leader',
            '95% interval', 'method'] + ['p (Holm)'] * holm + ['decision'] * decided
    by_row = report.by_key
    rows = []
    for e in board:
        vs = e.get('vs') or {}
        mine = by_row.get((e['model'], e['bench'], e['row']))
        own = mine.effective.get(rank_by) if mine else None
        eff = Effective(e.get('effective'), interval=e.get('effective_interval') or (own.interval if own else None),
                        few_clusters=e.get('effective_few', 0))
        p_holm = vs.get('p_holm')
        a, b = vs.get('a', e.get('leader')), vs.get('b', e['model'])
        diff = vs.get('diff')
        text = direction_text(a, b, diff, starred(vs)) if diff is not None else vs.get('note', '')
        rows.append([(e['bench'], 't', None), (e['row'], 't', None), (e.get('rank_text') or e['rank'], 'rank', None),
                     (e['model'], 't', dict(bench=e['bench'], rank=e['rank'])),
                     (eff.text(), '', None),
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


def _published(report: TierReport, rows: Sequence[RowResult]) -> List[str]:
    """The published numbers' sources (in the specs' order), only for the benchmarks where a model of the run has
    one."""
    benches = {r.bench for r in rows if r.published}
    mine = [report.benchmarks[b.name] for b in BENCHMARKS if b.name in report.benchmarks]
    return _list('Published numbers', [f'{b.name}: {b.reference}' for b in mine if b.name in benches and b.reference])


def rank_rule(rank_by: str) -> str:
    return comparison.RANK_RULE.format(rank_by=rank_by)


def methods_text() -> str:
    """What the paired table's methods mean (the comparison's own words)."""
    return comparison.METHODS


def bench_name(bench: str) -> str:
    return NAMES.get(bench, bench)


def _rank_bar(lo: int, hi: int, k: int) -> str:
    """Where a rank interval lies among k models: a dark segment on a grey track (overlapping bars: not told apart)."""
    left, width = 100.0 * (lo - 1) / k, 100.0 * (hi - lo + 1) / k
    return f'<span class="rbar"><span style="margin-left:{left:.1f}%;width:{width:.1f}%"></span></span>'


def _tier_index(tiers: Sequence[str], name: Optional[str]) -> Optional[int]:
    """A tier's column; -1 for '<first' (below every tier); None for none."""
    if not name:
        return None
    return -1 if name.startswith('<') else tiers.index(name) if name in tiers else None


def _eff_classes(tiers: Sequence[str], point: Optional[str], interval) -> Dict[str, str]:
    """{tier: 'eff' / 'effci' / both}: the effective length's tier (a bar on its right edge) and its 95% interval
    (a line under the tiers it spans)."""
    out = {}
    at = _tier_index(tiers, point)
    if at is not None and at >= 0:
        out[tiers[at]] = 'eff'
    if interval and None not in tuple(interval)[:2]:
        lo, hi = _tier_index(tiers, interval[0]), _tier_index(tiers, interval[1])
        if lo is not None and hi is not None:
            for t in tiers[max(lo, 0):hi + 1]:
                out[t] = (out.get(t, '') + ' effci').strip()
    return out


def _vs_text(vs: Optional[dict]) -> str:
    """'+13.3 [+5.0, +20.0] *': the leader's score minus this model's over the tiers both have."""
    if not vs:
        return ''
    if vs.get('diff') is None:
        return vs.get('note') or ''
    interval = '' if vs.get('lo') is None else f' [{vs["lo"]:+.1f}, {vs["hi"]:+.1f}]'
    return f'{vs["diff"]:+.1f}{interval}' + (' *' if starred(vs) else '')


def _vs_title(vs: Optional[dict]) -> str:
    if not vs or vs.get('diff') is None:
        return ''
    p = vs.get('p_holm')
    return (direction_text(vs.get('a', ''), vs.get('b', ''), vs['diff']) + f'; {method_text(vs)}'
            + ('' if p is None else f'; p (Holm) = {p:.3g}'))


def _board_row(e: dict, r: Optional[RowResult], tiers: Sequence[str], k: int) -> str:
    """One model's line of the colored leaderboard."""
    lo, hi = e['rank'], e.get('rank_hi', e['rank'])
    rank = _e(e.get('rank_text') or rank_text((lo, hi))) + (' †' if e.get('partial') else '')
    marks = _eff_classes(tiers, e.get('effective'), e.get('effective_interval'))
    out = [f'<tr data-model="{_e(e["model"])}">',
           f'<td class="rank" title="{_e(e.get("decision") or "")}">{rank}{_rank_bar(lo, hi, k)}</td>',
           f'<td class="t model">{_e(e["model"])}</td>']
    for t in tiers:
        cell = hm.cell_of(r.cells.get(t) if r else None, f'{e["model"]} at {t}')
        tr = e.get('tier_ranks', {}).get(t)
        extra = f'<span class="tr">#{_e(rank_text(tuple(tr)))}</span>' if tr else ''
        if tr:
            cell.title += f'; rank at {t}: {rank_text(tuple(tr))} of the models with a score there'
        out.append(hm.heat_td(cell, 1, extra, marks.get(t, ''), f' data-tier="{_e(t)}"'))
    mean = e.get('mean')
    out.append(hm.heat_td(hm.HeatCell('ok', mean, f'mean over its tiers: {mean:.1f}'), 1) if mean is not None
               else '<td class="hnone">-</td>')
    eff = Effective(e.get('effective'), interval=e.get('effective_interval'), few_clusters=e.get('effective_few', 0))
    out.append(f'<td>{_e(eff.text())}</td>')
    vs = e.get('vs')
    out.append(f'<td class="t" title="{_e(_vs_title(vs))}">{_e(_vs_text(vs))}</td>')
    return ''.join(out) + '</tr>'


def _effective_rule(report: TierReport, rank_by: str) -> str:
    """Which effective length the leaderboard shows: 'RULER ≥ 85.6' or 'NoLiMa 85% base'."""
    if rank_by == 'nolima':
        return f'NoLiMa {100 * report.nolima_ratio:g}% base'
    return f'RULER ≥ {report.ruler_threshold:g}'


def _leaderboard_table(report: TierReport, bench: str, entries: List[dict], rank_by: str) -> List[str]:
    """A benchmark's ranking row as a model x tier table colored by score, in rank order."""
    rows = report.by_key
    row = entries[0]['row']
    tiers = [t for t in report.benchmarks[bench].tiers
             if any(t in rows[e['model'], bench, row].cells for e in entries if (e['model'], bench, row) in rows)]
    head = [_e(h) for h in ['rank', 'model'] + tiers + ['mean']]
    head += [f'eff. len<br><span class="tr">{_e(_effective_rule(report, rank_by))}</span>', 'leader − model']
    out = ['<div>', f'<h3>{_e(bench_name(bench))} <span class="small">{_e(row)}: {len(entries)} '
           f'model{"s" * (len(entries) != 1)}</span></h3>',
           '<div class="scroll">', f'<table class="lb" data-bench="{_e(bench)}" data-row="{_e(row)}">',
           '<tr>' + ''.join(f'<th>{h}</th>' for h in head) + '</tr>']
    out += [_board_row(e, rows.get((e['model'], bench, row)), tiers, len(entries)) for e in entries]
    return out + ['</table>', '</div>', '</div>']


def _key(report: TierReport, rank_by: str) -> List[str]:
    """What every color, mark and symbol of the page means."""
    sample = hm.HeatCell('ok', 55.0, partial='3/5')
    return ['<div class="key">', f'Score (%): {hm.legend_bar()} the same scale on every benchmark and heatmap; '
            '<table><tr><td class="hna">N/A</td><td class="hfail">FAIL</td><td class="hnone">-</td>'
            f'{hm.heat_td(sample)}<td class="s80 eff">80</td><td class="s70 effci">70</td></tr></table>'
            ' N/A: the model cannot hold the tier (not a 0); FAIL: the task failed; -: no result; corner mark: a '
            "partial mean (k of the row's n datasets, (k/n) in the tables); bar on a cell's right edge: the "
            f'effective length ({_e(_effective_rule(report, rank_by))}); line under cells: its 95% interval.<br>'
            'rank <b>2-4</b>: the rank interval from the paired comparisons (the grey track is all models, the dark '
            'segment this model\'s ranks; models whose segments overlap are not told apart); #k in a cell: the rank '
            'at that tier; †: ranked on fewer tiers than the others (on the tiers it shares with each); leader − '
            'model: the leader\'s score minus this model\'s, 95% interval [lo, hi], * significant after Holm. In '
            'the tables: [lo, hi] the 95% interval, always inside [0, 100]; [? k clusters]: too few clusters for an '
            'interval (? in the heatmaps); ‡: not comparable with the other models (another data set or scoring, '
            'see the footnotes); (k/n): a mean over k of the row\'s n datasets; a mean with *: over the tiers with a '
            'result only; A - B with *: significant. Hover any cell for its numbers.',
            '</div>']


def _leaderboard(report: TierReport, board: Sequence[dict], rank_by: str) -> List[str]:
    by_bench: Dict[str, List[dict]] = {}
    for e in board:
        by_bench.setdefault(e['bench'], []).append(e)
    out = ['<section id="leaderboard">', '<h2>Leaderboard</h2>',
           f'<p class="small">{_e(RANKED_BY.get(rank_by, rank_by))} (the rule and each rank\'s reason: under "Tables '
           'and notes").</p>', '<div class="boards">']
    for bench, entries in by_bench.items():
        out += _leaderboard_table(report, bench, entries, rank_by)
    return out + ['</div>'] + _key(report, rank_by) + ['</section>']


def _img(path: str, alt: str) -> str:
    with open(path, 'rb') as f:
        data = f.read()
    try:
        w, h = png_size(path)
        size = f' width="{w}" height="{h}"'
    except ValueError:
        size = ''
    return f'<img alt="{_e(alt)}"{size} src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def _heatmaps(report: TierReport, bench: str, models: Sequence[str], depth: dict, ranks: Dict[str, str]) -> List[str]:
    """One block per model: its task x tier heatmap and, where the benchmark records depths, its depth x tier one.
    The blocks flow beside the plot, then under it, as many to a line as the window holds."""
    out = []
    for m in models:
        grids = [(hm.task_grid(report, bench, m), ''), (depth.get((bench, m)), 'needle depth')]
        grids = [(g, what) for g, what in grids if g is not None]
        if not grids:
            continue
        name = (f'#{ranks[m]} ' if m in ranks else '') + m
        out.append('<div class="model-heats">')
        for g, what in grids:
            out += hm.heat_table(g, what or name)
        out.append('</div>')
    return out


def _bench_section(report: TierReport, bench: str, entries: List[dict], plots: Dict[str, str], depth: dict,
                   rows: Sequence[RowResult]) -> List[str]:
    """A benchmark's pictures (its ranking row's plot beside the models' heatmaps), then its folded details."""
    ranking_row = entries[0]['row'] if entries else next((r.row for r in rows if r.bench == bench), None)
    ranked = [e['model'] for e in entries]
    models = ranked + [m for m in dict.fromkeys(r.model for r in rows if r.bench == bench) if m not in ranked]
    ranks = {e['model']: e.get('rank_text') or str(e['rank']) for e in entries}
    mine = [r for r in rows if r.bench == bench]
    main = plots.pop(score_plot_file(bench, ranking_row), None) if ranking_row else None
    out = [f'<section class="bench" id="bench-{_e(bench)}">', f'<h2>{_e(bench_name(bench))}</h2>',
           f'<p class="small">{_e(report_notes(bench))}</p>', '<div class="pair">']
    if main:
        out += ['<figure>', _img(main, f'{bench} {ranking_row}: score vs tier'),
                f'<figcaption>{_e(ranking_row)}: score vs length, one line per model, the band its 95% interval.'
                '</figcaption>', '</figure>']
    out += _heatmaps(report, bench, models, depth, ranks) + ['</div>']
    more = [(row, plots.pop(score_plot_file(bench, row))) for row in dict.fromkeys(r.row for r in mine)
            if score_plot_file(bench, row) in plots]
    if more:
        out += [f'<details><summary>Score vs length: the other rows of {_e(bench_name(bench))} ({len(more)})'
                '</summary>'] + [_img(p, f'{bench} {row}: score vs tier') for row, p in more] + ['</details>']
    out += [f'<details><summary>{_e(bench_name(bench))}: the full tier table (every row, score and 95% interval)'
            '</summary>']
    out.append(f'<p class="small">{_e(TABLE_LEGEND)}</p>')
    legend = _methods_legend(mine)
    out += [f'<p class="small">{_e(legend)}</p>'] if legend else []
    out += _tier_table(report.benchmarks[bench].tiers, mine)
    left_out = sorted({f'{bench} {r.row}' for r in report.benchmarks[bench].rows} - {f'{bench} {r.row}' for r in mine})
    if left_out:
        out.append(f'<p class="small">Left out (no value for any model): {_e(", ".join(left_out))}.</p>')
    return out + ['</details>', '</section>']


def report_notes(bench: str) -> str:
    """What the benchmark's scores are (its spec's own words)."""
    try:
        return bench_by_name(bench).notes
    except KeyError:
        return ''


def _tables(report: TierReport, table, board, rank_by: str) -> List[str]:
    """The ranking's reasons and the paired differences, folded."""
    out = []
    if board:
        out += ['<details><summary>Ranking per benchmark: the comparison with the leader and the reason for each '
                'rank</summary>', f'<p class="small">{_e(rank_rule(rank_by))} "leader - model = +4.0": the leader '
                'scores 4.0 points more than this model; *: significant; not testable: the difference has no variance '
                'to test, never starred.</p>'] + _board(board, report, rank_by) + ['</details>']
    models = set(report.models)
    if table and len(models) > FULL_TABLE_UP_TO:
        out.append(f'<p class="small">Paired differences: {len(models)} models, {len(table)} comparisons; the '
                   'table is in longctx_compare.csv and longctx_compare.json beside this page.</p>')
    elif table:
        out += [f'<details><summary>Paired differences ({len(table)} comparisons)</summary>',
                '<p class="small">A - B in percentage points over the samples both models ran (positive: A scores '
                f'more; hover a difference for its names), 95% interval. {_e(methods_text())}</p>']
        out += _paired_table(table) + ['</details>']
    return out


def _folded_list(title: str, items: Sequence[str]) -> List[str]:
    if not items:
        return []
    return ([f'<details><summary>{_e(title)} ({len(items)})</summary>', '<ul class="small">']
            + [f'<li>{_e(x)}</li>' for x in items] + ['</ul>', '</details>'])


def page(report: TierReport, table, board, plots: Sequence[str], rank_by: str = 'ruler') -> str:
    """The page as one string (plots read from their PNG files and inlined)."""
    rows = report.shown_rows
    benches = list(dict.fromkeys(list(report.benchmarks) + [r.bench for r in rows]))
    benches = [b for b in benches if any(r.bench == b for r in rows)]
    by_file = {os.path.basename(p): p for p in plots}
    depth = {k: g for k, g in hm.depth_grids(report).items()}
    for bench, model in depth:   # shown as HTML heatmaps: their PNG files stay in the plot folder only
        by_file.pop(depth_plot_file(bench, model), None)
    models = report.models
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             '<title>Long-context leaderboard</title>', f'<style>{_CSS}{hm.scale_css()}</style></head><body>',
             '<h1>Long-context leaderboard</h1>',
             f'<p class="small">opencompass-longctx {_e(report.package_version)}; {len(models)} '
             f'model{"s" * (len(models) != 1)}; '
             f'runs: {_e(", ".join(report.runs))}</p>',
             '<nav class="small">' + ''.join(f'<a href="#bench-{_e(b)}">{_e(bench_name(b))}</a>' for b in benches)
             + '<a href="#tables">tables and notes</a></nav>']
    if board:
        parts += _leaderboard(report, board, rank_by)
    else:
        parts += _key(report, rank_by)
    for bench in benches:
        entries = [e for e in board or [] if e['bench'] == bench]
        parts += _bench_section(report, bench, entries, by_file, depth, rows)
    parts += ['<section id="tables">', '<h2>Tables and notes</h2>'] + _tables(report, table, board, rank_by)
    parts += _list('Failed or missing', [f.line() for f in report.failures])
    for mark, why in report.footnotes.items():
        parts += _list(f'{mark} Not comparable', why)
    parts += _published(report, rows)
    parts += _folded_list('Runs and merge notes', report.runs + (report.merge.notes if report.merge else []))
    parts += _folded_list('Notes', report.partial + report.notes)
    if by_file:
        parts += [f'<details><summary>Other plots ({len(by_file)})</summary>']
        parts += [_img(p, name) for name, p in by_file.items()] + ['</details>']
    return '\n'.join(parts + ['</section>', '</body></html>']) + '\n'


def write_page(report: TierReport, table, board, plots: Sequence[str], rank_by: str, path: str) -> str:
    """The page (:func:`page`) written to ``path``; its path."""
    with open(path, 'w', encoding='utf-8') as f:
        f.write(page(report, table, board, plots, rank_by))
    return path
