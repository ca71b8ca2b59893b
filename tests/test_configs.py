"""Every shipped config parses; tier files differ only in the tier; abbrs are unique; the leaderboard
example parses and partitions with --dry-run."""
import difflib
import glob
import os
import re

import pytest
from mmengine.config import Config

from conftest import REPO, run_opencompass
from opencompass_longctx.configs.tier_table import STANDARD_TIERS

ALL_CONFIGS = sorted(p for p in glob.glob(str(REPO / 'configs' / '**' / '*.py'), recursive=True)
                     if not os.path.basename(p).startswith('_'))
TIER_FILES = sorted(glob.glob(str(REPO / 'configs' / 'datasets' / '*' / '*_*_gen.py')))


@pytest.mark.parametrize('path', ALL_CONFIGS + [str(REPO / 'examples' / 'eval_longctx_demo.py'),
                                                str(REPO / 'examples' / 'eval_longctx.py')],
                         ids=lambda p: os.path.relpath(p, REPO))
def test_config_parses(path):
    Config.fromfile(path)


@pytest.mark.parametrize('bench', ['babilong', 'longbio', 'nolima'])
def test_every_standard_tier_and_tier_files_differ_only_in_the_tier(bench):
    files = {re.match(rf'{bench}_(.+)_gen\.py', os.path.basename(p)).group(1): p
             for p in TIER_FILES if os.path.basename(p).startswith(bench + '_')}
    assert set(STANDARD_TIERS) - {'0k', '256k', '512k', '1m'} <= set(files)
    ref = open(files['128k']).read()
    for tier, path in files.items():
        text = open(path).read().replace(f"'{tier}'", "'128k'")
        diff = [d for d in difflib.unified_diff(ref.splitlines(), text.splitlines(), lineterm='', n=0)
                if not d.startswith(('---', '+++', '@@'))]
        assert diff == [], (path, diff)


def dataset_lists(cfg):
    """The exported dataset lists of a tier file (not the imported, untiered bases)."""
    return {k: v for k, v in cfg.items() if isinstance(v, list) and v and isinstance(v[0], dict)
            and 'abbr' in v[0] and 'tier' in v[0]}


def test_tier_configs_give_unique_abbrs_with_the_tier():
    seen = {}
    for path in TIER_FILES:
        abbrs = {}
        for name, lst in dataset_lists(Config.fromfile(path)).items():
            assert len({d['abbr'] for d in lst}) == len(lst), (path, name)
            for d in lst:
                assert d['abbr'].endswith('_' + d['tier']), d['abbr']
                abbrs[d['abbr']] = path
        for a in abbrs:
            assert a not in seen, (a, path, seen.get(a))
        seen.update(abbrs)
    assert len(seen) >= 12 * 10


def test_summary_groups_name_existing_datasets():
    cfg = Config.fromfile(str(REPO / 'configs' / 'summarizers' / 'babilong.py'))
    abbrs = {d['abbr'] for p in TIER_FILES for lst in dataset_lists(Config.fromfile(p)).values() for d in lst}
    for g in cfg['babilong_summary_groups']:
        for subset in g['subsets']:
            assert subset[0] in abbrs and subset[1] == 'accuracy'


def test_leaderboard_example_dry_run(tmp_path):
    proc = run_opencompass([str(REPO / 'examples' / 'eval_longctx.py'), '--dry-run'], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cfg = Config.fromfile(str(REPO / 'examples' / 'eval_longctx.py'))
    combos = cfg['model_dataset_combinations']
    n_tasks = sum(len(c['models']) * len(c['datasets']) for c in combos)
    assert f'Partitioned into {n_tasks} tasks.' in proc.stdout + proc.stderr
    assert {m['abbr'] for c in combos for m in c['models']} == set(cfg['RUN_MODELS'])
    for c in combos:
        (m,) = c['models']
        assert m['engine_config']['tp'] == m['run_cfg']['num_gpus']
        assert m['engine_config']['session_len'] >= m['max_seq_len'] > m['max_out_len']
        # each model only gets the tiers it can hold
        assert max(cfg['SIZE'][d['tier']] for d in c['datasets']) <= cfg['MAX_TIER'][m['abbr']] <= m['max_seq_len']
        # NoLiMa datasets are this model's own copies (made with its tokenizer)
        assert all(d['tokenizer'] == m['path'] for d in c['datasets'] if d['abbr'].startswith('nolima_'))
