"""BABILong as an OpenCompass dataset: one (task, tier) split per dataset config.

Published tiers are read from the user's BABILong files; a tier BABILong does not publish (192k, 2m, ...) or
``sample_source='generated'`` is made by :mod:`.generator` from bAbI stories and background books, through
the same cache, when ``babi_dir`` and ``background_dir`` are given (or ``$BABI_DIR`` and ``$PG19_DIR``).
"""
import hashlib
import json
import os

from opencompass_longctx import parallel
from opencompass_longctx.base import LongCtxDataset
from opencompass_longctx.cache import DatasetCache, make_key
from opencompass_longctx.tokenizer.counting import get_tokenizer
from opencompass_longctx.babilong import data as bdata
from opencompass_longctx.babilong.build import build_rows, generated_rows
from opencompass_longctx.babilong.spec import BENCHMARK, BabilongOptions


def load_babilong(tier, **options):
    """Build (or reload from the cache) one BABILong split as a ``datasets.Dataset`` of plain strings
    (``options``: the fields of :class:`BabilongOptions`)."""
    return load_split(BabilongOptions.parse(dict(options, tier=tier)))


def load_split(o: BabilongOptions):
    """The split of checked options, through the cache: its input located (:func:`.data.locate`), its rows read
    from that file or made by the generator."""
    inp = bdata.locate(o)
    tokenizer = get_tokenizer(o.count_tokenizer)
    params = dict(tier=o.tier.name, task=o.task, num_samples=o.num_samples, prompt_variant=o.prompt_variant,
                  prompt_sha256=hashlib.sha256(json.dumps(o.parts, sort_keys=True).encode()).hexdigest())
    if inp.generated:
        from opencompass_longctx.babilong.generator import Generator
        gen = Generator(o.babi_dir, o.background_dir, o.generator_tokenizer, o.seed, o.fix_len_off_by_one)
        n = o.num_samples or 100
        params.update(sample_source='generated', generator=gen.fingerprint(), samples=n)
        files = gen.input_files([o.task])
        rows = lambda: generated_rows(gen, o.task, o.tier, n, o.parts, tokenizer, o.prompt_variant,  # noqa: E731
                                      o.processes)
    else:
        params.update(sample_source=o.sample_source, indices=inp.indices, source=inp.hub_repo,
                      file=os.path.basename(inp.path))
        files = [inp.path]
        total = o.num_samples if inp.indices is None else len(set(inp.indices))
        records = lambda: parallel.with_progress(bdata.file_records(inp.path, inp.indices, o.num_samples),  # noqa: E731
                                                 total, f'BABILong {o.task} {o.tier.name}')
        rows = lambda: build_rows(records(), o.task, o.tier, o.parts, tokenizer, inp.label,  # noqa: E731
                                  o.prompt_variant)
    cache = DatasetCache()
    return cache.get_or_build('babilong', make_key('babilong', params, tokenizer.fingerprint, files, cache.root),
                              rows, params=params)


class BabilongDataset(LongCtxDataset):
    """``type=BabilongDataset`` in configs; every extra config key is a field of :class:`BabilongOptions`."""
    benchmark = BENCHMARK
    build = staticmethod(load_split)
