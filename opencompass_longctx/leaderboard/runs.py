"""A finished OpenCompass run as ``longctx-report`` reads it, from what it left: its config dump
(``<run>/configs/*.py``: the models, the datasets and their scoring), its result files and its predictions. A run is read by the models and
datasets its config names, at the paths OpenCompass writes (``results/<model abbr>/<dataset abbr>.json``, nested
when the abbr has a ``/``). Every (model, dataset) result carries a fingerprint, which the merge (:mod:`.merge`)
compares across runs:

* ``rows``: a hash of the rows the model was scored on, read from the predictions file in index order: each
  sample's prompt (the text of its messages, without the model wrapper's rendering: a chat model records the
  messages, a model without a meta template the same texts joined by newlines, so both hash alike) and its gold
  answer. It is computed from what the model saw, so it does not depend on where the data lived, on the cache,
  or on the package version, and any change of data, selection, order or prompt shows. (The cache key of a
  dataset's build record would change with the package version and lives in the cache, not in the run.)
* ``design``: the same over the gold answers only, for datasets copied per model tokenizer (abbr
  ``<dataset>@<model>``: NoLiMa's haystack is cut in each model's tokenizer, so their prompts differ by design):
  across models such copies must agree on the samples (needles, depths, order), not on the haystack text.
* ``mode``: the dataset's ``eval_cfg`` from the config dump (the evaluator and its arguments, the evaluator's
  defaults filled in, so ``mode='official'`` and no mode compare equal), hashed.
"""
import glob
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from opencompass_longctx.errors import LongCtxError
from opencompass_longctx.leaderboard.build import ModelInfo
from opencompass_longctx.leaderboard.identity import (compare as compare_identities, init_defaults as _init_defaults,
                                                     labels, model_identity, moved)
from opencompass_longctx.leaderboard.results import Results
from opencompass_longctx.util import plural
from opencompass_longctx.weights import read_recorded
_STAMP = re.compile(r'^\d{8}_\d{6}$')


class ReportInputError(LongCtxError):
    """Bad input to the report: it names the run(s) and what to do."""


class Seen(NamedTuple):
    """What the comparison needs of one prediction, kept from the one read of its file (a 1m tier's predictions
    hold megabytes of prompt per sample): the prompt's digest (:func:`prompt_digest`), the gold answer, the
    prediction."""
    digest: bytes
    gold: object
    prediction: object


@dataclass
class Fingerprint:
    rows: Optional[str]          # None: no predictions file to read
    design: Optional[str]
    mode: str
    mode_text: str
    samples: int
    problem: Optional[str] = None   # why the predictions cannot be read (then rows and design are None)
    seen: Optional[List[Seen]] = field(default=None, repr=False, compare=False)   # per sample, in index order

    def short(self) -> str:
        return f'rows {self.rows or "?"}, {plural(self.samples, "sample")}, scoring {self.mode}'


@dataclass
class Run:
    path: str
    cfg: object
    models: List[ModelInfo]
    model_cfgs: Dict[str, dict]
    abbrs: List[str]
    expected: List[Tuple[str, str]]
    datasets: Dict[str, dict]
    results: Results = None
    disk: Dict[str, str] = field(default_factory=dict)   # {model abbr shown: the abbr its files are under}
    recorded: Dict[str, dict] = field(default_factory=dict)   # {abbr on disk: its places and weights, as run}
    dumps: int = 1              # config dumps read: a run resumed under an edited config holds several
    _fp: Dict[Tuple[str, str], Optional[Fingerprint]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.path))

    def age_key(self, model: str, abbr: str):
        stamp = self.name if _STAMP.match(self.name) else ''
        path = self.results.path(model, abbr)
        return stamp, os.path.getmtime(path) if os.path.exists(path) else 0.0

    def fingerprint(self, model: str, abbr: str) -> Optional[Fingerprint]:
        if (model, abbr) not in self._fp:
            self._fp[model, abbr] = fingerprint(self, model, abbr)
        return self._fp[model, abbr]

    def on_disk(self, model: str) -> str:
        return self.disk.get(model, model)

    def identity(self, model: str) -> dict:
        """The model's identity (:func:`.identity.model_identity`: its settings, its places as the run recorded them)."""
        return model_identity(self.model_cfgs[model], self.recorded.get(self.on_disk(model)))

    def rename(self, old: str, new: str) -> None:
        """Show model ``old`` as ``new`` in every table and file (its files are still read under ``old``)."""
        if old not in self.model_cfgs:
            raise ReportInputError(f'--as {self.path}: the run has no model {old!r}; it has: '
                                   f'{", ".join(map(repr, self.model_cfgs))}')
        if not new or new in self.model_cfgs:
            raise ReportInputError(f'--as {self.path}: {new!r} is ' + ('empty' if not new else 'already a model of the run')
                                   + ': give another name')
        self.models = [ModelInfo(new, m.max_seq_len) if m.abbr == old else m for m in self.models]
        self.model_cfgs = {new if k == old else k: dict(v, abbr=new) if k == old else v
                           for k, v in self.model_cfgs.items()}
        self.expected = [(new if m == old else m, a) for m, a in self.expected]
        self.disk[new] = self.disk.pop(old, old)
        self.results = Results(self.path, self.disk)
        self._fp.clear()


def table_inputs(cfg) -> Tuple[List[ModelInfo], List[str], List[Tuple[str, str]]]:
    """From a run's config: the models, the dataset abbrs, and the (model, dataset) pairs the run was meant to
    produce (``model_dataset_combinations`` when the config has it, else every model with every dataset)."""
    from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg
    models = [ModelInfo(model_abbr_from_cfg(m), m.get('max_seq_len')) for m in cfg['models']]
    abbrs = [dataset_abbr_from_cfg(d) for d in cfg['datasets']]
    combos = cfg.get('model_dataset_combinations') or [dict(models=cfg['models'], datasets=cfg['datasets'])]
    expected = [(model_abbr_from_cfg(m), dataset_abbr_from_cfg(d))
                for c in combos for m in c['models'] for d in c['datasets']]
    return models, abbrs, list(dict.fromkeys(expected))


def find_run(work_dir: str) -> str:
    """The run directory: ``work_dir`` itself when it holds a config dump, else its newest run."""
    if not os.path.isdir(work_dir):
        raise ReportInputError(f'{work_dir}: no such directory (give an OpenCompass work directory, '
                               'e.g. outputs/default/20261201_120000, or its parent)')
    if glob.glob(os.path.join(work_dir, 'configs', '*.py')):
        return work_dir
    runs = sorted(d for d in glob.glob(os.path.join(work_dir, '*')) if glob.glob(os.path.join(d, 'configs', '*.py')))
    if not runs:
        raise ReportInputError(f'{work_dir}: no OpenCompass run found (expected <run>/configs/*.py): give the work '
                               'directory of a finished `opencompass` run or its parent')
    return runs[-1]


def load_run(work_dir: str) -> Run:
    """A run, read by the models and datasets its config names: a result is looked for where OpenCompass writes
    it for that model abbr (any abbr: ``org/model`` nests, spaces and unicode are kept)."""
    path = find_run(work_dir)
    from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg
    dumps = sorted(glob.glob(os.path.join(path, 'configs', '*.py')))
    cfg = read_config(dumps[-1])
    results = Results(path)
    if len(dumps) > 1:
        # `opencompass CONFIG -r STAMP` under an edited config writes another dump beside the first, and the run's
        # results are those of every dump: read the models and datasets of all (the newest wins for a name in two);
        # of an older dump, only those with a result (one dropped from the config before it ran is not the run's)
        models_by, datasets_by = {}, {}
        for dump in dumps:
            c = cfg if dump == dumps[-1] else read_config(dump)
            ms = {model_abbr_from_cfg(m): m for m in c['models']}
            ds = {dataset_abbr_from_cfg(d): d for d in c['datasets']}
            ran = {(m, a) for m in ms for a in ds if dump == dumps[-1] or os.path.isfile(results.path(m, a))}
            ran_m, ran_d = {m for m, _ in ran}, {a for _, a in ran}
            models_by.update((m, cfg_m) for m, cfg_m in ms.items() if m in ran_m)   # in the config's order
            datasets_by.update((a, d) for a, d in ds.items() if a in ran_d)
        cfg['models'], cfg['datasets'] = list(models_by.values()), list(datasets_by.values())
    models, abbrs, expected = table_inputs(cfg)
    run = Run(path=path, cfg=cfg, models=models, model_cfgs={model_abbr_from_cfg(m): m for m in cfg['models']},
              abbrs=abbrs, expected=expected, datasets={dataset_abbr_from_cfg(d): d for d in cfg['datasets']},
              results=results, recorded=read_recorded(path), dumps=len(dumps))
    if not any(os.path.isfile(run.results.path(m, a)) for m, a in expected):
        raise ReportInputError(f'{path}: the run has no results (no {os.path.join(path, "results", "<model>", "*.json")}'
                               f' for the models and datasets of its config): its evaluation has not run or failed (see '
                               f'{os.path.join(path, "logs")}); finish it with `opencompass <config> -r '
                               + os.path.basename(path) + '` first')
    return run


def load_runs(paths: Sequence[str], renames: Sequence[Tuple[str, Optional[str], str]] = ()) \
        -> Tuple[List[Run], List[str]]:
    """The runs (each read once, however often it is given), with ``renames`` applied (run directory, model abbr or
    None for the run's only model, the name to show it under) and each model named once (:func:`_keep_apart`); and
    the notes that say what was done."""
    runs, seen, notes = [], {}, []
    for p in paths:
        run = load_run(p)
        real = os.path.realpath(run.path)
        if real in seen:
            notes.append(f'{run.path} was given twice (as {seen[real]} and {p}): read once')
            continue
        seen[real] = p
        runs.append(run)
        if run.dumps > 1:
            notes.append(f'{run.path}: {run.dumps} saved configs (resumed under an edited config): the models and '
                         'datasets of all of them read, the newest for a name in several')
    _apply_renames(runs, renames, notes)
    _keep_apart(runs, notes)
    return runs, notes


def _apply_renames(runs: Sequence[Run], renames: Sequence[Tuple[str, Optional[str], str]], notes: List[str]) -> None:
    by_path = {os.path.realpath(r.path): r for r in runs}
    for where, old, new in renames:
        try:
            run = by_path.get(os.path.realpath(find_run(where)))
        except ReportInputError:
            run = None
        if run is None:
            raise ReportInputError(f'--as {where}={new}: {where!r} is not one of the runs given '
                                   f'({", ".join(r.path for r in runs)})')
        if old is None:
            if len(run.model_cfgs) != 1:
                raise ReportInputError(f'--as {where}={new}: the run has {len(run.model_cfgs)} models '
                                       f'({", ".join(map(repr, run.model_cfgs))}): name the one to rename, '
                                       f'--as {where}:OLDABBR={new}')
            (old,) = run.model_cfgs
        run.rename(old, new)
        notes.append(f'{run.path}: its model {old!r} is shown as {new!r} (--as)')


def _keep_apart(runs: Sequence[Run], notes: List[str]) -> None:
    """Each model abbr that names different models in different runs (their identities differ: :mod:`.identity`)
    becomes one row per model, shown as ``<abbr> [<label>]`` (:func:`.identity.labels`: the shortest distinguishing
    part of their paths, else a setting), with a note of why they were kept apart. Runs of one model keep the abbr."""
    seen: Dict[str, List[Tuple[dict, List[Run]]]] = {}
    for run in runs:
        for abbr in run.model_cfgs:
            ident = run.identity(abbr)
            classes = seen.setdefault(abbr, [])
            for first, members in classes:
                diff, unshared = compare_identities(first, ident)
                if diff:
                    continue
                if unshared:
                    notes.append(f'{abbr}: the same model in {members[0].path} and {run.path}, compared on the settings '
                                 f'both configs have ({", ".join(unshared)} only in one of them: not compared)')
                notes += [f'{abbr}: one model in {members[0].path} and {run.path}: {m}' for m in moved(first, ident)]
                members.append(run)
                break
            else:
                classes.append((ident, [run]))
    taken = set(seen)     # a label never lands on a name another model is shown under (a model named 'm [a]')
    for abbr, classes in seen.items():
        if len(classes) < 2:
            continue
        shown = []
        for label in labels([ident for ident, _ in classes]):
            name, k = f'{abbr} [{label}]', 2
            while name in taken:
                name, k = f'{abbr} [{label}] ({k})', k + 1
            taken.add(name)
            shown.append(name)
        for (_, members), new in zip(classes, shown):
            for run in members:
                run.rename(abbr, new)
        first = classes[0][0]
        why = '; '.join(f'{new!r} from {", ".join(r.path for r in members)}' for (_, members), new in zip(classes, shown))
        diffs = '; '.join(f'{shown[0]!r} / {new!r}: ' + _listed(compare_identities(first, ident)[0])
                          for (ident, _), new in zip(classes[1:], shown[1:]))
        notes.append(f'{abbr!r} names {len(classes)} different models, kept apart as {why} (the settings or weights '
                     f'that differ, as `field: first / second`: {diffs}); `--as RUN=NEWABBR` names them otherwise')


def _listed(texts: Sequence[str], most: int = 8) -> str:
    return ', '.join(texts[:most]) + (f' (and {len(texts) - most} more)' if len(texts) > most else '')


def read_config(path: str):
    """A run's saved config (OpenCompass's dump of it), or a :class:`ReportInputError` that names the file, the line
    and the cause: OpenCompass writes every top-level name of a run config into the dump, so a module imported at
    the top (``import os``) is written as ``os=<module 'os' ...>``, which no Python reads back."""
    from mmengine.config import Config
    try:
        cfg = Config.fromfile(path)
    except Exception as e:  # noqa: BLE001 - any failure to read the dump is this one input error
        raise ReportInputError(_unreadable_config(path, e)) from None
    missing = [k for k in ('models', 'datasets') if k not in cfg]
    if missing:
        raise ReportInputError(f'{path}: the saved config has no {" or ".join(missing)}: it is not the config of an '
                               'OpenCompass run (give the run directory that `opencompass <config>` made)')
    return cfg


def _unreadable_config(path: str, e: Exception) -> str:
    line = getattr(e, 'lineno', None) if isinstance(e, SyntaxError) else None
    text = (getattr(e, 'text', None) or '').strip() if line else ''
    where = f'{path}:{line}' if line else path
    module = re.match(r"^(\w+)\s*=\s*<module '", text)
    if module:
        return (f"{where}: the saved config does not parse: OpenCompass wrote the module {module.group(1)!r} into it "
                f"({text[:60]}) because the run config imports it at the top (import {module.group(1)}); move "
                'that import into a file the config reads with read_base() (docs/configs.md, "import os"), run again')
    first = (str(e).splitlines() or [''])[0][:200]
    return (f'{where}: the saved config does not parse ({type(e).__name__}: {first}'
            + (f'; the line: {text[:80]}' if text else '') + '): give the run directory of a run whose config '
            'OpenCompass could read back')


# ---------------------------------------------------------------------------------------------- fingerprints
def content_sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]


def prompt_text(origin_prompt) -> str:
    """The text of a recorded prompt without the model wrapper's rendering (see the module docstring)."""
    if isinstance(origin_prompt, str):
        return origin_prompt
    if isinstance(origin_prompt, list):
        return '\n'.join(str(t.get('prompt', '')) if isinstance(t, dict) else str(t) for t in origin_prompt
                         if (t.get('prompt') if isinstance(t, dict) else t))
    return json.dumps(origin_prompt, sort_keys=True, default=str)


def load_predictions(run_path: str, model: str, abbr: str) -> Tuple[Optional[List[dict]], Optional[str]]:
    """(the predictions of a dataset in index order, or None when there are none; why they cannot be read, or
    None). Read from OpenCompass's ``<abbr>.json`` or its shards ``<abbr>_0.json``, ``<abbr>_1.json`` ...;
    ``model`` is the abbr the run wrote them under."""
    base = os.path.join(run_path, 'predictions', model, abbr)
    files = [base + '.json'] if os.path.isfile(base + '.json') else []
    while not os.path.isfile(base + '.json') and os.path.isfile(f'{base}_{len(files)}.json'):
        files.append(f'{base}_{len(files)}.json')
    out = []
    for f in files:
        try:
            with open(f, encoding='utf-8') as fh:
                part = json.load(fh)
        except (OSError, ValueError) as e:   # (a byte that is not UTF-8 is a ValueError)
            return None, f'predictions file {f} cannot be read ({type(e).__name__}: {str(e)[:200]})'
        if not isinstance(part, dict) or not all(isinstance(v, dict) for v in part.values()):
            return None, f'predictions file {f} is not an object of per-sample objects'
        out += [part[k] for k in sorted(part, key=lambda k: int(k) if str(k).isdigit() else k)]
    return out or None, None


def prompt_digest(text: str) -> bytes:
    """A sample's identity for pairing two models' samples: a 16-byte digest of its prompt text, not the text."""
    return hashlib.blake2b(text.encode('utf-8', 'surrogatepass'), digest_size=16).digest()


def _filled(evaluator: dict) -> dict:
    """The evaluator config with its class's default arguments filled in (``mode='official'`` and no mode alike)."""
    ev = dict(evaluator)
    typ = ev.get('type')
    if not isinstance(typ, str) and typ is not None:
        typ = ev['type'] = f'{typ.__module__}.{typ.__qualname__}'
    for k, v in (_init_defaults(typ) if typ else {}).items():
        ev.setdefault(k, v)
    return ev


def scoring_mode(dataset_cfg: Optional[dict]) -> Tuple[str, str]:
    """(hash, readable text) of a dataset's scoring: its eval_cfg with the evaluator's defaults filled in."""
    eval_cfg = dict((dataset_cfg or {}).get('eval_cfg') or {})
    if isinstance(eval_cfg.get('evaluator'), dict):
        eval_cfg['evaluator'] = _filled(eval_cfg['evaluator'])
    text = json.dumps(eval_cfg, sort_keys=True, default=str)
    return content_sha(text), text


def fingerprint(run: Run, model: str, abbr: str) -> Optional[Fingerprint]:
    res = run.results.get(model, abbr)
    if res is None or 'error' in res:
        return None
    mode, mode_text = scoring_mode(run.datasets.get(abbr))
    preds, problem = load_predictions(run.path, run.on_disk(model), abbr)
    if preds is None:
        return Fingerprint(None, None, mode, mode_text, len(res.get('details') or []), problem)
    rows = [(prompt_text(p.get('origin_prompt')), p.get('gold')) for p in preds]
    seen = [Seen(prompt_digest(text), gold, p.get('prediction')) for (text, gold), p in zip(rows, preds)]
    return Fingerprint(content_sha(rows), content_sha([g for _, g in rows]), mode, mode_text, len(rows), seen=seen)


def per_model_copy(abbr: str) -> bool:
    return '@' in abbr


def run_unplaced(run: Run) -> list:
    """The datasets of one run (as its summarizer saw them: each model's datasets as the run made them) that no
    tier-table cell reads (:mod:`.placement`), each saying whether the run's own summarizer accepts it
    (``allow_unplaced``)."""
    from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg

    from opencompass_longctx.combinations import SelectionError, combinations_of, resolved_config
    from opencompass_longctx.leaderboard.placement import unplaced
    try:
        cfg = resolved_config(run.cfg)
    except (SelectionError, ValueError):   # (the run itself stopped on it): the datasets as its config lists them
        cfg = run.cfg
    pairs = [(model_abbr_from_cfg(m), dataset_abbr_from_cfg(d)) for c in combinations_of(cfg) for m in c['models']
             for d in c['datasets']]
    on_disk = Results(run.path)   # (the model abbrs of the run's config: its files' names, before any --as)
    accepted = bool((run.cfg.get('summarizer') or {}).get('allow_unplaced'))
    return [replace(u, accepted_by_run=accepted) for u in unplaced(
        cfg['datasets'], pairs, dataset_abbr_from_cfg, run=run.path,
        has_result=lambda m, a: os.path.isfile(on_disk.path(m, a)))]
