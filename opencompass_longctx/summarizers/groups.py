"""OpenCompass's summary groups of a run, derived from the benchmarks' specs (no OpenCompass import).

:func:`summary_groups` reads the dataset abbrs of a run with each benchmark's :class:`~opencompass_longctx.spec.Bench`
and returns, children before parents (OpenCompass computes groups in list order):

* one group per table row and tier whose tasks the run has (``<bench>_<row>_<tier>``: BABILong's
  ``babilong_qa1-qa5_4k``, LongBioBench's categories and their ``mean``), the rows the tier table shows;
* with ``Bench.task_mean_from``, a task's mean over its tiers from that one up (``<bench>_<task>_avg``), and
  with ``Bench.tier_mean``, the mean over the tasks at a tier (``<bench>_<tier>_<tier_mean>``), each where it
  has more than one member (NoLiMa: ``nolima_main_avg`` over 1k and above, ``nolima_4k_variants``).

A tier config copied under a new tier adds its groups with no edit here or in the group configs;
:func:`shipped_groups` gives the groups of the tier configs this package ships (configs/summarizers/*.py).
"""
import glob
import os
from typing import Dict, List, Sequence, Tuple

from opencompass_longctx.spec import Bench
from opencompass_longctx.tiers import parse_tier, sort_tiers
from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS, classify
DATASET_CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'configs', 'datasets')


def row_groups(bench: Bench, tasks_by_tier: Dict[str, Dict[str, str]]) -> List[Dict]:
    """The groups of the benchmark's table rows: {tier: {task: abbr}} -> groups, tier by tier."""
    groups = []
    for tier, tasks in tasks_by_tier.items():
        made = set()
        for row in bench.rows:
            name = f'{bench.name}_{row.name}_{tier}'
            if row.of_rows:
                if all(r in made for r in row.of_rows):
                    groups.append(dict(name=name, subsets=[(f'{bench.name}_{r}_{tier}', 'naive_average')
                                                           for r in row.of_rows]))
                    made.add(row.name)
                continue
            if row.detail_filter or len(row.tasks) == 1:
                continue  # a split of one dataset, or the dataset itself: no group
            present = [t for t in row.tasks if t in tasks]
            if present and (row.partial_ok or len(present) == len(row.tasks)):
                groups.append(dict(name=name, subsets=[(tasks[t], bench.metric) for t in present]))
                made.add(row.name)
    return groups


def _mean(name: str, abbrs: Sequence[str], metric: str) -> List[Dict]:
    return [dict(name=name, subsets=[(a, metric) for a in abbrs])] if len(abbrs) > 1 else []


def mean_groups(bench: Bench, hits: Sequence[Tuple[str, str, str]]) -> List[Dict]:
    """A task's mean over its tiers from ``bench.task_mean_from`` up, then the mean over the tasks of each tier
    (``bench.tier_mean``); ``hits``: the run's (abbr, task, tier) of the benchmark, in the run's order."""
    by_task: Dict[str, List[str]] = {}
    by_tier: Dict[str, List[str]] = {}
    if bench.task_mean_from:
        least = parse_tier(bench.task_mean_from).tokens(bench.tier_unit)
        for abbr, task, tier in hits:
            if parse_tier(tier).tokens(bench.tier_unit) >= least:
                by_task.setdefault(task, []).append(abbr)
    if bench.tier_mean:
        for abbr, task, tier in hits:
            by_tier.setdefault(tier, []).append(abbr)
    return ([g for task, abbrs in by_task.items() for g in _mean(f'{bench.name}_{task}_avg', abbrs, bench.metric)]
            + [g for tier, abbrs in by_tier.items()
               for g in _mean(f'{bench.name}_{tier}_{bench.tier_mean}', abbrs, bench.metric)])


def summary_groups(abbrs: Sequence[str]) -> List[Dict]:
    """The summary groups of a run with these dataset abbrs (per-model copies of a dataset: the first one names
    the group's subset)."""
    found = classify(abbrs)
    groups = []
    for bench in BENCHMARKS:
        tasks_by_tier = found.get(bench.name, {})
        hits = [(a, task, tier) for a in dict.fromkeys(abbrs) for task, tier in [bench.match(a) or ('', '')]
                if tasks_by_tier.get(tier, {}).get(task) == a]
        groups += row_groups(bench, tasks_by_tier) + mean_groups(bench, hits)
    return groups


def shipped_abbrs(benchmark: str) -> List[str]:
    """The dataset abbrs of the tier configs shipped for a benchmark (``configs/datasets/<benchmark>/
    <benchmark>_<tier>_gen.py``), tier by tier: every list of tiered dataset configs each file defines."""
    from mmengine.config import Config, ConfigDict
    tiers = {os.path.basename(p)[len(benchmark) + 1:-len('_gen.py')]: p
             for p in glob.glob(os.path.join(DATASET_CONFIGS, benchmark, f'{benchmark}_*_gen.py'))}
    abbrs = []
    lazy = ConfigDict.lazy   # called while a config is parsed (a group config): mmengine's parse resets it
    try:
        for path in [tiers[t] for t in sort_tiers(tiers)]:
            for value in Config.fromfile(path).values():
                if isinstance(value, list) and value and all(isinstance(d, dict) and 'tier' in d for d in value):
                    abbrs += [d['abbr'] for d in value]
    finally:
        ConfigDict.lazy = lazy
    return list(dict.fromkeys(abbrs))


def shipped_groups(benchmark: str) -> List[Dict]:
    """The summary groups of the benchmark's shipped tier configs, as a run of all of them would derive them."""
    return summary_groups(shipped_abbrs(benchmark))
