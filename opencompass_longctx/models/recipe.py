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
from dataclasses import dataclass
from typing import Dict, List, Optional

NO_SCALING = {'type': 'default'}
CAVEAT_MARK = '†'


@dataclass(frozen=True)
class Recipe:
    """A model row's long-context recipe, read once (the model-config keys of the module doc)."""
    native_window: Optional[int] = None
    rope: Optional[Dict] = None
    long_context: Optional[Dict] = None
    caveats: Optional[List[Dict]] = None

    @classmethod
    def of(cls, model_cfg: Dict) -> 'Recipe':
        return cls(model_cfg.get('native_window'), model_cfg.get('rope'), model_cfg.get('long_context'),
                   model_cfg.get('caveats'))

    def uses_long_context(self, session_len: Optional[int]) -> bool:
        native = self.native_window
        return bool(self.long_context and native and session_len and session_len > native)

    def native_band(self, session_len: Optional[int], largest_tier_tokens: float) -> bool:
        """Whether an engine of ``session_len`` that would get the long-context recipe serves only tiers within the
        native window (the planner's band up to 32k for a 32k model: its engine is longer only for tokenizer
        headroom): such a band gets no static scaling (its engine stops at the native window)."""
        return self.uses_long_context(session_len) and largest_tier_tokens <= self.native_window

    def band_engine_config(self, engine_config: Dict) -> Dict:
        """The engine keys for this engine's ``session_len``: ``long_context``'s keys (not its ``rope``) merged in
        when the session is longer than the native window."""
        if not self.uses_long_context(engine_config.get('session_len')):
            return dict(engine_config)
        extra = {k: v for k, v in self.long_context.items() if k != 'rope'}
        return merge_overrides(engine_config, extra)

    def effective_rope(self, session_len: Optional[int]) -> Dict:
        """The RoPE scaling the row states for an engine of ``session_len`` tokens."""
        if self.uses_long_context(session_len):
            return dict(self.long_context.get('rope') or NO_SCALING)
        return dict(self.rope or NO_SCALING)

    def caveats_at(self, tier_tokens: int) -> List[str]:
        """Why a tier of ``tier_tokens`` tokens runs the model beyond what its engine supports (empty: it does not)."""
        return [c['reason'] for c in (self.caveats or []) if tier_tokens > int(c['above'])]


def merge_overrides(base: Dict, extra: Dict) -> Dict:
    """``base`` with ``extra`` merged in (nested dicts merged key by key), neither changed."""
    out = copy.deepcopy(base)
    for k, v in extra.items():
        nested = isinstance(v, dict) and isinstance(out.get(k), dict)
        out[k] = merge_overrides(out[k], v) if nested else copy.deepcopy(v)
    return out


def uses_long_context(model_cfg: Dict, session_len: Optional[int]) -> bool:
    return Recipe.of(model_cfg).uses_long_context(session_len)


def native_band(model_cfg: Dict, session_len: Optional[int], largest_tier_tokens: float) -> bool:
    """:meth:`Recipe.native_band` of a model config."""
    return Recipe.of(model_cfg).native_band(session_len, largest_tier_tokens)


def band_engine_config(model_cfg: Dict, engine_config: Dict) -> Dict:
    """:meth:`Recipe.band_engine_config` of a model config."""
    return Recipe.of(model_cfg).band_engine_config(engine_config)


def effective_rope(model_cfg: Dict, session_len: Optional[int]) -> Dict:
    """:meth:`Recipe.effective_rope` of a model config."""
    return Recipe.of(model_cfg).effective_rope(session_len)


def rope_text(rope: Dict) -> str:
    kind = rope.get('type', 'default')
    if kind == 'default':
        return 'none' + (f" (base {rope['base']:g})" if rope.get('base') else '')
    name = {'dynamic': 'dynamic NTK'}.get(kind, kind)
    where = (f" above {rope['original']}" if kind == 'dynamic' else f" (original {rope['original']})"
             if rope.get('original') else '')
    return f"{name} x{rope['factor']:g}{where}"


def caveats(model_cfg: Dict, tier_tokens: int) -> List[str]:
    """:meth:`Recipe.caveats_at` of a model config."""
    return Recipe.of(model_cfg).caveats_at(tier_tokens)
