"""LMDeploy serving for long contexts: the wrapper of OpenCompass's TurboMind model that starts the engine
:mod:`opencompass_longctx.models.engine_plan` decides, after checking it, before any weight is loaded.

OpenCompass's ``TurboMindModelwithChatTemplate`` silently drops engine keys LMDeploy does not know (a typo, or
``rope_scaling_factor`` on the PyTorch engine) and lets a too-large ``session_len`` end in an out-of-memory
crash after minutes of loading. ``LongCtxTurboMindModel`` reads the model directory's ``config.json``, takes the
engine :func:`~opencompass_longctx.models.engine_plan.served` decides for its row (the backend LMDeploy 0.18 will
really run, :mod:`opencompass_longctx.models.backend`; the long-context keys, ``language_model_only``, prefix
caching, Ray isolation), and checks, in order: every engine key is a field of that backend's config class and one
it reads (TurboMind 0.18 never reads ``rope_scaling_factor``); ``tp`` equals the GPUs the runner gave the task
(``run_cfg.num_gpus``); ``session_len >= max_seq_len``; and the KV cache for ``session_len x max_batch_size`` fits
in GPU memory, saying which ``tp`` or KV quantisation would fit when it does not. Only then is the model loaded.

The arithmetic (no LMDeploy import: KV bytes per token, weights, engine buffers, the KV need and budget, the
preflight) is :mod:`opencompass_longctx.models.engine`; this module re-exports its names.

``trust_remote_code`` (a model-row field) reaches LMDeploy's ``pipeline`` (its tokenizer, config and chat
template loads; OpenCompass's wrapper never passes it, ``turbomind_with_tf_above_v4_33.py:221``).
"""
import os
from typing import Dict, Optional

from opencompass.models import TurboMindModelwithChatTemplate

from opencompass_longctx.models import prefill, responses
from opencompass_longctx.models.backend import engine_config_class
from opencompass_longctx.models.engine import (KV_BYTES, LMDeployConfigError, PreflightError, engine_reserve_bytes,  # noqa: F401
                                               kv_bytes_per_token, kv_geometry, kv_plan, kv_preflight, read_model_config,
                                               weight_bytes)
from opencompass_longctx.models.engine_plan import served


def harmony_vocabulary(cfg: Dict) -> Optional[str]:
    """For a gpt-oss model (``model_type == 'gpt_oss'``): make ``openai_harmony``'s vocabulary file reachable
    offline. LMDeploy detokenizes gpt-oss with ``openai_harmony`` (lmdeploy/tokenizer.py:395-396), which downloads
    ``o200k_base.tiktoken`` from openaipublic.blob.core.windows.net unless ``$TIKTOKEN_ENCODINGS_BASE`` names a
    directory holding it: on a GPU node without internet the pipeline would fail after the weights load. When the
    variable is unset, the copy the package already finds (litellm's bundled file, sha256-checked) is put in
    ``<cache>/tiktoken_encodings`` and the variable set to it. Returns the directory (None: not a gpt-oss model, or
    the variable was set by the user)."""
    if cfg.get('model_type') != 'gpt_oss' or os.environ.get('TIKTOKEN_ENCODINGS_BASE'):
        return None
    import shutil

    from opencompass_longctx.cache import cache_root
    from opencompass_longctx.tokenizer.counting import TIKTOKEN_FILES, find_tiktoken_file
    from opencompass_longctx.util import sha256_file
    source = find_tiktoken_file('o200k_base')
    if sha256_file(source) != TIKTOKEN_FILES['o200k_base'][1]:
        raise LMDeployConfigError(f'{source} is not the o200k_base vocabulary openai_harmony expects (sha256 '
                                  'mismatch): reinstall litellm, or set TIKTOKEN_ENCODINGS_BASE to a directory '
                                  'holding o200k_base.tiktoken')
    directory = os.path.join(cache_root(), 'tiktoken_encodings')
    target = os.path.join(directory, 'o200k_base.tiktoken')
    if not os.path.isfile(target):
        os.makedirs(directory, exist_ok=True)
        tmp = f'{target}.{os.getpid()}.tmp'
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    os.environ['TIKTOKEN_ENCODINGS_BASE'] = directory
    return directory


def validate_engine_config(engine_config: Dict, backend: str = 'turbomind', max_seq_len: Optional[int] = None,
                           num_gpus: Optional[int] = None) -> None:
    """Unknown keys (which OpenCompass would drop silently), tp vs GPUs, session_len vs max_seq_len."""
    import dataclasses
    cls = engine_config_class(backend)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(engine_config) - fields)
    if backend == 'turbomind' and engine_config.get('rope_scaling_factor'):
        raise LMDeployConfigError(
            'rope_scaling_factor is a TurbomindEngineConfig field that TurboMind 0.18 never reads '
            '(lmdeploy/turbomind/turbomind.py _from_hf): it would be ignored. Give the scaling as '
            "hf_overrides=dict(rope_scaling=dict(rope_type='dynamic', factor=...)) (or rely on the scaling in the "
            "model's config.json), in the row's long_context when only long engines need it")
    if unknown:
        hint = (" (the PyTorch engine has no rope_scaling_factor: use hf_overrides={'rope_scaling': {...}})"
                if 'rope_scaling_factor' in unknown and backend == 'pytorch' else '')
        raise LMDeployConfigError(f'engine_config keys unknown to {cls.__name__}: {unknown}{hint}; '
                                  'OpenCompass would drop them silently')
    tp = int(engine_config.get('tp', 1))
    if num_gpus is not None and tp != num_gpus:
        raise LMDeployConfigError(f'engine_config tp={tp} but the task has {num_gpus} GPU(s): set '
                                  f'run_cfg=dict(num_gpus={tp}) (they must be equal)')
    session_len = engine_config.get('session_len')
    if max_seq_len and session_len and session_len < max_seq_len:
        raise LMDeployConfigError(f'session_len {session_len} < max_seq_len {max_seq_len}: prompts the over-length '
                                  'check lets through would be cut by LMDeploy')
    cls(**engine_config)  # the class's own checks (__post_init__)


def _visible_gpus() -> Optional[int]:
    ids = os.environ.get('CUDA_VISIBLE_DEVICES')
    return len([i for i in ids.split(',') if i.strip()]) if ids else None


class LongCtxTurboMindModel(TurboMindModelwithChatTemplate):
    """``TurboMindModelwithChatTemplate`` that validates and preflights before loading (see module doc).

    Extra arguments: ``backend`` (``'auto'``, the default: chosen from config.json, see
    :func:`~opencompass_longctx.models.backend.choose_backend`),
    ``trust_remote_code`` (passed to LMDeploy's pipeline: True for models whose tokenizer or config is code in
    their directory), ``native_window``, ``long_context``, ``rope`` and ``caveats`` (the row's long-context recipe,
    :mod:`opencompass_longctx.models.recipe`: ``long_context``'s engine keys apply only when ``session_len``
    exceeds ``native_window``), ``preflight`` (default True), ``gpu_memory_gib`` (plan for a GPU of that size
    instead of asking torch), ``continue_final_message`` (default True: a prompt whose last ``BOT`` turn has
    text, such as LongBioBench's answer prefix, is rendered as a continuation of that message, see
    :mod:`opencompass_longctx.models.prefill`; False drops the prefix as OpenCompass does).
    """

    def __init__(self, path: str, engine_config: Optional[Dict] = None, backend: str = 'auto',
                 max_seq_len: Optional[int] = None, tokenizer_only: bool = False, preflight: bool = True,
                 gpu_memory_gib: Optional[float] = None, continue_final_message: bool = True,
                 trust_remote_code: bool = False, native_window: Optional[int] = None,
                 long_context: Optional[Dict] = None, rope: Optional[Dict] = None, caveats=None,
                 max_tier: Optional[str] = None, prefix_caching: Optional[bool] = None, declared_geometry=None,
                 **kwargs):
        # max_tier, declared_geometry: read by the harness (opencompass_longctx.combinations, models.engine_plan)
        cfg = read_model_config(path)
        # the engine is decided in models/engine_plan.py (the planner's decision too); here it is validated,
        # preflighted and started
        engine = served(dict(engine_config=engine_config, backend=backend, max_seq_len=max_seq_len,
                             prefix_caching=prefix_caching, native_window=native_window, long_context=long_context,
                             rope=rope, caveats=caveats), cfg, tokenizer_only)
        self.backend, self.backend_reason = engine.backend, engine.backend_reason
        engine_config = engine.engine_config
        validate_engine_config(engine_config, self.backend, max_seq_len,
                               None if tokenizer_only else _visible_gpus())
        if preflight and not tokenizer_only:
            kv_preflight(
                path, engine_config['session_len'], engine_config.get('max_batch_size', 1),
                engine_config.get('tp', 1), engine_config.get('cache_max_entry_count', 0.8),
                engine_config.get('quant_policy', 0),
                None if gpu_memory_gib is None else gpu_memory_gib * 1024 ** 3, cfg,
                engine_reserve_bytes(self.backend, cfg, engine_config), int(engine_config.get('cp', 1)))
        self.trust_remote_code = bool(trust_remote_code)
        if not tokenizer_only:
            harmony_vocabulary(cfg)
            if engine.ray_address:
                os.environ['RAY_ADDRESS'] = engine.ray_address   # read by ray.init(address=None) in LMDeploy's executor
        self.rope = engine.rope
        super().__init__(path=path, engine_config=engine_config, backend=self.backend, max_seq_len=max_seq_len,
                         tokenizer_only=tokenizer_only, **kwargs)
        if not tokenizer_only:  # LMDeploy's error responses become markers, never empty answers that are scored
            self.pipe = responses.ResponsePipe(self.pipe, self)
        self.continue_final_message = bool(continue_final_message)
        if self.continue_final_message:
            prefill.enable(self)

    def expect_prompts(self, check: Optional[responses.PromptCheck]) -> None:
        """The inferencer's :class:`~opencompass_longctx.models.responses.PromptCheck` for its run (None: its run
        ended), read by the response pipe (:class:`~opencompass_longctx.models.responses.ChecksPrompts`)."""
        pipe = getattr(self, 'pipe', None)   # a tokenizer-only wrapper has none
        if isinstance(pipe, responses.ResponsePipe):
            pipe.check = check or responses.PromptCheck()

    def _build_pipe(self, model_path, backend, engine_config):
        """OpenCompass's ``_build_pipe`` (turbomind_with_tf_above_v4_33.py:208-221) with the keys validated rather
        than filtered, and ``trust_remote_code`` passed on (LMDeploy's default is False, lmdeploy/api.py:20)."""
        import lmdeploy
        backend_config = engine_config_class(backend)(**engine_config)
        return lmdeploy.pipeline(model_path, backend_config=backend_config, trust_remote_code=self.trust_remote_code,
                                 log_level=os.getenv('LMDEPLOY_LOG_LEVEL', 'WARNING'),
                                 max_log_len=int(os.getenv('LMDEPLOY_MAX_LOG_LEN', 10)))   # sliced with: an int
