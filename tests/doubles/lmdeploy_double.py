"""A test double of LMDeploy's engine only, for CPU runs of the real opencompass pipeline with LMDeploy model configs.

``RecordingTurboMindModel`` is the project's ``LongCtxTurboMindModel`` (engine-key validation, the tp == GPUs check,
the KV-cache preflight, OpenCompass's real TurboMind wrapper with its chat template and stop words), and LMDeploy
0.18's own ``pipeline`` runs: its backend choice (``autoget_backend_config``, with TurboMind reported available as
on a GPU machine that has the full wheel), ``AsyncEngine`` with the real ``lmdeploy.tokenizer.Tokenizer`` on the
model directory, its chat template, the session_len check and its error responses, the detokenization, and
``Pipeline._infer``, which turns failed requests into ``Response(finish_reason='error', ...)``. Only the engine
``AsyncEngine`` would build (TurboMind's or the PyTorch engine, whose forward needs a GPU) is replaced by
:class:`FakeEngine`: it reads the prompt's token ids back with the real tokenizer and answers bAbI-style questions
with the project's rule reader.

Where it matters the fake engine behaves as the real ones (``RecordingTurboMindModel(fake_engine=dict(...))``):

* ``kv_tokens``: the number of tokens its KV cache holds. A request that cannot be admitted even alone
  (prompt + max_new_tokens > kv_tokens) gets TurboMind's status ``OUT_OF_MEMORY`` ("cache out of memory, no
  request can be admitted"; TurboMind fails it when it can no longer grow, the double at once); on the PyTorch
  engine an input longer than ``min(session_len, kv_tokens - block_size)`` gets ``INPUT_LENGTH_ERROR`` and a longer
  answer is cut to fit (pytorch/engine/engine.py:328-341, 470-481). A batch that does not fit as a whole queues,
  as in both engines (the double serves its requests one at a time).
* ``session_len``: the engine's ``session_len``, below the configured one, so that LMDeploy's own check
  (``Input length (N) must be smaller than the model context length (S).``) refuses prompts the project's
  over-length check let through, as when the project's token count and the engine's differ.
* ``error_every``: every n-th request fails with ``INTERNAL_ENGINE_ERROR`` (a generic engine failure).
* ``step_s``: seconds per generated token (0.5 ms): the tokens stream one output each, so that a decode pass
  timed between its first and last token takes time, as on a GPU.
* ``trace``: the model thinks in gpt-oss's harmony format: its answer is ``<|channel|>analysis<|message|>`` + trace
  + ``<|end|><|start|>assistant<|channel|>final<|message|>`` + the rule reader's answer, cut at max_new_tokens.

One JSON line per engine construction (``event: engine``), per model construction (``build``) and per batch the
wrapper sends (``batch``) goes to ``$LONGCTX_FAKE_LMDEPLOY_LOG`` when it is set. Importable in OpenCompass's task
subprocesses when this directory is on PYTHONPATH (``type='lmdeploy_double.RecordingTurboMindModel'``).
"""
import copy
import json
import os

from opencompass_longctx.models.lmdeploy import LongCtxTurboMindModel
_NEXT = {}   # the fake_engine settings of the model being built (one model is built at a time in a process)


def _log(record):
    path = os.environ.get('LONGCTX_FAKE_LMDEPLOY_LOG')
    if path:
        with open(path, 'a', encoding='utf-8') as f:  # one short append per line
            f.write(json.dumps(dict(record, pid=os.getpid())) + '\n')


class FakeEngine:
    """What ``AsyncEngine`` uses of TurboMind's or the PyTorch engine: ``engine_config``, ``create_instance()``,
    ``close()``; each instance's ``async_stream_infer`` yields LMDeploy's ``EngineOutput``."""

    def __init__(self, async_engine, backend, config, kv_tokens=None, session_len=None, error_every=None,
                 trace=None, cache_blocks=None, step_s=0.0005):
        from opencompass_longctx.demo.rule_reader import BabiRuleReader
        self.engine_config = copy.copy(config)
        self.engine_config.enable_metrics = False   # prometheus_client is not installed here; metrics are not tested
        if session_len:
            assert session_len < config.session_len, 'the fake session_len must be below the configured one'
            async_engine.session_len = self.engine_config.session_len = session_len
        self.backend, self.tokenizer, self.requests = backend, async_engine.tokenizer, 0
        self.kv_tokens, self.error_every, self.trace, self.step_s = kv_tokens, error_every, trace, step_s
        self.block = config.block_size if backend == 'pytorch' else config.cache_block_seq_len
        self.reader = BabiRuleReader(tokenizer='tiktoken:gpt2')
        # the prefix cache, as LMDeploy keeps it (opencompass_longctx.prefix_reuse): requests are admitted one after
        # another, each reusing the full blocks cached before it; ``cache_blocks`` (default: the KV cache's blocks)
        from opencompass_longctx.prefix_reuse import BlockTrie
        capacity = cache_blocks if cache_blocks is not None else (kv_tokens // self.block if kv_tokens else None)
        self.trie = BlockTrie(self.block, capacity) if config.enable_prefix_caching else None
        self.prompt_tokens = self.prefilled_tokens = 0
        _log({'event': 'engine', 'backend': backend, 'path': async_engine.model_name,
              'session_len': self.engine_config.session_len, 'max_batch_size': config.max_batch_size, 'tp': config.tp,
              'cache_max_entry_count': config.cache_max_entry_count, 'kv_tokens': kv_tokens,
              'cuda_visible_devices': os.environ.get('CUDA_VISIBLE_DEVICES')})

    def create_instance(self, cuda_stream_id=0):
        return FakeInstance(self)

    def close(self):
        pass

    def admit(self, input_len, max_new_tokens):
        """(the error status of a request the engine refuses or None, the tokens it may generate)."""
        from lmdeploy.messages import ResponseType
        self.requests += 1
        if self.error_every and self.requests % self.error_every == 0:
            return ResponseType.INTERNAL_ENGINE_ERROR, 0
        if self.kv_tokens is None:
            return None, max_new_tokens
        if self.backend == 'pytorch':
            longest = min(self.engine_config.session_len, self.kv_tokens - self.block)
            if input_len > longest:
                return ResponseType.INPUT_LENGTH_ERROR, 0
            return None, min(max_new_tokens, longest - input_len)
        if input_len + max_new_tokens > self.kv_tokens:
            return ResponseType.OUT_OF_MEMORY, 0
        return None, max_new_tokens

    def prefill(self, input_ids):
        """Count the prompt's tokens and those computed (after the cached blocks), and cache its blocks; the tokens
        served from the cache (what LMDeploy reports as the request's ``cached_tokens``)."""
        reused = self.trie.match(input_ids) * self.block if self.trie is not None else 0
        if self.trie is not None:
            self.trie.insert(input_ids)
        self.prompt_tokens += len(input_ids)
        self.prefilled_tokens += len(input_ids) - reused
        return reused

    def forward(self, input_ids, max_new_tokens, stop_ids):
        """The answer's token ids: the rule reader on the prompt as the engine received it, then a stop token."""
        text = self.reader.answer(self.tokenizer.decode(input_ids, skip_special_tokens=False))
        if self.trace is not None:
            text = (f'<|channel|>analysis<|message|>{self.trace}<|end|><|start|>assistant<|channel|>final<|message|>'
                    + text)
        ids = self.tokenizer.encode(text, add_bos=False) + list(stop_ids[:1])
        return ids[:max_new_tokens]


class FakeInstance:

    def __init__(self, engine):
        self.engine = engine

    async def async_stream_infer(self, session_id, input_ids, gen_config=None, stream_output=False, **kwargs):
        """One output per generated token, as the engines stream them (``ignore_eos``: the answer is padded to
        ``max_new_tokens``, as a model that never stops); the request's ``cached_tokens`` in its metrics, as
        TurboMind and the PyTorch engine report them."""
        import asyncio

        from lmdeploy.messages import EngineOutput, RequestMetrics, ResponseType
        status, max_new = self.engine.admit(len(input_ids), gen_config.max_new_tokens)
        if status is not None:
            yield EngineOutput(status, [])
            return
        cached = self.engine.prefill(input_ids)
        stop = [] if gen_config.ignore_eos else (gen_config.stop_token_ids or [])
        answer = self.engine.forward(input_ids, max_new, stop)
        if gen_config.ignore_eos:
            answer = (answer + answer[-1:] * max_new)[:max_new]
        for i, token in enumerate(answer):
            await asyncio.sleep(self.engine.step_s)      # a decode step takes time
            yield EngineOutput(ResponseType.SUCCESS if i + 1 < len(answer) else ResponseType.FINISH, [token],
                               req_metrics=RequestMetrics(cached_tokens=cached))

    async def async_cancel(self, session_id=None):
        pass

    async def async_end(self, session_id):
        pass


def engine_patches():
    """(object, attribute, replacement): LMDeploy as on a GPU machine, with FakeEngine where it would build TurboMind
    or the PyTorch engine, and a log line per batch. Applied for good in a task process (:func:`_install`); a test
    in pytest's own process applies them with ``monkeypatch.setattr`` so that they are undone after it."""
    import lmdeploy.turbomind
    from lmdeploy.pipeline import Pipeline
    from lmdeploy.serve.core.async_engine import AsyncEngine

    def builder(backend):
        def build(self, model_path, backend_config=None, **kwargs):
            return FakeEngine(self, backend, backend_config, **_NEXT)
        return build
    infer = Pipeline.infer

    def logged_infer(self, prompts, gen_config=None, **kwargs):
        _log({'event': 'batch', 'size': len(prompts), 'session_len': self.backend_config.session_len,
              'max_batch_size': self.backend_config.max_batch_size, 'max_new_tokens': gen_config.max_new_tokens})
        return infer(self, prompts, gen_config=gen_config, **kwargs)
    return [(lmdeploy.turbomind, 'is_available', lambda: True),   # the backend choice is LMDeploy's, as on a GPU
            (AsyncEngine, '_build_turbomind', builder('turbomind')),
            (AsyncEngine, '_build_pytorch', builder('pytorch')),
            (Pipeline, 'infer', logged_infer), (AsyncEngine, '_longctx_double', True)]


def _install():
    from lmdeploy.serve.core.async_engine import AsyncEngine
    if not getattr(AsyncEngine, '_longctx_double', False):
        for obj, name, value in engine_patches():
            setattr(obj, name, value)


class RecordingTurboMindModel(LongCtxTurboMindModel):
    """``LongCtxTurboMindModel`` on LMDeploy's real pipeline with :class:`FakeEngine` (``fake_engine``: its
    settings, see the module doc)."""

    def __init__(self, *args, fake_engine=None, **kwargs):
        _log({'event': 'build', 'path': kwargs.get('path', args[0] if args else None)})
        _install()
        _NEXT.clear()
        _NEXT.update(fake_engine or {})
        super().__init__(*args, **kwargs)
