"""The tier report's uncertainty: each cell made with the interval of the dataset units it is the mean of, and each
row's effective lengths with their intervals, from resamples of the benchmark's clusters.

Each benchmark says how its samples are related (``Bench.cluster_keys``, :mod:`opencompass_longctx.spec`). From a
result's per-sample details this module makes, per dataset (or split of one), its :class:`Unit`: the scored samples
tallied by cluster (sum of values, count, sum of squares). A table cell is a weighted mean of units (a dataset; the
mean of a row's datasets; the mean of rows), kept as ``Cell.units`` {unit key: weight}; its 95% interval
(:func:`cell_interval`) is the bounded cluster-robust one of that mean (:func:`opencompass_longctx.stats.intervals.
clustered_interval`), or the Wilson one where every cluster holds one sample of the cell (independent samples). Both
lie in [0, 100]. Each shown cell's interval is made once, when the cell is made; a dataset's own cell (which no table
shows) has none.

The effective length's interval resamples whole clusters (the same cluster at every tier and dataset of the
benchmark draws together, so a story or needle entry that is hard everywhere moves every tier at once), recomputes
every tier's score and the base score from the resample, then the effective length, and reports the 2.5% and 97.5%
quantiles (:func:`opencompass_longctx.stats.effective.effective_interval`), widened to hold the point itself. A unit
without clusters (a benchmark that declares its samples independent, or results that do not name the clusters) is
resampled on its own, binomially.
"""
import math
import zlib
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from opencompass_longctx.leaderboard.tier_report import NOLIMA, RULER, Cell, Effective
from opencompass_longctx.stats.effective import (BOOT_SEED, BOOTSTRAP, effective_interval, effective_length,
                                                 holding_point, nolima_threshold)
from opencompass_longctx.stats.intervals import Bounds, ClusterTable, binomial_interval, clustered_interval
HEADLINE_KEY = {'citation': 'citation_hit', 'answer': 'answer_hit'}


def detail_value(d: dict, key: str):
    v = d.get(key)
    return v[0] if isinstance(v, list) and v else v


def value_key(res: dict) -> str:
    """The per-sample detail key that holds a sample's value in the result's headline metric."""
    return HEADLINE_KEY.get(detail_value(res, 'headline'), 'correct')


@dataclass
class Unit:
    """The scored samples of one dataset (or one split of it) for the intervals: its score (percent), its sample
    count, and {cluster: [sum of values, samples, sum of squared values]} (None: no clusters known, the samples are
    independent)."""
    score: float
    n: int
    tallies: Optional[Dict[str, List[float]]] = None
    note: str = ''


def nonfinite_sample(res: Optional[dict]) -> Optional[str]:
    """Why a result's per-sample values cannot be read: the first sample whose value in the headline metric is a
    number that is not finite (NaN, inf), named by its index; None when there is none."""
    details = (res or {}).get('details')
    if not isinstance(details, list):
        return None
    key = value_key(res)
    for i, d in enumerate(details):
        v = detail_value(d, key) if isinstance(d, dict) else None
        if isinstance(v, float) and not math.isfinite(v):
            return (f'sample {i} has {key} = {v!r}, not a number in [0, 1] (its evaluation went wrong: evaluate it '
                    'again, or remove the sample)')
    return None


def make_unit(bench, res: Optional[dict], task: str, score: float, n: int,
              keep: Optional[Tuple[str, str]] = None) -> Unit:
    """The unit of a result: tallies by the benchmark's clusters when it declares them, the details name them and
    reproduce the score; else the independent unit of (score, n), with a note saying why when clusters were
    expected."""
    if not bench.cluster_keys:
        return Unit(score, n)
    details = (res or {}).get('details')
    if not isinstance(details, list) or not details:
        return Unit(score, n, note='no per-sample details: samples taken as independent')
    key = value_key(res)
    tallies: Dict[str, List[float]] = {}
    try:
        for i, d in enumerate(details):
            if detail_value(d, 'over_length') or (keep and detail_value(d, keep[0]) != keep[1]):
                continue
            v = detail_value(d, key)
            if not isinstance(v, (bool, int, float)) or not math.isfinite(v):
                continue
            t = tallies.setdefault(bench.cluster_of(d, task, i), [0.0, 0, 0.0])
            t[0] += float(v)
            t[1] += 1
            t[2] += float(v) ** 2
    except KeyError as e:
        return Unit(score, n, note=f'the per-sample details do not name the clusters ({e.args[0]!r}; results '
                                   'written by an older version): samples taken as independent')
    total = sum(t[1] for t in tallies.values())
    if not total or not abs(100 * sum(t[0] for t in tallies.values()) / total - score) <= 1e-6:
        return Unit(score, n, note='the per-sample details do not reproduce the score: samples taken as independent')
    return Unit(score, total, tallies)


def combine(parts: Sequence[Dict[str, float]]) -> Dict[str, float]:
    """The units of the mean of cells (each a {unit: weight})."""
    out: Dict[str, float] = {}
    for p in parts:
        for u, w in p.items():
            out[u] = out.get(u, 0.0) + w / len(parts)
    return out


def cluster_table(units: Dict[str, float], data: Dict[str, Unit]) -> ClusterTable:
    """The (cluster, unit) tallies of a cell whose units all have clusters (:class:`..stats.intervals.ClusterTable`)."""
    codes: Dict[str, int] = {}
    rows = []
    for j, (key, _) in enumerate(units.items()):
        for c, t in data[key].tallies.items():
            rows.append((codes.setdefault(c, len(codes)), j, t[1], t[0], t[2] if len(t) > 2 else t[0]))
    arr = np.array(rows, dtype=float).reshape(-1, 5)
    return ClusterTable(arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2], arr[:, 3], arr[:, 4],
                        np.array(list(units.values()), dtype=float))


def cell_interval(score: float, units: Dict[str, float], data: Dict[str, Unit]) \
        -> Tuple[Optional[Bounds], int, str]:
    """(95% interval in percent or None, clusters, method) of a cell that is the weighted mean ``units`` of ``data``.

    All units clustered and some cluster holding more than one sample of the cell: the bounded cluster-robust
    interval over the clusters of the cell (``clustered``; None under ``MIN_CLUSTERS`` clusters). Otherwise the
    Wilson interval of the weighted mean (``wilson``), as for independent samples: also where every cluster holds
    one sample of the cell (BABILong's stories within a tier), which is the same case."""
    us = [(data[u], w) for u, w in units.items()]
    if us and all(u.tallies for u, _ in us):
        table = cluster_table(units, data)
        if np.bincount(table.cluster, weights=table.n).max() > 1:
            return clustered_interval(table), table.clusters, 'clustered'
    bounds = binomial_interval([(w, u.score / 100, u.n) for u, w in us])
    return bounds, sum(u.n for u, _ in us), 'wilson'


class Resampler:
    """Resampled unit scores (``BOOTSTRAP`` x 1, percent) of one model's benchmark: clusters drawn with replacement
    together across all its units, unclustered units binomially on their own; seeded by the model and benchmark."""

    def __init__(self, data: Dict[str, Unit], seed_text: str, resamples: int = BOOTSTRAP):
        self.data, self.b, self.seed_text = data, resamples, seed_text
        self._memo: Dict[str, np.ndarray] = {}
        self._mult: Optional[np.ndarray] = None

    def _draw(self) -> None:
        """The resampled clusters, drawn at first use (when every unit of the benchmark is known)."""
        self.rng = np.random.default_rng([BOOT_SEED, zlib.crc32(self.seed_text.encode())])
        labels = sorted({c for u in self.data.values() if u.tallies for c in u.tallies})
        self.index = {c: i for i, c in enumerate(labels)}
        g = len(labels)
        # how often each cluster is drawn in each resample (G draws with replacement out of G), 100 resamples at a
        # time; a count fits a byte (the most drawn of 10^4 clusters is drawn about 7 times)
        self._mult = np.zeros((self.b, g), dtype=np.uint8)
        for start in range(0, self.b if g else 0, 100):
            rows = min(100, self.b - start)
            draws = self.rng.integers(0, g, (rows, g)) + g * np.arange(rows)[:, None]
            self._mult[start:start + rows] = np.minimum(np.bincount(draws.ravel(), minlength=rows * g), 255) \
                .reshape(rows, g)

    @property
    def mult(self) -> np.ndarray:
        if self._mult is None:
            self._draw()
        return self._mult

    def unit(self, key: str) -> np.ndarray:
        if key not in self._memo:
            u = self.data[key]
            mult = self.mult
            if u.tallies and all(c in self.index for c in u.tallies):
                idx = np.array([self.index[c] for c in u.tallies])
                s = np.array([t[0] for t in u.tallies.values()])
                k = np.array([t[1] for t in u.tallies.values()], dtype=float)
                m = mult[:, idx]
                num, den = m @ s, m @ k
                with np.errstate(invalid='ignore', divide='ignore'):
                    self._memo[key] = np.where(den > 0, 100 * num / np.where(den > 0, den, 1), u.score)
            else:
                self._memo[key] = 100 * self.rng.binomial(max(u.n, 1), min(max(u.score / 100, 0), 1), self.b) \
                    / max(u.n, 1)
        return self._memo[key]

    def cell(self, units: Dict[str, float]) -> np.ndarray:
        return sum(w * self.unit(u) for u, w in units.items())

    def clusters_weighted(self, values: Dict[str, float], weights: Dict[str, float]) -> Optional[np.ndarray]:
        """The resampled weighted mean of per-cluster values (e.g. each needle entry's base score), or None when
        a cluster is not one of the resampled ones."""
        mult = self.mult
        if not values or any(c not in self.index for c in values):
            return None
        idx = np.array([self.index[c] for c in values])
        v = np.array(list(values.values()))
        w = np.array([weights[c] for c in values])
        m = mult[:, idx] * w
        den = m.sum(axis=1)
        with np.errstate(invalid='ignore', divide='ignore'):
            return np.where(den > 0, (m @ v) / np.where(den > 0, den, 1), np.nan)


def paper_base_by_cluster(bench, details_by_task: Sequence[Tuple[str, List[dict]]],
                          paper_base: Callable) -> Optional[Tuple[Dict[str, float], Dict[str, float]]]:
    """({cluster: its base score}, {cluster: weight}) of the benchmark's own base over the base tiers' details:
    the base computed on each cluster's samples alone, weighted by its sample count; None when the clusters are
    unknown or their weighted mean is not the base over all samples (the base then stays fixed)."""
    groups: Dict[str, List[dict]] = {}
    try:
        for task, details in details_by_task:
            for i, d in enumerate(details):
                if not detail_value(d, 'over_length'):
                    groups.setdefault(bench.cluster_of(d, task, i), []).append(d)
    except KeyError:
        return None
    values, weights = {}, {}
    for c, ds in groups.items():
        b = paper_base(ds)
        if b is None:
            return None
        values[c], weights[c] = b, float(len(ds))
    whole = paper_base([d for _, ds in details_by_task for d in ds])
    if not values or whole is None:
        return None
    mixed = sum(values[c] * weights[c] for c in values) / sum(weights.values())
    return (values, weights) if abs(mixed - whole) < 1e-6 else None


# ---------------------------------------------------------------------------------------------- cells and rows
def _interval(found: Tuple[Optional[Bounds], int, str]) -> dict:
    """A cell's interval fields from (bounds or None, clusters, method)."""
    bounds, clusters, method = found
    return dict(ci_lo=None if bounds is None else bounds.lo, ci_hi=None if bounds is None else bounds.hi,
                clusters=clusters, ci_method=method)


def independent_cell(score: float, n: int, **fields) -> Cell:
    """A cell of ``n`` independent samples: the Wilson interval of its score."""
    return Cell(score=score, n=n, **fields, **_interval((binomial_interval([(1.0, score / 100, n)]), n, 'wilson')))


def dataset_cell(data: Dict[str, Unit], key: str, unit: Unit, **fields) -> Cell:
    """A dataset's cell: its unit, registered in ``data`` for the rows' intervals and the resampling, and no interval
    of its own (no table shows a dataset's cell: the rows that are means of it make theirs, :func:`mean_cell`)."""
    data[key] = unit
    return Cell(units={key: 1.0}, **fields)


def unit_cell(data: Dict[str, Unit], key: str, unit: Unit, **fields) -> Cell:
    """A row's cell read from one unit (a split of one dataset's details), registered in ``data``, with its
    interval."""
    data[key] = unit
    units = {key: 1.0}
    return Cell(units=units, **fields, **_interval(cell_interval(fields['score'], units, data)))


def mean_cell(parts: Sequence[Cell], names: Sequence[str], data: Optional[Dict[str, Unit]], **counts) -> Cell:
    """The mean of scored cells with its interval: from their units when every part has them, else the Wilson
    interval of independent parts."""
    k = len(parts)
    score, n = sum(c.score for c in parts) / k, sum(c.n for c in parts)
    tasks = {name: c.score for name, c in zip(names, parts)}
    if data is not None and parts and all(c.units for c in parts):
        units = combine([c.units for c in parts])
        return Cell(score=score, n=n, tasks=tasks, units=units, **counts,
                    **_interval(cell_interval(score, units, data)))
    return Cell(score=score, n=n, tasks=tasks, **counts,
                **_interval((binomial_interval([(1 / k, c.score / 100, c.n) for c in parts]), n, 'wilson')))


def row_effective(cells: Dict[str, Cell], tiers: Sequence[str], sampler: Resampler, base_tiers: Sequence[str],
                  base: Optional[float], by_cluster: Optional[Tuple[Dict[str, float], Dict[str, float]]],
                  nolima_ratio: float, ruler_threshold: float) -> Dict[str, Effective]:
    """A row's two effective lengths over its tiers' cells (NoLiMa's: ``nolima_ratio`` of ``base``; RULER's: a fixed
    threshold), each with its 95% interval: every tier's score, and the base (its benchmark's own, per cluster in
    ``by_cluster``, else the best at the base tiers), recomputed on the same resamples of the clusters."""
    series = [(tier, cells[tier].score if cells[tier].status == 'ok' else None) for tier in tiers]
    thr = nolima_threshold(base, nolima_ratio)
    nolima = effective_length(series, thr) if thr is not None else {'contiguous': None, 'raw': None}
    ruler = effective_length(series, ruler_threshold)
    reps = np.full((sampler.b, len(tiers)), np.nan)
    for j, t in enumerate(tiers):
        c = cells.get(t)
        if c is not None and c.status == 'ok' and c.units:
            reps[:, j] = sampler.cell(c.units)
    nolima_interval = None
    if thr is not None:
        resampled = sampler.clusters_weighted(*by_cluster) if by_cluster else None
        if resampled is None and not by_cluster:
            cols = [j for j, t in enumerate(tiers) if t in base_tiers and not np.isnan(reps[:, j]).all()]
            resampled = np.nanmax(reps[:, cols], axis=1) if cols else None
        nolima_interval = holding_point(
            effective_interval(reps, tiers, nolima_ratio * (resampled if resampled is not None else base)),
            nolima['contiguous'], tiers)
    ruler_interval = holding_point(effective_interval(reps, tiers, ruler_threshold), ruler['contiguous'], tiers)
    few = min((c.clusters for c in cells.values() if c.few_clusters), default=0)
    if few:      # too few clusters to resample: no interval (as the cells print none), and the reason
        nolima_interval = ruler_interval = None
    return {NOLIMA: Effective(**nolima, threshold=thr, base=base, interval=nolima_interval, few_clusters=few),
            RULER: Effective(**ruler, threshold=ruler_threshold, interval=ruler_interval, few_clusters=few)}
