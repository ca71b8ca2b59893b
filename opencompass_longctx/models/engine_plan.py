"""The engine a model row gets, decided here and only here.

From a model row (an LMDeploy model config: ``engine_config``, ``backend``, ``prefix_caching``, the long-context
recipe, the declared geometry) and a band (the datasets one engine serves) :func:`plan_engine` gives one
:class:`EnginePlan`: the backend and why, ``tp`` and, for TurboMind's band that holds 1m, ``cp``, ``session_len``,
the KV-cache share, prefix caching, ``max_batch_size``, the RoPE scaling, the caveats and the verdict. The planner
(:mod:`opencompass_longctx.plan`) costs it and hands it to the task (:meth:`EnginePlan.task_model`); the serving
wrapper (:class:`~opencompass_longctx.models.lmdeploy.LongCtxTurboMindModel`) takes the engine keys of :func:`served`
and only validates, preflights and starts them; the GPU check builds its engines through that wrapper. So the plan
and the engine that runs can only differ where the machine differs (TurboMind not loading on a CPU box).

What is pure stays where it is tested: LMDeploy's own behaviour per model (:mod:`.backend`), the layer model
(:mod:`.geometry`), KV bytes, weights, engine buffers and the preflight (:mod:`.engine`), the row's long-context
recipe (:mod:`.recipe`). The decisions are here:

* ``session_len``: the band's longest prompt plus its answer in the model's tokens, capped at the model's window;
  a band whose tiers all fit the native window stops there and gets no static scaling.
* The backend: the one LMDeploy runs on the GPU machine (:func:`.backend.planned_backend`: where the plan is made
  on a machine without a GPU, TurboMind not loading there says nothing about the GPU machine).
* ``max_batch_size``: the sizing walk (:func:`size_engine`), the preflight's arithmetic on the declared GPU.
* ``cp`` (TurboMind's context parallelism, the band of 1m): the ``tp`` GPUs form ``cp`` groups of ``tp / cp`` for
  attention (lmdeploy/turbomind/parallel_config.py: ``attn_tp = tp / cp``, the MLP still over ``tp``), each holding
  its KV heads for 1 / cp of a sequence's tokens: a KV head that tensor parallelism would replicate is split over
  the sequence instead, and each group keeps its own copy of the attention weights (:func:`.engine.kv_plan`). It is
  taken only where it gives the engine more sequences (or makes one fit at all); the note says why in every case.
  TurboMind's cache allocator is compiled code: that cp splits each sequence's KV over its ranks is read from the
  0.18 Python (the flags and the parallel layout), not from the allocator itself.
* Prefix caching: on where LMDeploy reuses prompt blocks exactly (:func:`.backend.prefix_caching_supported`);
  ``prefix_caching=False`` in the row turns it off; an ``enable_prefix_caching`` key in ``engine_config`` is kept.
* The served engine keys: the row's ``long_context`` keys only above its native window, ``language_model_only``
  where LMDeploy would start a vision-language pipeline, prefix caching, Ray isolation for the PyTorch engine.
"""
import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from opencompass_longctx.models import backend as B
from opencompass_longctx.models.engine import (KV_BYTES, LMDeployConfigError, engine_reserve_bytes, kv_bytes_per_token,
                                               kv_geometry, kv_plan, weight_bytes)
from opencompass_longctx.models.geometry import Geometry, state_slots
from opencompass_longctx.models.recipe import Recipe
from opencompass_longctx.models.window import CHAT_TEMPLATE_TOKENS
GIB = 1024 ** 3
BATCH_CAP = 64             # largest max_batch_size the planner gives an engine
_NOT_IN_PLAN_FILE = {'plan_file': False}


# ---------------------------------------------------------------------------------------------- the inputs
@dataclass(frozen=True)
class ModelRow:
    """A model config as the engine decision reads it, read once (``declared``: the model table's ``arch``,
    ``checkpoint_bytes``, ``active_params``, which configs/models/lmdeploy_longctx.py writes as
    ``declared_geometry``; ``recipe``: ``native_window``, ``rope``, ``long_context``, ``caveats``)."""
    path: str = ''
    engine_config: Dict = field(default_factory=dict)
    backend: str = 'auto'
    prefix_caching: Optional[bool] = None
    max_seq_len: Optional[int] = None
    gpu_memory_gib: Optional[float] = None
    declared: Dict = field(default_factory=dict)
    recipe: Recipe = field(default_factory=Recipe)

    @classmethod
    def of(cls, model_cfg) -> 'ModelRow':
        return cls(path=model_cfg.get('path') or '', engine_config=dict(model_cfg.get('engine_config') or {}),
                   backend=model_cfg.get('backend', 'auto'), prefix_caching=model_cfg.get('prefix_caching'),
                   max_seq_len=model_cfg.get('max_seq_len'), gpu_memory_gib=model_cfg.get('gpu_memory_gib'),
                   declared=dict(model_cfg.get('declared_geometry') or {}), recipe=Recipe.of(model_cfg))

    @property
    def tp(self) -> int:
        return int(self.engine_config.get('tp', 1))

    @property
    def quant_policy(self) -> int:
        return int(self.engine_config.get('quant_policy', 0))

    @property
    def cache_share(self) -> float:
        """``cache_max_entry_count``: the share of the free GPU memory LMDeploy gives the KV cache."""
        return float(self.engine_config.get('cache_max_entry_count', 0.8))

    @property
    def window(self) -> int:
        """The most the model is ever given: its ``max_seq_len``, else its engine's ``session_len`` (0: unknown)."""
        return int(self.max_seq_len or self.engine_config.get('session_len') or 0)

    def geometry(self) -> Tuple[Optional[Geometry], Optional[str]]:
        """(the layer model, where it was read): the config.json of the model directory, else the geometry the row
        declares (the model table), else (None, None)."""
        if self.path and os.path.isfile(os.path.join(self.path, 'config.json')):
            return Geometry.read(self.path), 'config.json'
        arch = self.declared.get('arch')
        return (Geometry(dict(arch)), 'model table') if arch else (None, None)


@dataclass(frozen=True)
class Band:
    """The datasets one engine serves, as the decision reads them: each one's load (``plan.loads.DatasetLoad``:
    ``abbr``, ``tier``, ``tier_tokens``, ``need_tokens``, ``headroom``, ``ratio``, ``row_tokens_estimate``,
    ``max_out_len``), and whether the band holds 1m (context parallelism is considered there)."""
    loads: Tuple
    consider_cp: bool = False

    @property
    def need_tokens(self) -> int:
        """The longest prompt plus its answer, in the model's tokens."""
        return max(ld.need_tokens for ld in self.loads)

    @property
    def largest_tier_tokens(self) -> float:
        return max(ld.tier_tokens * (ld.ratio or 1.0) for ld in self.loads)

    def caveats(self, row: ModelRow) -> Dict[str, List[str]]:
        """{tier: why the row runs it beyond what its engine supports} (:meth:`.recipe.Recipe.caveats_at`)."""
        return {ld.tier: row.recipe.caveats_at(ld.tier_tokens) for ld in self.loads
                if row.recipe.caveats_at(ld.tier_tokens)}

    def over_window(self, window: int) -> List[str]:
        """The datasets whose longest prompt, in the model's tokens by the tokenizer ratio measured here, with the
        chat template and the answer, exceed the model's window: :mod:`.window` decided without a tokenizer (model
        tokens taken as data tokens), this is the check where the model's tokenizer is at hand."""
        out = []
        for ld in self.loads:
            need = math.ceil(ld.row_tokens_estimate * (ld.ratio or 1.0)) + CHAT_TEMPLATE_TOKENS + ld.max_out_len
            if window and ld.ratio and need > window:
                out.append(f'{ld.abbr} ({ld.row_tokens_estimate:,} data tokens x {ld.ratio:.3f} + '
                           f'{CHAT_TEMPLATE_TOKENS} + {ld.max_out_len} = {need:,} > {window:,})')
        return out


# ---------------------------------------------------------------------------------------------- the plan
@dataclass
class EnginePlan:
    """The engine of one inference task: its size, its verdict, and what the cost model reads.

    ``verdict``: 'fits', 'does not fit' (``reason`` says why), 'unchecked' (no geometry) or 'bad backend'. The
    sizes are left None where the verdict stopped the arithmetic. :func:`size_engine` fills the engine's part,
    :func:`plan_engine` the band's (``headroom``, ``token_ratio_measured``, ``rope``, ``caveats``, ``over_window``).
    The plan file holds the fields that are set (:meth:`as_dict`), ``window`` aside."""
    session_len: int
    tp: int
    geometry: Optional[str] = None          # where the geometry came from: 'config.json' or 'model table'
    backend: Optional[str] = None           # 'turbomind' or 'pytorch' (backend.serving_backend)
    backend_reason: Optional[str] = None
    prefix_caching: Optional[str] = None    # 'on (...)' or 'off (...)' (prefix_caching_text)
    max_batch_size: int = 1
    verdict: str = 'unchecked'
    reason: Optional[str] = None
    gpu_memory_gib: Optional[float] = None
    weights: Optional[float] = None         # bytes of the weights
    weights_gib: Optional[float] = None
    kv_bytes_per_token: Optional[float] = None
    kv_gib_per_seq_per_gpu: Optional[float] = None
    kv_budget_gib_per_gpu: Optional[float] = None
    state_gib_per_seq_per_gpu: Optional[float] = None
    engine_reserve_gib: Optional[float] = None
    layers: Optional[int] = None
    hidden: Optional[int] = None
    layer_types: Optional[str] = None       # models.geometry.describe
    compute: Optional[Dict] = None          # models.geometry.compute_profile, with total_params
    headroom: Optional[float] = None        # the band's largest tokenizer headroom (plan.loads)
    token_ratio_measured: Optional[bool] = None
    rope: Optional[Dict] = None             # models.recipe.effective_rope at session_len
    caveats: Optional[Dict] = None          # {tier: caveat marks} (models.recipe.caveats)
    cp: Optional[int] = None                # TurboMind's context parallelism, where the plan considered it
    cp_note: Optional[str] = None           # why that cp (choose_cp)
    over_window: Optional[List[str]] = None  # datasets over the model's window by the measured tokenizer ratio
    window: Optional[int] = field(default=None, metadata=_NOT_IN_PLAN_FILE)   # the row's own (ModelRow.window)

    @property
    def prefix_cached(self) -> bool:
        return str(self.prefix_caching or '').startswith('on')

    @property
    def shortened(self) -> bool:
        """Whether this engine holds less than the model does: a prompt the model holds but this engine does not
        is then a miss of the engine (the inferencer's ``model_window``), never a silent cut."""
        return bool(self.window) and self.session_len < self.window

    def as_dict(self) -> Dict:
        """The plan file's form: the fields that are set."""
        kept = {f.name for f in dataclasses.fields(self) if f.metadata.get('plan_file', True)}
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None and k in kept}

    def task_model(self, model_cfg: Dict) -> Dict:
        """``model_cfg`` (a copy) as the task that runs this engine gets it: the engine keys with this
        ``session_len``, ``max_batch_size`` and ``cp`` (where one is taken), ``max_seq_len`` and ``batch_size``."""
        cfg = dict(model_cfg)
        ec = dict(cfg.get('engine_config') or {})
        ec.update(session_len=self.session_len, max_batch_size=self.max_batch_size)
        if self.cp and self.cp > 1:
            ec['cp'] = self.cp
        cfg.update(engine_config=ec, max_seq_len=self.session_len, batch_size=self.max_batch_size)
        return cfg


def is_lmdeploy(model_cfg) -> bool:
    return 'engine_config' in model_cfg


def plan_engine(model_cfg, band: Band, gpu: Dict, cap: int = BATCH_CAP) -> EnginePlan:
    """The engine of ``band`` for the row ``model_cfg`` on ``gpu`` (a cost-model GPUS entry)."""
    row = ModelRow.of(model_cfg)
    session_len = min(row.window, band.need_tokens) if row.window else band.need_tokens
    if row.recipe.native_band(session_len, band.largest_tier_tokens):
        # every tier of the band fits the native window, the engine is longer only for tokenizer headroom:
        # it stops at the native window and gets no static scaling; a prompt that is longer after all is an
        # engine-sizing miss (ENGINE_TOO_SMALL, reported), never served unscaled beyond the native window
        session_len = int(row.recipe.native_window)
    over_window = band.over_window(row.window) or None
    plan = size_engine(model_cfg, session_len, gpu, cap, band.consider_cp)
    return dataclasses.replace(
        plan, headroom=max(ld.headroom for ld in band.loads),
        token_ratio_measured=all(ld.ratio is not None for ld in band.loads),
        rope=row.recipe.effective_rope(session_len), caveats=band.caveats(row), over_window=over_window,
        window=row.window or None)


# ---------------------------------------------------------------------------------------------- the sizing walk
def _gpu_here() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def engine_memory_gib(gpu: Dict) -> float:
    """GiB the engine sizes its cache from on ``gpu`` (a cost-model GPUS entry): what CUDA reports as the total
    less what it holds before the engine starts (tables/cost_model.py CUDA_NOT_FREE_GIB); a GPU given only by
    ``memory_gib`` is taken at that less the same."""
    from opencompass_longctx.tables.cost_model import CUDA_NOT_FREE_GIB
    return float(gpu.get('visible_memory_gib') or gpu['memory_gib']) - CUDA_NOT_FREE_GIB


def size_engine(model_cfg, session_len: int, gpu: Dict, cap: int = BATCH_CAP, consider_cp: bool = False) -> EnginePlan:
    """The engine for ``session_len`` on ``gpu``: its backend, prefix caching, ``max_batch_size`` from the KV-cache
    arithmetic (the runtime preflight's) and its verdict; ``consider_cp``: try TurboMind's context parallelism too
    (the band that holds 1m). The facts first (the layer model, what LMDeploy does with it, the memory), then the
    decisions."""
    row = ModelRow.of(model_cfg)
    ec, tp, qp, cme = row.engine_config, row.tp, row.quant_policy, row.cache_share
    geo, source = row.geometry()
    plan = EnginePlan(session_len=session_len, tp=tp, geometry=source)
    cfg = geo.cfg if geo else None
    try:     # what LMDeploy does with this model (models.backend)
        plan.backend, why = B.planned_backend(cfg or {}, row.backend, _gpu_here())
        ray = B.ray_isolation(plan.backend, tp, os.environ)[1]
        supported = B.prefix_caching_supported(cfg or {}, plan.backend)
        cp_available = B.cp_available(plan.backend) if consider_cp and 'cp' not in ec else None
    except LMDeployConfigError as e:
        plan.backend, plan.backend_reason = model_cfg.get('backend'), str(e)
        plan.verdict, plan.reason = 'bad backend', str(e)
        return plan
    plan.backend_reason = why + (f'; {ray}' if ray else '')
    cp, sized = int(ec.get('cp', 1)), None
    if geo is None:
        plan.max_batch_size = int(ec.get('max_batch_size') or 1)
        plan.reason = 'no config.json and no declared geometry: batch size not sized'
    else:    # the memory (models.engine): the weights, the KV per token, the engine's buffers, the KV need and budget
        weights = weight_bytes(row.path, geo) if os.path.isdir(row.path) else float(
            row.declared.get('checkpoint_bytes') or 2.0 * float(cfg.get('params', 0) or 0))
        if not weights:
            weights = weight_bytes('', geo)
        plan.kv_bytes_per_token = kv_bytes_per_token(geo, qp)
        gpu_mem = float(row.gpu_memory_gib or engine_memory_gib(gpu)) * GIB
        reserve = engine_reserve_bytes(plan.backend, geo, dict(ec, max_batch_size=cap))  # at the largest batch
        plan.layers = kv_geometry(geo)['layers']

        def sized(t: int, c: int):
            """(sequences that fit, the batch-1 arithmetic) at tp=t and cp=c: the runtime preflight's arithmetic."""
            one = kv_plan(geo, weights, session_len, 1, t, cme, qp, gpu_mem, reserve, c)
            # b sequences fit when b x per_seq <= cme x (free - (b + 2) x slot): b = (budget(1) + cme x slot) //
            # (per_seq + cme x slot), slot = one sequence's fixed state (0 without linear-attention layers)
            slot_ = one['state'] / state_slots(1)
            return (int((one['budget'] + cme * slot_) // (one['need'] + cme * slot_)) if one['need'] else cap), one
        # total parameters: the declared count; for a downloaded dense model weights / 2 as before; a model with
        # active_params (MoE, quantised experts) keeps its declared total, which the checkpoint size cannot give
        params = float(cfg.get('params') or (row.declared['arch']['params'] if row.declared.get('active_params')
                                             else 0)) or weights / 2
        plan.gpu_memory_gib, plan.weights, plan.weights_gib = gpu_mem / GIB, weights, weights / GIB
        plan.engine_reserve_gib, plan.hidden = reserve / GIB, geo.text.get('hidden_size')
        # the layer model in words and what the cost model reads (models.geometry)
        plan.layer_types = geo.describe()
        plan.compute = dict(geo.compute_profile(params, KV_BYTES[qp], active_params=row.declared.get('active_params')),
                            total_params=params)
    # the decisions: prefix caching, cp, max_batch_size
    plan.prefix_caching = prefix_caching_text(supported, with_prefix_caching(supported, ec, row.prefix_caching))
    if sized is not None:
        _decide_batch(plan, sized, cp if cp_available is None else _choose(plan, sized, geo, cp_available, cap), cap)
    return plan


def _choose(plan: EnginePlan, sized: Callable, geo: Geometry, available: Tuple[bool, str], cap: int) -> int:
    """TurboMind's cp for ``plan``'s engine (:func:`choose_cp`, and a smaller ``tp`` that would hold one sequence),
    noted on the plan."""
    choice = choose_cp(geo, available, plan.tp, lambda c: sized(plan.tp, c)[0], cap)
    note = choice.note
    if plan.backend == 'turbomind':
        fewer = fewer_gpus(plan.tp, lambda t, c: sized(t, c)[0] >= 1)
        note += f'; {fewer}' if fewer else ''
    plan.cp, plan.cp_note = choice.cp, note
    return choice.cp


def _decide_batch(plan: EnginePlan, sized: Callable, cp: int, cap: int) -> None:
    """``max_batch_size`` and the verdict from the arithmetic at the engine's tp and ``cp``."""
    fit, one = sized(plan.tp, cp)
    per_seq, budget = one['need'], one['budget']
    plan.kv_gib_per_seq_per_gpu, plan.kv_budget_gib_per_gpu = per_seq / GIB, budget / GIB
    plan.state_gib_per_seq_per_gpu = one['state'] / state_slots(1) / GIB
    if fit < 1:
        plan.max_batch_size, plan.verdict = 1, 'does not fit'
        plan.reason = (f'one sequence of {plan.session_len} tokens needs {per_seq / GIB:.1f} GiB of KV per GPU, '
                       f'{budget / GIB:.1f} GiB available at tp={plan.tp}' + (f', cp={cp}' if cp > 1 else '')
                       + ': raise tp or quantise the KV cache')
    else:
        plan.max_batch_size, plan.verdict = min(fit, cap), 'fits'


# ---------------------------------------------------------------------------------------------- context parallelism
@dataclass(frozen=True)
class CpChoice:
    cp: int            # 1: not used
    note: str          # why (or why not), for the plan
    batch: int         # sequences the engine holds with that cp


def choose_cp(geo: Geometry, available: Tuple[bool, str], tp: int, batch_at: Callable[[int], int],
              cap: int) -> CpChoice:
    """The cp for an engine of ``tp`` GPUs. ``available``: whether the backend has cp, and why not
    (:func:`.backend.cp_available`); ``batch_at(cp)``: the sequences it holds with that cp (the preflight's
    arithmetic); the one with the most is taken, ties keep cp=1."""
    base = batch_at(1)
    ok, why = available
    if not ok:
        return CpChoice(1, f'not available: {why}', base)
    if tp < 2:
        return CpChoice(1, 'not used: tp=1 (TurboMind needs tp to be a multiple of cp)', base)
    if base >= cap:
        return CpChoice(1, f'not needed: {cap} sequences (the batch cap) fit without it', base)
    options = [(batch_at(cp), cp) for cp in range(2, tp + 1) if tp % cp == 0]
    best, cp = max(options, default=(0, 1), key=lambda x: (x[0], -x[1]))
    kv_heads = geo.kv_heads_and_dim[0]
    if best > base:
        return CpChoice(cp, f'cp={cp} chosen: {min(best, cap)} sequences instead of {base} on {tp} GPUs '
                            f'({kv_heads} KV heads: without cp tp={tp} would replicate them)', min(best, cap))
    reason = (f'{kv_heads} KV heads >= tp={tp}: cp splits the same KV as tp does and copies the attention weights'
              if kv_heads and kv_heads >= tp else 'it holds no more sequences')
    return CpChoice(1, f'considered, not chosen: {reason} ({base} sequence(s) either way)', base)


def fewer_gpus(tp: int, fits_at: Callable[[int, int], bool]) -> Optional[str]:
    """A note when a smaller tp with some cp would hold one sequence of the band (``fits_at(tp, cp)``), else None."""
    for t in (x for x in range(1, tp) if tp % x == 0):
        for cp in (c for c in range(1, t + 1) if t % c == 0):
            if fits_at(t, cp):
                return f'one sequence also fits on {t} GPU(s)' + (f' with cp={cp}' if cp > 1 else '')
    return None


# ---------------------------------------------------------------------------------------------- prefix caching
def with_prefix_caching(supported: Tuple[bool, str], config: Dict, prefix_caching: Optional[bool] = None) -> Dict:
    """``config`` with ``enable_prefix_caching`` on where LMDeploy reuses prompt blocks exactly (``supported``:
    :func:`.backend.prefix_caching_supported`); ``prefix_caching=False`` turns it off; a key already in ``config`` is
    kept."""
    if B.PREFIX_CACHING_KEY in config:
        return dict(config)
    return dict(config, **{B.PREFIX_CACHING_KEY: supported[0] if prefix_caching is not False else False})


def prefix_caching_text(supported: Tuple[bool, str], config: Dict) -> str:
    """One line for the plan: 'on' / 'off' and why."""
    on = bool(config.get(B.PREFIX_CACHING_KEY))
    return f"{'on' if on else 'off'} ({supported[1] if on == supported[0] else 'set in the model config'})"


# ---------------------------------------------------------------------------------------------- the served engine
@dataclass(frozen=True)
class ServedEngine:
    """What the wrapper starts: the backend LMDeploy runs here and why, the engine keys it is given, the RoPE scaling
    they apply, and the Ray instance of a PyTorch engine at tp > 1 (``RAY_ADDRESS`` to set, or None)."""
    backend: str
    backend_reason: str
    engine_config: Dict
    rope: Dict
    ray_address: Optional[str] = None


def text_only(cfg: Dict, backend: str, engine_config: Dict) -> Dict:
    """``engine_config`` with ``language_model_only=True`` where LMDeploy would serve the model as a vision-language
    one (:func:`.backend.vision_language`): the benchmarks are text only, and the vision encoder would be loaded on
    the first GPU beside the engine, memory the KV-cache preflight does not count. A row that sets the key keeps
    its value."""
    if 'language_model_only' in engine_config or not cfg.get('architectures'):
        return dict(engine_config)
    return dict(engine_config, language_model_only=True) if B.vision_language(cfg, backend) else dict(engine_config)


def served(model_cfg: Dict, cfg: Dict, tokenizer_only: bool = False, env=os.environ) -> ServedEngine:
    """The engine the wrapper starts for the row ``model_cfg`` (its arguments, as the task's model config gives
    them) from the model's ``config.json`` ``cfg``: the backend LMDeploy really runs here (``tokenizer_only``: the
    architecture's choice, no engine is built), the row's ``long_context`` keys above its native window,
    ``language_model_only``, prefix caching, and the Ray instance."""
    row = ModelRow.of(model_cfg)
    ec = dict(row.engine_config)
    if row.max_seq_len and 'session_len' not in ec:
        ec['session_len'] = row.max_seq_len
    ec = row.recipe.band_engine_config(ec)
    backend, why = (B.choose_backend if tokenizer_only else B.serving_backend)(cfg, row.backend)
    ec = text_only(cfg, backend, ec)
    supported = B.prefix_caching_supported(cfg, backend)
    ray = None if tokenizer_only else B.ray_isolation(backend, ec.get('tp', 1), env)[0]
    ec = with_prefix_caching(supported, ec, row.prefix_caching)
    return ServedEngine(backend, why, ec, row.recipe.effective_rope(ec.get('session_len')), ray)


def model_geometry(model_cfg) -> Dict:
    """config.json of the model directory, else the geometry the model config declares, else {}."""
    geo, source = ModelRow.of(model_cfg).geometry()
    return {'config': geo.cfg, 'source': source} if geo else {}
