"""Which of a run's benchmark datasets no tier-table cell reads, and why (pure functions; no OpenCompass import of
their own: a dataset ``type`` written as a dotted path is imported to find its benchmark, as
:func:`opencompass_longctx.spec.spec_of`).

The tier table reads a dataset's benchmark, task and tier from its abbr (:func:`.benchmarks.classify`, each benchmark's
:meth:`Bench.match`). A dataset of this package (its ``type`` is one of the benchmarks' dataset classes: the spec's
``dataset_type``) that the table cannot read is *unplaced*: its scores are only in OpenCompass's own summary. That
happens when

* its abbr matches none of its benchmark's table names (a user-made abbr such as ``babilong_qa1_4k_sys``);
* the tier part of its abbr is not a tier;
* its abbr is read as another benchmark's dataset (the table would show it there);
* its task is in no row of its benchmark's table (BABILong qa11-qa20: the rows are qa1-qa5 and qa1-qa10);
* its abbr names another tier than its config's ``tier`` (the table would show it in the wrong column);
* one model runs two datasets that read the same cell (the table shows one of them).

Each is listed after the tier table; the ones with a result (scores the table does not show) make the exit
non-zero. One without any result is already a failed or missing dataset of the table (``fail_on_missing``).

Datasets of other packages (OpenCompass's gsm8k, ...) are never counted: they belong to OpenCompass's table.
``LongCtxSummarizer`` and ``longctx-report`` end with a non-zero exit naming the unplaced datasets unless told to
accept them (``allow_unplaced=True`` in the summarizer config, ``--allow-unplaced``, or ``LONGCTX_ALLOW_UNPLACED=1``).
"""
import os
import re
from dataclasses import asdict, dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.spec import TIER_PATTERN, Bench, BenchmarkSpec, all_specs, spec_of
from opencompass_longctx.tiers import TierError, canonical_tier
from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS
ALLOW_ENV = 'LONGCTX_ALLOW_UNPLACED'


@dataclass(frozen=True)
class Unplaced:
    """A dataset of the run that no cell of the tier table reads."""
    dataset: str          # its abbr
    benchmark: str        # its benchmark (the spec's name)
    reason: str
    run: str = ''         # the run directory, where several are read (longctx-report)
    with_result: Tuple[str, ...] = ()   # the models that have a result file of it (checked when told how)
    no_result: bool = False             # True: checked, and no model has one (it is listed as failed or missing)
    accepted_by_run: Optional[bool] = None   # longctx-report: whether its run's summarizer accepts it (allow_unplaced)

    def line(self) -> str:
        return ((f'{self.run}: ' if self.run else '') + f'{self.dataset} ({self.benchmark}): {self.reason}'
                + (' (no result: it is listed under "Failed or missing" too)' if self.no_result else ''))

    def to_dict(self) -> dict:
        out = asdict(self)
        if self.accepted_by_run is None:
            del out['accepted_by_run']
        return out


def stopping(found: Sequence[Unplaced]) -> List[Unplaced]:
    """The unplaced datasets that make the exit non-zero: those with results (scores the table does not show). One
    without any result is already a failed or missing dataset of the table (``fail_on_missing`` decides on it)."""
    return [u for u in found if not u.no_result]


def allow_unplaced_enabled(flag: Optional[bool]) -> bool:
    """The opt-out: the option when given, else ``LONGCTX_ALLOW_UNPLACED``."""
    if flag is not None:
        return bool(flag)
    return os.environ.get(ALLOW_ENV, '').strip().lower() in ('1', 'true', 'yes')


def _type_name(t) -> str:
    if isinstance(t, type):
        return t.__name__
    text = str(t)
    if text.startswith("<class '") and text.endswith("'>"):
        text = text[len("<class '"):-len("'>")]
    return text.rpartition('.')[2]


def benchmark_spec(dataset_cfg) -> Optional[BenchmarkSpec]:
    """The spec of a dataset config of this package (its class's ``benchmark``; a type that cannot be imported, as
    in a config dump read elsewhere: by its class name), or None for any other dataset."""
    if not isinstance(dataset_cfg, dict):
        return None
    spec = spec_of(dataset_cfg)
    if spec is not None:
        return spec
    name = _type_name(dataset_cfg.get('type'))
    return next((f for f in all_specs() if f.dataset_type == name), None)


def _shape(bench: Bench) -> str:
    """A benchmark table's abbr pattern, its tier part written ``<tier>``."""
    return f'`{bench.pattern.replace(TIER_PATTERN, "<tier>")}`'


def _row_tasks(bench: Bench) -> List[str]:
    return list(dict.fromkeys(t for r in bench.rows for t in r.tasks))


def _first_match(abbr: str) -> Optional[Tuple[Bench, str, str]]:
    """The (table, task, tier) the tier table reads from an abbr (the first table that matches: as ``classify``)."""
    for b in BENCHMARKS:
        hit = b.match(abbr)
        if hit:
            return b, hit[0], hit[1]
    return None


def where(abbr: str, spec: BenchmarkSpec, dataset_cfg: Optional[dict] = None
          ) -> Tuple[Optional[Tuple[str, str, str]], Optional[str]]:
    """((table, task, tier) of the cell that reads the dataset, None) or (None, why no cell of its benchmark's
    tables reads it)."""
    hit = _first_match(abbr)
    own = [b.name for b in spec.summary]
    if hit is None:
        for b in spec.summary:
            m = re.match(b.pattern, abbr)
            if m:   # the name has the form, but its tier part is not a tier
                try:
                    canonical_tier(m.group('tier'), b.tier_unit)
                except TierError as e:
                    return None, (f"the tier part of its abbr, {m.group('tier')!r}, is not a tier "
                                  f"({str(e).split(';')[0]})")
        shapes = ', '.join(_shape(b) for b in spec.summary)
        return None, (f'its abbr matches none of the {spec.name} table names ({shapes}): the table reads the task '
                      'and the tier from the abbr')
    bench, task, tier = hit
    if bench.name not in own:
        return None, (f'its abbr reads as a {bench.name} dataset ({task} at {tier}), but it is a {spec.dataset_type}: '
                      f'the table would show it as {bench.name}\'s')
    tasks = _row_tasks(bench)
    if task not in tasks:
        rows = '; '.join(f'{r.name}: {", ".join(r.tasks)}' for r in bench.rows if r.tasks and not r.detail_filter)
        return None, f'its task {task!r} is in no row of the {bench.name} table (rows {rows})'
    given = (dataset_cfg or {}).get('tier')
    if given is not None:
        try:
            cfg_tier = canonical_tier(given, bench.tier_unit).name
        except TierError:
            cfg_tier = None     # the loader and the run checks refuse it, with the fix
        if cfg_tier is not None and cfg_tier != tier:
            return None, (f'its abbr names tier {tier} but its config\'s tier is {cfg_tier}: the table would show it '
                          f'in the {tier} column')
    return (bench.name, task, tier), None


def unplaced(datasets: Sequence[dict], pairs: Optional[Sequence[Tuple[str, str]]] = None,
             abbr_of: Callable[[dict], str] = lambda d: str(d.get('abbr')), run: str = '',
             has_result: Optional[Callable[[str, str], bool]] = None) -> List[Unplaced]:
    """The datasets of this package among ``datasets`` that no tier-table cell reads, each with the reason, in the
    config's order (each abbr once). ``pairs``: the (model, dataset abbr) pairs the run makes, for the datasets that
    share a cell for one model (None: not checked). ``abbr_of``: the run's abbr of a dataset config (OpenCompass's
    ``dataset_abbr_from_cfg``; default: its ``abbr``). ``run``: named in each entry. ``has_result(model, abbr)``:
    whether the run wrote a result of it (with ``pairs``: each entry says which models did)."""
    out: List[Unplaced] = []
    cell: Dict[str, Tuple[str, str, str]] = {}
    spec_name: Dict[str, str] = {}
    seen = set()
    for d in datasets:
        abbr = abbr_of(d)
        if abbr in seen:
            continue
        seen.add(abbr)
        spec = benchmark_spec(d)
        if spec is None:
            continue
        spec_name[abbr] = spec.name
        place, why = where(abbr, spec, d)
        if why:
            out.append(Unplaced(abbr, spec.name, why, run))
        else:
            cell[abbr] = place
    if pairs:
        by_cell: Dict[Tuple[str, Tuple[str, str, str]], List[str]] = {}
        for model, abbr in pairs:
            if abbr in cell:
                names = by_cell.setdefault((model, cell[abbr]), [])
                if abbr not in names:
                    names.append(abbr)
        shared: Dict[str, List[str]] = {}
        for (model, (bench, task, tier)), names in by_cell.items():
            for abbr in names[1:]:
                shared.setdefault(abbr, []).append(
                    f'for {model} it reads the same cell ({bench} {task} at {tier}) as {", ".join(names[:1])}: the '
                    'table shows one of them')
        out += [Unplaced(a, spec_name[a], '; '.join(why), run) for a, why in shared.items()]
    if has_result is not None and pairs is not None:
        models: Dict[str, List[str]] = {}
        for model, abbr in pairs:
            models.setdefault(abbr, [])
            if model not in models[abbr] and has_result(model, abbr):
                models[abbr].append(model)
        out = [replace(u, with_result=tuple(models.get(u.dataset, ())), no_result=not models.get(u.dataset))
               for u in out]
    return out


def exit_message(found: Sequence[Unplaced], where_written: str) -> str:
    """What the non-zero exit says: every unplaced dataset and the three ways out."""
    return (f'{len(found)} dataset(s) of the run cannot be placed in the tier table ({where_written}): no cell reads '
            "them, so their scores are only in OpenCompass's own summary:\n"
            + '\n'.join(f'  {u.line()}' for u in found)
            + '\nGive each an abbr the table reads (<benchmark>_<task>_<tier>, as the shipped configs write it), leave '
            f'it out of the run, or accept this with allow_unplaced=True in the summarizer config (longctx-report: '
            f'--allow-unplaced), or {ALLOW_ENV}=1.')
