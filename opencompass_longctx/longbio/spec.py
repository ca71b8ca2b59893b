"""LongBioBench's spec (:mod:`opencompass_longctx.spec`): its options, its sizes, its checks and its tables."""
from dataclasses import dataclass, replace
from functools import cached_property
from typing import ClassVar, Optional

from opencompass_longctx.spec import TIER_PATTERN, Bench, BenchmarkSpec, Row
from opencompass_longctx.options import TEXT, Options, flag, integer, option
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.longbio.catalogue import LONGBIO_CATEGORIES, LONGBIO_CELLS, LONGBIO_NEED_TOKENS
from opencompass_longctx.longbio.cells import LongBioConfigError
from opencompass_longctx.longbio.generator import DEFAULT_TOKENIZER, TIER_UNIT, CellSettings, cell_settings
ANSWER_TOKENS_PER_NEEDLE = 50    # the authors' decoding budget: 50 new tokens per needle (its configs: 50 * n)


@dataclass(frozen=True)
class LongBioOptions(Options):
    """One cell's options. ``cell`` (e.g. 'rank_5') or ``task`` + ``n``; ``mode`` 'compat' | 'strict';
    ``tokenizer``: None for the authors' tokenizer offline (``tiktoken:qwen2``, Qwen2.5's vocabulary), another
    'tiktoken:<encoding>' name or a Hugging Face tokenizer directory / id. ``max_prompt_tokens``: the longest a
    prompt may be (system + user message + answer prefix, data tokenizer) whatever the tier; the planner sets it
    for a model whose window is below the tier (:mod:`opencompass_longctx.models.window`). The generation fields are
    checked by :func:`~.generator.cell_settings`, whose :class:`~.generator.CellSettings` is ``settings``;
    ``num_proc``: processes for a build (default: the cores available; the same rows for any value)."""
    error: ClassVar[type] = LongBioConfigError
    owner: ClassVar[str] = 'LongBioDataset'
    tier_unit: ClassVar[int] = TIER_UNIT
    cell: Optional[str] = option(None)
    task: Optional[str] = option(None)
    n: Optional[int] = option(None)
    mode: str = option('compat')
    num_samples: int = option(800, integer(1))
    seed: int = option(2024)
    tokenizer: Optional[str] = option(None, decides=(TEXT,))
    density: float = option(1.0)
    depth: object = option((0.0, 1.0))
    shots: Optional[int] = option(None)
    reserve_tokens: int = option(0, integer(0))
    max_prompt_tokens: Optional[int] = option(None, integer(1, optional=True))
    verify_length: Optional[bool] = option(None, flag(optional=True))
    start_index: int = option(0, integer(0))

    def finish(self) -> 'LongBioOptions':
        o = replace(self, num_proc=self.processes)
        o.settings     # the generation's own checks (raise here, at the parse)
        return o

    @cached_property
    def settings(self) -> CellSettings:
        """The cell's generation settings (:func:`~.generator.cell_settings`: checks them and loads the tokenizer)."""
        return cell_settings(self.tier, cell=self.cell, task=self.task, n=self.n, mode=self.mode, shots=self.shots,
                         seed=self.seed, density=self.density,
                         depth=tuple(self.depth) if isinstance(self.depth, list) else self.depth,
                         reserve_tokens=self.reserve_tokens, tokenizer=self.tokenizer,
                         max_prompt_tokens=self.max_prompt_tokens, verify_length=self.verify_length)


def data_tokenizer(o: LongBioOptions) -> str:
    return DEFAULT_TOKENIZER if o.tokenizer in (None, '', 'default') else o.tokenizer   # as cell_settings reads it


def estimate_rows(o: LongBioOptions) -> int:
    return o.num_samples * (2 if o.cell == 'idk' else 1)


def estimate_prompt_tokens(o: LongBioOptions) -> int:
    tier_tokens = o.tier.tokens(TIER_UNIT)
    if not tier_tokens:          # 0k: the needles and the prompt only (the most over the authors' 800 samples)
        return LONGBIO_NEED_TOKENS.get(o.cell, max(LONGBIO_NEED_TOKENS.values()))
    return min(tier_tokens - o.reserve_tokens, o.max_prompt_tokens or tier_tokens)


def sample_text(o: LongBioOptions) -> Optional[str]:
    """The user message of one small sample, in the dataset's tokenizer."""
    from opencompass_longctx.longbio.generator import Generator
    return Generator(cell_settings(parse_tier('1k'), cell='standard', tokenizer=o.tokenizer)).rows(0)[0]['user']


def fits(o: LongBioOptions) -> Optional[str]:
    """None when the cell's needles and prompt (the most over the authors' 800 samples) and ``reserve_tokens``
    fit the tier; else why not."""
    need = LONGBIO_NEED_TOKENS.get(o.cell)
    budget = o.tier.tokens(TIER_UNIT)
    reserve, cap = o.reserve_tokens, o.max_prompt_tokens
    if need is None or not budget or (need + reserve <= budget and (not cap or need <= cap)):
        return None
    if cap and need > cap:
        return f'LongBioBench {o.cell} needs {need} tokens > max_prompt_tokens {cap} at {o.tier.name}'
    return f'LongBioBench {o.cell} needs {need} tokens + reserve_tokens {reserve} > {budget} at {o.tier.name}'


def _rows():
    cats = tuple(Row(cat, tuple(c['cell'] for c in LONGBIO_CELLS if c['category'] == cat), partial_ok=True)
                 for cat in LONGBIO_CATEGORIES)
    return cats + (Row('mean', of_rows=tuple(LONGBIO_CATEGORIES)),)


# A sample's needles come from its seed (base seed, task family, n, index), not from the tier, and the standard,
# multi-standard, citation and IDK cells share the family 'standard': the samples with one seed are one cluster.
_RELATED = dict(cluster_keys=('seed',),
                relation="clustered by the sample's seed (the same needles and questions at every tier, and in the "
                         'standard, multi-standard, citation and IDK cells of one n); independent otherwise')

BENCHMARK = BenchmarkSpec(
    name='longbio', dataset_type='LongBioDataset', options=LongBioOptions, tokens_column='prompt_tokens',
    prompt_columns=('system', 'user', 'prefix'), count_rows=estimate_rows, longest_prompt=estimate_prompt_tokens,
    tokenizer_of=data_tokenizer, text_of=sample_text, unfit=fits,
    window_option='max_prompt_tokens',    # the generator's budget capped (models/window.py sets it)
    answer_tokens=ANSWER_TOKENS_PER_NEEDLE, units='LongBioBench 1k = 1024 tokens',
    summary=(Bench(name='longbio', pattern=r'^longbio_(?!strict_)(?P<task>[a-z_0-9]+?)_' + TIER_PATTERN + '$',
                   rows=_rows(), base_tiers=('0k', '1k', '2k'), tier_unit=TIER_UNIT, **_RELATED,
                   notes='accuracy (%), compat mode; categories are means over their cells, mean over the '
                         'categories'),
             Bench(name='longbio_strict', pattern=r'^longbio_strict_(?P<task>[a-z_0-9]+?)_' + TIER_PATTERN + '$',
                   rows=_rows(), base_tiers=('0k', '1k', '2k'), tier_unit=TIER_UNIT, **_RELATED,
                   notes='accuracy (%), strict mode (the authors\' bugs fixed)')))
