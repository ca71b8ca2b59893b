"""A dataset's load for one model: its rows and prompt tokens (from its benchmark's spec: exact from the build
record, else the tier arithmetic) and the longest prompt plus its answer in the model's tokens, which sizes the
engine. Nothing here knows a benchmark: the spec says what its data tokenizer is and where its text is."""
import math
from dataclasses import dataclass
from typing import Dict, Optional

from opencompass_longctx.spec import BenchmarkSpec, all_specs, spec_of
from opencompass_longctx.util import type_name
from opencompass_longctx.plan.bands import PlanError
SIZE_HEADROOM = 1.10       # a tier in the model's tokens: data-tokenizer tokens x 1.10 (tokenizers differ)
TEMPLATE_TOKENS = 512      # chat template, system message and question around the context


# A tier counts tokens of the benchmark's data tokenizer; an engine is sized in the model's tokens. The ratio of
# the two is measured on the dataset's own text where it is at hand, else on this probe (varied English prose,
# names, digits, punctuation: what the benchmarks' contexts are made of), with 5% on top; without the model's
# tokenizer the headroom is SIZE_HEADROOM.
PROBE_TEXT = (
    'Margaret Ellison was born on 14 March 1962 in Wellington, studied marine biology at the University of '
    'Otago, and later worked in Lisbon and Reykjavik. Her hobbies were birdwatching, chess and restoring old '
    'clocks. In the autumn of that year the river rose higher than anyone in the village could remember; the '
    'miller, a quiet man of sixty-three, moved his sacks to the loft and waited. "We shall see," he said, '
    'looking at the grey water, "whether the bridge holds until Thursday." Daniel went to the kitchen. Sandra '
    'picked up the football there. The office is north of the hallway; the garden is west of the bedroom. '
    'Question: Where is the football? Answer: the kitchen. Between 1871 and 1903, 4,286 letters were written '
    'to the harbour master, of which 37% mention the lighthouse, 12 mention the storm of 1889, and one, dated '
    '2 February, describes a stranger who "arrived without a coat, spoke French and German, and left at dawn". '
    'I will give you context with the facts about positions of different persons hidden in some random text '
    'and a question. You need to answer the question based only on the information from the facts.')


_SAMPLES: Dict = {}


def sample_text(spec: BenchmarkSpec, d: Dict) -> Optional[str]:
    """Some of the text a dataset's prompts are made of, read cheaply by its spec without building the dataset;
    None when it is not at hand. Read once per process for all models."""
    key = spec.text_key(d)
    if key not in _SAMPLES:
        try:
            _SAMPLES[key] = spec.sample_text(d)
        except Exception:  # noqa: BLE001 - the probe text stands in
            _SAMPLES[key] = None
    return _SAMPLES[key]


_RATIOS: Dict = {}


def token_ratio(model_tok, spec: BenchmarkSpec, d: Dict) -> Optional[float]:
    """Model tokens per data-tokenizer token, measured on the dataset's own text where it is at hand (else on
    the probe text); None when the model's tokenizer is unknown."""
    if model_tok is None:
        return None
    data_name = spec.data_tokenizer(d)
    key = (model_tok.fingerprint, data_name) + spec.text_key(d)
    if key not in _RATIOS:
        try:
            from opencompass_longctx.tokenizer.counting import get_tokenizer
            text = sample_text(spec, d) or PROBE_TEXT
            _RATIOS[key] = model_tok.count(text) / max(get_tokenizer(data_name).count(text), 1)
        except Exception:  # noqa: BLE001
            _RATIOS[key] = None
    return _RATIOS[key]


@dataclass
class DatasetLoad:
    abbr: str
    bench: str
    tier: str
    tier_tokens: int                 # the tier in the benchmark's own tokens
    rows: int
    prompt_tokens: int               # all rows, in the data tokenizer
    exact: bool                      # True: from the dataset's build record; False: tier arithmetic
    max_out_len: int
    row_tokens_estimate: int         # one prompt by the tier arithmetic
    ratio: Optional[float] = None    # model tokens per data-tokenizer token (None: not measured)

    min_headroom: float = SIZE_HEADROOM
    reuse: float = 0.0               # share of prompt tokens a prefix cache serves (build record, else the spec)

    @property
    def headroom(self) -> float:
        return self.min_headroom if self.ratio is None else max(self.min_headroom, self.ratio * 1.05)

    @property
    def tokens_per_row(self) -> float:
        return self.prompt_tokens / self.rows if self.rows else 0.0

    @property
    def need_tokens(self) -> int:
        """The longest prompt plus its answer, in the model's tokens (with headroom for tokenizer differences)."""
        longest = max(self.tokens_per_row, self.row_tokens_estimate)
        return int(math.ceil(longest * self.headroom)) + TEMPLATE_TOKENS + self.max_out_len


def dataset_load(d: Dict, model_max_out_len: Optional[int] = None, model_tok=None) -> DatasetLoad:
    from opencompass.utils import dataset_abbr_from_cfg
    spec = spec_of(d)
    abbr = dataset_abbr_from_cfg(d)
    infer = (d.get('infer_cfg') or {}).get('inferencer') or {}
    max_out = int(infer.get('max_out_len') or model_max_out_len or 0)
    if spec is None:
        raise PlanError(f'{abbr}: not a dataset of this package ({type_name(d)}); LongCtxPartitioner plans the '
                        f"datasets of {', '.join(f.dataset_type for f in all_specs())} (use NaivePartitioner for "
                        'others)')
    if 'tier' not in d:
        raise PlanError(f'{abbr}: the dataset config has no tier')
    size = spec.size(d)
    return DatasetLoad(abbr, spec.name, size.tier.name, size.tier_tokens, size.rows, size.prompt_tokens, size.exact,
                       max_out, size.row_tokens, token_ratio(model_tok, spec, d),
                       reuse=spec.prefix_reuse if size.reuse is None else size.reuse)
