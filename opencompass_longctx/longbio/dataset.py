"""LongBioBench as an OpenCompass dataset: one cell at one tier per dataset config, generated on the fly
and cached on disk (OpenCompass rebuilds every dataset in its main, inference and evaluation processes)."""
from dataclasses import dataclass, field
from typing import ClassVar, Optional

from opencompass_longctx.base import LongCtxDataset
from opencompass_longctx.cache import DatasetCache, make_key
from opencompass_longctx.options import Options, flag, integer, option
from opencompass_longctx.parallel import check_num_proc
from opencompass_longctx.tiers import dataset_tier
from opencompass_longctx.longbio.spec import BENCHMARK
from opencompass_longctx.longbio.generator import Spec, generate, make_spec
from opencompass_longctx.longbio.cells import LongBioConfigError
@dataclass(frozen=True)
class LongBioOptions(Options):
    """One cell's options. ``cell`` (e.g. 'rank_5') or ``task`` + ``n``; ``mode`` 'compat' | 'strict';
    ``tokenizer``: None for the authors' tokenizer offline (``tiktoken:qwen2``, Qwen2.5's vocabulary), another
    'tiktoken:<encoding>' name or a Hugging Face tokenizer directory / id. ``max_prompt_tokens``: the longest a
    prompt may be (system + user message + answer prefix, data tokenizer) whatever the tier; the planner sets it
    for a model whose window is below the tier (:mod:`opencompass_longctx.models.window`). The generation fields are
    checked by
    :func:`~.generator.make_spec` (the tier parsed there, once), whose :class:`~.generator.Spec` is ``spec``;
    ``num_proc``: processes for a build (default: the cores available; the same rows for any value)."""
    error: ClassVar[type] = LongBioConfigError
    owner: ClassVar[str] = 'LongBioDataset'
    tier: object = option()
    cell: Optional[str] = option(None)
    task: Optional[str] = option(None)
    n: Optional[int] = option(None)
    mode: str = option('compat')
    num_samples: int = option(800, integer(1))
    seed: int = option(2024)
    tokenizer: Optional[str] = option(None)
    density: float = option(1.0)
    depth: object = option((0.0, 1.0))
    shots: Optional[int] = option(None)
    reserve_tokens: int = option(0)
    max_prompt_tokens: Optional[int] = option(None, integer(1, optional=True))
    verify_length: Optional[bool] = option(None, flag(optional=True))
    start_index: int = option(0, integer(0))
    num_proc: Optional[int] = option(None, lambda name, v, error: check_num_proc(v))
    spec: Optional[Spec] = field(init=False, default=None)

    def finish(self) -> 'LongBioOptions':
        spec = make_spec(self.tier, cell=self.cell, task=self.task, n=self.n, mode=self.mode, shots=self.shots,
                         seed=self.seed, density=self.density,
                         depth=tuple(self.depth) if isinstance(self.depth, list) else self.depth,
                         reserve_tokens=self.reserve_tokens, tokenizer=self.tokenizer,
                         max_prompt_tokens=self.max_prompt_tokens,
                         verify_length=self.verify_length)
        if isinstance(self.tier, str) and self.tier != spec.tier:
            dataset_tier(self.tier, BENCHMARK.tier_unit)   # raises: the tier as written is not its length's name
        object.__setattr__(self, 'spec', spec)
        return self


def load_longbio(tier, **options):
    """Build (or reload from the cache) the samples of one cell as a ``datasets.Dataset`` (``options``: the
    fields of :class:`LongBioOptions`). One row per sample (two for idk: the answerable and the unanswerable
    question on the same context)."""
    return load_cell(LongBioOptions.parse(dict(options, tier=tier)))


def load_cell(o: LongBioOptions):
    """The samples of checked options, through the cache."""
    params = dict(o.spec.public(), num_samples=o.num_samples, start_index=o.start_index)
    cache = DatasetCache()
    key = make_key('longbio', params, o.spec.tokenizer.fingerprint, (), cache.root)
    num_proc = check_num_proc(o.num_proc)
    return cache.get_or_build('longbio', key, lambda: generate(o.spec, o.num_samples, o.start_index, num_proc),
                              params=params)


class LongBioDataset(LongCtxDataset):
    """``type=LongBioDataset`` in configs; every extra config key is a field of :class:`LongBioOptions`."""
    benchmark = BENCHMARK
    options = LongBioOptions
    build = staticmethod(load_cell)
