"""A benchmark's spec: the few things the planner, the run checks and the summarizer need to know of it.

Each benchmark folder (``babilong/``, ``longbio/``, ``nolima/``, or one installed apart: :func:`all_specs`) has a
``spec.py`` with one :class:`BenchmarkSpec` named ``BENCHMARK``, and its dataset class carries it as ``benchmark``.
The code above the benchmark folders reads these members and never branches on a benchmark's name, so a new
benchmark is a new folder with this spec:

* ``name``, ``dataset_type`` (the dataset class's name, also the kind of its build records), ``tokens_column``
  (the per-row prompt-token column its loader writes) and ``options``: its options dataclass
  (:mod:`opencompass_longctx.options`), whose ``tier_unit`` is the tokens per 'k' of its tiers;
* what it computes from a dataset's parsed options (each member takes the options, never the config): its rows and
  longest prompt by the tier arithmetic (``count_rows``, ``longest_prompt``, read by :meth:`BenchmarkSpec.size`,
  which prefers the dataset's build record: exact), the tokenizer that counts its tiers (``tokenizer_of``), some of
  the text its prompts are made of (``text_of``), its data checks (``checks``: each returns its problems, with the
  command that fixes them, or raises an error that says it; the run checks add the ``tokenizer`` option's own
  check, :func:`check_tokenizer`, for every benchmark) and why a tier cannot hold its prompts (``unfit``). The
  options' fields say which of them decide the text and the checks (:meth:`Options.key`), so the planner reads or
  checks once for all the configs that share them;
* ``window_option``: the option that builds its prompts to at most N data-tokenizer tokens, for a model whose window
  is below the tier (None: the benchmark's prompts are as long as its tier says);
* ``thinking_budget(max_out_len)``: the decoding budget and its mode name for a model that thinks (default: the
  package's own, :func:`opencompass_longctx.reasoning.own_budget`; a benchmark whose authors give a rule states it);
* ``summary``: its tables (:class:`Bench`: pattern, rows, base tiers, summary groups), the headline one first;
  ``units``: its line of the tier table's legend; ``report``: figures of its own beside the tier table
  (:class:`OwnReport`), or None;
* ``answer_tokens``: the new tokens its protocol gives an answer (the model configs' default is the largest,
  :func:`longest_answer`); its config folder's ``<name>_leaderboard.py``, if any, is its part of the leaderboard
  example (:func:`example`).

The methods of :class:`BenchmarkSpec` take a dataset config, as the planner holds it, and read its options once
(:meth:`BenchmarkSpec.read`). :func:`spec_of` finds a dataset config's spec from its ``type``; :func:`all_specs`
lists every benchmark's.
"""
import importlib
import os
import pkgutil
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.cache import read_build_record
from opencompass_longctx.options import DATA, TEXT, Options
from opencompass_longctx.reasoning import own_budget
from opencompass_longctx.tiers import Tier, TierError, canonical_tier
# ---------------------------------------------------------------------------------------------- summary tables
TASK = '@task'           # in Bench.cluster_keys: the dataset's task
POSITION = '@position'   # in Bench.cluster_keys: the sample's place in its dataset


@dataclass(frozen=True)
class Row:
    """A table row: the mean of some tasks' scores, or (``of_rows``) the mean of other rows of the same tier.

    By default every task must be there (the BABILong leaderboard's avg needs all of qa1-qa5); with
    ``partial_ok`` the row is the mean of the tasks the tier has (LongBioBench leaves the n=5/10 cells out of
    its smallest tiers).
    """
    name: str
    tasks: Tuple[str, ...] = ()
    partial_ok: bool = False
    of_rows: Tuple[str, ...] = ()
    detail_filter: Tuple[str, str] = ()   # (key, value): accuracy over the per-sample details that match


@dataclass(frozen=True)
class Bench:
    """How a benchmark's dataset abbrs map to table rows and tiers: a regular expression that reads the task and
    the tier from an abbr, the rows of the main table (the first row is the headline used for effective length),
    the tiers that make the model's short-context base, and the metric's name in the results file."""
    name: str
    pattern: str
    rows: Tuple[Row, ...]
    base_tiers: Tuple[str, ...]
    metric: str = 'accuracy'
    tier_unit: int = 1000
    notes: str = ''
    # the paper's own base score, computed from the per-test details of the base tiers' results (a function of
    # those details; None: no base tier was scored), used instead of the best row score at base_tiers (NoLiMa's
    # per-pair base: opencompass_longctx.nolima.metrics.base_from_details, set by its spec)
    paper_base: Optional[Callable[[Sequence[dict]], Optional[float]]] = None
    # How the samples of this benchmark are related (docs/leaderboard.md, on the intervals), read by the intervals
    # and the paired tests: ``cluster_keys`` are the per-sample detail keys whose values together name a sample's cluster (samples
    # that share text, e.g. NoLiMa's needle entry, across its datasets and tiers); empty: every sample is its own
    # cluster (independent samples). ``strata_keys`` name a crossed factor with few levels that is held fixed
    # (NoLiMa's haystack), never treated as clusters. ``relation`` says in words what the data makes of its samples.
    # Two names stand for what the details do not hold: ``TASK`` (the dataset's task, e.g. 'qa1') and ``POSITION``
    # (the sample's place in its dataset): BABILong's files put the same bAbI story at the same place in every tier.
    cluster_keys: Tuple[str, ...] = ()
    strata_keys: Tuple[str, ...] = ()
    relation: str = 'independent samples'
    # OpenCompass summary groups beside the rows' (opencompass_longctx.summarizers.groups): with ``task_mean_from``
    # (a tier), ``<name>_<task>_avg``, a task's mean over its tiers from that one up; with ``tier_mean`` (a word),
    # ``<name>_<tier>_<word>``, the mean over the tasks at a tier. '': none.
    task_mean_from: str = ''
    tier_mean: str = ''

    def cluster_of(self, detail: dict, task: str, position: int) -> Optional[str]:
        """The sample's cluster as one string (None: the benchmark declares none; KeyError naming the key when a
        declared key is not in the details, e.g. results written before the key was recorded)."""
        if not self.cluster_keys:
            return None
        parts = []
        for key in self.cluster_keys:
            v = task if key == TASK else position if key == POSITION else detail.get(key)
            v = v[0] if isinstance(v, list) and v else v
            if v is None:
                raise KeyError(key)
            parts.append(str(v))
        return '\x1f'.join(parts)

    def match(self, abbr: str) -> Optional[Tuple[str, str]]:
        """(task, tier) of a dataset abbr of this table, the tier as its length's one name (:func:`canonical_tier`);
        None when the abbr is not one of this table's or its tier part is not a tier of this benchmark."""
        m = re.match(self.pattern, abbr)
        if not m:
            return None
        try:   # the length's one name in this benchmark's unit: '0' and '0k', '1000k' and '1m' are one column
            tier = canonical_tier(m.group('tier'), self.tier_unit).name
        except TierError:
            return None
        return m.group('task'), tier


TIER_PATTERN = r'(?P<tier>[0-9.]+[kKmM]?)'


# ---------------------------------------------------------------------------------------------- the spec
LOAD_KEYS_SKIPPED = ('type', 'abbr', 'reader_cfg', 'infer_cfg', 'eval_cfg', 'n', 'k')


def load_kwargs(dataset_cfg) -> Dict:
    """The keys OpenCompass passes to the dataset's ``load`` (everything but type/abbr/reader/infer/eval)."""
    return {k: v for k, v in dict(dataset_cfg).items() if k not in LOAD_KEYS_SKIPPED}


@dataclass(frozen=True)
class DatasetSize:
    """Rows and prompt tokens of one dataset config, in its data tokenizer."""
    tier: Tier
    tier_tokens: int         # the tier in the benchmark's own tokens
    rows: int
    prompt_tokens: int       # all rows
    row_tokens: int          # one prompt by the tier arithmetic (the longest)
    exact: bool              # True: from the dataset's build record; False: the tier arithmetic
    reuse: Optional[float] = None   # the share a prefix cache serves, from the build record (None: not measured)


@dataclass(frozen=True)
class OwnReport:
    """A benchmark's own figures beside the tier table, from the results of its datasets (NoLiMa's base score,
    threshold and effective length per needle set, with splits by question type, order, depth and haystack). The
    long-context summarizer hands each model's ``(dataset config, result or None)`` pairs to ``reports``, adds
    ``rows(reports)`` (``(name, metric, value)``) to OpenCompass's table, writes every model's reports to
    ``summary/<name>_<time>.json`` and ``markdown(reports by model, dataset configs)`` to ``.md``, and prints the
    markdown under ``heading``."""
    name: str
    reports: Callable[[Sequence[Tuple[Dict, Optional[dict]]]], Dict]
    rows: Callable[[Dict], List[Tuple[str, str, float]]]
    markdown: Callable[[Dict[str, Dict], Sequence[Dict]], str]
    heading: str = ''


@dataclass(frozen=True)
class BenchmarkSpec:
    """What the code above the benchmark folders knows of one benchmark (the module docstring lists its members).

    The members that compute take the benchmark's parsed options (its ``options`` dataclass, read once from a
    dataset config by :meth:`read`); the methods take the dataset config itself, as the planner holds it, and are
    the boundary where it is read."""
    name: str
    dataset_type: str
    options: type                    # its Options dataclass (opencompass_longctx.options): one parse, one default
    tokens_column: str
    summary: Tuple[Bench, ...]
    count_rows: Callable[[Options], int]           # rows of a split, by the tier arithmetic
    longest_prompt: Callable[[Options], int]       # one prompt's tokens by the tier arithmetic (the longest)
    tokenizer_of: Callable[[Options], str]         # the tokenizer that counts its tiers
    text_of: Optional[Callable[[Options], Optional[str]]] = None   # some of the text its prompts are made of
    checks: Tuple[Callable[[Options], List[str]], ...] = ()        # its data checks
    unfit: Optional[Callable[[Options], Optional[str]]] = None     # why the tier cannot hold its prompts, or None
    # the option that caps a prompt's data-tokenizer tokens, for a model whose window is below the tier (None: the
    # benchmark's prompts are as long as its tier says)
    window_option: Optional[str] = None
    # (new max_out_len, decoding mode) for a model that thinks before it answers (opencompass_longctx.reasoning)
    thinking_budget: Callable[[int], Tuple[int, str]] = own_budget
    # figures of the benchmark's own beside the tier table (None: the table says it all)
    report: Optional[OwnReport] = None
    # what its prompts share: the share of a split's prompt tokens that LMDeploy's prefix cache (64-token blocks)
    # serves when the prompts are issued in reuse order (opencompass_longctx.prefix_reuse; measured on the
    # project's stand-in data by bench/bench_prefix.py); 0: prompts share no more than a template. The plan uses
    # it for a dataset not built yet; a built one's build record holds its own share, measured from its prompts
    prefix_reuse: float = 0.0
    # the columns whose texts, joined, make a row's prompt (what the build record's share is measured on)
    prompt_columns: Tuple[str, ...] = ('prompt',)
    # the tier table's legend line for its tiers: what 1k is, in which tokenizer
    units: str = ''
    # the new tokens its protocol gives one answer (the longest of its usual configs' budgets, short of a budget
    # that grows with the question, which its configs set per dataset): the model configs' default max_out_len
    # is the largest over the benchmarks (:func:`longest_answer`)
    answer_tokens: int = 0
    # the folder of its dataset configs ('': opencompass_longctx/configs/datasets/<name>)
    configs: str = ''

    @property
    def tier_unit(self) -> int:
        """Tokens per 'k' of its tiers (its options' ``tier_unit``)."""
        return self.options.tier_unit

    @property
    def config_dir(self) -> str:
        return self.configs or os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configs', 'datasets',
                                            self.name)

    def read(self, d: Dict) -> Options:
        """A dataset config's options for an estimate (:meth:`Options.read`; raises for a missing or unreadable
        tier)."""
        return self.options.read(load_kwargs(d))

    def tier(self, d: Dict) -> Tier:
        """A dataset config's tier as its length's one name in this benchmark's unit."""
        if 'tier' not in d:
            raise TierError(f"{d.get('abbr', 'a dataset')}: the dataset config has no tier")
        return canonical_tier(d['tier'], self.tier_unit)

    def size(self, d: Dict) -> DatasetSize:
        """Exact from the build record of an earlier load with the same arguments, else the tier arithmetic."""
        o = self.read(d)
        tier_tokens, per_row = o.tier.tokens(self.tier_unit), self.longest_prompt(o)
        rec = read_build_record(self.dataset_type, load_kwargs(d))
        if rec and rec.get('prompt_tokens') is not None:
            return DatasetSize(o.tier, tier_tokens, rec['rows'], rec['prompt_tokens'], per_row, True,
                               rec.get('prefix_share'))
        rows = self.count_rows(o)
        return DatasetSize(o.tier, tier_tokens, rows, rows * per_row, per_row, False)

    def estimate_prompt_tokens(self, d: Dict, tier_tokens: Optional[int] = None) -> int:
        """The longest prompt of a dataset config by the tier arithmetic, in its data tokenizer (``tier_tokens``:
        ignored, the options hold the tier)."""
        return self.longest_prompt(self.read(d))

    def data_tokenizer(self, d: Dict) -> str:
        """The tokenizer that counts a dataset config's tiers."""
        return self.tokenizer_of(self.read(d))

    def sample_text(self, d: Dict) -> Optional[str]:
        """Some of the text a dataset config's prompts are made of, read cheaply (None: not at hand)."""
        return self.text_of(self.read(d)) if self.text_of else None

    def text_key(self, d: Dict) -> tuple:
        """What :meth:`sample_text` depends on (the options' fields that decide it)."""
        return (self.name,) + self.read(d).key(TEXT)

    def data_key(self, d: Dict) -> tuple:
        """What :meth:`problems` depends on (the options' fields that decide it)."""
        return (self.name,) + self.read(d).key(DATA)

    def problems(self, d: Dict) -> List[str]:
        """Every problem the data checks find; an exception is a problem (its full, actionable message)."""
        if not self.checks:
            return []
        try:
            o = self.read(d)
        except Exception as e:  # noqa: BLE001 - an unreadable tier is the problem of every check
            return [f'{type(e).__name__}: {e}']
        found: List[str] = []
        for check in self.checks:
            try:
                found.extend(check(o) or [])
            except Exception as e:  # noqa: BLE001 - every problem is reported, none stops the other checks
                found.append(f'{type(e).__name__}: {e}')
        return found

    def fits(self, d: Dict) -> Optional[str]:
        """None when the dataset's tier can hold its prompts, else why not (a config to leave out)."""
        return self.unfit(self.read(d)) if self.unfit else None

    @property
    def fit_window(self) -> Optional[Callable[[Dict, int], Dict]]:
        """The config with its prompts built to at most N data-tokenizer tokens (its ``window_option`` set), for a
        model whose window is below the tier; None when the benchmark cannot build shorter prompts."""
        if self.window_option is None:
            return None
        return lambda d, tokens: dict(d, **{self.window_option: int(tokens)})


def check_tokenizer(name) -> List[str]:
    """A tokenizer option that names a missing path or a directory without tokenizer files."""
    from opencompass_longctx.tokenizer.counting import is_missing_path, tokenizer_files
    if not name or not isinstance(name, str) or name.startswith('tiktoken:'):
        return []
    if is_missing_path(name):
        return [f'tokenizer {name!r} does not exist (give the evaluated model\'s tokenizer directory)']
    if os.path.isdir(name) and not tokenizer_files(name):
        return [f'tokenizer directory {name!r} has no tokenizer files']
    return []


# ---------------------------------------------------------------------------------------------- finding specs
def _resolve(t):
    """A config's ``type`` as the object it names: a class as is, a LazyObject built, a dotted path imported."""
    if isinstance(t, type):
        return t
    if hasattr(t, 'build') and callable(t.build):          # mmengine's LazyObject
        try:
            return t.build()
        except Exception:  # noqa: BLE001
            return None
    if isinstance(t, str) and t.startswith("<class '") and t.endswith("'>"):   # str() of a class
        t = t[len("<class '"):-len("'>")]
    if isinstance(t, str) and '.' in t:
        module, _, name = t.rpartition('.')
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError):
            return None
    return None


def spec_class(dataset_cfg):
    """The class a dataset config's ``type`` names (imported where the config holds a dotted path), or None."""
    return _resolve(dataset_cfg.get('type') if isinstance(dataset_cfg, dict) else dataset_cfg)


def spec_of(dataset_cfg) -> Optional[BenchmarkSpec]:
    """The spec of a dataset config's ``type`` (its class's ``benchmark``), or None for another dataset."""
    spec = getattr(spec_class(dataset_cfg), 'benchmark', None)
    return spec if isinstance(spec, BenchmarkSpec) else None


ENTRY_POINTS = 'opencompass_longctx.benchmarks'   # the entry-point group of a benchmark installed apart
ENV_BENCHMARKS = 'LONGCTX_BENCHMARKS'             # or: spec modules named in this variable, comma-separated
_SPECS: List[BenchmarkSpec] = []


def _spec_modules() -> List[str]:
    """The spec modules of every benchmark: this package's folders with a ``spec.py`` (by name), then those that
    installed packages declare (entry point group ``opencompass_longctx.benchmarks``, value: the spec module),
    then those named by ``$LONGCTX_BENCHMARKS``."""
    here = os.path.dirname(os.path.abspath(__file__))
    own = [f'{__package__}.{i.name}.spec' for i in sorted(pkgutil.iter_modules([here]), key=lambda i: i.name)
           if i.ispkg and os.path.isfile(os.path.join(here, i.name, 'spec.py'))]
    from importlib.metadata import entry_points
    installed = [e.value for e in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name)]
    named = [m.strip() for m in os.environ.get(ENV_BENCHMARKS, '').split(',') if m.strip()]
    return list(dict.fromkeys(own + installed + named))


def all_specs() -> Sequence[BenchmarkSpec]:
    """The spec (``BENCHMARK``) of every benchmark (:func:`_spec_modules`), read once per process."""
    if not _SPECS:
        _SPECS.extend(importlib.import_module(m).BENCHMARK for m in _spec_modules())
    return _SPECS


def summary_tables() -> List[Bench]:
    """Every benchmark's tables: each headline table first (in the specs' order), then the second ones."""
    specs = all_specs()
    return [f.summary[0] for f in specs] + [b for f in specs for b in f.summary[1:]]


def longest_answer() -> int:
    """The most new tokens a benchmark's protocol gives one answer (its ``answer_tokens``), over every benchmark:
    the model configs' default ``max_out_len``, and what their engines leave for it."""
    return max(spec.answer_tokens for spec in all_specs())


def example(name: str) -> Dict[str, list]:
    """What every benchmark puts in the example config ``name`` (e.g. 'leaderboard': ``examples/eval_longctx.py``):
    the ``datasets`` and ``dataset_abbrs`` of each benchmark's ``<benchmark>_<name>.py`` in its config folder, in
    the specs' order (a benchmark without that file is not in the example). Called by the example while it is
    parsed: the values are those its own ``read_base()`` imports of those files would give."""
    from mmengine.config import Config, ConfigDict
    out: Dict[str, list] = {'datasets': [], 'dataset_abbrs': []}
    lazy = ConfigDict.lazy     # mmengine's switch for the config being parsed: a parse ends by turning it off
    for spec in all_specs():
        path = os.path.join(spec.config_dir, f'{spec.name}_{name}.py')
        if os.path.isfile(path):
            cfg = Config.fromfile(path)
            ConfigDict.lazy = lazy     # the types stay as the example's own imports would leave them
            for key in out:
                out[key] += list(cfg.get(key, []))
    return out
