"""LongBioBench configs: every tier file parses, holds the cells that fit, and the summary groups match."""
import glob
import os

from mmengine.config import Config

from conftest import REPO
from opencompass_longctx.configs.tier_table import STANDARD_TIERS
from opencompass_longctx.longbio.catalogue import LONGBIO_CATEGORIES, LONGBIO_CELLS, LONGBIO_TOO_SMALL


def test_one_config_per_standard_tier_each_only_setting_the_tier():
    files = sorted(glob.glob(str(REPO / 'configs' / 'datasets' / 'longbio' / 'longbio_*_gen.py')))
    assert {os.path.basename(f)[len('longbio_'):-len('_gen.py')] for f in files} == set(STANDARD_TIERS)
    texts = {f: open(f).read() for f in files}
    template = texts[files[0]].replace(f"TIER = '{os.path.basename(files[0])[8:-7]}'", "TIER = 'X'")
    for f, t in texts.items():   # the files differ only in the tier name
        assert t.replace(f"TIER = '{os.path.basename(f)[8:-7]}'", "TIER = 'X'") == template


def test_tier_configs_parse_and_hold_the_cells_that_fit():
    for tier in ('0k', '1k', '2k', '4k', '1m'):
        cfg = Config.fromfile(str(REPO / 'configs' / 'datasets' / 'longbio' / f'longbio_{tier}_gen.py'))
        for key, prefix, mode in (('longbio_datasets', 'longbio_', 'compat'),
                                  ('longbio_strict_datasets', 'longbio_strict_', 'strict')):
            ds = cfg[key]
            cells = [c['cell'] for c in LONGBIO_CELLS if c['cell'] not in LONGBIO_TOO_SMALL.get(tier, [])]
            assert [d['cell'] for d in ds] == cells
            assert [d['abbr'] for d in ds] == [f'{prefix}{c}_{tier}' for c in cells]
            assert all(d['tier'] == tier and d['mode'] == mode and d['num_samples'] == 800 for d in ds)
            n = {c['cell']: c['n'] for c in LONGBIO_CELLS}
            assert all(d['infer_cfg']['inferencer']['max_out_len'] == 50 * n[d['cell']] for d in ds)


def test_summary_groups_cover_every_tier_category_and_mode():
    cfg = Config.fromfile(str(REPO / 'configs' / 'summarizers' / 'longbio.py'))
    groups = {g['name']: g for g in cfg['longbio_summary_groups']}
    assert len(groups) == 2 * len(STANDARD_TIERS) * (len(LONGBIO_CATEGORIES) + 1)
    names = list(groups)
    for tier in STANDARD_TIERS:
        for p in ('longbio_', 'longbio_strict_'):
            total = 0
            for cat in LONGBIO_CATEGORIES:
                g = groups[f'{p}{cat}_{tier}']
                want = [c['cell'] for c in LONGBIO_CELLS
                        if c['category'] == cat and c['cell'] not in LONGBIO_TOO_SMALL.get(tier, [])]
                assert g['subsets'] == [[f'{p}{c}_{tier}', 'accuracy'] for c in want] or \
                    g['subsets'] == [(f'{p}{c}_{tier}', 'accuracy') for c in want]
                total += len(want)
                assert names.index(f'{p}{cat}_{tier}') < names.index(f'{p}{tier}')   # children first
            assert total == 15 - len(LONGBIO_TOO_SMALL.get(tier, []))
    full = {cat: sum(c['category'] == cat for c in LONGBIO_CELLS) for cat in LONGBIO_CATEGORIES}
    assert full == {'understanding': 6, 'reasoning': 6, 'trustworthiness': 3}
