"""Parse at the boundary: one load of each benchmark calls the tier parser (``tiers.parse_tier``) exactly once.

Every module of the package that holds ``parse_tier`` gets a counting wrapper, so a call anywhere below the
loader (a Tier passed through, or a tier string parsed again) is counted. Each load is made twice: the first
builds the rows, the second reloads them from the cache."""
import sys

import pytest

from opencompass_longctx import tiers
from opencompass_longctx.babilong.dataset import BabilongDataset
from opencompass_longctx.longbio.dataset import LongBioDataset
from opencompass_longctx.nolima.dataset import NoLiMaDataset
@pytest.fixture
def parses(monkeypatch):
    """The tier values passed to the parser since the fixture started (every module that bound it)."""
    calls = []
    real = tiers.parse_tier

    def counted(value):
        calls.append(value)
        return real(value)

    # the package's modules, loaded by the imports above (the loaders import the rest lazily: import them now)
    import opencompass_longctx.babilong.generator  # noqa: F401
    import opencompass_longctx.longbio.generator  # noqa: F401
    for name, module in list(sys.modules.items()):
        if name.startswith('opencompass_longctx') and getattr(module, 'parse_tier', None) is real:
            monkeypatch.setattr(module, 'parse_tier', counted)
    return calls


def _twice(load, parses, **kwargs):
    counts = []
    for _ in range(2):           # a build, then a reload from the cache
        parses.clear()
        ds = load(**kwargs)
        assert len(ds) > 0
        counts.append(list(parses))
    return counts


def test_babilong_file_load_parses_its_tier_once(demo_babilong, parses):
    counts = _twice(BabilongDataset.load, parses, tier='1k', task='qa2', path=str(demo_babilong))
    assert counts == [['1k'], ['1k']]


def test_babilong_generated_load_parses_its_tier_once(babi_inputs, parses):
    counts = _twice(BabilongDataset.load, parses, tier='3k', task='qa1', babi_dir=babi_inputs[0],
                    background_dir=babi_inputs[1], num_samples=2, num_proc=1)
    assert counts == [['3k'], ['3k']]


def test_longbio_load_parses_its_tier_once(parses):
    counts = _twice(LongBioDataset.load, parses, tier='1k', cell='standard', num_samples=2, num_proc=1)
    assert counts == [['1k'], ['1k']]


def test_nolima_load_parses_its_tier_once(tmp_path, parses):
    from opencompass_longctx.demo import nolima_data
    root = tmp_path / 'nolima'
    nolima_data.write(str(root), book_tokens=3000)
    parses.clear()
    counts = _twice(NoLiMaDataset.load, parses, tier='1k', path=str(root), pairs=2, haystacks=[0],
                    depth_indices=[0, 5], num_proc=1)
    assert counts == [['1k'], ['1k']]


def test_a_bad_tier_is_refused_at_the_boundary_with_the_accepted_forms(demo_babilong, parses):
    for load, extra in ((BabilongDataset.load, dict(task='qa1', path=str(demo_babilong))),
                        (LongBioDataset.load, dict(cell='standard')), (NoLiMaDataset.load, {})):
        parses.clear()
        with pytest.raises(tiers.TierError, match='accepted:'):
            load(tier='12q', **extra)
        assert parses == ['12q']
