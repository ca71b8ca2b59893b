"""The plan of a run, before any GPU is spent: which process loads which model, how many times, at what size.

:func:`make_plan` turns a run's model x dataset combinations into inference tasks, one per (model, tier band)
(or a few shards of a band), and costs them:

* Bands. A dataset's tier is read from its config (never by building it). Each band of the tier table
  (``TIER_BANDS``: up to 32k, 64k-128k, 256k-1m) is one task per model, so each model's engine starts once per
  band. Datasets inside a task run shortest first.
* Engine size (LMDeploy models, those with an ``engine_config``): ``session_len`` for the band's longest prompt
  (tier in the model's tokens with 10% headroom for tokenizer differences, the chat template and the longest
  generation), capped at the model's own ``max_seq_len``; ``max_batch_size`` from the KV-cache arithmetic of
  :mod:`opencompass_longctx.models.lmdeploy` for that ``session_len`` on the declared GPU. Other models (Hugging
  Face on a CPU) are only grouped.
* Samples and prompt tokens: exact from the dataset caches when a dataset was built before (its build record),
  else from the tier arithmetic of its benchmark.
* Cost: GPU-hours from the cost model (``opencompass_longctx/configs/cost_model.py``) and the harness
  overhead (engine starts and subprocess imports) as a share of the total.
* Checks that need no GPU: data present for every dataset, model directories with their tokenizers,
  ``$LONGCTX_MODEL_ROOT``; every problem in one list.

``LongCtxPartitioner`` (:mod:`opencompass_longctx.partitioner`) runs this in every ``opencompass`` run, ``--dry-run``
included, prints the plan and writes it next to the run (``<work_dir>/plan/``).
"""
import copy
import importlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence

from .cache import read_build_record
from .configs.cost_model import COST_MODEL, GPUS
from .configs.tier_table import TIER_BANDS
from .models.recipe import CAVEAT_MARK
from .tiers import TierError, parse_tier, sort_tiers

SIZE_HEADROOM = 1.10       # a tier in the model's tokens: data-tokenizer tokens x 1.10 (tokenizers differ)
TEMPLATE_TOKENS = 512      # chat template, system message and question around the context
BATCH_CAP = 64             # largest max_batch_size the planner gives an engine
GIB = 1024 ** 3


class PlanError(ValueError):
    """A run that cannot be planned (bad band list, shard count, cost-model entry)."""


# ---------------------------------------------------------------------------------------------- datasets
@dataclass(frozen=True)
class Benchmark:
    name: str
    tier_unit: int        # tokens per 'k' of a tier


BENCHMARKS = {
    'BabilongDataset': Benchmark('babilong', 1000),
    'LongBioDataset': Benchmark('longbio', 1024),
    'NoLiMaDataset': Benchmark('nolima', 1000),
}


# A tier counts tokens of the benchmark's data tokenizer; an engine is sized in the model's tokens. The ratio of
# the two is measured on the dataset's own text where it is at hand, else on this probe (varied English prose,
# names, digits, punctuation: what the benchmarks' contexts are made of), with 5% on top; without the model's
# tokenizer the headroom is SIZE_HEADROOM.
PROBE_TEXT = (
    'Margaret Ellison was born on 14 March 1962 in Wellington, studied marine biology at the University of '
    'Otago, and later worked in Lisbon and Reykjavik. Her hobbies were birdwatching, chess and restoring old '
    'clocks. In the autumn of that year the river rose higher than anyone in the village could remember; the '
    'miller, a quiet man of sixty-three, moved his sacks to the loft and waited. "We shall see," he said, '
    'looking at the grey water, "whether the bridge holds until Thursday." Daniel went to the kitchen. Sandra '
    'picked up the football there. The office is north of the hallway; the garden is west of the bedroom. '
    'Question: Where is the football? Answer: the kitchen. Between 1871 and 1903, 4,286 letters were written '
    'to the harbour master, of which 37% mention the lighthouse, 12 mention the storm of 1889, and one, dated '
    '2 February, describes a stranger who "arrived without a coat, spoke French and German, and left at dawn". '
    'I will give you context with the facts about positions of different persons hidden in some random text '
    'and a question. You need to answer the question based only on the information from the facts.')


def model_tokenizer(model_cfg):
    """The model's own tokenizer (from its directory), or None when it cannot be loaded here."""
    path = model_cfg.get('path')
    if not path or not os.path.isdir(path):
        return None
    try:
        from .tokenization import get_tokenizer
        return get_tokenizer(path)
    except Exception:  # noqa: BLE001 - the plan then uses the default headroom (and says so)
        return None


def data_tokenizer_name(bench: 'Benchmark', d: Dict) -> str:
    if bench.name == 'babilong':
        return 'tiktoken:gpt2'             # BABILong's tiers are GPT-2 tokens (the authors' data)
    if bench.name == 'longbio':
        from .longbio.generator import DEFAULT_TOKENIZER as LONGBIO_DEFAULT
        tok = d.get('tokenizer')
        return LONGBIO_DEFAULT if tok in (None, '', 'default') else tok   # as longbio.generator.make_spec
    from .tokenization import DEFAULT_TOKENIZER
    return d.get('tokenizer') or DEFAULT_TOKENIZER


SAMPLE_CHARS = 60000


_SAMPLES: Dict = {}


def sample_text(bench: 'Benchmark', d: Dict) -> Optional[str]:
    """Some of the text a dataset's prompts are made of, read cheaply (the start of one BABILong record or NoLiMa
    book, one small LongBioBench sample), without building the dataset; None when it is not at hand. Read once
    per process for all models."""
    key = (bench.name, d.get('path'), d.get('task'), str(d.get('sample_source')), d.get('tokenizer'),
           d.get('tier') if bench.name == 'babilong' else None)
    if key not in _SAMPLES:
        _SAMPLES[key] = _read_sample_text(bench, d)
    return _SAMPLES[key]


def _read_sample_text(bench: 'Benchmark', d: Dict) -> Optional[str]:
    try:
        if bench.name == 'babilong':
            from .babilong import data as bdata
            from .sources import find_file
            tier = parse_tier(d['tier'])
            src = bdata.source_for(str(d.get('sample_source', '100')), tier)
            path = find_file(src, bdata.file_candidates(d.get('task', 'qa1'), tier, src), path=d.get('path'),
                             download=False)
            return next(iter(bdata.iter_records(path)))['input'][:SAMPLE_CHARS]
        if bench.name == 'nolima':
            from .nolima import data as ndata
            rel = ndata.book_relpaths('rand_shuffle', [0])[0]
            with open(ndata.locate([rel], d.get('path'), False, None)[rel], encoding='utf-8') as f:
                return f.read(SAMPLE_CHARS)
        from .longbio.generator import Generator, make_spec
        spec = make_spec('1k', cell='standard', tokenizer=d.get('tokenizer'))
        return Generator(spec).rows(0)[0]['user']
    except Exception:  # noqa: BLE001 - the probe text stands in
        return None


_RATIOS: Dict = {}


def token_ratio(model_tok, bench: 'Benchmark', d: Dict) -> Optional[float]:
    """Model tokens per data-tokenizer token, measured on the dataset's own text where it is at hand (else on
    the probe text); None when the model's tokenizer is unknown."""
    if model_tok is None:
        return None
    data_name = data_tokenizer_name(bench, d)
    key = (model_tok.fingerprint, bench.name, data_name, d.get('path'), d.get('task'), d.get('sample_source'),
           d.get('tier') if bench.name == 'babilong' else None)
    if key not in _RATIOS:
        try:
            from .tokenization import get_tokenizer
            text = sample_text(bench, d) or PROBE_TEXT
            _RATIOS[key] = model_tok.count(text) / max(get_tokenizer(data_name).count(text), 1)
        except Exception:  # noqa: BLE001
            _RATIOS[key] = None
    return _RATIOS[key]


def type_name(obj) -> str:
    """'BabilongDataset' from a class, a LazyObject or the dotted string a dumped config holds."""
    t = obj.get('type', '') if isinstance(obj, dict) else obj
    name = getattr(t, '__name__', None) or str(t)
    return name.rsplit('.', 1)[-1].strip("'>")


def dataset_class(dataset_cfg):
    """The config's dataset class (imported from the dotted string a dumped config holds), or None."""
    t = dataset_cfg.get('type') if isinstance(dataset_cfg, dict) else dataset_cfg
    if isinstance(t, str) and '.' in t:
        module, _, name = t.rpartition('.')
        try:
            t = getattr(importlib.import_module(module), name)
        except Exception:  # noqa: BLE001 - not importable here: known by its name only
            return None
    return t if isinstance(t, type) else None


def benchmark_type(dataset_cfg) -> str:
    """The benchmark's dataset type: the config's, or the one its class extends (``DemoBabilongDataset`` ->
    ``'BabilongDataset'``), under which its builds are recorded."""
    name = type_name(dataset_cfg)
    cls = None if name in BENCHMARKS else dataset_class(dataset_cfg)
    return next((c.__name__ for c in cls.__mro__ if c.__name__ in BENCHMARKS), name) if cls else name


def benchmark_of(dataset_cfg) -> Optional[Benchmark]:
    return BENCHMARKS.get(benchmark_type(dataset_cfg))


LOAD_KEYS_SKIPPED = ('type', 'abbr', 'reader_cfg', 'infer_cfg', 'eval_cfg', 'n', 'k')


def load_kwargs(dataset_cfg) -> Dict:
    """The keys OpenCompass passes to the dataset's ``load`` (everything but type/abbr/reader/infer/eval)."""
    return {k: v for k, v in dict(dataset_cfg).items() if k not in LOAD_KEYS_SKIPPED}


def _estimate_rows(bench: Benchmark, d: Dict, tier_tokens: int) -> int:
    if bench.name == 'babilong':
        if isinstance(d.get('sample_indices'), (list, tuple)):
            return len(d['sample_indices'])
        if d.get('num_samples'):
            return int(d['num_samples'])
        source = str(d.get('sample_source', '100'))
        if source == '1000' or (source == 'official' and tier_tokens <= 32000):
            return 1000
        return 100
    if bench.name == 'longbio':
        return int(d.get('num_samples', 800)) * (2 if d.get('cell') == 'idk' else 1)
    # NoLiMa: pairs x haystacks x depths
    from .nolima.needles import EXPECTED_PAIRS, resolve_variant
    pairs = d.get('pairs')
    if isinstance(pairs, int) and not isinstance(pairs, bool):
        n_pairs = pairs
    elif isinstance(pairs, (list, tuple)):
        n_pairs = len(pairs)
    else:
        try:
            n_pairs = EXPECTED_PAIRS.get(resolve_variant(d.get('needle_set', 'main')), EXPECTED_PAIRS['main'])
        except Exception:  # noqa: BLE001 - a custom needle set: the main set's size as the estimate
            n_pairs = EXPECTED_PAIRS['main']
    from .nolima.haystack import default_depth_intervals
    haystacks = len(d['haystacks']) if d.get('haystacks') else 5
    depths = (len(d['depth_indices']) if d.get('depth_indices') else
              int(d.get('depth_intervals') or default_depth_intervals(tier_tokens)))
    return n_pairs * haystacks * depths


def _estimate_prompt_tokens(bench: Benchmark, d: Dict, tier_tokens: int) -> int:
    """Tokens of the longest prompt (the whole user message), in the benchmark's data tokenizer: an upper bound
    where the tier does not fix it."""
    if bench.name == 'babilong':
        # the tier is the whole sample; 0k holds the facts alone: a long qa3 story and the prompt stay under 2,000
        return tier_tokens or 2000
    if bench.name == 'longbio':
        from .longbio.catalogue import LONGBIO_NEED_TOKENS
        if not tier_tokens:          # 0k: the needles and the prompt only (the most over the authors' 800 samples)
            return LONGBIO_NEED_TOKENS.get(d.get('cell'), max(LONGBIO_NEED_TOKENS.values()))
        return tier_tokens - int(d.get('reserve_tokens') or 0)
    return tier_tokens + 150                    # NoLiMa: the haystack of L tokens + needle, template, question


@dataclass
class DatasetLoad:
    abbr: str
    bench: str
    tier: str
    tier_tokens: int                 # the tier in the benchmark's own tokens
    rows: int
    prompt_tokens: int               # all rows, in the data tokenizer
    exact: bool                      # True: from the dataset's build record; False: tier arithmetic
    max_out_len: int
    row_tokens_estimate: int         # one prompt by the tier arithmetic
    ratio: Optional[float] = None    # model tokens per data-tokenizer token (None: not measured)

    min_headroom: float = SIZE_HEADROOM

    @property
    def headroom(self) -> float:
        return self.min_headroom if self.ratio is None else max(self.min_headroom, self.ratio * 1.05)

    @property
    def tokens_per_row(self) -> float:
        return self.prompt_tokens / self.rows if self.rows else 0.0

    @property
    def need_tokens(self) -> int:
        """The longest prompt plus its answer, in the model's tokens (with headroom for tokenizer differences)."""
        longest = max(self.tokens_per_row, self.row_tokens_estimate)
        return int(math.ceil(longest * self.headroom)) + TEMPLATE_TOKENS + self.max_out_len


def dataset_load(d: Dict, model_max_out_len: Optional[int] = None, model_tok=None) -> DatasetLoad:
    from opencompass.utils import dataset_abbr_from_cfg
    bench = benchmark_of(d)
    abbr = dataset_abbr_from_cfg(d)
    infer = (d.get('infer_cfg') or {}).get('inferencer') or {}
    max_out = int(infer.get('max_out_len') or model_max_out_len or 0)
    if bench is None:
        raise PlanError(f'{abbr}: not a dataset of this package ({type_name(d)}); LongCtxPartitioner plans '
                        f'BABILong, LongBioBench and NoLiMa datasets (use NaivePartitioner for others)')
    if 'tier' not in d:
        raise PlanError(f'{abbr}: the dataset config has no tier')
    tier = parse_tier(d['tier'])
    tier_tokens = tier.tokens(bench.tier_unit)
    per_row = _estimate_prompt_tokens(bench, d, tier_tokens)
    ratio = token_ratio(model_tok, bench, d)
    rec = read_build_record(benchmark_type(d), load_kwargs(d))
    if rec and rec.get('prompt_tokens') is not None:
        return DatasetLoad(abbr, bench.name, tier.name, tier_tokens, rec['rows'], rec['prompt_tokens'], True,
                           max_out, per_row, ratio)
    rows = _estimate_rows(bench, d, tier_tokens)
    return DatasetLoad(abbr, bench.name, tier.name, tier_tokens, rows, rows * per_row, False, max_out, per_row,
                       ratio)


# ---------------------------------------------------------------------------------------------- bands
def band_edges(bands: Optional[Sequence[str]] = None) -> List[int]:
    """Each band's largest tier as a size (1k = 1000), ascending."""
    names = list(TIER_BANDS if bands is None else bands)
    if not names:
        raise PlanError('bands must name at least one tier (each band\'s largest tier), e.g. '
                        f"{TIER_BANDS}")
    try:
        edges = [parse_tier(b).sort_key for b in names]
    except TierError as e:
        raise PlanError(f'bad band list {names!r}: {e}') from None
    if edges != sorted(set(edges)):
        raise PlanError(f'bands must be increasing tiers without repeats, got {names!r}')
    return edges


def band_of(tier: str, edges: Sequence[int]) -> int:
    """Index of the band that holds ``tier``; tiers above the last edge share one extra band."""
    size = parse_tier(tier).sort_key
    for i, e in enumerate(edges):
        if size <= e:
            return i
    return len(edges)


def band_name(i: int, edges: Sequence[int]) -> str:
    def label(n):
        if n >= 1000000 and n % 1000000 == 0:
            return f'{n // 1000000}m'
        return f'{n // 1000}k' if n % 1000 == 0 else str(n)
    if i == 0:
        return f'<= {label(edges[0])}'
    if i < len(edges):
        return f'{label(edges[i - 1])}-{label(edges[i])}'
    return f'> {label(edges[-1])}'


# ---------------------------------------------------------------------------------------------- models
def is_lmdeploy(model_cfg) -> bool:
    return 'engine_config' in model_cfg


def _table_row(model_cfg) -> Optional[Dict]:
    from .configs.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    for row in LONGCTX_LMDEPLOY_MODELS:
        if row['abbr'] == model_cfg.get('abbr'):
            return row
    return None


def model_geometry(model_cfg) -> Dict:
    """config.json of the model directory, else the geometry the shipped model table declares, else {}."""
    from .models.lmdeploy import read_model_config
    path = model_cfg.get('path')
    if path and os.path.isfile(os.path.join(path, 'config.json')):
        return {'config': read_model_config(path), 'source': 'config.json'}
    row = _table_row(model_cfg)
    if row and row.get('arch'):
        return {'config': dict(row['arch']), 'source': 'model table'}
    return {}


def engine_backend(model_cfg, cfg: Optional[Dict]):
    """(backend, why) as LongCtxTurboMindModel will choose it (models.lmdeploy.choose_backend); without LMDeploy
    installed here an 'auto' row is planned as TurboMind, and the plan says so."""
    from .models.lmdeploy import LMDeployConfigError, choose_backend
    requested = model_cfg.get('backend', 'auto')
    try:
        return choose_backend(cfg or {}, requested)
    except LMDeployConfigError as e:
        if requested == 'auto' and 'not installed' in str(e):
            return 'turbomind', 'assumed: LMDeploy is not installed here (backend=auto is resolved at load)'
        raise


def size_engine(model_cfg, session_len: int, gpu: Dict, cap: int = BATCH_CAP) -> Dict:
    """max_batch_size for ``session_len`` from the KV-cache arithmetic (the runtime preflight's), and its verdict."""
    from .models.lmdeploy import (LMDeployConfigError, _text_config, engine_reserve_bytes, kv_bytes_per_token,
                                  kv_geometry, kv_plan, weight_bytes)
    ec = dict(model_cfg.get('engine_config') or {})
    tp = int(ec.get('tp', 1))
    geo = model_geometry(model_cfg)
    out = {'session_len': session_len, 'tp': tp, 'geometry': geo.get('source')}
    try:
        out['backend'], out['backend_reason'] = engine_backend(model_cfg, geo.get('config'))
    except LMDeployConfigError as e:
        out.update(backend=model_cfg.get('backend'), backend_reason=str(e), max_batch_size=1, verdict='bad backend',
                   reason=str(e))
        return out
    if not geo:
        out.update(max_batch_size=int(ec.get('max_batch_size') or 1), verdict='unchecked',
                   reason='no config.json and no declared geometry: batch size not sized')
        return out
    cfg = geo['config']
    path = model_cfg.get('path') or ''
    weights = weight_bytes(path, cfg) if os.path.isdir(path) else 2.0 * float(cfg.get('params', 0) or 0)
    if not weights:
        weights = weight_bytes('', cfg)
    kvpt = kv_bytes_per_token(cfg, int(ec.get('quant_policy', 0)))
    gpu_mem = float(model_cfg.get('gpu_memory_gib') or gpu['memory_gib']) * GIB
    reserve = engine_reserve_bytes(out['backend'], cfg, dict(ec, max_batch_size=cap))  # at the largest batch
    one = kv_plan(cfg, weights, session_len, 1, tp, float(ec.get('cache_max_entry_count', 0.8)),
                  int(ec.get('quant_policy', 0)), gpu_mem, reserve)   # the runtime preflight's arithmetic, batch 1
    per_seq, budget = one['need'], one['budget']
    fit = int(budget // per_seq) if per_seq else cap
    out.update(weights_gib=weights / GIB, kv_bytes_per_token=kvpt, kv_gib_per_seq_per_gpu=per_seq / GIB,
               kv_budget_gib_per_gpu=budget / GIB, layers=kv_geometry(cfg)['layers'],
               hidden=_text_config(cfg).get('hidden_size'), weights=weights, engine_reserve_gib=reserve / GIB)
    if fit < 1:
        out.update(max_batch_size=1, verdict='does not fit',
                   reason=f'one sequence of {session_len} tokens needs {per_seq / GIB:.1f} GiB of KV per GPU, '
                          f'{budget / GIB:.1f} GiB available at tp={tp}: raise tp or quantise the KV cache')
    else:
        out.update(max_batch_size=min(fit, cap), verdict='fits')
    return out


# ---------------------------------------------------------------------------------------------- cost
def cost_model(overrides: Optional[Dict] = None) -> Dict:
    cm = dict(COST_MODEL, **(overrides or {}))
    unknown = set(overrides or {}) - set(COST_MODEL) - {'gpus'}
    if unknown:
        raise PlanError(f'unknown cost-model entries {sorted(unknown)}; known: {sorted(COST_MODEL)}')
    gpus = dict(GPUS, **(cm.pop('gpus', None) or {}))
    if cm['gpu'] not in gpus:
        raise PlanError(f"unknown gpu {cm['gpu']!r}; known: {sorted(gpus)} (or add one: cost_model=dict(gpus=...))")
    cm['gpu_spec'] = dict(gpus[cm['gpu']], name=cm['gpu'])
    return cm


def task_seconds(loads: Sequence[DatasetLoad], engine: Optional[Dict], cm: Dict) -> Dict[str, float]:
    """Prefill, decode and start seconds of one task (wall time of its GPUs)."""
    start = cm['subprocess_import_s'] + (cm['engine_start_s'] if engine else 0.0)
    if not engine or not engine.get('layers') or not engine.get('weights'):
        return {'start': start, 'prefill': 0.0, 'decode': 0.0, 'costed': False}
    gpu, tp = cm['gpu_spec'], engine['tp']
    flops_per_s = tp * gpu['bf16_tflops'] * 1e12 * cm['prefill_mfu']
    params = engine['weights'] / 2.0
    layers, hidden = engine['layers'], engine['hidden'] or 0
    bw = tp * gpu['hbm_tbps'] * 1e12 * cm['decode_bw_efficiency']
    prefill = decode = 0.0
    batch = max(1, engine['max_batch_size'])
    for ld in loads:
        L = ld.tokens_per_row * (ld.ratio or 1.0)      # in the model's tokens
        prefill += ld.rows * (2 * params * L + 2 * layers * hidden * L * L) / flops_per_s
        out = ld.max_out_len * cm['output_fraction']
        batches = math.ceil(ld.rows / batch)
        b = min(batch, ld.rows) or 1
        decode += batches * out * (engine['weights'] + b * engine['kv_bytes_per_token'] * (L + out / 2)) / bw
    return {'start': start, 'prefill': prefill, 'decode': decode, 'costed': True}


# ---------------------------------------------------------------------------------------------- plan
@dataclass
class TaskPlan:
    model: str
    band: str
    shard: int
    shards: int
    datasets: List[str]
    tiers: List[str]
    rows: int
    prompt_tokens: int
    exact: bool
    gpus: int
    engine: Optional[Dict]
    seconds: Dict[str, float]
    model_cfg: Dict = field(repr=False, default_factory=dict)
    dataset_cfgs: List = field(repr=False, default_factory=list)

    @property
    def gpu_hours(self) -> float:
        s = self.seconds
        return max(self.gpus, 1) * (s['start'] + s['prefill'] + s['decode']) / 3600

    @property
    def overhead_gpu_hours(self) -> float:
        return max(self.gpus, 1) * self.seconds['start'] / 3600


def _split_shards(loads: List, n: int) -> List[List]:
    """n groups balanced by prompt tokens (largest first into the lightest group), each shortest tier first."""
    groups = [[] for _ in range(n)]
    weight = [0] * n
    for ld in sorted(loads, key=lambda x: (-x[1].prompt_tokens, x[1].abbr)):
        i = weight.index(min(weight))
        groups[i].append(ld)
        weight[i] += ld[1].prompt_tokens
    return [sorted(g, key=lambda x: (parse_tier(x[1].tier).sort_key, x[1].tokens_per_row, x[1].abbr))
            for g in groups if g]


def shard_count(shards, model_abbr: str, band: str) -> int:
    if isinstance(shards, dict):
        n = shards.get(model_abbr, shards.get('*', 1))
        if isinstance(n, dict):
            n = n.get(band, n.get('*', 1))
    else:
        n = shards
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise PlanError(f'shards must be a positive integer (or a dict of them by model abbr / band), got {n!r}')
    return n


def make_plan(combinations: Sequence[Dict], bands: Optional[Sequence[str]] = None, shards=1,
              cost: Optional[Dict] = None, out_dir: Optional[str] = None, batch_cap: int = BATCH_CAP,
              headroom: float = SIZE_HEADROOM) -> Dict:
    """The tasks and costs of a run. ``combinations``: ``[{'models': [...], 'datasets': [...]}]`` as OpenCompass's
    partitioners receive them. ``out_dir``: the predictions directory (datasets already predicted are skipped)."""
    from opencompass.utils import get_infer_output_path, model_abbr_from_cfg
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) or headroom < 1:
        raise PlanError(f'headroom must be a number >= 1 (model tokens per data token, at least), got {headroom!r}')
    edges = band_edges(bands)
    cm = cost_model(cost)
    tasks: List[TaskPlan] = []
    skipped = []
    for comb in combinations:
        for model in comb['models']:
            abbr = model_abbr_from_cfg(model)
            model_tok = model_tokenizer(model) if is_lmdeploy(model) else None
            by_band: Dict[int, List] = {}
            for d in comb['datasets']:
                if out_dir and os.path.exists(get_infer_output_path(model, d, out_dir)):
                    skipped.append((abbr, d.get('abbr')))
                    continue
                ld = dataset_load(d, model.get('max_out_len'), model_tok)
                ld.min_headroom = float(headroom)
                by_band.setdefault(band_of(ld.tier, edges), []).append((d, ld))
            for bi in sorted(by_band):
                name = band_name(bi, edges)
                n = shard_count(shards, abbr, name)
                groups = _split_shards(by_band[bi], min(n, len(by_band[bi])))
                for si, group in enumerate(groups):
                    tasks.append(_task(model, abbr, name, si, len(groups), group, cm, batch_cap))
    return {'tasks': tasks, 'skipped': skipped, 'bands': [band_name(i, edges) for i in range(len(edges) + 1)],
            'cost_model': cm}


def _with_model_window(d: Dict, window: int) -> Dict:
    d = copy.deepcopy(d)
    inferencer = (d.get('infer_cfg') or {}).get('inferencer')
    if inferencer is not None and type_name(inferencer) == 'LongCtxGenInferencer':
        inferencer['model_window'] = window
    return d


def _task(model, abbr, band, shard, shards, group, cm, batch_cap) -> TaskPlan:
    loads = [ld for _, ld in group]
    cfg = copy.deepcopy(model)
    engine = None
    if is_lmdeploy(model):
        model_max = int(model.get('max_seq_len') or (model.get('engine_config') or {}).get('session_len') or 0)
        need = max(ld.need_tokens for ld in loads)
        session_len = min(model_max, need) if model_max else need
        engine = size_engine(model, session_len, cm['gpu_spec'], batch_cap)
        engine['headroom'] = max(ld.headroom for ld in loads)
        engine['token_ratio_measured'] = all(ld.ratio is not None for ld in loads)
        from .models.recipe import caveats, effective_rope, native_band
        if native_band(model, session_len, max(ld.tier_tokens * (ld.ratio or 1.0) for ld in loads)):
            cfg['long_context'] = None   # every tier of the band fits the native window: no static scaling
        engine['rope'] = effective_rope(cfg, session_len)
        engine['caveats'] = {ld.tier: caveats(model, ld.tier_tokens) for ld in loads if caveats(model, ld.tier_tokens)}
        ec = dict(cfg.get('engine_config') or {})
        ec.update(session_len=session_len, max_batch_size=engine['max_batch_size'])
        cfg['engine_config'] = ec
        cfg['max_seq_len'] = session_len
        cfg['batch_size'] = engine['max_batch_size']
        if model_max and session_len < model_max:   # a prompt the model holds but this engine does not is a miss
            group = [(_with_model_window(d, model_max), ld) for d, ld in group]
    gpus = int((model.get('run_cfg') or {}).get('num_gpus', 0))
    return TaskPlan(model=abbr, band=band, shard=shard, shards=shards, datasets=[ld.abbr for ld in loads],
                    tiers=sort_tiers({ld.tier for ld in loads}),
                    rows=sum(ld.rows for ld in loads), prompt_tokens=sum(ld.prompt_tokens for ld in loads),
                    exact=all(ld.exact for ld in loads), gpus=gpus, engine=engine,
                    seconds=task_seconds(loads, engine, cm), model_cfg=cfg, dataset_cfgs=[d for d, _ in group])


# ---------------------------------------------------------------------------------------------- checks
def check_run(models: Sequence[Dict], datasets: Sequence[Dict]) -> List[Dict]:
    """Every problem that can be found without a GPU and without building a dataset: a list of
    ``{'problem': text, 'where': [model or dataset abbrs]}``, one entry per distinct problem."""
    found: Dict[str, List[str]] = {}

    def add(problem: str, where: str):
        names = found.setdefault(problem, [])
        if where not in names:
            names.append(where)

    root = os.environ.get('LONGCTX_MODEL_ROOT')
    for m in models:
        for p in _check_model(m):
            add(p, m.get('abbr') or m.get('path'))
    if not root and any(p.startswith("model directory 'models/") for p in found):
        add('$LONGCTX_MODEL_ROOT is not set: the shipped model configs look for the models under ./models. '
            'export LONGCTX_MODEL_ROOT=<the directory holding the model directories>', 'environment')
    seen: Dict = {}
    for d in datasets:
        bench = benchmark_of(d)
        if bench is None:
            continue
        try:
            key = (bench.name, json.dumps(_check_key(bench, d), sort_keys=True, default=str))
        except Exception:  # noqa: BLE001
            key = (bench.name, d.get('abbr'))
        if key not in seen:
            seen[key] = _check_dataset(bench, d)
        for p in seen[key]:
            add(p, d.get('abbr'))
    return [{'problem': p, 'where': w} for p, w in found.items()]


def engine_problems(plan: Dict) -> List[Dict]:
    """Bands whose engine cannot hold one sequence on the declared GPU: the preflight would stop those tasks."""
    found: Dict[str, List[str]] = {}
    for t in plan['tasks']:
        if t.engine and t.engine['verdict'] == 'bad backend':
            found.setdefault(f"{t.model}: {t.engine['reason']}", []).append(t.model)
        elif t.engine and t.engine['verdict'] == 'does not fit':
            found.setdefault(f"the {t.band} engine of {t.model} does not fit the GPU: {t.engine['reason']}",
                             []).append(t.model)
    return [{'problem': p, 'where': w} for p, w in found.items()]


def _check_model(m: Dict) -> List[str]:
    tname = type_name(m)
    path = m.get('path')
    if not path or tname in ('TinyChatModel', 'BabiRuleReader'):
        return []            # built on first use / not a language model
    if not os.path.isdir(path):
        from .tokenization import is_hub_id
        if is_hub_id(path) and not is_lmdeploy(m):
            return []        # a hub id: resolved from the Hugging Face cache at load time
        return [f'model directory {path!r} does not exist']     # (LongCtxTurboMindModel needs a local directory)
    problems = []
    if not os.path.isfile(os.path.join(path, 'config.json')):
        problems.append(f'model directory {path!r} has no config.json (not a Hugging Face model directory)')
    from .tokenization import tokenizer_files
    if not tokenizer_files(path):
        problems.append(f'model directory {path!r} has no tokenizer files (tokenizer.json, tokenizer.model, '
                        'vocab.json, ...)')
    return problems


def _check_key(bench: Benchmark, d: Dict):
    keys = {'babilong': ('type', 'path', 'task', 'tier', 'sample_source', 'babi_dir', 'background_dir'),
            'longbio': ('tokenizer',),
            'nolima': ('type', 'path', 'needle_set', 'tokenizer', 'haystacks', 'haystack_tier', 'tier')}
    return {k: d.get(k) for k in keys[bench.name]}


def _check_tokenizer(name) -> List[str]:
    from .tokenization import is_missing_path, tokenizer_files
    if not name or not isinstance(name, str) or name.startswith('tiktoken:'):
        return []
    if is_missing_path(name):
        return [f'tokenizer {name!r} does not exist (give the evaluated model\'s tokenizer directory)']
    if os.path.isdir(name) and not tokenizer_files(name):
        return [f'tokenizer directory {name!r} has no tokenizer files']
    return []


def _attempt(problems: List[str], check) -> bool:
    """Run one check; an exception is a problem (reported with its full, actionable message)."""
    try:
        problems.extend(check() or [])
        return True
    except Exception as e:  # noqa: BLE001 - every problem is reported, none stops the other checks
        problems.append(f'{type(e).__name__}: {e}')
        return False


def _check_dataset(bench: Benchmark, d: Dict) -> List[str]:
    problems: List[str] = []
    if bench.name in ('longbio', 'nolima'):
        _attempt(problems, lambda: _check_tokenizer(d.get('tokenizer')))
    cls = dataset_class(d)
    removed = getattr(cls, 'REMOVED_OPTIONS', {})
    problems.extend(removed[k] for k in sorted(set(removed) & set(d)))
    prepares = getattr(cls, 'PREPARES_DATA', False)  # a demo type writes its stand-in files itself
    if bench.name == 'nolima' and not prepares:
        _attempt(problems, lambda: _check_nolima_files(d))
    if bench.name == 'babilong' and not prepares:
        _attempt(problems, lambda: _check_babilong_files(d))
    return problems


def _check_nolima_files(d: Dict) -> List[str]:
    from .nolima import data as ndata
    from .nolima.needles import resolve_variant
    ns = d.get('needle_set', 'main')
    if isinstance(ns, str) and ns.endswith('.json'):
        if not os.path.isfile(ns):
            return [f'needle set {ns!r} does not exist']
    else:
        ndata.locate([ndata.needle_relpath(resolve_variant(ns))], d.get('path'), False, None, what='the needle set')
    # 'auto' reads the short books first (the long ones only where those cannot hold L): both layouts need them
    hs_tier = d.get('haystack_tier', 'auto')
    books = list(d.get('haystacks') or range(ndata.NUM_BOOKS))
    ndata.locate(ndata.book_relpaths('rand_shuffle' if hs_tier == 'auto' else hs_tier, books), d.get('path'),
                 False, None, what='the books')
    return []


def _check_babilong_files(d: Dict) -> List[str]:
    """What ``load_babilong`` would miss: a generated split needs the bAbI and PG19 directories; a tier BABILong
    does not publish is read from a file written by the generator when there is one (``path=``), else made
    from those directories; a published tier needs its file."""
    from .babilong import data as bdata
    from .sources import DataNotFoundError, find_file, search_roots
    tier = parse_tier(d['tier'])
    task = d.get('task', 'qa1')
    source = str(d.get('sample_source', '100'))
    babi = d.get('babi_dir') or os.environ.get('BABI_DIR')
    books = d.get('background_dir') or os.environ.get('PG19_DIR')
    missing = [f'{k} ({v!r} is not a directory)' if v else f'{k} (not set)'
               for k, v in (('babi_dir / $BABI_DIR', babi), ('background_dir / $PG19_DIR', books))
               if not (v and os.path.isdir(v))]
    if source == 'generated':
        return [f'BABILong {tier.name} is generated: it needs ' + ', '.join(missing)] if missing else []
    src = bdata.source_for(source, tier)
    roots = search_roots(src, d.get('path'))
    candidates = bdata.file_candidates(task, tier, src)
    what = f'{task} at {tier.name}'
    if tier.name not in bdata.PUBLISHED_TIERS:
        try:
            find_file(src, candidates, path=d.get('path'), download=False, what=what)
            return []
        except DataNotFoundError:
            if not missing:
                return []
            return [f'BABILong does not publish {tier.name}: no generated file for {task} under '
                    + ', '.join(roots) + ' (longctx-babilong-generate writes one; then path= or $BABILONG_DATA), '
                    'and making it needs ' + ', '.join(missing)]
    if not any(os.path.isdir(r) for r in roots):
        return [f'{src.name} data ({src.hub_repo}) not found: none of ' + ', '.join(roots) + ' exists.\n'
                + src.how_to_get]
    bdata.check_available(task, tier, src)
    find_file(src, candidates, path=d.get('path'), download=False, what=what)
    return []


# ---------------------------------------------------------------------------------------------- report
def summarize(plan: Dict, problems: Sequence[str] = ()) -> Dict:
    """Per model and band: tasks, engine starts, GPUs, datasets, samples, tokens, engine size, GPU-hours."""
    models: Dict[str, Dict] = {}
    for t in plan['tasks']:
        m = models.setdefault(t.model, {'bands': {}, 'tasks': 0, 'engine_starts': 0, 'gpu_hours': 0.0,
                                        'overhead_gpu_hours': 0.0, 'lmdeploy': t.engine is not None})
        b = m['bands'].setdefault(t.band, {'tasks': 0, 'engine_starts': 0, 'gpus_per_task': t.gpus, 'datasets': 0,
                                           'samples': 0, 'prompt_tokens': 0, 'exact': True, 'tiers': set(),
                                           'session_len': None, 'max_batch_size': None, 'verdict': None,
                                           'reason': '', 'gpu_hours': 0.0, 'caveats': {}})
        b['tasks'] += 1
        b['engine_starts'] += 1
        b['datasets'] += len(t.datasets)
        b['samples'] += t.rows
        b['prompt_tokens'] += t.prompt_tokens
        b['exact'] = b['exact'] and t.exact
        b['tiers'].update(t.tiers)
        if t.engine:
            b['session_len'] = max(b['session_len'] or 0, t.engine['session_len'])
            b['max_batch_size'] = t.engine['max_batch_size']
            b['verdict'] = t.engine['verdict']
            b['reason'] = t.engine.get('reason', '')
            m['backend'] = (t.engine.get('backend'), t.engine.get('backend_reason'))
            b['rope'] = t.engine.get('rope')
            b['caveats'].update(t.engine.get('caveats') or {})
        b['gpu_hours'] += t.gpu_hours
        m['tasks'] += 1
        m['engine_starts'] += 1
        m['gpu_hours'] += t.gpu_hours
        m['overhead_gpu_hours'] += t.overhead_gpu_hours
    for m in models.values():
        for b in m['bands'].values():
            b['tiers'] = sort_tiers(b['tiers'])
    total = sum(m['gpu_hours'] for m in models.values())
    overhead = sum(m['overhead_gpu_hours'] for m in models.values())
    cm = {k: v for k, v in plan['cost_model'].items()}
    return {'models': models, 'tasks': len(plan['tasks']),
            'engine_starts': sum(m['engine_starts'] for m in models.values()),
            'gpu_hours': total, 'overhead_gpu_hours': overhead,
            'overhead_share': overhead / total if total else None,
            'costed': all(t.seconds.get('costed') for t in plan['tasks'] if t.engine),
            'skipped_already_predicted': len(plan['skipped']), 'cost_model': cm, 'problems': list(problems)}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _fmt_tokens(n: int) -> str:
    return f'{n / 1e9:.2f}B' if n >= 1e9 else f'{n / 1e6:.1f}M' if n >= 1e6 else f'{n / 1e3:.1f}k' if n >= 1e3 else str(n)


def to_markdown(summary: Dict) -> str:
    costed = any(m['lmdeploy'] for m in summary['models'].values()) and summary['costed']
    cost = (f"Estimated {summary['gpu_hours']:.1f} GPU-hours on {summary['cost_model']['gpu']} for the LMDeploy "
            f"models, of which harness overhead (engine starts and subprocess imports) "
            f"{summary['overhead_gpu_hours']:.2f} GPU-hours = {100 * summary['overhead_share']:.2f}%."
            if costed and summary['overhead_share'] is not None else
            'GPU cost not estimated: no LMDeploy model with a known geometry in this run (other models are only '
            'grouped by band).')
    lines = ['# Run plan', '',
             f"{_count(summary['tasks'], 'inference task')}, {_count(summary['engine_starts'], 'model load')} "
             f"(engine starts). " + cost, '',
             '| model | band | tiers | tasks | engine starts | GPUs/task | datasets | samples | prompt tokens '
             '| session_len | max_batch_size | preflight | GPU-hours |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for model, m in summary['models'].items():
        for band, b in m['bands'].items():
            tok = _fmt_tokens(b['prompt_tokens']) + ('' if b['exact'] else ' (est.)')
            cost = f"{b['gpu_hours']:.2f}" if m['lmdeploy'] else '-'
            marked = [t + (CAVEAT_MARK if t in b['caveats'] else '') for t in b['tiers']]
            lines.append(f"| {model} | {band} | {', '.join(marked)} | {b['tasks']} | {b['engine_starts']} | "
                         f"{b['gpus_per_task']} | {b['datasets']} | {b['samples']:,} | {tok} | "
                         f"{b['session_len'] or '-'} | {b['max_batch_size'] or '-'} | {b['verdict'] or '-'} | {cost} |")
        total = f"**{m['gpu_hours']:.2f}**" if m['lmdeploy'] else '-'
        lines.append(f"| **{model}** | all | | {m['tasks']} | {m['engine_starts']} | | | | | | | | {total} |")
    cm = summary['cost_model']
    gpu = cm['gpu_spec']
    lines += ['', f"Cost model (opencompass_longctx/configs/cost_model.py, override with "
                  f"LongCtxPartitioner(cost_model=...)): {gpu['name']} {gpu['bf16_tflops']} TFLOPS BF16, "
                  f"{gpu['hbm_tbps']} TB/s ({gpu['source']}); prefill at {cm['prefill_mfu']:.0%} of peak, decode at "
                  f"{cm['decode_bw_efficiency']:.0%} of HBM bandwidth, {cm['output_fraction']:.0%} of max_out_len "
                  f"generated; engine start {cm['engine_start_s']} s; subprocess import {cm['subprocess_import_s']} s. "
                  'Prompt tokens are exact where the dataset was built before (its build record), else "(est.)" from '
                  'the tier arithmetic; they are counted in each benchmark\'s data tokenizer.']
    if summary['skipped_already_predicted']:
        lines.append(f"{summary['skipped_already_predicted']} model x dataset pairs already have predictions "
                     'and are not planned again.')
    lines += _engine_lines(summary)
    reasons = [(model, band, b['reason']) for model, m in summary['models'].items()
               for band, b in m['bands'].items() if b['reason']]
    if reasons:
        lines += ['', 'Engine sizing notes:'] + [f'- {m} {band}: {r}' for m, band, r in reasons]
    lines += ['', f"Problems found without a GPU ({len(summary['problems'])}):"]
    lines += [_problem_line(p) for p in summary['problems']] or ['- none']
    return '\n'.join(lines) + '\n'


def _engine_lines(summary: Dict) -> List[str]:
    """Per LMDeploy model: the engine that runs it and why, the RoPE scaling of each band, and the caveat marks."""
    from .models.recipe import rope_text
    lines = []
    for model, m in summary['models'].items():
        if m.get('backend'):
            ropes = '; '.join(f"{band}: {rope_text(b['rope'])}" for band, b in m['bands'].items() if b.get('rope'))
            lines.append(f"- {model}: {m['backend'][0]} ({m['backend'][1]}); RoPE scaling {ropes}")
    marks = {(model, r) for model, m in summary['models'].items() for b in m['bands'].values()
             for rs in b['caveats'].values() for r in rs}
    if lines:
        lines = ['', 'Engines (LMDeploy backend, and the RoPE scaling each band\'s engine applies):'] + lines
    if marks:
        lines += [''] + [f'{CAVEAT_MARK} {model}: {r}' for model, r in sorted(marks)]
    return lines


def _problem_line(p: Dict) -> str:
    where = p['where']
    names = ', '.join(where) if len(where) <= 4 else f"{', '.join(where[:3])}, ... {where[-1]}"
    text = p['problem'].strip().replace('\n', '\n  ')
    return f"- [{len(where)} {'item' if len(where) == 1 else 'items'}: {names}] {text}"


def to_json(summary: Dict, plan: Dict) -> str:
    data = dict(summary)
    data['task_list'] = [{k: v for k, v in asdict(t).items() if k not in ('model_cfg', 'dataset_cfgs')}
                         | {'gpu_hours': t.gpu_hours} for t in plan['tasks']]
    return json.dumps(data, indent=1, sort_keys=True, default=str)


def write(summary: Dict, plan: Dict, directory: str, markdown: Optional[str] = None) -> Dict[str, str]:
    os.makedirs(directory, exist_ok=True)
    paths = {'md': os.path.join(directory, 'longctx_plan.md'), 'json': os.path.join(directory, 'longctx_plan.json')}
    with open(paths['md'], 'w', encoding='utf-8') as f:
        f.write(to_markdown(summary) if markdown is None else markdown)
    with open(paths['json'], 'w', encoding='utf-8') as f:
        f.write(to_json(summary, plan))
    return paths
