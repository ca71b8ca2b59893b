"""The production dataset types on the project's stand-in data: the demo's and the tests' dataset types.

``DemoBabilongDataset`` and ``DemoNoLiMaDataset`` write the stand-in files (:mod:`.babilong_data`,
:mod:`.nolima_data`; deterministic) under ``path=`` when they are missing, then call ``BabilongDataset.load``
and ``NoLiMaDataset.load`` with the same arguments: the rows, the cache key and the build record are those of
the production loader reading those files. The production loaders know nothing of stand-in data.

    datasets = [dict(d, type=DemoBabilongDataset, path='outputs/demo/babilong') for d in babilong_0k]
"""
import os
import shutil

from opencompass_longctx.babilong import data as bdata
from opencompass_longctx.babilong.dataset import BabilongDataset
from opencompass_longctx.nolima.dataset import NoLiMaDataset
from opencompass_longctx.nolima.needles import VARIANT_FILES, NoLiMaError
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.demo import babilong_data, nolima_data
def _needs_path(path, what, error):
    if not path:
        raise error(f'{what} needs path= (the directory where the stand-in files are written, or already are)')


def prepare_babilong(path: str, task: str = 'qa1', tier='0k', num_samples=None) -> str:
    """The stand-in BABILong file of (task, tier) under ``path``, written when missing (at least 5 samples)."""
    _needs_path(path, 'DemoBabilongDataset', bdata.BabilongDataError)
    if not os.path.isfile(os.path.join(path, 'data', task, bdata.file_name(parse_tier(tier)))):
        babilong_data.write(path, tiers=[tier], tasks=[task], samples=max(num_samples or 5, 5))
    return path


def prepare_nolima(path: str, book_tokens: int = 6000) -> str:
    """The stand-in NoLiMa needle sets and books under ``path``, written when missing (into a temporary
    directory renamed into place, so that parallel loads never read a half-written set)."""
    _needs_path(path, 'DemoNoLiMaDataset', NoLiMaError)
    if os.path.isfile(os.path.join(path, 'needlesets', VARIANT_FILES['main'])):
        return path
    if os.path.isdir(path) and os.listdir(path):
        return nolima_data.write(path, book_tokens=book_tokens)
    tmp = f'{path.rstrip(os.sep)}.tmp-{os.getpid()}'
    nolima_data.write(tmp, book_tokens=book_tokens)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if os.path.isdir(path):
            os.rmdir(path)
        os.rename(tmp, path)
    except OSError:  # written by another process meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return path


class DemoBabilongDataset(BabilongDataset):
    """``BabilongDataset`` on the stand-in BABILong-format files under ``path`` (written when missing)."""
    PREPARES_DATA = True  # the run checks do not look for BABILong's files

    @staticmethod
    def load(**kwargs):
        o = BabilongDataset.benchmark.read(kwargs)     # the loader's own defaults (its parse refuses what is wrong)
        prepare_babilong(o.path, o.task, o.tier, o.num_samples)
        return BabilongDataset.load(**kwargs)


class DemoNoLiMaDataset(NoLiMaDataset):
    """``NoLiMaDataset`` on the stand-in needle sets and books under ``path`` (written when missing).

    ``sample_book_tokens`` (default 6000): the length of each stand-in book, read here only."""
    PREPARES_DATA = True  # the run checks do not look for NoLiMa's files

    @staticmethod
    def load(sample_book_tokens: int = 6000, **kwargs):
        prepare_nolima(kwargs.get('path'), sample_book_tokens)
        return NoLiMaDataset.load(**kwargs)
