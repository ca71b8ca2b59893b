"""One KV-cache and compute model for every layer type, read from a model's config.json (pure Python).

Layer types (:func:`layer_groups`):

* ``full``: attention over the whole context (dense GQA: ``2 x kv_heads x head_dim`` values per token and layer).
* ``sliding``: attention over the last ``window`` tokens (gpt-oss ``layer_types``, Gemma-3
  ``sliding_window_pattern``).
* ``mla``: multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): one latent of ``kv_lora_rank +
  qk_rope_head_dim`` values per token and layer, no separate V.
* ``linear``: Gated DeltaNet (Qwen3-Next, Qwen3.5): no per-token cache, a fixed state per sequence.

Memory is sized as LMDeploy 0.18 allocates it, since that decides an out-of-memory:

* Sliding layers get a full-length cache: the PyTorch engine turns the window off for the cache of the models that
  mix layer types (lmdeploy/pytorch/configurations/gpt_oss.py:18 and gemma.py:35 set ``sliding_window = -1``), and
  TurboMind only gives the window to the attention kernel (lmdeploy/turbomind/models/gpt_oss.py:93-94; its block
  allocator is C++, not in the wheel): so :func:`kv_bytes_per_token` counts them in full. What the window would need
  is kept apart (``window_kv_bytes``) and used for the decode reads of the cost model.
* MLA caches ``kv_lora_rank + qk_rope_head_dim`` as K with one KV head and no V
  (lmdeploy/pytorch/configurations/deepseek_v2.py:18-23: ``k_head_dim = kv_lora_rank + qk_rope_head_dim``,
  ``v_head_dim = 0``, ``num_key_value_heads = 1``); one head cannot be split, so every GPU holds it whole
  (builder.py:63-74 replicates KV heads when ``tp > kv_heads``).
* Gated DeltaNet: the KV cache covers only the full-attention layers (configurations/qwen3_next.py:32-35) and each
  sequence slot holds a conv state ``(layers, 2 x key_dim + value_dim, conv_kernel)`` and a recurrent state
  ``(layers, v_heads, v_head_dim, k_head_dim)`` in bf16, heads split over tp (qwen3_next.py:37-50); the engine takes
  ``max_batch_size + 2`` slots from the free memory before the KV cache's ratio applies
  (lmdeploy/pytorch/engine/executor/base.py:283-289, 349-356).

Compute (:func:`prefill_flops`, :func:`decode_bytes`): matmuls with the ACTIVE parameters (MoE: the experts a token
uses), causal attention over full layers (``2 x hidden x L^2`` per layer, today's dense term), windowed layers capped
at their window; decode reads the active weights and, per sequence, the full layers' KV over the context, the
windowed layers' KV over the window and the fixed state. A dense GQA model gives exactly the dense formulas.
"""
import json
import os
from typing import Dict, List
from opencompass_longctx.errors import LongCtxError

BF16 = 2
_CONFIG = object()   # compute_profile: the config.json's own active_params


class GeometryError(LongCtxError, ValueError):
    pass


def text_config(cfg: Dict) -> Dict:
    return cfg.get('text_config') or cfg.get('llm_config') or cfg


def kv_heads_and_dim(c: Dict):
    heads = c.get('num_attention_heads')
    kv_heads = c.get('num_key_value_heads', c.get('multi_query_group_num', heads))
    if c.get('multi_query_attention') is False:
        kv_heads = heads
    head_dim = c.get('head_dim') or c.get('kv_channels') or (c['hidden_size'] // heads if heads else None)
    return kv_heads, head_dim


def _layer_kinds(c: Dict, layers: int) -> List[str]:
    """'full' / 'sliding' / 'linear' per layer, from ``layer_types``, Qwen3-Next's ``full_attention_interval`` or
    Gemma-3's ``sliding_window_pattern``."""
    names = {'full_attention': 'full', 'sliding_attention': 'sliding', 'linear_attention': 'linear'}
    if c.get('layer_types'):
        unknown = sorted(set(c['layer_types']) - set(names))
        if unknown:
            raise GeometryError(f'config.json layer_types {unknown} are not sized here (known: {sorted(names)})')
        return [names[t] for t in c['layer_types']]
    if c.get('full_attention_interval'):
        n = int(c['full_attention_interval'])
        return ['full' if (i + 1) % n == 0 else 'linear' for i in range(layers)]
    if c.get('sliding_window_pattern') and c.get('sliding_window'):
        n = int(c['sliding_window_pattern'])
        return ['full' if (i + 1) % n == 0 else 'sliding' for i in range(layers)]
    return ['full'] * layers


def layer_groups(cfg: Dict) -> List[Dict]:
    """Layer groups of a config.json: ``kind``, ``count``, ``kv_heads``, ``k_dim``, ``v_dim`` (values per KV head
    and token), ``window`` (sliding) or ``state_values`` (per sequence and layer, linear: ``state_heads`` split over
    tp)."""
    c = text_config(cfg)
    layers = c.get('num_hidden_layers', c.get('num_layers'))
    if not layers:
        raise GeometryError('config.json lacks the layer/head counts needed for the KV-cache preflight')
    layers = int(layers)
    if c.get('kv_lora_rank'):
        return [dict(kind='mla', count=layers, kv_heads=1, k_dim=int(c['kv_lora_rank']) + int(c['qk_rope_head_dim']),
                     v_dim=0)]
    kv_heads, head_dim = kv_heads_and_dim(c)
    if not (kv_heads and head_dim):
        raise GeometryError('config.json lacks the layer/head counts needed for the KV-cache preflight')
    kinds = _layer_kinds(c, layers)
    groups = []
    for kind in ('full', 'sliding', 'linear'):
        n = kinds.count(kind)
        if not n:
            continue
        if kind == 'linear':
            kd, vd = int(c['linear_key_head_dim']), int(c['linear_value_head_dim'])
            kh, vh = int(c['linear_num_key_heads']), int(c['linear_num_value_heads'])
            conv = (2 * kh * kd + vh * vd) * int(c.get('linear_conv_kernel_dim') or 4)
            groups.append(dict(kind='linear', count=n, state_values=conv + vh * vd * kd, state_heads=vh))
        else:
            g = dict(kind=kind, count=n, kv_heads=int(kv_heads), k_dim=int(head_dim), v_dim=int(head_dim))
            if kind == 'sliding':
                g['window'] = int(c['sliding_window'])
            groups.append(g)
    return groups


def _per_gpu_heads(kv_heads: int, tp: int) -> float:
    """KV heads per GPU: split over tp, a head replicated when tp exceeds them (one MLA latent on every GPU)."""
    return kv_heads / tp if tp <= kv_heads else 1.0


class Geometry:
    """A config.json's layer model, read once: its text config and (on first use) its layer groups, and what the
    sizing, the preflight and the cost model ask of them. :func:`Geometry.of` takes a config.json dict (or a
    Geometry, returned as it is); the module functions below are the same questions asked of a dict."""

    def __init__(self, cfg: Dict):
        self.cfg = cfg
        self.text = text_config(cfg)
        self._groups = None

    @classmethod
    def of(cls, cfg) -> 'Geometry':
        return cfg if isinstance(cfg, Geometry) else cls(cfg)

    @classmethod
    def read(cls, path: str) -> 'Geometry':
        """The ``config.json`` of the model directory ``path``."""
        with open(os.path.join(path, 'config.json'), encoding='utf-8') as f:
            return cls(json.load(f))

    @property
    def groups(self) -> List[Dict]:
        """:func:`layer_groups` (raises :class:`GeometryError` when the counts are missing)."""
        if self._groups is None:
            self._groups = layer_groups(self.cfg)
        return self._groups

    @property
    def layers(self):
        """``num_hidden_layers`` (ChatGLM: ``num_layers``), None when absent."""
        return self.text.get('num_hidden_layers', self.text.get('num_layers'))

    @property
    def kv_heads_and_dim(self):
        """(KV heads, head dim) as the config.json names them (:func:`kv_heads_and_dim`)."""
        return kv_heads_and_dim(self.text)

    @property
    def vocab(self) -> int:
        return self.text.get('vocab_size') or self.text.get('padded_vocab_size') or 0

    def kv_bytes_per_token(self, value_bytes: float = BF16, tp: int = 1) -> float:
        """KV-cache bytes per token as LMDeploy allocates them, per GPU at ``tp`` (tp=1: the whole model), summed over
        full, sliding (full length, see the module doc) and MLA layers; linear layers cache nothing per token."""
        return sum(g['count'] * _per_gpu_heads(g['kv_heads'], tp) * (g['k_dim'] + g['v_dim']) * value_bytes
                   for g in self.groups if g['kind'] != 'linear')

    def attention_weight_bytes(self, value_bytes: float = BF16) -> float:
        """Bytes of the attention projections (q, k, v, o) of the full and sliding layers: what TurboMind's context
        parallelism keeps once per attention group instead of splitting over every GPU (MLA and linear layers: 0, as
        TurboMind serves neither with cp here)."""
        c = self.text
        if c.get('kv_lora_rank'):
            return 0.0
        h = int(c.get('hidden_size') or 0)
        heads = int(c.get('num_attention_heads') or 0)
        kv_heads, head_dim = kv_heads_and_dim(c)
        q = heads * int(head_dim or 0)
        layers = sum(g['count'] for g in self.groups if g['kind'] in ('full', 'sliding'))
        return float(layers * (2 * h * q + 2 * h * int(kv_heads or 0) * int(head_dim or 0)) * value_bytes)

    def state_bytes_per_seq(self, tp: int = 1) -> float:
        """Fixed bytes per sequence slot (Gated DeltaNet conv + recurrent state, bf16), per GPU at ``tp``."""
        return sum(g['count'] * g['state_values'] * BF16 / min(tp, g['state_heads'])
                   for g in self.groups if g['kind'] == 'linear')

    def describe(self) -> str:
        """The layer types in words, e.g. '12 full + 12 sliding(128) attention layers'."""
        parts = []
        for g in self.groups:
            if g['kind'] == 'sliding':
                parts.append(f"{g['count']} sliding({g['window']})")
            elif g['kind'] == 'mla':
                parts.append(f"{g['count']} MLA(latent {g['k_dim']})")
            elif g['kind'] == 'linear':
                mib = g['count'] * g['state_values'] * BF16 / 2 ** 20
                parts.append(f"{g['count']} linear(state {mib:.1f} MiB/seq)")
            else:
                parts.append(f"{g['count']} full(GQA {g['kv_heads']}x{g['k_dim']})")
        return ' + '.join(parts) + ' layers'

    def compute_profile(self, total_params: float, value_bytes: float = BF16, active_params=_CONFIG) -> Dict:
        """What the cost model needs: active parameters (``active_params``: the row's figure, standing for the
        config.json's own top-level one, else all), hidden size, the full/sliding layer counts and the per-token KV
        the decode reads (sliding layers over their window only)."""
        c = self.text
        groups = self.groups
        per_token = {g['kind']: g['count'] * g['kv_heads'] * (g['k_dim'] + g['v_dim']) * value_bytes
                     for g in groups if g['kind'] != 'linear'}
        sliding = [g for g in groups if g['kind'] == 'sliding']
        top = self.cfg.get('active_params') if active_params is _CONFIG else active_params
        nested = c.get('active_params') if c is not self.cfg else top
        return dict(active_params=float(top or nested or total_params),
                    hidden=int(c.get('hidden_size') or 0), attn_width=attention_width(self.cfg),
                    attn_layers=sum(g['count'] for g in groups if g['kind'] in ('full', 'mla')),
                    sliding_layers=sum(g['count'] for g in sliding), window=sliding[0]['window'] if sliding else 0,
                    context_kv_bytes=per_token.get('full', 0.0) + per_token.get('mla', 0.0),
                    window_kv_bytes=per_token.get('sliding', 0.0), state_bytes=self.state_bytes_per_seq())


def kv_bytes_per_token(cfg: Dict, value_bytes: float = BF16, tp: int = 1) -> float:
    """:meth:`Geometry.kv_bytes_per_token` of a config.json."""
    return Geometry.of(cfg).kv_bytes_per_token(value_bytes, tp)


def attention_weight_bytes(cfg: Dict, value_bytes: float = BF16) -> float:
    """:meth:`Geometry.attention_weight_bytes` of a config.json."""
    return Geometry.of(cfg).attention_weight_bytes(value_bytes)


def state_bytes_per_seq(cfg: Dict, tp: int = 1) -> float:
    """:meth:`Geometry.state_bytes_per_seq` of a config.json."""
    return Geometry.of(cfg).state_bytes_per_seq(tp)


def state_slots(max_batch_size: int) -> int:
    """State slots the PyTorch engine allocates (executor/base.py:283-289: max_batches + 2)."""
    return int(max_batch_size) + 2


def describe(cfg: Dict) -> str:
    """:meth:`Geometry.describe` of a config.json."""
    return Geometry.of(cfg).describe()


def compute_profile(cfg: Dict, total_params: float, value_bytes: float = BF16) -> Dict:
    """:meth:`Geometry.compute_profile` of a config.json (``active_params`` of the row, else all)."""
    return Geometry.of(cfg).compute_profile(total_params, value_bytes)


def attention_width(cfg: Dict) -> float:
    """Query heads x the mean of the score (QK) and value (AV) head dims: causal attention over L tokens costs
    2 x width x L^2 FLOPs per layer (QK^T and AV, 2 x width x L^2 each, halved by the mask). Dense and sliding
    layers: heads x head_dim, which is ``hidden_size`` for the older models but not for most 2025 ones (Qwen3-30B-A3B
    and Qwen3-Next 4096 against hidden 2048, gpt-oss 4096 against 2880, Gemma-3 4096 against 5376). MLA as LMDeploy
    runs it, in the compressed form in prefill too (pytorch/models/deepseek_v2.py: scores over kv_lora_rank +
    qk_rope_head_dim, values over kv_lora_rank): heads x (2 x kv_lora_rank + qk_rope_head_dim) / 2."""
    c = text_config(cfg)
    heads = int(c.get('num_attention_heads') or 0)
    hidden = int(c.get('hidden_size') or 0)
    if not heads:
        return float(hidden)
    if c.get('kv_lora_rank'):
        return heads * (2 * c['kv_lora_rank'] + c.get('qk_rope_head_dim', 0)) / 2
    head_dim = c.get('head_dim') or c.get('kv_channels') or hidden / heads
    return float(heads * head_dim)


def prefill_flops(p: Dict, L: float) -> float:
    """FLOPs of one prompt of L tokens: 2 x active params x L + causal attention, 2 x width x L^2 per full layer
    and 2 x width x L x min(L, window) per sliding layer (width: :func:`attention_width`; ``hidden`` for a profile
    made from totals only)."""
    width = p.get('attn_width') or p['hidden']
    return (2 * p['active_params'] * L + 2 * p['attn_layers'] * width * L * L
            + 2 * p['sliding_layers'] * width * L * min(L, p['window']))


def decode_bytes(p: Dict, weights: float, total_params: float, batch: int, context: float) -> float:
    """HBM bytes one decode step reads: the active share of the weights (a lower bound for MoE at batch > 1: the
    batch's tokens may pick different experts), and per sequence the KV of its context (full/MLA layers), of its
    window (sliding layers) and its fixed state."""
    active_weights = weights * min(1.0, p['active_params'] / total_params) if total_params else weights
    per_seq = (p['context_kv_bytes'] * context + p['window_kv_bytes'] * min(context, p['window'] or context)
               + p['state_bytes'])
    return active_weights + batch * per_seq


def dense_profile(params: float, layers: int, hidden: int, kv_bytes_per_token: float) -> Dict:
    """The compute profile of a dense model given only its totals (an engine sized before this module)."""
    return dict(active_params=params, hidden=hidden, attn_layers=layers, sliding_layers=0, window=0,
                context_kv_bytes=kv_bytes_per_token, window_kv_bytes=0.0, state_bytes=0.0)

