"""Decoding budgets for a model that thinks before it answers (a model row's ``thinks=True``, e.g. gpt-oss).

A thinking model spends tokens on its trace before the answer: with the answer budgets of the benchmarks (BABILong
20, LongBioBench 50 per needle, NoLiMa 192) it is cut off mid-thought and scored on nothing. Per benchmark:

* NoLiMa: the authors' rule for reasoning models, 1536 new tokens for trace plus answer (the paper, spec
  nolima.md §Decoding), trace stripped before scoring (``strip_think``, the default): mode ``nolima-reasoning``,
  faithful to the paper.
* BABILong and LongBioBench: their authors give no rule for reasoning models (babilong.md: greedy, 20 tokens;
  longbio.md: 50 per needle). Named mode ``longctx-reasoning``, NOT the authors' protocol: the benchmark's answer
  budget plus NoLiMa's 1536 for the trace.

:func:`for_thinking_model` gives a dataset config as a thinking model runs it: ``infer_cfg.inferencer.max_out_len``
raised and ``infer_cfg.decoding_mode`` naming the mode (the plan and the run's configs show it).
"""
import copy
from typing import Dict

from .nolima.prompts import MAX_NEW_TOKENS as NOLIMA_MAX_NEW_TOKENS
from .nolima.prompts import REASONING_MAX_NEW_TOKENS

FAITHFUL_MODE = 'nolima-reasoning'     # the NoLiMa paper's budget for reasoning models
OWN_MODE = 'longctx-reasoning'         # this package's budget where the authors have none


def for_thinking_model(d: Dict, benchmark: str) -> Dict:
    """The dataset config ``d`` of ``benchmark`` ('nolima', 'babilong', 'longbio') for a model that thinks."""
    infer = d.get('infer_cfg') or {}
    inferencer = infer.get('inferencer') or {}
    if 'max_out_len' not in inferencer or infer.get('decoding_mode'):
        return d
    out = copy.deepcopy(d)
    if benchmark == 'nolima':
        new, mode = max(REASONING_MAX_NEW_TOKENS, int(inferencer['max_out_len'])), FAITHFUL_MODE
        if int(inferencer['max_out_len']) != NOLIMA_MAX_NEW_TOKENS:   # a non-default budget: keep it, say so
            new, mode = int(inferencer['max_out_len']), OWN_MODE
    else:
        new, mode = int(inferencer['max_out_len']) + REASONING_MAX_NEW_TOKENS, OWN_MODE
    out['infer_cfg']['inferencer']['max_out_len'] = new
    out['infer_cfg']['decoding_mode'] = mode
    return out
