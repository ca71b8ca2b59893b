"""PNG plots of a tier report: score vs tier per benchmark row (a line per model), and needle-depth x tier
heatmaps per benchmark and model where the benchmark records each sample's depth (``report['depth']``).

Each plot's x axis is its own benchmark's tiers (BABILong plots do not get NoLiMa's 250 and 500). A plot with
nothing to draw is not written. What each plot shows is computed first as plain data (``score_plots``,
``heatmaps``), then drawn.
"""
import os
from typing import Dict, List

BLANK = 'blank: no sample at this depth and tier'


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def _name(text: str) -> str:
    return text.replace(' ', '_')


def score_plots(report: dict) -> List[dict]:
    """One entry per (benchmark, row) that has a score or a published number at some tier:
    {file, title, tiers, series: [{label, x, y, err, published}], na: [(model, x)]}; x indexes ``tiers``."""
    groups: Dict[tuple, list] = {}
    for r in report['rows']:
        groups.setdefault((r.bench, r.row), []).append(r)
    out = []
    for (bench, row), rows in groups.items():
        tiers = report['bench_tiers'][bench]
        series, na = [], []
        for r in rows:
            xs = [i for i, t in enumerate(tiers) if t in r.cells and r.cells[t].status == 'ok']
            if xs:
                series.append(dict(label=r.model, x=xs, y=[r.cells[tiers[i]].score for i in xs],
                                   err=[r.cells[tiers[i]].ci95 or 0 for i in xs], published=False))
            na += [(r.model, i) for i, t in enumerate(tiers) if t in r.cells and r.cells[t].status == 'n/a']
            px = [i for i, t in enumerate(tiers) if t in r.published]
            if px:
                series.append(dict(label=f'{r.model} published ({r.published_name})', x=px,
                                   y=[r.published[tiers[i]] for i in px], err=None, published=True))
        if series:
            out.append(dict(file=f'score_vs_tier_{bench}_{_name(row)}.png', title=f'{bench} {row}: score vs tier',
                            tiers=tiers, series=series, na=na))
    return out


def heatmaps(report: dict) -> List[dict]:
    """One entry per (benchmark, model) with per-sample depths: {file, title, tiers, grid} where grid[bin][j] is
    the accuracy (%) of the samples in that depth bin at tiers[j], or None (no sample there)."""
    out = []
    for bench, by_model in report.get('depth', {}).items():
        tiers = report['bench_tiers'][bench]
        for model, by_tier in by_model.items():
            bins = len(next(iter(by_tier.values())))
            grid = [[None if t not in by_tier or not by_tier[t][b][1] else 100.0 * by_tier[t][b][0] / by_tier[t][b][1]
                     for t in tiers] for b in range(bins)]
            out.append(dict(file=f'depth_{bench}_{model}.png', title=f'{bench}: accuracy by depth and tier ({model})',
                            tiers=tiers, grid=grid))
    return out


def plot_report(report: dict, out_dir: str) -> List[str]:
    plt = _plt()
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for p in score_plots(report):
        tiers = p['tiers']
        fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(tiers) + 2), 4))
        for s in p['series']:
            if s['published']:
                ax.plot(s['x'], s['y'], linestyle='--', marker='x', alpha=0.7, label=s['label'])
            else:
                ax.errorbar(s['x'], s['y'], yerr=s['err'], marker='o', capsize=3, label=s['label'])
        for model, i in p['na']:
            ax.annotate(f'N/A ({model})' if len({m for m, _ in p['na']}) > 1 else 'N/A', (i, 2), ha='center',
                        fontsize=7, color='gray')
        ax.set_xticks(range(len(tiers)))
        ax.set_xticklabels(tiers)
        ax.set_xlim(-0.5, len(tiers) - 0.5)
        ax.set_ylim(0, 100)
        ax.set_xlabel('context tier')
        ax.set_ylabel('score (%)')
        ax.set_title(p['title'])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(_save(plt, fig, out_dir, p['file']))
    for h in heatmaps(report):
        written.append(_heatmap(plt, h, out_dir))
    return written


def _heatmap(plt, h: dict, out_dir: str) -> str:
    import numpy as np
    from matplotlib.patches import Patch
    tiers, grid = h['tiers'], h['grid']
    bins = len(grid)
    data = np.array([[np.nan if v is None else v for v in row] for row in grid], dtype=float)
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(tiers) + 2), 4.6))
    ax.patch.set_facecolor('white')
    ax.patch.set_hatch('///')
    ax.patch.set_edgecolor('lightgray')
    im = ax.imshow(data, aspect='auto', origin='upper', cmap='RdYlGn', vmin=0, vmax=100)
    ax.set_xticks(range(len(tiers)))
    ax.set_xticklabels(tiers)
    ax.set_yticks(range(bins))
    ax.set_yticklabels([f'{100 * b // bins}-{100 * (b + 1) // bins}%' for b in range(bins)])
    ax.set_xlabel('context tier')
    ax.set_ylabel('needle depth')
    ax.set_title(h['title'])
    fig.colorbar(im, ax=ax, label='accuracy (%)')
    if any(v is None for row in grid for v in row):
        ax.legend(handles=[Patch(facecolor='white', edgecolor='lightgray', hatch='///', label=BLANK)],
                  loc='upper center', bbox_to_anchor=(0.5, -0.16), fontsize=7, frameon=False)
    fig.tight_layout()
    return _save(plt, fig, out_dir, h['file'])


def _save(plt, fig, out_dir: str, name: str) -> str:
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
