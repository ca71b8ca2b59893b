"""A model row's long-context recipe as data: the RoPE scaling LMDeploy applies per engine size, and the tiers
at which the engine runs the model beyond what it supports (caveats). Pure Python, no LMDeploy import: the
plan, the tier table and :class:`~opencompass_longctx.models.lmdeploy.LongCtxTurboMindModel` all read it.

Model-config keys (from ``tables/lmdeploy_models.py``):

* ``native_window``: the context the model was trained for.
* ``rope``: the scaling LMDeploy uses at every engine size (what the model's config.json says), e.g.
  ``dict(type='llama3', factor=8.0, original=8192)``; ``dict(type='default')`` for none.
* ``long_context``: engine keys (``hf_overrides=...``) applied only to an engine whose ``session_len`` exceeds
  ``native_window``, and the ``rope`` they give; a band that fits the native window gets no static scaling.
* ``caveats``: ``[dict(above=tokens, reason=...)]``: tiers above ``above`` tokens run a setup the engine does not
  support as the authors recommend (marked in the plan and in the tier table).
"""
import copy
from typing import Dict, List, Optional

NO_SCALING = {'type': 'default'}
CAVEAT_MARK = '†'


def uses_long_context(model_cfg: Dict, session_len: Optional[int]) -> bool:
    native = model_cfg.get('native_window')
    return bool(model_cfg.get('long_context') and native and session_len and session_len > native)


def native_band(model_cfg: Dict, session_len: Optional[int], largest_tier_tokens: float) -> bool:
    """Whether an engine of ``session_len`` that would get the long-context recipe serves only tiers within the
    native window (the planner's band up to 32k for a 32k model: its engine is longer only for tokenizer
    headroom): such a band gets no static scaling (LongCtxPartitioner caps its engine at the native window)."""
    return uses_long_context(model_cfg, session_len) and largest_tier_tokens <= model_cfg['native_window']


def merge_overrides(base: Dict, extra: Dict) -> Dict:
    """``base`` with ``extra`` merged in (nested dicts merged key by key), neither changed."""
    out = copy.deepcopy(base)
    for k, v in extra.items():
        nested = isinstance(v, dict) and isinstance(out.get(k), dict)
        out[k] = merge_overrides(out[k], v) if nested else copy.deepcopy(v)
    return out


def band_engine_config(model_cfg: Dict, engine_config: Dict) -> Dict:
    """The engine keys for this engine's ``session_len``: ``long_context``'s keys (not its ``rope``) merged in
    when the session is longer than the native window."""
    if not uses_long_context(model_cfg, engine_config.get('session_len')):
        return dict(engine_config)
    extra = {k: v for k, v in model_cfg['long_context'].items() if k != 'rope'}
    return merge_overrides(engine_config, extra)


def effective_rope(model_cfg: Dict, session_len: Optional[int]) -> Dict:
    """The RoPE scaling the row states for an engine of ``session_len`` tokens."""
    if uses_long_context(model_cfg, session_len):
        return dict(model_cfg['long_context'].get('rope') or NO_SCALING)
    return dict(model_cfg.get('rope') or NO_SCALING)


def rope_text(rope: Dict) -> str:
    kind = rope.get('type', 'default')
    if kind == 'default':
        return 'none' + (f" (base {rope['base']:g})" if rope.get('base') else '')
    name = {'dynamic': 'dynamic NTK'}.get(kind, kind)
    where = (f" above {rope['original']}" if kind == 'dynamic' else f" (original {rope['original']})"
             if rope.get('original') else '')
    return f"{name} x{rope['factor']:g}{where}"


def caveats(model_cfg: Dict, tier_tokens: int) -> List[str]:
    """Why a tier of ``tier_tokens`` tokens runs the model beyond what its engine supports (empty: it does not)."""
    return [c['reason'] for c in (model_cfg.get('caveats') or []) if tier_tokens > int(c['above'])]
