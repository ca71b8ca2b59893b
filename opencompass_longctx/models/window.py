"""Whether a dataset's prompts fit a model's window, decided before anything is built or costed.

The plan costs every (model, dataset) pair it keeps, so a pair whose prompts cannot be sent must not be kept: a
prompt plus its answer longer than the model's window (its ``max_seq_len``, the most the model is ever given) is
held back by the over-length check at run time, its engine started for nothing. For an LMDeploy model (the ones the
plan costs) and each dataset, :func:`fit` compares

    longest prompt (its benchmark's tier arithmetic, in the data tokenizer) + CHAT_TEMPLATE_TOKENS + max_out_len

with the window. When it does not fit, a benchmark that can build shorter prompts (its spec's ``fit_window``:
LongBioBench fills a token budget) gets them built to the window, as LongBioBench's authors size each prompt to the
model they evaluate; any other pair is left out, and the plan lists it as N/A with this reason.

Model tokens are taken as data-tokenizer tokens here (no tokenizer is loaded, so every process that expands a run,
the partitioner, the evaluation partitioner and the summarizer, decides the same); where the model's tokenizer is at
hand the planner checks again with the measured ratio and reports a dataset that comes out over the window as a
problem of the run (``plan.grouping._over_window``), and the run's over-length check, which counts each prompt in the
model's own tokenizer, still holds a prompt back rather than cut it. For the Qwen rows and LongBioBench (Qwen2.5's
vocabulary) the two are the same tokenizer.
"""
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

# the model's chat template around a prompt the benchmark counted whole: role markers and a default system text
# (Llama 3.1's date lines, about 40 tokens; gpt-oss's harmony header, about 80)
CHAT_TEMPLATE_TOKENS = 128


@dataclass(frozen=True)
class WindowFit:
    """One dataset's longest prompt and answer against one model's window (tokens)."""
    longest_prompt: int
    max_out_len: int
    window: int
    template: int = CHAT_TEMPLATE_TOKENS

    @property
    def need(self) -> int:
        return self.longest_prompt + self.template + self.max_out_len

    @property
    def fits(self) -> bool:
        return self.need <= self.window

    @property
    def room(self) -> int:
        """The longest prompt this window takes with the answer and the chat template."""
        return self.window - self.template - self.max_out_len

    def reason(self, model: str) -> str:
        return (f'N/A: its longest prompt ({self.longest_prompt:,} tokens) + {self.template} for the chat template + '
                f'{self.max_out_len} new tokens exceed the window of {model} ({self.window:,})')


def window_of(model: Dict) -> Optional[int]:
    """The window of an LMDeploy model config (its ``max_seq_len``); None for a model the plan does not cost."""
    if 'engine_config' not in model or not model.get('max_seq_len'):
        return None
    return int(model['max_seq_len'])


def window_fit(model: Dict, d: Dict, spec) -> Optional[WindowFit]:
    """The dataset ``d`` (as ``model`` runs it) against the model's window; None when there is no window to check."""
    window = window_of(model)
    if window is None or spec is None or 'tier' not in d:
        return None
    try:
        tier = spec.tier(d)
    except Exception:  # noqa: BLE001 - a bad tier is the run checks' problem
        return None
    longest = spec.estimate_prompt_tokens(d, tier.tokens(spec.tier_unit))
    out = int(((d.get('infer_cfg') or {}).get('inferencer') or {}).get('max_out_len') or model.get('max_out_len') or 0)
    return WindowFit(int(longest), out, window)


def fit(model: Dict, d: Dict, spec, model_abbr: str) -> Tuple[Optional[Dict], str, str]:
    """(the dataset config as it fits the model, '' or why it is left out, '' or how it was fitted)."""
    got = window_fit(model, d, spec)
    if got is None or got.fits:
        return d, '', ''
    if spec.fit_window is None or got.room < 1:
        return None, got.reason(model_abbr), ''
    fitted = spec.fit_window(d, got.room)
    why = spec.fits(fitted)
    if why:
        return None, f'{got.reason(model_abbr)}, and built to fit it: {why}', ''
    return fitted, '', (f'prompts built to at most {got.room:,} tokens (window {got.window:,} of {model_abbr} - '
                        f'{got.template} chat template - {got.max_out_len} new tokens; the tier alone is '
                        f'{got.longest_prompt:,})')
