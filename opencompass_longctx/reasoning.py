"""Decoding budgets for a model that thinks before it answers (a model row's ``thinks=True``, e.g. gpt-oss).

A thinking model spends tokens on its trace before the answer: with a benchmark's answer budget (BABILong 20,
LongBioBench 50 per needle, NoLiMa 192) it is cut off mid-thought and scored on nothing. Each benchmark's spec
says how its budget grows (``BenchmarkSpec.thinking_budget``), so that the rule for a benchmark lives in its folder:

* where the authors give a rule for reasoning models (NoLiMa: 1536 new tokens for trace plus answer, the trace
  stripped before scoring), the spec returns it under its own faithful mode name (``nolima-reasoning``);
* elsewhere (BABILong, LongBioBench: their authors give no such rule) the default, :func:`own_budget`: the
  benchmark's answer budget plus :data:`THINK_TOKENS` for the trace, in the named mode ``longctx-reasoning``,
  NOT the authors' protocol.

:func:`for_thinking_model` gives a dataset config as a thinking model runs it: ``infer_cfg.inferencer.max_out_len``
raised and ``infer_cfg.decoding_mode`` naming the mode (the plan and the run's configs show it).
"""
import copy
from typing import Dict, Tuple

# Where a thinking model's answer starts after its trace: Qwen3/DeepSeek-style ``</think>``; gpt-oss's harmony
# format, with its special tokens kept or (LMDeploy's default, skip_special_tokens) dropped.
_ANSWER_STARTS = ('</think>', '<|channel|>final<|message|>', 'assistantfinal')
_TRACE_STARTS = ('<think>', '<|channel|>analysis', 'analysis')
_ANSWER_ENDS = ('<|return|>', '<|end|>')

# The trace allowance where a benchmark's authors have no rule: the NoLiMa paper's budget for reasoning models.
THINK_TOKENS = 1536
OWN_MODE = 'longctx-reasoning'         # this package's budget where the authors have none


def own_budget(max_out_len: int) -> Tuple[int, str]:
    """The package's budget for a thinking model: the benchmark's answer budget plus the trace allowance."""
    return int(max_out_len) + THINK_TOKENS, OWN_MODE


def for_thinking_model(d: Dict, spec) -> Dict:
    """The dataset config ``d`` as a model that thinks runs it; ``spec``: its benchmark's spec."""
    infer = d.get('infer_cfg') or {}
    inferencer = infer.get('inferencer') or {}
    if 'max_out_len' not in inferencer or infer.get('decoding_mode'):
        return d
    out = copy.deepcopy(d)
    new, mode = spec.thinking_budget(int(inferencer['max_out_len']))
    out['infer_cfg']['inferencer']['max_out_len'] = new
    out['infer_cfg']['decoding_mode'] = mode
    return out


def strip_trace(text):
    """A thinking model's prediction without its reasoning trace (the model config's ``pred_postprocessor`` for a
    ``thinks=True`` row, applied by OpenCompass before any evaluator): the text after the last answer start
    (``</think>``, gpt-oss's final channel); a trace that never reached its answer (the budget ran out) gives ''
    (an empty prediction, counted as wrong by every evaluator). Text without a trace, the markers of
    :mod:`opencompass_longctx.overlength` and non-strings are returned as they are."""
    if not isinstance(text, str):
        return text
    for start in _ANSWER_STARTS:
        if start in text:
            answer = text.rsplit(start, 1)[1]
            for end in _ANSWER_ENDS:
                answer = answer.split(end, 1)[0]
            return answer.strip()
    return '' if text.lstrip().startswith(_TRACE_STARTS) else text
