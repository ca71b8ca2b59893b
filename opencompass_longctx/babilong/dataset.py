"""BABILong as an OpenCompass dataset: one (task, tier) split per dataset config.

Published tiers are read from the user's BABILong files; a tier BABILong does not publish (192k, 2m, ...) or
``sample_source='generated'`` is made by :mod:`.generator` from bAbI stories and background books, through
the same cache, when ``babi_dir`` and ``background_dir`` are given (or ``$BABI_DIR`` and ``$PG19_DIR``).
"""
import hashlib
import json
import os
from typing import Optional

from opencompass_longctx import parallel
from opencompass_longctx.base import LongCtxDataset
from opencompass_longctx.cache import DatasetCache, make_key
from opencompass_longctx.data_files import DataNotFoundError, find_file
from opencompass_longctx.tokenizer.counting import get_tokenizer
from opencompass_longctx.babilong import data as bdata
from opencompass_longctx.babilong.build import build_rows, generated_rows
from opencompass_longctx.babilong.spec import BENCHMARK, BabilongOptions
def _file_records(path: str, indices, num_samples: Optional[int]):
    wanted = None if indices is None else set(indices)
    taken = 0
    for i, rec in enumerate(bdata.iter_records(path)):
        if num_samples is not None and taken >= num_samples:
            break
        if wanted is not None and i not in wanted:
            continue
        taken += 1
        yield i, bdata.check_record(rec, path, i)
    if wanted is not None and taken < len(wanted) and (num_samples is None or taken < num_samples):
        raise bdata.BabilongDataError(f'{path}: sample_indices ask for rows the file does not have '
                                      f'({taken} of {len(wanted)} found)')


def _progress(it, total: Optional[int], desc: str):
    bar = parallel.progress(total, desc)
    try:
        for x in it:
            yield x
            bar.update(1)
    finally:
        bar.close()


def load_babilong(tier, **options):
    """Build (or reload from the cache) one BABILong split as a ``datasets.Dataset`` of plain strings
    (``options``: the fields of :class:`BabilongOptions`)."""
    return load_split(BabilongOptions.parse(dict(options, tier=tier)))


def load_split(o: BabilongOptions):
    """The split of checked options: from the user's file of a published tier (or a generated file of another
    tier), else generated when the bAbI and background directories are given."""
    tier, task, parts = o.tier, o.task, o.parts
    tokenizer = get_tokenizer(o.count_tokenizer)
    params = dict(tier=tier.name, task=task, num_samples=o.num_samples, prompt_variant=o.prompt_variant,
                  prompt_sha256=hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest())
    cache = DatasetCache()

    def generated():
        from opencompass_longctx.babilong.generator import Generator
        gen = Generator(o.babi_dir, o.background_dir, o.generator_tokenizer, o.seed, o.fix_len_off_by_one)
        n = o.num_samples or 100
        params.update(sample_source='generated', generator=gen.fingerprint(), samples=n)
        key = make_key('babilong', params, tokenizer.fingerprint, gen.input_files([task]), cache.root)
        return cache.get_or_build('babilong', key, lambda: generated_rows(
            gen, task, tier, n, parts, tokenizer, o.prompt_variant, o.processes), params=params)

    if o.sample_source == 'generated':
        return generated()
    source = bdata.source_for(o.sample_source, tier)
    published = tier.name in bdata.PUBLISHED_TIERS
    if published:
        bdata.check_available(task, tier, source)
    try:
        file_path = find_file(source, bdata.file_candidates(task, tier, source), path=o.path,
                              download=o.download if published else False, revision=o.revision,
                              what=f'{task} at {tier.name}')
    except DataNotFoundError:
        if published:
            raise
        if o.babi_dir and o.background_dir:  # a tier BABILong does not publish: make it
            return generated()
        bdata.check_available(task, tier, source)  # raises: says what to provide
        raise
    indices = bdata.load_indices(o.sample_indices, task)
    params.update(sample_source=o.sample_source, indices=indices, source=source.hub_repo,
                  file=os.path.basename(file_path))
    key = make_key('babilong', params, tokenizer.fingerprint, [file_path], cache.root)
    label = source.hub_repo
    if not published:  # a file for a tier BABILong does not publish: ours if our generator's manifest is there
        from opencompass_longctx.babilong.generator import MANIFEST_NAME
        root = os.path.dirname(os.path.dirname(os.path.dirname(file_path)))
        label = 'generated' if os.path.isfile(os.path.join(root, MANIFEST_NAME)) else 'local'
    total = o.num_samples if indices is None else len(set(indices))
    return cache.get_or_build('babilong', key, lambda: build_rows(
        _progress(_file_records(file_path, indices, o.num_samples), total, f'BABILong {task} {tier.name}'),
        task, tier, parts, tokenizer, label, o.prompt_variant), params=params)


class BabilongDataset(LongCtxDataset):
    """``type=BabilongDataset`` in configs; every extra config key is a field of :class:`BabilongOptions`."""
    benchmark = BENCHMARK
    build = staticmethod(load_split)
