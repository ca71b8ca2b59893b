"""The benchmarks' tables of the tier report, and how a dataset abbreviation maps to a table, task and tier (no
OpenCompass import).

One :class:`Bench` per benchmark table, from the benchmarks' specs (:func:`opencompass_longctx.spec.summary_tables`):
a regular expression that reads the task and the tier from a dataset abbr, the rows of the main table (each the
mean of the listed tasks' scores; the first row is the headline used for effective length), the tiers that make
the model's short-context base, and the name of the metric in the results file. A dataset whose abbr matches no
entry, or whose tier part is not a tier, is left to OpenCompass's own table.
"""
from typing import Dict, List, Sequence

from opencompass_longctx.spec import Bench, summary_tables


# Each benchmark describes its tables in its own spec (``<benchmark>/spec.py``); here they are read, in order.
BENCHMARKS: List[Bench] = summary_tables()


def bench_by_name(name: str) -> Bench:
    for b in BENCHMARKS:
        if b.name == name:
            return b
    raise KeyError(name)


def classify(abbrs: Sequence[str], all_abbrs: bool = False):
    """{bench: {tier: {task: abbr}}} for every abbr a benchmark recognises. With ``all_abbrs`` the values are
    lists: per-model copies of a dataset (NoLiMa's ``nolima_main_4k@<model>``, each made with that model's
    tokenizer) share a task and tier."""
    out: Dict = {}
    for abbr in abbrs:
        for b in BENCHMARKS:
            hit = b.match(abbr)
            if hit:
                task, tier = hit
                slot = out.setdefault(b.name, {}).setdefault(tier, {})
                if all_abbrs:
                    slot.setdefault(task, []).append(abbr)
                else:
                    slot.setdefault(task, abbr)
                break
    return out
