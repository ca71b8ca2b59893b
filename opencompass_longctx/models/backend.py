"""What LMDeploy 0.18 does with a model, read from its own Python: which engine serves it, whether that engine
reuses prompt blocks, whether it has context parallelism, whether it would start a vision-language pipeline, and how
its PyTorch engine joins Ray. Facts about LMDeploy, no choice of ours: the engine a row gets is decided in
:mod:`opencompass_longctx.models.engine_plan`, which asks these.

Backend (:func:`choose_backend`, :func:`serving_backend`): ``backend='auto'`` is TurboMind when ``architectures[0]``
is in ``lmdeploy/turbomind/supported_models.py`` ``SUPPORTED_ARCHS`` and TurboMind's compiled library loads, else
the PyTorch engine, as LMDeploy falls back (with the import error); a forced ``'turbomind'`` for another
architecture, or a model only TurboMind loads (MXFP4 gpt-oss) where TurboMind does not load, is an error.

Prefix caching (:func:`prefix_caching_supported`): LMDeploy keeps the KV of full 64-token prompt blocks in a trie
when ``enable_prefix_caching`` is on (off by default in both engines). From the model's ``config.json``:

* full attention (MHA/GQA) text models: exact in both engines;
* MLA (DeepSeek V2/V3, ``kv_lora_rank``): exact in the PyTorch engine (its block trie is the same; flash-MLA needs
  the default block size 64); not in TurboMind, whose prefix cache is compiled code this project has not checked;
* sliding-window attention (``sliding_window`` with ``use_sliding_window`` true or absent, as LMDeploy reads it):
  LMDeploy itself refuses it (``pytorch/config.py`` CacheConfig); Gemma and gpt-oss keep a full KV per layer in
  the PyTorch engine (their configs set no window there), so they are exact in that engine;
* linear-attention / state-space layers (Qwen3-Next ``layer_types`` with ``linear_attention``, Mamba-style
  configs): LMDeploy reuses them only from a recurrent-state checkpoint saved at the exact step, which prompts
  that share a prefix and then differ hardly ever have, so it costs state slots for no reuse;
* vision-language models served as such: LMDeploy turns it off for most of them (``VLAsyncEngine``);
* DeepSeek V4 (windowed state caches): not checked.

Context parallelism (:func:`cp_available`): LMDeploy 0.18's ``TurbomindEngineConfig`` has ``cp`` ("context
parallelism size in attention for turbomind backend, tp must be a multiple of cp", lmdeploy/cli/utils.py); the
PyTorch engine has none.
"""
import dataclasses
from typing import Dict, Optional, Tuple

from opencompass_longctx.models.engine import LMDeployConfigError
from opencompass_longctx.models.geometry import text_config
BACKENDS = ('auto', 'turbomind', 'pytorch')
PREFIX_CACHING_KEY = 'enable_prefix_caching'
_FULL_KV_WINDOWED = ('Gemma', 'GptOss')   # PyTorch engine configurations that keep every layer's full KV


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
    quant = (text_config(cfg).get('quantization_config') or cfg.get('quantization_config') or {}).get('quant_method')
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


def planned_backend(cfg: Dict, requested: str = 'auto', gpu_here: bool = True) -> Tuple[str, str]:
    """(backend, why) as :func:`serving_backend` will give it on the GPU machine, asked where the plan is made. Where
    that machine has no GPU (``gpu_here`` False: a login node, a CPU box), TurboMind not loading says nothing about
    the GPU machine: the architecture's choice is kept, and said so; without LMDeploy installed here an 'auto' row is
    taken as TurboMind, and said so too."""
    try:
        backend, why = choose_backend(cfg, requested)
    except LMDeployConfigError as e:
        if requested == 'auto' and 'not installed' in str(e):
            return 'turbomind', 'assumed: LMDeploy is not installed here (backend=auto is resolved at load)'
        raise
    if backend != 'turbomind' or gpu_here:
        return serving_backend(cfg, requested)
    ok, error = turbomind_status()
    return backend, why + ('' if ok else f'; assumed to load on the GPU machine (here it does not, no GPU: {error}; '
                                         'without it LMDeploy runs the PyTorch engine)')


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


def vision_language(cfg: Dict, backend: str) -> bool:
    """Whether LMDeploy would serve the model as a vision-language one (``lmdeploy.archs.check_vl_llm``: Gemma-3,
    Llama-4, ...): its ``get_task`` (archs.py:116-131) then starts ``VLAsyncEngine`` and loads the vision encoder on
    the first GPU beside the engine, unless the engine config sets ``language_model_only``."""
    _lmdeploy()
    from lmdeploy.archs import check_vl_llm
    return bool(check_vl_llm(backend, cfg))


def prefix_caching_supported(cfg: Dict, backend: str) -> Tuple[bool, str]:
    """(on, why) for a model's config.json under ``backend`` ('pytorch' or 'turbomind')."""
    text = text_config(cfg)
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


def cp_available(backend: str) -> Tuple[bool, str]:
    """(whether LMDeploy's engine config for ``backend`` has ``cp``, why not). Read from the installed LMDeploy's
    config classes where it is installed, else from 0.18's (TurboMind has it, the PyTorch engine not)."""
    try:
        import lmdeploy
        cls = lmdeploy.TurbomindEngineConfig if backend == 'turbomind' else lmdeploy.PytorchEngineConfig
        has = 'cp' in {f.name for f in dataclasses.fields(cls)}
        where = f'{cls.__name__} of LMDeploy {lmdeploy.__version__}'
    except (ImportError, AttributeError):
        has, where = backend == 'turbomind', f"LMDeploy 0.18's {'Turbomind' if backend == 'turbomind' else 'Pytorch'}" \
            'EngineConfig'
    if has:
        return True, ''
    return False, f'{where} has no cp (context parallelism is a TurboMind feature in 0.18)'


def engine_config_class(backend: str):
    lmdeploy = _lmdeploy()
    if backend == 'turbomind':
        return lmdeploy.TurbomindEngineConfig
    if backend == 'pytorch':
        return lmdeploy.PytorchEngineConfig
    raise LMDeployConfigError(f"backend must be 'turbomind' or 'pytorch', got {backend!r}")
