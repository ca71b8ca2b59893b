"""LongBioBench as an OpenCompass dataset: one cell at one tier per dataset config, generated on the fly
and cached on disk (OpenCompass rebuilds every dataset in its main, inference and evaluation processes)."""
from typing import Optional

from opencompass.datasets.base import BaseDataset

from ..cache import DatasetCache, make_key, record_build
from ..parallel import check_num_proc
from .face import BENCHMARK
from .generator import generate, make_spec
from .tasks import LongBioConfigError


def load_longbio(tier, cell: Optional[str] = None, task: Optional[str] = None, n: Optional[int] = None,
                 mode: str = 'compat', num_samples: int = 800, seed: int = 2024, tokenizer: Optional[str] = None,
                 density: float = 1.0, depth=(0.0, 1.0), shots: Optional[int] = None, reserve_tokens: int = 0,
                 verify_length: Optional[bool] = None, start_index: int = 0, num_proc: Optional[int] = None):
    """Build (or reload from the cache) the samples of one cell as a ``datasets.Dataset``.

    ``cell`` (e.g. 'rank_5') or ``task`` + ``n``; ``mode`` 'compat' | 'strict'; ``tokenizer``: None for the
    authors' tokenizer offline (``tiktoken:qwen2``, Qwen2.5's vocabulary), another 'tiktoken:<encoding>' name or
    a Hugging Face tokenizer directory / id. One row per
    sample (two for idk: the answerable and the unanswerable question on the same context). ``num_proc``:
    processes for a build (default: the cores available; the same rows for any value)."""
    spec = make_spec(tier, cell=cell, task=task, n=n, mode=mode, shots=shots, seed=seed, density=density,
                     depth=tuple(depth) if isinstance(depth, list) else depth, reserve_tokens=reserve_tokens,
                     tokenizer=tokenizer, verify_length=verify_length)
    for name, v, low in (('num_samples', num_samples, 1), ('start_index', start_index, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise LongBioConfigError(f'{name} must be an integer >= {low}, got {v!r}')
    num_proc = check_num_proc(num_proc)
    params = dict(spec.public(), num_samples=num_samples, start_index=start_index)
    cache = DatasetCache()
    key = make_key('longbio', params, spec.tokenizer.fingerprint, (), cache.root)
    return cache.get_or_build('longbio', key, lambda: generate(spec, num_samples, start_index, num_proc),
                              params=params)


class LongBioDataset(BaseDataset):
    """``type=LongBioDataset`` in configs; every extra config key goes to :func:`load_longbio`."""
    benchmark = BENCHMARK      # what the planner, the run checks and the summarizer read (face.py)

    @staticmethod
    def load(**kwargs):
        return record_build(BENCHMARK.dataset_type, kwargs, load_longbio(**kwargs), BENCHMARK.tokens_column)
