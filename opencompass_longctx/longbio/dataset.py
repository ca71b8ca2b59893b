"""LongBioBench as an OpenCompass dataset: one cell at one tier per dataset config, generated on the fly
and cached on disk (OpenCompass rebuilds every dataset in its main, inference and evaluation processes)."""
from opencompass_longctx.base import LongCtxDataset
from opencompass_longctx.cache import DatasetCache, make_key
from opencompass_longctx.longbio.spec import BENCHMARK, LongBioOptions
from opencompass_longctx.longbio.generator import generate
def load_longbio(tier, **options):
    """Build (or reload from the cache) the samples of one cell as a ``datasets.Dataset`` (``options``: the
    fields of :class:`LongBioOptions`). One row per sample (two for idk: the answerable and the unanswerable
    question on the same context)."""
    return load_cell(LongBioOptions.parse(dict(options, tier=tier)))


def load_cell(o: LongBioOptions):
    """The samples of checked options, through the cache."""
    params = dict(o.settings.public(), num_samples=o.num_samples, start_index=o.start_index)
    cache = DatasetCache()
    key = make_key('longbio', params, o.settings.tokenizer.fingerprint, (), cache.root)
    return cache.get_or_build('longbio', key, lambda: generate(o.settings, o.num_samples, o.start_index, o.processes),
                              params=params)


class LongBioDataset(LongCtxDataset):
    """``type=LongBioDataset`` in configs; every extra config key is a field of :class:`LongBioOptions`."""
    benchmark = BENCHMARK
    build = staticmethod(load_cell)
