"""LongBioBench configs: a tier holds the cells whose needles fit it, computed from the tier (any tier, not a
list per tier), with builtins only; the per-cell needs are the generator's; the summary groups follow.
(That every tier has its file and differs from its siblings only in TIER: test_configs.py.)"""
import pytest
from mmengine.config import Config

from conftest import REPO
from opencompass_longctx.tables.tier_table import STANDARD_TIERS
from opencompass_longctx.longbio.catalogue import (LONGBIO_CATEGORIES, LONGBIO_CELLS, LONGBIO_NEED_TOKENIZER,
                                                   LONGBIO_NEED_TOKENS)
from opencompass_longctx.tiers import TierError, parse_tier
DIR = REPO / 'opencompass_longctx' / 'configs' / 'datasets' / 'longbio'
N = {c['cell']: c['n'] for c in LONGBIO_CELLS}


def cells_that_fit(tier):
    tokens = parse_tier(tier).tokens(1024)
    return [c['cell'] for c in LONGBIO_CELLS if not tokens or LONGBIO_NEED_TOKENS[c['cell']] <= tokens]


def tier_config(tmp_path, tier):
    """The 128k tier file copied and given another TIER (as a user adds a tier), parsed."""
    path = tmp_path / f'longbio_{tier}_gen.py'.replace('/', '_')
    path.write_text((DIR / 'longbio_128k_gen.py').read_text().replace("TIER = '128k'", f'TIER = {tier!r}'))
    return Config.fromfile(str(path))


@pytest.mark.parametrize('tier', STANDARD_TIERS)
def test_standard_tier_configs_hold_the_cells_that_fit(tier):
    cfg = Config.fromfile(str(DIR / f'longbio_{tier}_gen.py'))
    for key, prefix, mode in (('longbio_datasets', 'longbio_', 'compat'),
                              ('longbio_strict_datasets', 'longbio_strict_', 'strict')):
        ds = cfg[key]
        cells = cells_that_fit(tier)
        assert [d['cell'] for d in ds] == cells
        assert [d['abbr'] for d in ds] == [f'{prefix}{c}_{tier}' for c in cells]
        assert all(d['tier'] == tier and d['mode'] == mode and d['num_samples'] == 800 for d in ds)
        assert all(d['infer_cfg']['inferencer']['max_out_len'] == 50 * N[d['cell']] for d in ds)
        assert not any(k.startswith('need') for d in ds for k in d)   # every dataset key goes to load()


def test_small_tiers_leave_out_the_cells_whose_needles_do_not_fit():
    assert len(cells_that_fit('0k')) == 15                          # 0k: the needles only, every cell
    assert 'multi_standard_10' not in cells_that_fit('3k') and 'multi_standard_10' in cells_that_fit('8k')
    assert {c for c in cells_that_fit('1k')} == {c['cell'] for c in LONGBIO_CELLS if c['n'] <= 2}


@pytest.mark.parametrize('tier', ['3k', '3K', '0.5k', '1.5k', '3000', '192k', '2m', '1M', '1.5m', '0k', '0.0k'])
def test_any_tier_a_user_copies_holds_the_cells_that_fit(tmp_path, tier):
    """The tier files read their tier with tiers.parse_tier (LongBioBench's 1k = 1024), through cells.tier_cells."""
    cfg = tier_config(tmp_path, tier)
    assert [d['cell'] for d in cfg['longbio_datasets']] == cells_that_fit(tier)
    assert [d['abbr'] for d in cfg['longbio_strict_datasets']] == [f'longbio_strict_{c}_{tier}'
                                                                    for c in cells_that_fit(tier)]


@pytest.mark.parametrize('tier', ['12q', 'k', '1.2.3k', '-1k'])
def test_a_malformed_tier_keeps_every_cell_and_the_loader_says_what_is_wrong(tmp_path, tier):
    cfg = tier_config(tmp_path, tier)
    assert len(cfg['longbio_datasets']) == 15
    from opencompass_longctx.longbio.dataset import load_longbio
    d = cfg['longbio_datasets'][0]
    with pytest.raises(TierError, match='accepted:'):
        load_longbio(tier=d['tier'], cell=d['cell'], num_samples=1)


def test_a_cell_asked_at_a_tier_it_cannot_fit_gets_a_clear_error():
    from opencompass_longctx.longbio.dataset import load_longbio
    from opencompass_longctx.longbio.generator import TierTooSmallError
    with pytest.raises(TierTooSmallError, match="'multi_standard_10' does not fit tier 3k"):
        load_longbio(tier='3k', cell='multi_standard_10', num_samples=800)


def test_cell_needs_are_the_generators():
    """LONGBIO_NEED_TOKENS is the generator's own count: needles + prompt with no haystack, the most over the
    authors' 800 samples in both modes, with the default tokenizer. On failure, paste the printed table."""
    from opencompass_longctx.longbio.generator import Generator, cell_settings
    from opencompass_longctx.tokenizer.counting import get_tokenizer
    assert cell_settings('1k', cell='standard').tokenizer.name == get_tokenizer(LONGBIO_NEED_TOKENIZER).name
    measured = {c['cell']: max(max(Generator(cell_settings('1m', cell=c['cell'], mode=mode)).needed_tokens(i)
                                   for i in range(800)) for mode in ('compat', 'strict'))
                for c in LONGBIO_CELLS}
    assert measured == LONGBIO_NEED_TOKENS, f'measured: {measured}'


def test_summary_groups_cover_every_tier_category_and_mode():
    cfg = Config.fromfile(str(REPO / 'opencompass_longctx' / 'configs' / 'summarizers' / 'longbio.py'))
    groups = {g['name']: g for g in cfg['longbio_summary_groups']}
    assert len(groups) == 2 * len(STANDARD_TIERS) * (len(LONGBIO_CATEGORIES) + 1)
    names = list(groups)
    for tier in STANDARD_TIERS:
        tier_cells = Config.fromfile(str(DIR / f'longbio_{tier}_gen.py'))['longbio_datasets']
        for p in ('longbio_', 'longbio_strict_'):
            total = 0
            for cat in LONGBIO_CATEGORIES:
                g = groups[f'{p}{cat}_{tier}']
                want = [d['cell'] for d in tier_cells if next(c for c in LONGBIO_CELLS
                                                              if c['cell'] == d['cell'])['category'] == cat]
                assert [tuple(s) for s in g['subsets']] == [(f'{p}{c}_{tier}', 'accuracy') for c in want]
                total += len(want)
                assert names.index(f'{p}{cat}_{tier}') < names.index(f'{p}mean_{tier}')   # children first
            assert total == len(cells_that_fit(tier))
    full = {cat: sum(c['category'] == cat for c in LONGBIO_CELLS) for cat in LONGBIO_CATEGORIES}
    assert full == {'understanding': 6, 'reasoning': 6, 'trustworthiness': 3}
