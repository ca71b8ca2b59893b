"""Whether LMDeploy 0.18 reuses cached prompt blocks exactly for a model, per engine, and the engine config that says so.

LMDeploy keeps the KV of full 64-token prompt blocks in a trie when ``enable_prefix_caching`` is on (off by
default in both engines). The decision here, from the model's ``config.json``:

* full attention (MHA/GQA) text models: on in both engines;
* MLA (DeepSeek V2/V3, ``kv_lora_rank``): on in the PyTorch engine (its block trie is the same; flash-MLA needs
  the default block size 64); off in TurboMind, whose prefix cache is compiled code this project has not checked;
* sliding-window attention (``sliding_window`` with ``use_sliding_window`` true or absent, as LMDeploy reads it):
  off, LMDeploy itself refuses it (``pytorch/config.py`` CacheConfig); Gemma and gpt-oss keep a full KV per layer in
  the PyTorch engine (their configs set no window there), so they stay on in that engine;
* linear-attention / state-space layers (Qwen3-Next ``layer_types`` with ``linear_attention``, Mamba-style
  configs): off. LMDeploy reuses them only from a recurrent-state checkpoint saved at the exact step, which prompts
  that share a prefix and then differ hardly ever have, so it costs state slots for no reuse;
* vision-language models served as such: off (LMDeploy turns it off for most of them, ``VLAsyncEngine``);
* DeepSeek V4 (windowed state caches): off, not checked.

``prefix_caching=False`` in the model config turns it off; an ``enable_prefix_caching`` key the user put in
``engine_config`` is kept as given.
"""
from typing import Dict, Optional, Tuple

ENGINE_KEY = 'enable_prefix_caching'
BLOCK = 64
_FULL_KV_WINDOWED = ('Gemma', 'GptOss')   # PyTorch engine configurations that keep every layer's full KV


def _text(cfg: Dict) -> Dict:
    return cfg.get('text_config') or cfg.get('llm_config') or cfg


def supported(cfg: Dict, backend: str) -> Tuple[bool, str]:
    """(on, why) for a model's config.json under ``backend`` ('pytorch' or 'turbomind')."""
    text = _text(cfg)
    arch = ((cfg.get('architectures') or [''])[0]) or ''
    layer_types = [str(t) for t in (text.get('layer_types') or [])]
    if any('linear' in t or 'mamba' in t or 'ssm' in t for t in layer_types) or 'mamba' in arch.lower() \
            or text.get('linear_num_value_heads') or text.get('ssm_state_size') or text.get('state_size'):
        return False, 'linear-attention/state layers: LMDeploy reuses them only from exact-step state checkpoints'
    if 'DeepseekV4' in arch:
        return False, 'DeepSeek V4 windowed caches: not checked'
    if ('vision_config' in cfg or 'vision_tower' in cfg) and text is cfg and not cfg.get('language_model_only'):
        return False, 'vision-language model: LMDeploy turns prefix caching off for most of them'
    window = text.get('sliding_window') if text.get('use_sliding_window', True) else None
    if window and not (backend == 'pytorch' and arch.startswith(_FULL_KV_WINDOWED)):
        return False, f'sliding-window attention ({window}): LMDeploy refuses prefix caching for it'
    if text.get('kv_lora_rank'):
        if backend == 'pytorch':
            return True, 'MLA: block trie as for full attention (64-token blocks)'
        return False, 'MLA in TurboMind: not checked'
    return True, 'full attention: 64-token block trie'


def engine_config(cfg: Dict, backend: str, config: Dict, prefix_caching: Optional[bool] = None) -> Dict:
    """``config`` with ``enable_prefix_caching`` set as :func:`supported` decides (``prefix_caching=False``: off;
    a key already in ``config`` is kept)."""
    if ENGINE_KEY in config:
        return dict(config)
    on = supported(cfg, backend)[0] if prefix_caching is not False else False
    return dict(config, **{ENGINE_KEY: on})


def describe(cfg: Dict, backend: str, config: Dict) -> str:
    """One line for the plan: 'on' / 'off' and why."""
    on = bool(config.get(ENGINE_KEY))
    why = supported(cfg, backend)[1]
    if on != supported(cfg, backend)[0]:
        why = 'set in the model config'
    return f"{'on' if on else 'off'} ({why})"
