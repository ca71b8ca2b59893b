"""Engine sizing for a plan: the LMDeploy engine a band of tiers gets, from the KV-cache arithmetic that the
runtime preflight of :mod:`opencompass_longctx.models.lmdeploy` applies (the same functions), before any GPU.

:func:`size_engine` gives ``max_batch_size`` for a ``session_len`` on the declared GPU and its verdict (fits,
does not fit, unchecked without a geometry, bad backend). The model's geometry is its ``config.json`` where the
directory is here, else the one the shipped model table declares."""
import dataclasses
import os
from dataclasses import dataclass
from typing import Dict, List, Optional

from opencompass_longctx.models import geometry
GIB = 1024 ** 3
BATCH_CAP = 64             # largest max_batch_size the planner gives an engine


@dataclass
class EnginePlan:
    """The engine the plan gives one inference task: its size, its verdict, and what the cost model reads.

    ``verdict``: 'fits', 'does not fit' (``reason`` says why), 'unchecked' (no geometry) or 'bad backend'. The
    sizes are left None where the verdict stopped the arithmetic. :func:`size_engine` fills the engine's part, the
    planner the band's (``headroom``, ``token_ratio_measured``, ``rope``, ``caveats``)."""
    session_len: int
    tp: int
    geometry: Optional[str] = None          # where the geometry came from: 'config.json' or 'model table'
    backend: Optional[str] = None           # 'turbomind' or 'pytorch' (models.lmdeploy.serving_backend)
    backend_reason: Optional[str] = None
    prefix_caching: Optional[str] = None    # 'on (...)' or 'off (...)' (models.prefix_caching.describe)
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
    cp_note: Optional[str] = None           # why that cp (models.context_parallel.choose)
    over_window: Optional[List[str]] = None  # datasets over the model's window by the measured tokenizer ratio

    @property
    def prefix_cached(self) -> bool:
        return str(self.prefix_caching or '').startswith('on')

    def as_dict(self) -> Dict:
        """The plan file's form: the fields that are set."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def is_lmdeploy(model_cfg) -> bool:
    return 'engine_config' in model_cfg


def declared_geometry(model_cfg) -> Dict:
    """What the model config declares for sizing before the model is downloaded (``declared_geometry``: the model
    table's ``arch``, ``checkpoint_bytes``, ``active_params``; configs/models/lmdeploy_longctx.py writes it)."""
    return dict(model_cfg.get('declared_geometry') or {})


def model_geometry(model_cfg) -> Dict:
    """config.json of the model directory, else the geometry the model config declares, else {}."""
    from opencompass_longctx.models.engine import read_model_config
    path = model_cfg.get('path')
    if path and os.path.isfile(os.path.join(path, 'config.json')):
        return {'config': read_model_config(path), 'source': 'config.json'}
    arch = declared_geometry(model_cfg).get('arch')
    return {'config': dict(arch), 'source': 'model table'} if arch else {}


def _gpu_here() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def engine_backend(model_cfg, cfg: Optional[Dict]):
    """(backend, why) as LongCtxTurboMindModel will choose it (models.lmdeploy.serving_backend: the architecture,
    and whether TurboMind's library loads). Where the plan is made on a machine without a GPU (a login node, a CPU
    box) TurboMind not loading says nothing about the GPU machine: the plan then keeps the architecture's choice and
    says so; without LMDeploy installed here an 'auto' row is planned as TurboMind, and the plan says so too."""
    from opencompass_longctx.models.lmdeploy import LMDeployConfigError, choose_backend, serving_backend, turbomind_status
    requested = model_cfg.get('backend', 'auto')
    try:
        backend, why = choose_backend(cfg or {}, requested)
    except LMDeployConfigError as e:
        if requested == 'auto' and 'not installed' in str(e):
            return 'turbomind', 'assumed: LMDeploy is not installed here (backend=auto is resolved at load)'
        raise
    if backend != 'turbomind' or _gpu_here():
        return serving_backend(cfg or {}, requested)
    ok, error = turbomind_status()
    return backend, why + ('' if ok else f'; assumed to load on the GPU machine (here it does not, no GPU: {error}; '
                                         'without it LMDeploy runs the PyTorch engine)')


def engine_memory_gib(gpu: Dict) -> float:
    """GiB the engine sizes its cache from on ``gpu`` (a cost-model GPUS entry): what CUDA reports as the total
    less what it holds before the engine starts (tables/cost_model.py CUDA_NOT_FREE_GIB); a GPU given only by
    ``memory_gib`` is taken at that less the same."""
    from opencompass_longctx.tables.cost_model import CUDA_NOT_FREE_GIB
    return float(gpu.get('visible_memory_gib') or gpu['memory_gib']) - CUDA_NOT_FREE_GIB


def size_engine(model_cfg, session_len: int, gpu: Dict, cap: int = BATCH_CAP, consider_cp: bool = False) -> EnginePlan:
    """max_batch_size for ``session_len`` from the KV-cache arithmetic (the runtime preflight's), and its verdict;
    ``consider_cp``: try TurboMind's context parallelism too (:mod:`.context_parallel`; the band that holds 1m)."""
    return EnginePlan(**_sized(model_cfg, session_len, gpu, cap, consider_cp))


def _sized(model_cfg, session_len: int, gpu: Dict, cap: int, consider_cp: bool = False) -> Dict:
    from opencompass_longctx.models.engine import (KV_BYTES, LMDeployConfigError, engine_reserve_bytes, kv_bytes_per_token,
                                                   kv_geometry, kv_plan, weight_bytes)
    from opencompass_longctx.models.geometry import text_config
    ec = dict(model_cfg.get('engine_config') or {})
    tp = int(ec.get('tp', 1))
    geo = model_geometry(model_cfg)
    out = {'session_len': session_len, 'tp': tp, 'geometry': geo.get('source')}
    try:
        out['backend'], out['backend_reason'] = engine_backend(model_cfg, geo.get('config'))
        from opencompass_longctx.models.lmdeploy import ray_isolation
        ray = ray_isolation(out['backend'], tp, os.environ)[1]
        out['backend_reason'] += f'; {ray}' if ray else ''
        from opencompass_longctx.models import prefix_caching as pc
        pcfg = geo.get('config') or {}
        out['prefix_caching'] = pc.describe(pcfg, out['backend'], pc.engine_config(
            pcfg, out['backend'], ec, model_cfg.get('prefix_caching')))
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
    declared = declared_geometry(model_cfg)
    weights = weight_bytes(path, cfg) if os.path.isdir(path) else float(
        declared.get('checkpoint_bytes') or 2.0 * float(cfg.get('params', 0) or 0))
    if not weights:
        weights = weight_bytes('', cfg)
    kvpt = kv_bytes_per_token(cfg, int(ec.get('quant_policy', 0)))
    cme = float(ec.get('cache_max_entry_count', 0.8))
    gpu_mem = float(model_cfg.get('gpu_memory_gib') or engine_memory_gib(gpu)) * GIB
    out['gpu_memory_gib'] = gpu_mem / GIB
    reserve = engine_reserve_bytes(out['backend'], cfg, dict(ec, max_batch_size=cap))  # at the largest batch
    def sized(t: int, cp: int):
        """(sequences that fit, the batch-1 arithmetic) at tp=t and cp: the runtime preflight's arithmetic."""
        one = kv_plan(cfg, weights, session_len, 1, t, cme, int(ec.get('quant_policy', 0)), gpu_mem, reserve, cp)
        # b sequences fit when b x per_seq <= cme x (free - (b + 2) x slot): b = (budget(1) + cme x slot) //
        # (per_seq + cme x slot), slot = one sequence's fixed state (0 without linear-attention layers)
        slot_ = one['state'] / geometry.state_slots(1)
        return (int((one['budget'] + cme * slot_) // (one['need'] + cme * slot_)) if one['need'] else cap), one
    cp = int(ec.get('cp', 1))
    if consider_cp and 'cp' not in ec:
        from opencompass_longctx.models import context_parallel as ctx
        choice = ctx.choose(cfg, out['backend'], tp, lambda c: sized(tp, c)[0], cap)
        cp, note = choice.cp, choice.note
        if out['backend'] == 'turbomind':
            fewer = ctx.fewer_gpus(tp, lambda t, c: sized(t, c)[0] >= 1)
            note += f'; {fewer}' if fewer else ''
        out.update(cp=cp, cp_note=note)
    fit, one = sized(tp, cp)
    per_seq, budget = one['need'], one['budget']
    slot = one['state'] / geometry.state_slots(1)
    # total parameters: the declared count; for a downloaded dense model weights / 2 as before; a model with
    # active_params (MoE, quantised experts) keeps its declared total, which the checkpoint size cannot give
    params = float(cfg.get('params') or (declared['arch']['params'] if declared.get('active_params') else 0)) or weights / 2
    out.update(weights_gib=weights / GIB, kv_bytes_per_token=kvpt, kv_gib_per_seq_per_gpu=per_seq / GIB,
               kv_budget_gib_per_gpu=budget / GIB, layers=kv_geometry(cfg)['layers'],
               hidden=text_config(cfg).get('hidden_size'), weights=weights, engine_reserve_gib=reserve / GIB,
               layer_types=geometry.describe(cfg), state_gib_per_seq_per_gpu=slot / GIB,
               compute=dict(geometry.compute_profile(dict(cfg, active_params=declared.get('active_params')), params,
                                                     KV_BYTES[int(ec.get('quant_policy', 0))]), total_params=params))
    if fit < 1:
        out.update(max_batch_size=1, verdict='does not fit',
                   reason=f'one sequence of {session_len} tokens needs {per_seq / GIB:.1f} GiB of KV per GPU, '
                          f'{budget / GIB:.1f} GiB available at tp={tp}' + (f', cp={cp}' if cp > 1 else '')
                          + ': raise tp or quantise the KV cache')
    else:
        out.update(max_batch_size=min(fit, cap), verdict='fits')
    return out


def model_tokenizer(model_cfg):
    """The model's own tokenizer (from its directory), or None when it cannot be loaded here."""
    path = model_cfg.get('path')
    if not path or not os.path.isdir(path):
        return None
    try:
        from opencompass_longctx.tokenizer.counting import get_tokenizer
        return get_tokenizer(path)
    except Exception:  # noqa: BLE001 - the plan then uses the default headroom (and says so)
        return None
