"""Engine arithmetic for LMDeploy (no LMDeploy import): KV bytes per token, weight bytes, the engine's own
buffers, the per-GPU KV need and budget, and the preflight that raises when the KV cache cannot fit.

KV bytes per token = 2 (K and V) x layers x KV heads x head dim x bytes per value (2 for bf16/fp16; 1 for
``quant_policy=8``, 0.5 for ``quant_policy=4``), summed over the model's layer types as LMDeploy allocates them
(sliding, MLA, Gated DeltaNet: :mod:`opencompass_longctx.models.geometry`, the one reader of a config.json's
layer and head counts), plus a fixed state per sequence slot for linear-attention layers. LMDeploy gives the KV
cache ``cache_max_entry_count`` of the GPU memory left after the weights; with tensor parallelism the weights and
the KV heads are split over ``tp`` GPUs. The PyTorch engine first sets aside its runtime buffers
(:func:`engine_reserve_bytes`). :mod:`opencompass_longctx.models.lmdeploy` (the serving wrapper) and
:mod:`opencompass_longctx.models.engine_plan` (the engine decision, for the planner and the wrapper) both size engines
here.
"""
import glob
import json
import os
from typing import Dict, Optional

from opencompass_longctx.models import geometry
from opencompass_longctx.models.geometry import Geometry
from opencompass_longctx.errors import LongCtxError

KV_BYTES = {0: 2.0, 8: 1.0, 4: 0.5}  # quant_policy -> bytes per cached value


class LMDeployConfigError(LongCtxError, ValueError):
    pass


class PreflightError(LongCtxError, RuntimeError):
    pass


def read_model_config(path: str) -> Dict:
    cfg = os.path.join(path, 'config.json')
    if not os.path.isfile(cfg):
        raise LMDeployConfigError(
            f'{path!r} has no config.json: give the local directory of a Hugging Face model (download it first, '
            'e.g. huggingface-cli download <org>/<model> --local-dir <dir>)')
    return Geometry.read(path).cfg


def kv_geometry(cfg) -> Dict[str, int]:
    """Layers, KV heads and head dim from a config.json (Llama/Qwen/InternLM style, or ChatGLM's names)."""
    g = Geometry.of(cfg)
    layers = g.layers
    kv_heads, head_dim = g.kv_heads_and_dim
    if not (layers and kv_heads and head_dim):
        raise LMDeployConfigError('config.json lacks the layer/head counts needed for the KV-cache preflight')
    return {'layers': int(layers), 'kv_heads': int(kv_heads), 'head_dim': int(head_dim)}


def kv_bytes_per_token(cfg, quant_policy: int = 0, tp: int = 1) -> float:
    """KV bytes per token as LMDeploy allocates them (per GPU at ``tp``), over the model's layer types
    (:mod:`opencompass_longctx.models.geometry`; dense GQA: 2 x layers x KV heads x head dim x bytes per value)."""
    g = Geometry.of(cfg)
    kv_geometry(g)
    if quant_policy not in KV_BYTES:
        raise LMDeployConfigError(f'quant_policy must be one of {sorted(KV_BYTES)}, got {quant_policy!r}')
    try:
        return g.kv_bytes_per_token(KV_BYTES[quant_policy], tp)
    except geometry.GeometryError as e:
        raise LMDeployConfigError(str(e)) from e


def weight_bytes(path: str, cfg) -> float:
    """Exact from the safetensors index when present, else estimated from config.json (bf16)."""
    for index in glob.glob(os.path.join(path, '*.safetensors.index.json')):
        with open(index, encoding='utf-8') as f:
            total = json.load(f).get('metadata', {}).get('total_size')
        if total:
            return float(total)
    files = glob.glob(os.path.join(path, '*.safetensors'))
    if files:
        return float(sum(os.path.getsize(f) for f in files))
    c = Geometry.of(cfg).text
    h = c['hidden_size']
    g = kv_geometry(cfg)
    inter = c.get('intermediate_size') or c.get('ffn_hidden_size') or 4 * h
    vocab = c.get('vocab_size') or c.get('padded_vocab_size')
    per_layer = 2 * h * h + 2 * h * g['kv_heads'] * g['head_dim'] + 3 * h * inter
    params = g['layers'] * per_layer + vocab * h * (1 if c.get('tie_word_embeddings') else 2)
    return 2.0 * params


def engine_reserve_bytes(backend: str, cfg, engine_config: Dict) -> float:
    """GPU bytes an engine sets aside per GPU before it sizes the KV cache. PyTorch engine (LMDeploy 0.18,
    lmdeploy/pytorch/engine/executor/base.py:229-234, ``_get_runtime_size``): runtime buffers of
    (max_prefill_token_num + 2 x max_batches) x vocab_size x 2 bytes are taken from the free memory, and the KV
    cache gets ``cache_max_entry_count`` of the rest (it halves max_prefill_token_num while fewer than 16 KV blocks
    would fit: the preflight counts the full default). TurboMind: 0 (its ratio applies to the free memory)."""
    if backend != 'pytorch':
        return 0.0
    vocab = Geometry.of(cfg).vocab
    prefill_tokens = int(engine_config.get('max_prefill_token_num') or 8192)   # PytorchEngineConfig's default
    return float((prefill_tokens + 2 * int(engine_config.get('max_batch_size') or 1)) * vocab * 2)


def kv_plan(cfg, weights: float, session_len: int, max_batch_size: int, tp: int, cache_max_entry_count: float,
            quant_policy: int, gpu_memory: float, reserve: float = 0.0, cp: int = 1) -> Dict[str, float]:
    """Per-GPU KV need and budget (bytes) for one engine configuration (``reserve``: the engine's own buffers).
    A model with a fixed state per sequence (Gated DeltaNet) has ``max_batch_size + 2`` state slots taken from the
    free memory first (lmdeploy/pytorch/engine/executor/base.py:349-356): ``state`` in the result. ``cp``:
    TurboMind's context parallelism, ``tp`` GPUs in ``cp`` groups of ``tp / cp`` (lmdeploy/turbomind/
    parallel_config.py: attn_tp = tp / cp, the MLP still over tp): each group holds the KV heads split over tp / cp
    GPUs for 1 / cp of each sequence's tokens, and its own copy of the attention weights."""
    if cp < 1 or tp % cp:
        raise LMDeployConfigError(f'cp={cp} must divide tp={tp} (TurboMind: tp must be a multiple of cp)')
    g = Geometry.of(cfg)
    need = kv_bytes_per_token(g, quant_policy, tp // cp) / cp * session_len * max_batch_size
    state = g.state_bytes_per_seq(tp) * geometry.state_slots(max_batch_size)
    weights_per_gpu = weights / tp + (g.attention_weight_bytes() * (cp - 1) / tp if cp > 1 else 0.0)
    budget = cache_max_entry_count * max(gpu_memory - weights_per_gpu - reserve - state, 0.0)
    return {'need': need, 'budget': budget, 'fits': need <= budget, 'state': state}


def kv_preflight(path: str, session_len: int, max_batch_size: int = 1, tp: int = 1,
              cache_max_entry_count: float = 0.8, quant_policy: int = 0, gpu_memory: Optional[float] = None,
              cfg: Optional[Dict] = None, reserve: float = 0.0, cp: int = 1) -> Dict:
    """Raise :class:`PreflightError` (with a configuration that would fit) when the KV cache cannot fit (``cp``:
    TurboMind's context parallelism, :func:`kv_plan`)."""
    cfg = cfg or read_model_config(path)
    if gpu_memory is None:
        import torch
        if not torch.cuda.is_available():
            raise PreflightError('no GPU visible for the KV-cache preflight (set gpu_memory_gib to plan for one)')
        gpu_memory = float(torch.cuda.mem_get_info(0)[0])   # free now: what both engines size their cache from
    weights = weight_bytes(path, cfg)
    geo = Geometry.of(cfg)          # read once for every question below
    plan = kv_plan(geo, weights, session_len, max_batch_size, tp, cache_max_entry_count, quant_policy, gpu_memory,
                   reserve, cp)
    gib = 1024 ** 3
    report = {'kv_bytes_per_token': kv_bytes_per_token(geo, quant_policy), 'weights_gib': weights / gib,
              'engine_reserve_gib_per_gpu': reserve / gib, 'layer_types': geo.describe(),
              'state_gib_per_gpu': plan['state'] / gib, 'kv_need_gib_per_gpu': plan['need'] / gib, 'kv_budget_gib_per_gpu': plan['budget'] / gib,
              'gpu_memory_gib': gpu_memory / gib, 'tp': tp, 'cp': cp}
    if plan['fits']:
        return report
    kv_heads = kv_geometry(geo)['kv_heads']
    options = []
    for q in sorted({quant_policy, 8, 4}, key=lambda x: -KV_BYTES[x]):
        if KV_BYTES[q] > KV_BYTES[quant_policy]:
            continue
        for t in (1, 2, 4, 8, 16):
            if t < tp and q == quant_policy:
                continue
            if kv_plan(geo, weights, session_len, max_batch_size, t, cache_max_entry_count, q, gpu_memory,
                       reserve)['fits']:
                options.append(f'tp={t}' + ('' if q == quant_policy else f' with quant_policy={q} (KV int{q})')
                               + (' (more GPUs than KV heads: LMDeploy replicates KV heads)' if t > kv_heads else ''))
                break
    hint = '; or '.join(options) if options else 'no tp up to 16 or KV quantisation fits: lower session_len'
    raise PreflightError(
        f'{path}: the KV cache for session_len={session_len} x max_batch_size={max_batch_size} needs '
        f'{plan["need"] / gib:.1f} GiB per GPU at tp={tp}, but LMDeploy would give it {plan["budget"] / gib:.1f} GiB '
        f'(cache_max_entry_count={cache_max_entry_count} of {gpu_memory / gib:.0f} GiB minus '
        f'{weights / tp / gib:.1f} GiB of weights'
        + (f' and {reserve / gib:.1f} GiB of engine buffers' if reserve else '')
        + (f" and {plan['state'] / gib:.1f} GiB of linear-attention state" if plan['state'] else '')
        + f' per GPU; {geo.describe()}). Would fit: {hint}.')
