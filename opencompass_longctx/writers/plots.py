"""PNG plots of a tier report: score vs tier per benchmark row (a line per model), and needle-depth x tier
heatmaps per benchmark and model where the benchmark records each sample's depth (``BenchResult.depth``).

Each plot's x axis is its own benchmark's tiers (BABILong plots do not get NoLiMa's 250 and 500). A plot with
nothing to draw is not written. What each plot shows is computed first as plain data (``score_plots``,
``heatmaps``), then drawn.

Every model stays visible: each has its own color, marker, line style and a small sideways offset, so two tied
models draw two lines; its 95% interval is a band around its line (the interval itself: asymmetric near 0 and 100),
and the legend lists the models from the best mean down. Files are 256-color PNGs: the page inlines them. The y
axis reaches below 0, so a score of 0 is a point, not the axis. A tier the model cannot hold (N/A) or whose task
failed is marked in the model's own colour and marker below the 0 line; a partial row's mean (k of n datasets) is a
hollow marker labelled k/n. File names are made from the benchmark, row and model
names by :func:`file_part`: any model abbr (``org/model``, spaces, unicode, ``..``) gives one plain file name
inside the plot directory.

``longctx-report`` draws them in a worker process (:func:`start_plots`) while it computes the comparisons: drawing
50 models' plots takes as long as a third of their comparisons, and a second core is otherwise idle.
"""
import hashlib
import os
import re
from typing import Callable, Dict, List

from opencompass_longctx.leaderboard.tier_report import TierReport
from opencompass_longctx.writers.heatmaps import depth_counts, depth_label

BLANK = 'blank: no sample at this depth and tier'
MARKERS = ('o', 's', '^', 'D', 'v', 'P', 'X', '*', '<', '>')
LINESTYLES = ('-', '--', '-.', ':')
NA_Y = -5.0          # where N/A and FAIL marks sit: below the 0 line, inside the axis
_SAFE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,79}\Z')


def file_part(text: str) -> str:
    """``text`` as a part of a file name: unchanged when it is plain (letters, digits, ``_.-``, not starting with a
    dot, no ``..``), else a readable slug plus a short hash of the text, so two names that differ only in the
    characters the slug drops still get two files (``org/model`` -> ``org_model-1b2c3d4e``)."""
    text = str(text)
    if _SAFE.match(text) and '..' not in text:
        return text
    slug = re.sub(r'\.{2,}', '.', re.sub(r'[^A-Za-z0-9_.-]+', '_', text)).strip('._-')[:60]
    return f'{slug or "x"}-{hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]}'


def _name(text: str) -> str:
    return file_part(text.replace(' ', '_'))


def score_plot_file(bench: str, row: str) -> str:
    """The file name of a benchmark row's score-vs-tier plot."""
    return f'score_vs_tier_{_name(bench)}_{_name(row)}.png'


def depth_plot_file(bench: str, model: str) -> str:
    """The file name of a model's depth x tier heatmap of a benchmark."""
    return f'depth_{_name(bench)}_{file_part(model)}.png'


def _plain(text: str) -> str:
    """Text matplotlib draws as written (a ``$`` would start mathtext)."""
    return str(text).replace('$', r'\$')


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def score_plots(report: TierReport) -> List[dict]:
    """One entry per (benchmark, row) that has a score or a published number at some tier:
    {file, title, tiers, series: [{label, model, x, y, err, partial, na, failed, published}], na: [(model, x)]};
    x indexes ``tiers``; ``partial`` = {x: 'k/n'} for a row mean over k of its n datasets; ``na`` and ``failed``:
    the x of the model's N/A and FAIL cells."""
    groups: Dict[tuple, list] = {}
    for r in report.rows:
        groups.setdefault((r.bench, r.row), []).append(r)
    out = []
    for (bench, row), rows in groups.items():
        tiers = report.benchmarks[bench].tiers
        series, na = [], []
        for r in rows:
            cells = [(i, r.cells.get(t)) for i, t in enumerate(tiers)]
            ok = [(i, c) for i, c in cells if c is not None and c.status == 'ok']
            mine = dict(label=r.model, model=r.model, x=[i for i, _ in ok], y=[c.score for _, c in ok],
                        err=[(0.0, 0.0) if c.ci_lo is None else (c.score - c.ci_lo, c.ci_hi - c.score) for _, c in ok],
                        published=False,
                        partial={i: f'{c.cells_used}/{c.cells_total}' for i, c in ok if c.cells_used < c.cells_total},
                        na=[i for i, c in cells if c is not None and c.status == 'n/a'],
                        failed=[i for i, c in cells if c is not None and c.status == 'failed'])
            if mine['x'] or mine['na'] or mine['failed']:
                series.append(mine)
            na += [(r.model, i) for i in mine['na']]
            px = [i for i, t in enumerate(tiers) if t in r.published]
            if px:
                series.append(dict(label=f'{r.model} published ({r.published_name})', model=r.model, x=px,
                                   y=[r.published[tiers[i]] for i in px], err=None, published=True, partial={},
                                   na=[], failed=[]))
        if any(s['x'] for s in series):
            out.append(dict(file=score_plot_file(bench, row), title=f'{bench} {row}: score vs tier',
                            tiers=tiers, series=series, na=na))
    return out


def heatmaps(report: TierReport) -> List[dict]:
    """The needle-depth grids (:func:`.heatmaps.depth_counts`), each with its file name and title."""
    return [dict(h, file=depth_plot_file(h['bench'], h['model']),
                 title=f"{h['bench']}: accuracy by depth and tier ({h['model']})") for h in depth_counts(report)]


def plot_report(report: TierReport, out_dir: str) -> List[str]:
    """Draw every plot of the report into ``out_dir``; the files written, in plan order."""
    return draw(plan(report), out_dir)


def plan(report: TierReport) -> List[dict]:
    """What every plot shows, as plain data (score plots, then heatmaps); ValueError where two would share a file."""
    planned = score_plots(report) + heatmaps(report)
    names = [p['file'] for p in planned]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ValueError(f'two plots would be written to the same file ({", ".join(clash)}): rename one of the '
                         'benchmark rows or model abbrs that make it')
    return planned


def draw(planned: List[dict], out_dir: str) -> List[str]:
    plt = _plt()
    os.makedirs(out_dir, exist_ok=True)
    return [_score_plot(plt, p, out_dir) if 'series' in p else _heatmap(plt, p, out_dir) for p in planned]


def start_plots(report: TierReport, out_dir: str) -> Callable[[], List[str]]:
    """:func:`plot_report` in the background: planned here, drawn in one spawned worker process while the caller
    goes on; the function returned waits for the files and returns them (raising what drawing raised). Drawn here
    and now where this process has one core, or a worker cannot be started."""
    planned = plan(report)
    from opencompass_longctx.parallel import available_cores
    if available_cores() > 1 and len(planned) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        try:
            pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn'))
            future = pool.submit(draw, planned, out_dir)
        except OSError:      # no process can be started here (a sandbox, no /dev/shm): draw them in this one
            pass
        else:
            def result() -> List[str]:
                try:
                    return future.result()
                finally:
                    pool.shutdown()
            return result
    paths = draw(planned, out_dir)
    return lambda: paths


def _colors(plt, n: int) -> list:
    """One color per model: matplotlib's ten-color cycle, its twenty-color table beyond ten models."""
    cmap = plt.get_cmap('tab10' if n <= 10 else 'tab20')
    return [cmap(k % cmap.N) for k in range(n)]


def _score_plot(plt, p: dict, out_dir: str) -> str:
    """Each model a line with its 95% interval as a band (asymmetric near 0 and 100: the interval itself, not a
    +-); the legend, under the plot, lists the models from the best mean to the worst. 640 px wide: it sits beside
    the heatmaps on the page at its own size."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    tiers, series = p['tiers'], p['series']
    measured = [s for s in series if not s['published']]
    step = min(0.12, 0.6 / max(1, len(measured)))
    offset = {s['model']: (k - (len(measured) - 1) / 2) * step for k, s in enumerate(measured)}
    style = {s['model']: (MARKERS[k % len(MARKERS)], LINESTYLES[k % len(LINESTYLES)], color)
             for k, (s, color) in enumerate(zip(measured, _colors(plt, len(measured))))}
    longest = max((len(s['label']) for s in series), default=0)
    ncol = max(1, min(1 if len(series) <= 2 else 2 if len(series) <= 6 else 3, 100 // (longest + 8)))
    rows = -(-(len(series) + 2) // ncol)   # (+ the marks' own entries)
    fig, ax = plt.subplots(figsize=(6.4, 3.2 + 0.17 * rows), dpi=100)   # 640 px wide
    ax.axhline(0, color='#999', linewidth=0.8)
    ax.axhspan(-20, -1.5, color='#f3f3f3', zorder=0)
    band = 0.18 if len(measured) <= 4 else 0.1
    order = {}
    for s in series:
        marker, line, color = style.get(s['model'], ('x', '--', None))
        dx = offset.get(s['model'], 0.0)
        xs = [x + dx for x in s['x']]
        if s['published']:
            drawn = ax.plot(xs, s['y'], linestyle=(0, (2, 2)), marker='x', alpha=0.7, color=color,
                            label=_plain(s['label']))[0]
            order[drawn] = (1, 0.0)
            continue
        drawn = ax.plot(xs, s['y'], marker=marker, linestyle=line, markersize=5, color=color,
                        label=_plain(s['label']))[0]
        order[drawn] = (0, -sum(s['y']) / len(s['y']) if s['y'] else 0.0)
        lo = [y - max(e[0], 0.0) for y, e in zip(s['y'], s['err'])]
        hi = [y + max(e[1], 0.0) for y, e in zip(s['y'], s['err'])]
        if any(a != b for a, b in zip(lo, hi)):
            ax.fill_between(xs, lo, hi, color=color, alpha=band, linewidth=0)
        for x, text in s['partial'].items():  # a partial mean: hollow marker and its k/n
            y = s['y'][s['x'].index(x)]
            ax.plot([x + dx], [y], marker=marker, markersize=8, markerfacecolor='white', color=color, zorder=4)
            ax.annotate(text, (x + dx, y), textcoords='offset points', xytext=(6, 4), fontsize=7, color=color)
        for xs_mark, text in ((s['na'], 'N/A'), (s['failed'], 'FAIL')):
            for x in xs_mark:
                ax.plot([x + dx], [NA_Y], marker=marker, markersize=6, markerfacecolor='white', color=color,
                        linestyle='none', zorder=4)
                ax.annotate(text, (x + dx, NA_Y), textcoords='offset points', xytext=(0, -5), ha='center',
                            va='top', rotation=90, fontsize=6, color=color)
    handles = sorted(order, key=lambda h: order[h])
    if any(s['partial'] for s in measured):
        handles.append(Line2D([], [], marker='o', markerfacecolor='white', color='gray', linestyle='none',
                              label='hollow, k/n: mean over k of n datasets'))
    if any(s['na'] or s['failed'] for s in measured):
        handles.append(Line2D([], [], marker='s', color='#f3f3f3', linestyle='none', markersize=9,
                              label='below 0: N/A (cannot hold the tier) / FAIL'))
    if any(s['err'] for s in measured):
        handles.append(Patch(color='gray', alpha=0.3, label='band: 95% interval'))
    ax.set_xticks(range(len(tiers)))
    ax.set_xticklabels(tiers)
    ax.set_xlim(-0.5, len(tiers) - 0.5)
    ax.set_ylim(-20, 105)
    ax.set_yticks(range(0, 101, 20))
    ax.set_xlabel('context tier')
    ax.set_ylabel('score (%)')
    ax.set_title(_plain(p['title']))
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc='upper center', bbox_to_anchor=(0.5, -0.17), ncol=ncol,
              frameon=False)
    fig.tight_layout()
    return _save(plt, fig, out_dir, p['file'])


def _heatmap(plt, h: dict, out_dir: str) -> str:
    import numpy as np
    from matplotlib.patches import Patch
    tiers, grid = h['tiers'], h['grid']
    bins = len(grid)
    data = np.array([[np.nan if v is None else v for v in row] for row in grid], dtype=float)
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(tiers) + 2), 4.6), dpi=110)
    ax.patch.set_facecolor('white')
    ax.patch.set_hatch('///')
    ax.patch.set_edgecolor('lightgray')
    im = ax.imshow(data, aspect='auto', origin='upper', cmap='viridis', vmin=0, vmax=100)
    ax.set_xticks(range(len(tiers)))
    ax.set_xticklabels(tiers)
    ax.set_yticks(range(bins))
    ax.set_yticklabels([depth_label(b, bins) for b in range(bins)])
    ax.set_xlabel('context tier')
    ax.set_ylabel('needle depth')
    ax.set_title(_plain(h['title']))
    fig.colorbar(im, ax=ax, label='accuracy (%)')
    if any(v is None for row in grid for v in row):
        ax.legend(handles=[Patch(facecolor='white', edgecolor='lightgray', hatch='///', label=BLANK)],
                  loc='upper center', bbox_to_anchor=(0.5, -0.16), fontsize=7, frameon=False)
    fig.tight_layout()
    return _save(plt, fig, out_dir, h['file'])


def _save(plt, fig, out_dir: str, name: str) -> str:
    """Write the figure as a 256-color PNG (a quarter of the bytes of matplotlib's RGBA file, the same picture to
    the eye: the page inlines these files), at the figure's own resolution, cropped to what is drawn."""
    import io

    from PIL import Image
    path = os.path.join(out_dir, name)
    if os.path.dirname(os.path.abspath(path)) != os.path.abspath(out_dir):
        raise ValueError(f'plot file name {name!r} leaves the plot directory {out_dir}')
    buf = io.BytesIO()
    fig.savefig(buf, dpi='figure', bbox_inches='tight', pad_inches=0.08)
    plt.close(fig)
    buf.seek(0)
    with Image.open(buf) as im:
        im.convert('RGB').quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
            path, 'PNG', optimize=True)
    return path
