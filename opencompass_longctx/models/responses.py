"""LMDeploy's error responses as the markers they mean, never an empty answer that is scored.

LMDeploy 0.18's ``Pipeline`` never raises for a failed request: ``Pipeline._infer`` (lmdeploy/pipeline.py:395-416)
turns a ``RequestError`` or any exception into ``Response(text='', finish_reason='error', error_code=...,
error_message=...)``, and OpenCompass's TurboMind wrapper reads only ``.text``
(opencompass/models/turbomind_with_tf_above_v4_33.py:182-184), so each failed request would be scored as a wrong
answer. :class:`ResponsePipe` wraps the wrapper's ``pipe`` (``LongCtxTurboMindModel`` installs it) and gives each
such response the text of the marker it means (:mod:`opencompass_longctx.overlength`); the evaluators leave the
sample out of the score and count it, and the tier table shows the dataset as incomplete with the reason:

* ``context_length_exceeded`` from ``AsyncEngine.preprocess`` (serve/core/async_engine.py:549-552, message
  ``Input length (N) must be smaller than the model context length (S).``): the engine counted N >= session_len
  tokens. ``LongCtxGenInferencer`` sends only prompts whose length plus ``max_out_len`` fits ``max_seq_len <=
  session_len``, so this prompt got there because the project's count (the wrapper's tokenizer and chat template)
  and the engine's differ. The engine's count is what the model would see, so it is judged as the inferencer
  judges its own: :data:`ENGINE_TOO_SMALL` when the model's window (:attr:`PromptCheck.window`, handed over while
  the inferencer runs) holds N + ``max_new_tokens``, i.e. only this band's engine was too small; else :data:`OVER_LENGTH`.
* ``context_length_exceeded`` from the engine itself (the default message: the prompt passed the session_len
  check). The PyTorch engine refuses an input longer than ``min(session_len, KV-cache tokens - one block)``
  (pytorch/engine/engine.py:328-341, engine_instance.py:196-197): its KV cache cannot hold the sequence, so
  :data:`ENGINE_TOO_SMALL`.
* TurboMind's ``OUT_OF_MEMORY`` status ("cache out of memory, no request can be admitted": the KV cache cannot
  admit the sequence even alone). LMDeploy 0.18 turns it into a plain ``internal_error``
  (``AsyncEngine._request_error_from_status``, async_engine.py:609-619); :func:`keep_out_of_memory` gives that
  error the message :data:`KV_FULL` so that it can be told from other internal errors: :data:`ENGINE_TOO_SMALL`.
* an answer the engine ended before ``max_new_tokens`` (``finish_reason`` 'length' with fewer new tokens): its
  sequence ran out of room. The PyTorch engine admits a prompt whose answer would not fit its KV cache and lowers
  ``max_new_tokens`` to fit, with only a warning (pytorch/engine/engine.py:470-481): the cut answer would be
  scored. :data:`ENGINE_TOO_SMALL`.
* anything else with ``finish_reason`` 'error' or 'abort', or an ``error_code``: :data:`ENGINE_ERROR`.

gpt-oss (harmony format): LMDeploy 0.18 detokenizes a ``model_type == 'gpt_oss'`` model with its own
``GptOssTokenizer`` (lmdeploy/tokenizer.py:390-438), which keeps only the text of the ``analysis`` and ``final``
channels and joins them with nothing between (``response += stream.last_content_delta``, tokenizer.py:412-413):
``Response.text`` is the reasoning trace run into the answer, every channel marker gone, and no trace stripper
can find where the answer starts. :class:`ResponsePipe` gives such an answer the text of its token ids decoded
with the special tokens kept (``<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final
<|message|>answer``), as the model wrote it: :func:`opencompass_longctx.reasoning.strip_trace` then keeps the final
channel, and a trace that never reached it is an empty, counted-wrong prediction.

Token counts: the over-length check judged each prompt by the wrapper's count (its tokenizer after the chat
template); the engine counts the rendered text with LMDeploy's tokenizer (``Response.input_token_len``). Where
``LongCtxGenInferencer`` gives the counts it used (:attr:`PromptCheck.counts`), :class:`ResponsePipe` compares
them per prompt and logs each batch where they differ (``longctx: token counts differ``: engine minus check, and
how often); ``counts_differ`` keeps the tally. Equal counts mean one tokenizer layer: the check sees what the model
sees.

Each mapped response is logged (``longctx: engine error response ...``: the error code, LMDeploy's message, the
marker given); the engine errors at ERROR level.

The inferencer and a wrapper meet through :class:`ChecksPrompts`: a wrapper that judges its engine's responses
implements ``expect_prompts(check)``; ``LongCtxGenInferencer`` hands it one :class:`PromptCheck` for the run (and
``None`` when it ends), and fills ``check.counts`` before each batch it sends.
"""
import re
from collections import Counter
from dataclasses import dataclass
from typing import List, Optional, Protocol, runtime_checkable

from opencompass.utils import get_logger

from opencompass_longctx.overlength import ENGINE_ERROR, ENGINE_TOO_SMALL, OVER_LENGTH
CONTEXT_LENGTH_EXCEEDED = 'context_length_exceeded'   # lmdeploy.serve.core.exceptions.ErrorCode values
INTERNAL_ERROR = 'internal_error'
KV_FULL = ('TurboMind: cache out of memory, the KV cache cannot admit this sequence even alone '
           '(ResponseType.OUT_OF_MEMORY)')
_SESSION_CHECK = re.compile(r'Input length \((\d+)\) must be smaller than the model context length \((\d+)\)')
LOGGED = 'longctx: engine error response'


@dataclass
class PromptCheck:
    """What ``LongCtxGenInferencer`` measured for the prompts it sends: ``window``, the model's own window where
    the band's engine is smaller (else None), and ``counts``, each prompt of the batch being sent by its token count
    (the wrapper's tokenizer after the chat template)."""
    window: Optional[int] = None
    counts: Optional[List[int]] = None


@runtime_checkable
class ChecksPrompts(Protocol):
    """A model wrapper that judges its engine's responses by the inferencer's :class:`PromptCheck`."""

    def expect_prompts(self, check: Optional[PromptCheck]) -> None:
        ...


def keep_out_of_memory(async_engine) -> None:
    """Make ``async_engine`` (LMDeploy's ``AsyncEngine``) report TurboMind's OUT_OF_MEMORY status with the message
    :data:`KV_FULL` (still as ``internal_error``) instead of the generic internal-error message. No-op for a pipe
    without one."""
    original = getattr(async_engine, '_request_error_from_status', None)
    if original is None:
        return
    from lmdeploy.messages import ResponseType

    def request_error_from_status(status):
        error = original(status)
        if status == ResponseType.OUT_OF_MEMORY:
            error.message = KV_FULL   # Pipeline._infer copies e.message into Response.error_message
        return error
    async_engine._request_error_from_status = request_error_from_status


def detokenizes_harmony(async_engine) -> bool:
    """Whether LMDeploy's ``AsyncEngine`` detokenizes with its gpt-oss (harmony) tokenizer (module doc)."""
    model = getattr(getattr(async_engine, 'tokenizer', None), 'model', None)
    if model is None:
        return False
    try:
        from lmdeploy.tokenizer import GptOssTokenizer
    except ImportError:        # an LMDeploy without it has no harmony detokenizer
        return False
    return isinstance(model, GptOssTokenizer)


def marker_for(response, max_new_tokens: int, window=None):
    """The marker an LMDeploy ``Response`` means, or None when it is an answer (see the module doc). ``window``:
    the model's window when it is larger than this engine's (a tier band's engine), else None."""
    finish, code = getattr(response, 'finish_reason', None), getattr(response, 'error_code', None)
    if not code and max_new_tokens and cut_short(response, max_new_tokens):
        return ENGINE_TOO_SMALL
    if finish not in ('error', 'abort') and not code:
        return None
    message = getattr(response, 'error_message', None) or ''
    if code == CONTEXT_LENGTH_EXCEEDED:
        counted = _SESSION_CHECK.search(message)
        if counted is None:          # the engine's own check, after the session_len check passed: its KV cache
            return ENGINE_TOO_SMALL
        need = int(counted.group(1)) + (max_new_tokens or 0)
        return ENGINE_TOO_SMALL if window and need <= window else OVER_LENGTH
    if code == INTERNAL_ERROR and message == KV_FULL:
        return ENGINE_TOO_SMALL
    return ENGINE_ERROR


def cut_short(response, max_new_tokens: int) -> bool:
    """Whether the engine ended the answer with fewer than ``max_new_tokens`` new tokens and no stop token."""
    made = getattr(response, 'generate_token_len', None)
    return getattr(response, 'finish_reason', None) == 'length' and made is not None and made < max_new_tokens


class ResponsePipe:
    """LMDeploy's pipeline, its error responses given the marker they mean as their text (module doc).

    ``model``: the OpenCompass wrapper that owns the pipe; its ``max_seq_len`` and ``check.window`` (while
    ``LongCtxGenInferencer`` runs) decide between over-length and engine-too-small.
    ``check``: the inferencer's :class:`PromptCheck` (an empty one outside its run).
    ``counts``: the markers given so far, by marker.
    """

    def __init__(self, pipe, model):
        self.pipe, self.model, self.counts, self.counts_differ = pipe, model, Counter(), Counter()
        self.check = PromptCheck()
        keep_out_of_memory(getattr(pipe, 'async_engine', None))
        self.harmony = detokenizes_harmony(getattr(pipe, 'async_engine', None))

    def __getattr__(self, name):
        return getattr(self.pipe, name)

    def _window(self):
        window, limit = self.check.window, getattr(self.model, 'max_seq_len', None)
        return window if window and (not limit or window > limit) else None

    def _compare_counts(self, outputs):
        """The engine's prompt counts against the ones the over-length check used (module doc)."""
        checked = self.check.counts
        if not checked or len(checked) != len(outputs):
            return
        diffs = Counter(out.input_token_len - n for out, n in zip(outputs, checked)
                        if out.input_token_len and not out.error_code)
        diffs.pop(0, None)
        if diffs:
            self.counts_differ.update(diffs)
            get_logger().warning(
                'longctx: token counts differ between the engine and the over-length check for '
                f'{sum(diffs.values())} of {len(outputs)} prompts (engine minus check: '
                + ', '.join(f'{d:+d} x{k}' for d, k in sorted(diffs.items())) + '); the check uses the wrapper\'s '
                'tokenizer after the chat template, the engine LMDeploy\'s on the rendered text')

    def __call__(self, prompts, gen_config=None, **kwargs):
        outputs = self.pipe(prompts, gen_config=gen_config, **kwargs)
        self._compare_counts(outputs if isinstance(outputs, list) else [outputs])
        for out in outputs if isinstance(outputs, list) else [outputs]:
            max_new = getattr(gen_config, 'max_new_tokens', 0)
            marker = marker_for(out, max_new, self._window())
            if marker is None:
                if self.harmony and out.token_ids:   # the channels as the model wrote them (module doc)
                    out.text = self.model.tokenizer.decode(out.token_ids, skip_special_tokens=False)
                continue
            self._check_survives(marker, getattr(gen_config, 'stop_words', None) or [])
            name = {OVER_LENGTH: 'over-length', ENGINE_TOO_SMALL: 'engine too small'}.get(marker, 'engine error')
            log = get_logger().error if marker == ENGINE_ERROR else get_logger().warning
            why = out.error_message or (f'the engine ended the answer after {out.generate_token_len} of {max_new} new '
                                        'tokens' if cut_short(out, max_new) else '(no message)')
            log(f'{LOGGED} (finish_reason={out.finish_reason!r}, error_code={out.error_code!r}, input_token_len='
                f'{out.input_token_len}): {why} -> recorded as {name}, not scored')
            self.counts[marker] += 1
            out.text = marker
        return outputs

    @staticmethod
    def _check_survives(marker, stop_words):
        """OpenCompass's wrapper cuts each text at every stop word: a marker must not contain one."""
        cut = [s for s in stop_words if s and s in marker]
        if cut:
            raise RuntimeError(f'stop words {cut} occur in the marker {marker!r}: OpenCompass would cut it and the '
                               'sample would be scored; remove them from the model\'s stop_words')

