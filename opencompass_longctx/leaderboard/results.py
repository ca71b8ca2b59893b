"""A run's result files (``<work_dir>/results/<model>/<abbr>.json``), each read at most once, and checked before a
cell of the tier report reads it (no OpenCompass import)."""
import json
import math
import os
from typing import Dict, Optional, Tuple

from opencompass_longctx.leaderboard.benchmarks import bench_by_name
from opencompass_longctx.leaderboard.units import nonfinite_sample


def first(v):
    """OpenCompass stores non-numeric results of each replica in a list: take the first."""
    return v[0] if isinstance(v, list) and v else v


def _preview(v, limit: int = 40) -> str:
    text = json.dumps(v)[:limit]
    return f'{text}... ({type(v).__name__})' if len(text) == limit else f'{text} ({type(v).__name__})'


def read_result(path: str) -> Optional[dict]:
    """A result file as a dict; None when there is none; ``{'error': why, 'unreadable': True}`` when it cannot
    be parsed or is not a JSON object (a truncated file, ``[]``)."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding='utf-8') as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        return {'error': f'unreadable result file {path} ({e})', 'unreadable': True}
    if not isinstance(res, dict):
        return {'error': f'result file {path} holds {_preview(res)}, not a JSON object', 'unreadable': True}
    return res


def number(v) -> bool:
    """A finite number (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def table_problem(res: dict, metric: str) -> Optional[str]:
    """Why a parsed result cannot make a table cell (a score, counts or details of the wrong type), or None."""
    counts = first(res.get('counts'))
    if counts not in (None, [], {}):
        if not isinstance(counts, dict):
            return f'counts is {_preview(counts)}, not an object'
        for key in ('n', 'over_length', 'engine_too_small', 'engine_error'):
            v = counts.get(key, 0)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
                return f'counts.{key} is {_preview(v)}, not a whole number'
    details = res.get('details')
    if details is not None and not (isinstance(details, list) and all(isinstance(d, dict) for d in details)):
        return f'details is {_preview(details)}, not a list of per-sample objects'
    return score_problem(res, metric) or nonfinite_sample(res)


def score_problem(res: dict, metric: str) -> Optional[str]:
    """Why a parsed result's score cannot be shown (not a number, outside [0, 100], or missing where samples were
    answered), or None."""
    if metric in res and not number(res[metric]):
        return f'{metric} is {_preview(res[metric])}, not a number'
    if metric in res and not 0 <= res[metric] <= 100:
        return f'{metric} is {_preview(res[metric])}, outside [0, 100] (a percentage)'
    if metric not in res and not _nothing_answered(first(res.get('counts'))):
        return f'no {metric!r} in it, and its counts do not say that every sample was left out'
    return None


def _nothing_answered(counts) -> bool:
    """The counts of a result with no score by design: every sample left out (over-length, engine too small or an
    engine error), so the evaluator wrote no score (opencompass_longctx.base.LongCtxEvaluator.score)."""
    if not isinstance(counts, dict) or not counts.get('n'):
        return False
    return sum(counts.get(k, 0) for k in ('over_length', 'engine_too_small', 'engine_error')) >= counts['n']


class Results:
    """The result files of one run (``<work_dir>/results/<model>/<abbr>.json``), each read at most once.
    ``names``: {the model abbr shown: the abbr the run wrote its files under}, for a model renamed in a merge."""

    def __init__(self, work_dir: str, names: Optional[Dict[str, str]] = None):
        self.work_dir = work_dir
        self.names = dict(names or {})
        self._memo: Dict[tuple, Optional[dict]] = {}

    def path(self, model: str, abbr: str) -> str:
        return os.path.join(self.work_dir, 'results', self.names.get(model, model), f'{abbr}.json')

    def get(self, model: str, abbr: str) -> Optional[dict]:
        if (model, abbr) not in self._memo:
            self._memo[(model, abbr)] = read_result(self.path(model, abbr))
        return self._memo[(model, abbr)]


def checked_reader(results: Results, found: Dict):
    """``result(model, abbr)``: the parsed result, or an ``{'error': ...}`` entry when it is one of the table's own
    (``found``: the run's datasets by benchmark, tier and task, :func:`.benchmarks.classify`) and cannot make a cell
    (``table_problem``); each file checked once."""
    bench_of = {a: bench_by_name(b) for b, by_tier in found.items() for t in by_tier.values() for c in t.values()
                for a in c}
    checked: Dict[Tuple[str, str], Optional[dict]] = {}

    def result(model: str, abbr: str) -> Optional[dict]:
        if (model, abbr) not in checked:
            res = results.get(model, abbr)
            if res is not None and 'error' not in res and abbr in bench_of:
                problem = table_problem(res, bench_of[abbr].metric)
                if problem:
                    res = {'error': f'unusable result file {results.path(model, abbr)}: {problem}', 'unreadable': True}
            checked[model, abbr] = res
        return checked[model, abbr]
    return result
