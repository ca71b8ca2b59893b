"""One leaderboard from several OpenCompass work directories (different models, days or clusters): each
(model, dataset) read from the run the merge chooses (:mod:`.runs` reads each run, names each model once and
fingerprints its results).

A model is one model by its identity (:mod:`.identity`: every setting of its config that decides its answers, and
its weights: the fingerprint its run recorded, else its full path), not by its abbr: two runs with the same abbr and
different identities give two rows, each shown as ``<abbr> [<label>]`` (the shortest distinguishing part of their
paths, e.g. ``final [exp1]`` and ``final [exp2]``; else a setting that differs), and a merge note names the runs and
the fields that differ (``longctx-report --as RUN=NEWABBR`` names one run's model otherwise).

Rules: the same (model, dataset) in two runs with different rows or mode is an error naming both runs; a results or
predictions file that cannot be read (a truncated file, a byte that is not UTF-8) is never taken as matching: that
(model, dataset) is left out of the table, marked with the file, and named in the merge notes; the same
fingerprint twice takes the newer run (by the run's timestamp name, else the result file's time) and says so; a
column (benchmark, task, tier) whose cells disagree across models (``rows`` for a shared dataset, ``design`` for
per-model copies, and ``mode``) marks the cells that differ from the others' (or all, when no fingerprint is
shared by two models): their numbers are not comparable.
"""
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.leaderboard.build import ModelInfo, build
from opencompass_longctx.leaderboard.benchmarks import classify
from opencompass_longctx.leaderboard.failures import Failure, find_failures
from opencompass_longctx.leaderboard.results import Results, checked_reader
from opencompass_longctx.leaderboard.runs import (Fingerprint, ReportInputError, Run, load_runs, per_model_copy,
                                                 run_unplaced)
from opencompass_longctx.leaderboard.tier_report import MergeRecord, ResultPrint, TierReport
from opencompass_longctx.util import plural


class MergedResults(Results):
    """The result files of several runs: each (model, dataset) read from the run the merge chose for it."""

    def __init__(self, chosen: Dict[Tuple[str, str], Run], unreadable: Optional[Dict[Tuple[str, str], str]] = None):
        super().__init__('')
        self.chosen = chosen
        self.unreadable = dict(unreadable or {})   # (model, abbr) -> the file that cannot be read, and why

    def run_of(self, model: str, abbr: str) -> Optional[Run]:
        return self.chosen.get((model, abbr))

    def path(self, model: str, abbr: str) -> str:
        run = self.run_of(model, abbr)
        return run.results.path(model, abbr) if run else os.path.join('<no run>', 'results', model, f'{abbr}.json')

    def get(self, model: str, abbr: str) -> Optional[dict]:
        if (model, abbr) in self.unreadable:
            return {'error': self.unreadable[model, abbr], 'unreadable': True}
        run = self.run_of(model, abbr)
        return run.results.get(model, abbr) if run else None


@dataclass
class Merged:
    runs: List[Run]
    models: List[ModelInfo]
    abbrs: List[str]
    expected: List[Tuple[str, str]]
    results: MergedResults
    failures: List[Failure]
    notes: List[str]
    marks: Dict[Tuple[str, str], str]       # (model, abbr) -> why its numbers are not comparable
    model_cfgs: List[dict] = field(default_factory=list)   # each model's config, from the newest run that has it
    identities: List[dict] = field(default_factory=list)   # each model's identity, from the same run


def _conflict(a: Run, b: Run, model: str, abbr: str, fa: Fingerprint, fb: Fingerprint) -> Optional[str]:
    what = []
    if fa.rows and fb.rows and fa.rows != fb.rows:
        what.append(f'the data differ (rows {fa.rows}, {plural(fa.samples, "sample")} in {a.path}; rows {fb.rows}, '
                    f'{plural(fb.samples, "sample")} in {b.path})')
    if fa.mode != fb.mode:
        what.append(f'the scoring differs ({a.path}: {fa.mode_text}; {b.path}: {fb.mode_text})')
    return f'{model}/{abbr}: ' + ' and '.join(what) if what else None


def _unreadable(run: Run, model: str, abbr: str) -> Optional[str]:
    """Why this run's result of (model, abbr) cannot be checked against others: its results or predictions file
    cannot be read (None when both can, or when there is no result)."""
    res = run.results.get(model, abbr)
    if res is not None and res.get('unreadable'):
        return str(res['error'])
    fp = run.fingerprint(model, abbr)
    return fp.problem if fp is not None else None


def merge(paths: Sequence[str], renames: Sequence[Tuple[str, Optional[str], str]] = ()) -> Merged:
    """Read the runs and choose, for every (model, dataset), the run whose result the table shows.
    ``renames``: (run directory, model abbr or None for the run's only model, the name to show it under)."""
    runs, notes = load_runs(paths, renames)
    candidates: Dict[Tuple[str, str], List[Run]] = {}
    for run in runs:
        for pair in run.expected:
            candidates.setdefault(pair, []).append(run)
    chosen, conflicts, newer, unreadable = {}, [], {}, {}
    for (model, abbr), rs in candidates.items():
        bad = [(r, why) for r in rs for why in [_unreadable(r, model, abbr)] if why]
        if bad:  # never taken as matching: left out, with the file named
            chosen[model, abbr] = bad[-1][0]
            unreadable[model, abbr] = bad[-1][1] + (
                f': left out (its data cannot be checked against {", ".join(r.path for r in rs if r is not bad[-1][0])})'
                if len(rs) > 1 else ': left out')
            notes.append(f'{model}/{abbr}: {unreadable[model, abbr]}; fix or delete the file, or rerun the dataset')
            continue
        ok = [r for r in rs if r.fingerprint(model, abbr) is not None]
        for i, a in enumerate(ok):
            for b in ok[i + 1:]:
                why = _conflict(a, b, model, abbr, a.fingerprint(model, abbr), b.fingerprint(model, abbr))
                if why:
                    conflicts.append(why)
        pool = ok or rs
        best = max(pool, key=lambda r: r.age_key(model, abbr))
        chosen[model, abbr] = best
        if len(ok) > 1:
            newer.setdefault((model, best.path, tuple(r.path for r in ok if r is not best)), []).append(abbr)
    if conflicts:
        raise ReportInputError(f'{len(conflicts)} result(s) of the same model and dataset in two runs were made on '
                               'different data or with different scoring; merge runs of the same data, or show one '
                               "run's model under another name (`--as RUN=NEWABBR`) to keep both:\n  "
                               + '\n  '.join(conflicts))
    for (model, best, others), abbrs in newer.items():
        unchecked = [a for a in abbrs if any(not r.fingerprint(model, a).rows for r in candidates[model, a])]
        notes.append(f'{model}: {len(abbrs)} dataset(s) are in {", ".join(others)} and in {best} with the same '
                     f'data and scoring: the newer run ({best}) is used' +
                     (f' ({len(unchecked)} without predictions, their data could not be compared: '
                      f'{", ".join(unchecked)})' if unchecked else ''))
    models: Dict[str, ModelInfo] = {}
    cfgs: Dict[str, dict] = {}
    idents: Dict[str, dict] = {}
    for run in sorted(runs, key=lambda r: r.name):  # the newest run's model config last
        for m in run.models:
            models[m.abbr], cfgs[m.abbr], idents[m.abbr] = m, run.model_cfgs[m.abbr], run.identity(m.abbr)
    order = list(dict.fromkeys(m.abbr for run in runs for m in run.models))
    abbrs = list(dict.fromkeys(a for run in runs for a in run.abbrs))
    cells = classify(abbrs, all_abbrs=True)     # (benchmark, tier, task) of each abbr: read once for the merge
    _newest_spelling(chosen, unreadable, cells, notes)
    expected = list(candidates)
    results = MergedResults(chosen, unreadable)
    checked = checked_reader(results, cells)
    failures = []
    for run in runs:
        shown = {run.on_disk(m): m for m in run.model_cfgs}
        mine = [(run.on_disk(m), a) for m, a in run.expected if chosen.get((m, a)) is run]
        if mine:  # (the task logs and files are under the abbrs the run used)
            found = find_failures(run.path, mine, lambda m, a: checked(shown[m], a))
            failures += [replace(f, model=shown[f.model]) for f in found]
    return Merged(runs, [models[a] for a in order], abbrs, expected, results, failures, notes,
                  column_marks(chosen, cells), [cfgs[a] for a in order], [idents[a] for a in order])


def _signature(run: Run, model: str, abbr: str) -> Optional[Tuple]:
    fp = run.fingerprint(model, abbr)
    if fp is None:
        return None
    return (fp.design if per_model_copy(abbr) else fp.rows), fp.mode


def _newest_spelling(chosen: Dict[Tuple[str, str], Run], unreadable: Dict[Tuple[str, str], str], found: Dict,
                     notes: List[str]) -> None:
    """One model's cell written by two runs under two spellings of one tier (``babilong_qa1_4k`` and
    ``babilong_qa1_4K``): the newer run's result is the cell's, as for one spelling; the older one is left out of
    ``chosen`` (and ``unreadable``), with a note (two spellings within one run are that run's own conflict:
    ``placement``)."""
    replaced: Dict[Tuple[str, str, str], List[str]] = {}
    for by_tier in found.values():
        for by_task in by_tier.values():
            for cands in by_task.values():
                for model in sorted({m for m, a in chosen if a in cands}):
                    have = [a for a in cands if (model, a) in chosen
                            and os.path.isfile(chosen[model, a].results.path(model, a))]
                    if len({chosen[model, a].path for a in have}) < 2:
                        continue
                    best = max(have, key=lambda a: chosen[model, a].age_key(model, a))
                    for a in have:
                        if chosen[model, a] is not chosen[model, best]:
                            replaced.setdefault((model, chosen[model, a].path, chosen[model, best].path), []).append(
                                f'{a} -> {best}')
                            del chosen[model, a]
                            unreadable.pop((model, a), None)
    for (model, old, new), pairs in replaced.items():
        notes.append(f'{model}: {plural(len(pairs), "cell")} in {old} and in {new} under another spelling of the '
                     f'tier: the newer run ({new}) is used ({", ".join(pairs)})')


def column_marks(chosen: Dict[Tuple[str, str], Run], found: Dict) -> Dict[Tuple[str, str], str]:
    """{(model, abbr): why} for the results whose data or scoring differ from the other models' of the same
    (benchmark, tier, task) column (``found``: :func:`.benchmarks.classify` of the merge's abbrs)."""
    marks = {}
    for bench, by_tier in found.items():
        for tier, by_task in by_tier.items():
            for task, cands in by_task.items():
                sigs = {(m, a): _signature(run, m, a) for (m, a), run in chosen.items() if a in cands}
                sigs = {k: s for k, s in sigs.items() if s is not None}
                if len({m for m, _ in sigs}) < 2:
                    continue
                count = Counter(sigs.values())
                top, n = count.most_common(1)[0]
                shared = n > 1 and list(count.values()).count(n) == 1
                for (m, a), s in sigs.items():
                    if s == top and shared:
                        continue
                    fp = chosen[m, a].fingerprint(m, a)
                    what = ('data and scoring' if s[0] != top[0] and s[1] != top[1] else
                            'data' if s[0] != top[0] else 'scoring') if shared else 'data or scoring'
                    others = ', '.join(sorted({m2 for (m2, _), s2 in sigs.items() if s2 != s}))
                    marks[m, a] = (f'{m}/{a} ({chosen[m, a].path}): its {what} differ from {others}\'s in '
                                   f'{bench} {task} at {tier} ({fp.short()}): not comparable')
    return marks


def build_merged(merged: Merged, ruler_threshold: float, nolima_ratio: float) -> TierReport:
    """The tier report of the merged runs (:func:`.build.build` over the chosen results), with the runs' datasets
    that no cell reads, and the merge's record: the runs, the merge's notes, each model's identity and every
    result's fingerprint."""
    from opencompass.utils import model_abbr_from_cfg
    aliases: Dict[str, Dict[str, str]] = {}
    for run in merged.runs:
        for bench, mapping in ((run.cfg.get('summarizer') or {}).get('model_aliases') or {}).items():
            aliases.setdefault(bench, {}).update(mapping)
    prints = {}
    for (model, abbr), run in merged.results.chosen.items():
        fp = run.fingerprint(model, abbr)
        if fp is not None:
            prints[f'{model}/{abbr}'] = ResultPrint(run.path, fp.rows, fp.design, fp.mode, fp.mode_text, fp.samples)
    record = MergeRecord([r.path for r in merged.runs], list(merged.notes),
                         {m.abbr: dict(ident, abbr=m.abbr) for m, ident in zip(merged.models, merged.identities)},
                         prints)
    return build('', merged.models, merged.abbrs, ruler_threshold, nolima_ratio, aliases or None,
                 expected=merged.expected, results=merged.results, failures=merged.failures, marks=merged.marks,
                 model_cfgs={model_abbr_from_cfg(m): m for m in merged.model_cfgs},  # (their runs' configs)
                 unplaced=[u for run in merged.runs for u in run_unplaced(run)], merge=record)
