"""LMDeploy serving for long contexts: backend choice, engine-key validation, KV-cache preflight, and a wrapper of
OpenCompass's TurboMind model that runs them before any weight is loaded.

OpenCompass's ``TurboMindModelwithChatTemplate`` silently drops engine keys LMDeploy does not know (a typo, or
``rope_scaling_factor`` on the PyTorch engine) and lets a too-large ``session_len`` end in an out-of-memory
crash after minutes of loading. ``LongCtxTurboMindModel`` checks, in order: LMDeploy is installed; the
backend is the one LMDeploy 0.18 will really run (``backend='auto'``: TurboMind when ``architectures[0]`` is in
``lmdeploy/turbomind/supported_models.py`` ``SUPPORTED_ARCHS`` and TurboMind's compiled library loads, else the
PyTorch engine, as LMDeploy falls back, with the import error in the log; a forced ``'turbomind'`` for another
architecture, or a model only TurboMind loads (MXFP4 gpt-oss) where TurboMind does not load, is an error); every engine key is a field of that backend's
config class and one it reads (TurboMind 0.18 never reads ``rope_scaling_factor``); ``tp`` equals the GPUs the
runner gave the task (``run_cfg.num_gpus``); ``session_len >= max_seq_len``; the model directory has a
``config.json``; and the KV cache for ``session_len x max_batch_size`` fits in GPU memory, saying which ``tp`` or
KV quantisation would fit when it does not. Only then is the model loaded.

The arithmetic (no LMDeploy import: KV bytes per token, weights, engine buffers, the KV need and budget, the
preflight) is :mod:`opencompass_longctx.models.engine`; this module re-exports its names.

``trust_remote_code`` (a model-row field) reaches LMDeploy's ``pipeline`` (its tokenizer, config and chat
template loads; OpenCompass's wrapper never passes it, ``turbomind_with_tf_above_v4_33.py:221``).
"""
import os
from typing import Dict, Optional, Tuple

from opencompass.models import TurboMindModelwithChatTemplate

from opencompass_longctx.models import geometry, prefill, recipe, responses
from opencompass_longctx.models.engine import (KV_BYTES, LMDeployConfigError, PreflightError, engine_reserve_bytes,  # noqa: F401
                                               kv_bytes_per_token, kv_geometry, kv_plan, kv_preflight, read_model_config,
                                               weight_bytes)
from opencompass_longctx.models.prefix_caching import engine_config as prefix_caching_config
BACKENDS = ('auto', 'turbomind', 'pytorch')


def _lmdeploy():
    try:
        import lmdeploy
    except ImportError as e:
        raise LMDeployConfigError(
            'LMDeploy is not installed on this machine: install it where inference runs (a GPU machine) with '
            "pip install -e '.[lmdeploy]' (or pip install 'opencompass-longctx[lmdeploy]')") from e
    return lmdeploy


def architecture(cfg: Dict) -> Optional[str]:
    """``architectures[0]`` of a config.json (else the class its ``auto_map`` names), as LMDeploy reads it."""
    if cfg.get('architectures'):
        return cfg['architectures'][0]
    auto = (cfg.get('auto_map') or {}).get('AutoModelForCausalLM')
    return auto.split('.')[-1] if auto else None


def choose_backend(cfg: Dict, requested: str = 'auto') -> Tuple[str, str]:
    """(backend, why) for a config.json by its architecture, as LMDeploy picks it where TurboMind's library loads:
    ``'auto'`` picks TurboMind when the architecture is in LMDeploy's own ``SUPPORTED_ARCHS``
    (lmdeploy/turbomind/supported_models.py), else the PyTorch engine (lmdeploy/archs.py:37-38); a forced
    ``'turbomind'`` for another architecture is an error. :func:`serving_backend` adds whether TurboMind loads."""
    if requested not in BACKENDS:
        raise LMDeployConfigError(f'backend must be one of {BACKENDS}, got {requested!r}')
    arch = architecture(cfg)
    if requested == 'pytorch':
        return 'pytorch', f'{arch}: the PyTorch engine, as the model config asks (backend=\'pytorch\')'
    lmdeploy = _lmdeploy()
    from lmdeploy.turbomind.supported_models import SUPPORTED_ARCHS
    where = f'TurboMind\'s SUPPORTED_ARCHS (LMDeploy {lmdeploy.__version__})'
    if arch in SUPPORTED_ARCHS:
        return 'turbomind', f'{arch} is in {where}'
    if requested == 'turbomind':
        raise LMDeployConfigError(f"backend='turbomind' but {arch} is not in {where}: LMDeploy would serve it with "
                                  "the PyTorch engine; set backend='pytorch' (or 'auto') in the model row")
    return 'pytorch', f'{arch} is not in {where}: the PyTorch engine'


def turbomind_status() -> Tuple[bool, str]:
    """(available, why not): whether TurboMind's compiled library loads, asked as LMDeploy asks it
    (``lmdeploy.turbomind.is_available()``, archs.py:34-40; the import error it kept, ``_import_error``)."""
    _lmdeploy()
    from lmdeploy import turbomind
    if turbomind.is_available():
        return True, ''
    err = getattr(turbomind, '_import_error', None)
    return False, (f'{type(err).__name__}: {err}' if err else 'lmdeploy.turbomind._turbomind did not import')


def needs_turbomind(cfg: Dict) -> Optional[str]:
    """Why a model loads only on TurboMind (None: the PyTorch engine can load it too): MXFP4 weights (gpt-oss), which
    only TurboMind's converter reads (lmdeploy/turbomind/converter.py; the PyTorch engine has no mxfp4 format)."""
    quant = (geometry.text_config(cfg).get('quantization_config') or cfg.get('quantization_config') or {}).get('quant_method')
    return f'its weights are {quant} (quantization_config), which only TurboMind loads' if quant == 'mxfp4' else None


def serving_backend(cfg: Dict, requested: str = 'auto') -> Tuple[str, str]:
    """(backend, why) LMDeploy will really run here: :func:`choose_backend`, and, where it gives TurboMind but
    TurboMind's library does not load, the PyTorch engine LMDeploy falls back to (with the import error), or an error
    when the row forces TurboMind or the model loads only on TurboMind (:func:`needs_turbomind`)."""
    backend, why = choose_backend(cfg, requested)
    if backend != 'turbomind':
        return backend, why
    ok, error = turbomind_status()
    if ok:
        return backend, why
    fix = ("install the GPU stack on the GPU machine (make gpu-install, or pip install -e '.[lmdeploy]' in a fresh "
           'environment: one CUDA 12 stack, an NVIDIA driver of the R570 series or newer)')
    only = needs_turbomind(cfg)
    if only or requested == 'turbomind':
        reason = f'{architecture(cfg)}: {only}' if only else "the model row sets backend='turbomind'"
        raise LMDeployConfigError(f'{reason}, but TurboMind is not available here ({error}): {fix}')
    return 'pytorch', (f'{why}, but TurboMind is not available here ({error}): LMDeploy falls back to the PyTorch '
                       f'engine, sized as such; for TurboMind {fix}')


def ray_isolation(backend: str, tp: int, env) -> Tuple[Optional[str], str]:
    """(RAY_ADDRESS to set or None, what the plan says) for one engine. The PyTorch engine at tp > 1 runs its
    workers under Ray and calls ``ray.init(address=None)`` (lmdeploy/pytorch/ray.py init_ray_cluster), which joins a
    cluster already running on the node (a ``ray start``, or another task's): the tasks of one node would then place
    their GPU groups in one cluster and compete. Each task gets its own instance (``RAY_ADDRESS=local``: Ray starts a
    new local one) unless the user points at a cluster by setting ``RAY_ADDRESS`` (``auto`` or an address)."""
    if backend != 'pytorch' or int(tp) <= 1:
        return None, ''
    given = env.get('RAY_ADDRESS')
    if given and given != 'local':
        return None, f'Ray: the cluster RAY_ADDRESS={given} names (set by the user; tasks share it)'
    return 'local', ('Ray: a private instance per task (RAY_ADDRESS=local; set RAY_ADDRESS to a cluster\'s address '
                     'to use one)')


def text_only(cfg: Dict, backend: str, engine_config: Dict) -> Dict:
    """``engine_config`` with ``language_model_only=True`` when LMDeploy would serve the model as a vision-language
    one (``lmdeploy.archs.check_vl_llm``: Gemma-3, Llama-4, ...): the benchmarks are text only, and LMDeploy's
    ``get_task`` (archs.py:116-131) would otherwise start ``VLAsyncEngine`` and load the vision encoder on the first
    GPU beside the engine, memory the KV-cache preflight does not count. A row that sets the key keeps its value."""
    if 'language_model_only' in engine_config or not cfg.get('architectures'):
        return dict(engine_config)
    _lmdeploy()
    from lmdeploy.archs import check_vl_llm
    return dict(engine_config, language_model_only=True) if check_vl_llm(backend, cfg) else dict(engine_config)


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


def engine_config_class(backend: str):
    lmdeploy = _lmdeploy()
    if backend == 'turbomind':
        return lmdeploy.TurbomindEngineConfig
    if backend == 'pytorch':
        return lmdeploy.PytorchEngineConfig
    raise LMDeployConfigError(f"backend must be 'turbomind' or 'pytorch', got {backend!r}")


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

    Extra arguments: ``backend`` (``'auto'``, the default: chosen from config.json, see :func:`choose_backend`),
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
        # max_tier, declared_geometry: read by the harness (opencompass_longctx.combinations, models.sizing)
        engine_config = dict(engine_config or {})
        if max_seq_len and 'session_len' not in engine_config:
            engine_config['session_len'] = max_seq_len
        recipe_cfg = dict(native_window=native_window, long_context=long_context, rope=rope, caveats=caveats)
        engine_config = recipe.band_engine_config(recipe_cfg, engine_config)
        cfg = read_model_config(path)
        pick = choose_backend if tokenizer_only else serving_backend      # the engine that will really be built
        self.backend, self.backend_reason = pick(cfg, backend)
        engine_config = text_only(cfg, self.backend, engine_config)
        # on where LMDeploy reuses prompt blocks exactly (models/prefix_caching.py); prefix_caching=False: off
        engine_config = prefix_caching_config(cfg, self.backend, engine_config, prefix_caching)
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
            ray_address, _ = ray_isolation(self.backend, engine_config.get('tp', 1), os.environ)
            if ray_address:
                os.environ['RAY_ADDRESS'] = ray_address     # read by ray.init(address=None) in LMDeploy's executor
        self.rope = recipe.effective_rope(recipe_cfg, engine_config.get('session_len'))
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
