"""BABILong as an OpenCompass dataset: one (task, tier) split per dataset config."""
import hashlib
import json
import os
from typing import Dict, Iterator, Optional

from opencompass.datasets.base import BaseDataset
from tqdm import tqdm

from ..cache import DatasetCache, make_key
from ..sources import find_file
from ..tiers import parse_tier
from ..tokenization import GPT2_TOKENIZER, get_tokenizer
from . import data as bdata
from .prompts import format_prompt, prompt_parts


def build_rows(path: str, task: str, tier: str, parts: Dict[str, str], tokenizer, source_name: str,
               indices, num_samples: Optional[int], variant: str) -> Iterator[Dict]:
    wanted = None if indices is None else set(indices)
    taken = 0
    desc = f'BABILong {task} {tier}'
    for i, rec in enumerate(tqdm(bdata.iter_records(path), desc=desc, unit='sample', mininterval=5,
                                 disable=os.environ.get('LONGCTX_PROGRESS', '1') == '0')):
        if num_samples is not None and taken >= num_samples:
            break
        if wanted is not None and i not in wanted:
            continue
        r = bdata.check_record(rec, path, i)
        prompt = format_prompt(r['input'], r['question'], parts)
        taken += 1
        yield {
            'prompt': prompt, 'target': r['target'], 'question': r['question'], 'task': task, 'tier': tier,
            'tier_tokens': parse_tier(tier).tokens(1000), 'index': i,
            'prompt_tokens': tokenizer.count(prompt), 'count_tokenizer': tokenizer.name,
            'prompt_variant': variant, 'sample_source': source_name,
        }


def load_babilong(tier: str, task: str = 'qa1', path: Optional[str] = None, sample_source: str = '100',
                  num_samples: Optional[int] = None, sample_indices=None, use_instruction: bool = True,
                  use_examples: bool = True, use_post_prompt: bool = True, prompt_variant: str = 'official',
                  count_tokenizer: str = GPT2_TOKENIZER, download: Optional[bool] = None,
                  revision: Optional[str] = None, demo_data: bool = False):
    """Build (or reload from the cache) one BABILong split as a ``datasets.Dataset`` of plain strings.

    ``demo_data=True`` (demo and tests only): write the project's own BABILong-format sample file for this
    task and tier under ``path`` when it is missing (see :mod:`opencompass_longctx.demo_data`).
    """
    tier = parse_tier(tier).name
    source = bdata.source_for(str(sample_source), tier)
    bdata.check_available(task, tier, source)
    if num_samples is not None and (not isinstance(num_samples, int) or num_samples < 1):
        raise bdata.BabilongDataError(f'num_samples must be a positive integer or None, got {num_samples!r}')
    if demo_data:
        if not path:
            raise bdata.BabilongDataError('demo_data=True needs path= (where to write the demo files)')
        from .. import demo_data as demo
        if not os.path.isfile(os.path.join(path, 'data', task, demo.file_name(tier))):
            demo.write(path, tiers=[tier], tasks=[task], samples=max(num_samples or 5, 5))
    parts = prompt_parts(task, prompt_variant, use_instruction, use_examples, use_post_prompt)
    file_path = find_file(source, bdata.file_candidates(task, tier, source), path=path, download=download,
                          revision=revision, what=f'{task} at {tier}')
    indices = bdata.load_indices(sample_indices, task)
    tokenizer = get_tokenizer(count_tokenizer)
    params = dict(tier=tier, task=task, sample_source=str(sample_source), num_samples=num_samples,
                  indices=indices, prompt_variant=prompt_variant,
                  prompt_sha256=hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest(),
                  source=source.hub_repo, file=os.path.basename(file_path))
    cache = DatasetCache()
    key = make_key('babilong', params, tokenizer.fingerprint, [file_path], cache.root)
    ds = cache.get_or_build('babilong', key, lambda: build_rows(
        file_path, task, tier, parts, tokenizer, source.hub_repo, indices, num_samples, prompt_variant),
        params=params)
    if indices is not None and len(ds) < len(set(indices)) and num_samples is None:
        raise bdata.BabilongDataError(f'{file_path}: sample_indices ask for rows the file does not have '
                                      f'({len(ds)} of {len(set(indices))} found)')
    return ds


class BabilongDataset(BaseDataset):
    """``type=BabilongDataset`` in configs; every extra config key goes to :func:`load_babilong`."""

    @staticmethod
    def load(**kwargs):
        return load_babilong(**kwargs)
