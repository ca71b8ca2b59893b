"""PNG plots of a tier report: score vs tier per benchmark row (a line per model), and depth x tier
heatmaps from per-sample needle depths where the benchmark records them (``depth`` in the details)."""
import json
import os
from typing import Dict, List, Optional

from .specs import classify


def _plt():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def plot_report(report: dict, out_dir: str, work_dir: Optional[str] = None) -> List[str]:
    plt = _plt()
    os.makedirs(out_dir, exist_ok=True)
    tiers = report['tiers']
    written = []
    groups: Dict[tuple, list] = {}
    for r in report['rows']:
        groups.setdefault((r.bench, r.row), []).append(r)
    for (bench, row), rows in groups.items():
        fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(tiers) + 2), 4))
        for r in rows:
            xs = [i for i, t in enumerate(tiers) if t in r.cells and r.cells[t].status == 'ok']
            ys = [r.cells[tiers[i]].score for i in xs]
            errs = [r.cells[tiers[i]].ci95 or 0 for i in xs]
            ax.errorbar(xs, ys, yerr=errs, marker='o', capsize=3, label=r.model)
            for i, t in enumerate(tiers):
                if t in r.cells and r.cells[t].status == 'n/a':
                    ax.annotate('N/A', (i, 2), ha='center', fontsize=7, color='gray')
            if r.published:
                px = [i for i, t in enumerate(tiers) if t in r.published]
                ax.plot(px, [r.published[tiers[i]] for i in px], linestyle='--', marker='x', alpha=0.7,
                        label=f'{r.model} published ({r.published_name})')
        ax.set_xticks(range(len(tiers)))
        ax.set_xticklabels(tiers)
        ax.set_ylim(0, 100)
        ax.set_xlabel('context tier')
        ax.set_ylabel('score (%)')
        ax.set_title(f'{bench} {row}: score vs tier')
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"score_vs_tier_{bench}_{row.replace(' ', '_')}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    if work_dir:
        written += plot_depth_heatmaps(report, out_dir, work_dir)
    return written


def _details(work_dir: str, model: str, abbr: str):
    path = os.path.join(work_dir, 'results', model, f'{abbr}.json')
    if not os.path.isfile(path):
        return []
    with open(path, encoding='utf-8') as f:
        res = json.load(f)
    out = []
    for d in res.get('details', []):
        depth = d.get('depth')
        correct = d.get('correct')
        depth = depth[0] if isinstance(depth, list) and depth else depth
        correct = correct[0] if isinstance(correct, list) and correct else correct
        if isinstance(depth, (int, float)) and correct is not None:
            out.append((float(depth), bool(correct)))
    return out


def plot_depth_heatmaps(report: dict, out_dir: str, work_dir: str, bins: int = 10) -> List[str]:
    import numpy as np
    plt = _plt()
    models = sorted({r.model for r in report['rows']})
    written = []
    abbrs = []
    for model in models:
        d = os.path.join(work_dir, 'results', model)
        if os.path.isdir(d):
            abbrs += [f[:-5] for f in os.listdir(d) if f.endswith('.json')]
    found = classify(sorted(set(abbrs)))
    for bench, by_tier in found.items():
        tiers = [t for t in report['tiers'] if t in by_tier]
        for model in models:
            grid = np.full((bins, len(tiers)), np.nan)
            any_depth = False
            for j, tier in enumerate(tiers):
                samples = [s for abbr in by_tier[tier].values() for s in _details(work_dir, model, abbr)]
                if not samples:
                    continue
                any_depth = True
                depth = np.clip(np.array([s[0] for s in samples]), 0, 1 - 1e-9)
                ok = np.array([s[1] for s in samples], dtype=float)
                idx = (depth * bins).astype(int)
                for b in range(bins):
                    if (idx == b).any():
                        grid[b, j] = 100 * ok[idx == b].mean()
            if not any_depth:
                continue
            fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(tiers) + 2), 4))
            im = ax.imshow(grid, aspect='auto', origin='upper', cmap='RdYlGn', vmin=0, vmax=100)
            ax.set_xticks(range(len(tiers)))
            ax.set_xticklabels(tiers)
            ax.set_yticks(range(bins))
            ax.set_yticklabels([f'{100 * b // bins}-{100 * (b + 1) // bins}%' for b in range(bins)])
            ax.set_xlabel('context tier')
            ax.set_ylabel('needle depth')
            ax.set_title(f'{bench}: accuracy by depth and tier ({model})')
            fig.colorbar(im, ax=ax, label='accuracy (%)')
            fig.tight_layout()
            path = os.path.join(out_dir, f'depth_{bench}_{model}.png')
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written
