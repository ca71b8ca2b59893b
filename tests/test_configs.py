"""Every shipped config parses; every standard tier has its file and tier files differ only in the tier (tiers
users add are welcome); abbrs are unique; the leaderboard example parses and partitions with --dry-run."""
import glob
import os
import re
import shutil

import pytest
from mmengine.config import Config

from conftest import REPO, run_opencompass
from opencompass_longctx.tables.tier_table import STANDARD_TIERS
CONFIGS = REPO / 'opencompass_longctx' / 'configs'   # the one copy; the top-level configs/ links to it
ALL_CONFIGS = sorted(p for p in glob.glob(str(CONFIGS / '**' / '*.py'), recursive=True)
                     if not os.path.basename(p).startswith('_'))
TIER_FILES = sorted(glob.glob(str(CONFIGS / 'datasets' / '*' / '*_*_gen.py')))
BENCHES = ['babilong', 'longbio', 'nolima']
# NoLiMa's own lengths (1k = 1000 tokens): the paper's 1k-32k, the base tiers 250 and 500, and 64k, 128k.
NOLIMA_TIERS = ['250', '500', '1k', '2k', '4k', '8k', '16k', '32k', '64k', '128k']
TIER_LINE = re.compile(r"^TIER = '([^']*)'$", re.MULTILINE)


def standard_tiers(bench):
    """The tiers the project ships a file for: the standard table, NoLiMa its own lengths."""
    if bench == 'nolima':
        return NOLIMA_TIERS
    return STANDARD_TIERS


def check_tier_files(configs_dir, bench):
    """Every standard tier has its file; every <bench>_<tier>_gen.py (standard or added by a user) sets TIER to the
    tier of its file name and differs from its siblings in nothing else."""
    files = {re.fullmatch(rf'{bench}_(.+)_gen\.py', os.path.basename(p)).group(1): p
             for p in glob.glob(os.path.join(str(configs_dir), 'datasets', bench, f'{bench}_*_gen.py'))}
    missing = set(standard_tiers(bench)) - set(files)
    assert not missing, f'{bench}: no tier file for {sorted(missing)}'
    normalised = {}
    for tier, path in files.items():
        text = open(path).read()
        assert TIER_LINE.findall(text) == [tier], f"{path}: must set TIER = '{tier}' once"
        normalised[path] = TIER_LINE.sub("TIER = '<tier>'", text)
    reference = normalised[files[standard_tiers(bench)[-1]]]
    for path, text in normalised.items():
        assert text == reference, f'{path} differs from its siblings in more than TIER'


@pytest.mark.parametrize('path', ALL_CONFIGS + [str(REPO / 'examples' / 'eval_longctx_demo.py'),
                                                str(REPO / 'examples' / 'eval_longctx.py')],
                         ids=lambda p: os.path.relpath(p, REPO))
def test_config_parses(path):
    Config.fromfile(path)


def test_top_level_configs_is_the_package_copy():
    assert os.path.samefile(REPO / 'configs', CONFIGS)


@pytest.mark.parametrize('bench', BENCHES)
def test_every_standard_tier_has_a_file_and_tier_files_differ_only_in_the_tier(bench):
    check_tier_files(CONFIGS, bench)


@pytest.mark.parametrize('bench', BENCHES)
def test_tier_files_users_add_are_accepted_and_edits_beyond_the_tier_are_not(tmp_path, bench):
    shutil.copytree(CONFIGS / 'datasets' / bench, tmp_path / 'datasets' / bench)
    src = (tmp_path / 'datasets' / bench / f'{bench}_128k_gen.py').read_text()
    (tmp_path / 'datasets' / bench / f'{bench}_3k_gen.py').write_text(src.replace("TIER = '128k'", "TIER = '3k'"))
    check_tier_files(tmp_path, bench)                          # a tier a user adds is welcome
    (tmp_path / 'datasets' / bench / f'{bench}_3k_gen.py').write_text(src.replace("TIER = '128k'", "TIER = '4k'"))
    with pytest.raises(AssertionError, match="must set TIER = '3k'"):
        check_tier_files(tmp_path, bench)                      # ... with the tier its name says
    (tmp_path / 'datasets' / bench / f'{bench}_3k_gen.py').write_text(
        src.replace("TIER = '128k'", "TIER = '3k'") + 'extra = 1\n')
    with pytest.raises(AssertionError, match='more than TIER'):
        check_tier_files(tmp_path, bench)                      # ... and nothing else changed
    os.remove(tmp_path / 'datasets' / bench / f'{bench}_3k_gen.py')
    os.remove(tmp_path / 'datasets' / bench / f'{bench}_8k_gen.py')
    with pytest.raises(AssertionError, match=r"no tier file for \['8k'\]"):
        check_tier_files(tmp_path, bench)                      # a standard tier must not go missing


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
    cfg = Config.fromfile(str(CONFIGS / 'summarizers' / 'babilong.py'))
    abbrs = {d['abbr'] for p in TIER_FILES for lst in dataset_lists(Config.fromfile(p)).values() for d in lst}
    for g in cfg['babilong_summary_groups']:
        for subset in g['subsets']:
            assert subset[0] in abbrs and subset[1] == 'accuracy'


@pytest.mark.e2e
def test_leaderboard_example_dry_run(tmp_path):
    proc = run_opencompass([str(REPO / 'examples' / 'eval_longctx.py'), '--dry-run'], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cfg = Config.fromfile(str(REPO / 'examples' / 'eval_longctx.py'))
    from opencompass_longctx import combinations
    from opencompass_longctx.tiers import parse_tier
    combos = combinations.expand(combinations.combinations_of(cfg))[0]   # each model's datasets, as the partitioner
    assert 'Partitioned into ' in proc.stdout + proc.stderr   # the task plan: tests/test_partitioner.py
    assert {m['abbr'] for c in combos for m in c['models']} == set(cfg['RUN_MODELS'])
    for c in combos:
        (m,) = c['models']
        assert m['engine_config']['tp'] == m['run_cfg']['num_gpus']
        assert m['engine_config']['session_len'] >= m['max_seq_len'] > m['max_out_len']
        # each model only gets the tiers it can hold
        assert max(parse_tier(d['tier']).sort_key for d in c['datasets']) == parse_tier(m['max_tier']).sort_key \
            <= m['max_seq_len']
        # NoLiMa datasets are this model's own copies (made with its tokenizer)
        assert all(d['tokenizer'] == m['path'] for d in c['datasets'] if d['abbr'].startswith('nolima_'))


def test_old_table_paths_still_read_base(tmp_path):
    """The tables moved to opencompass_longctx/tables/; a user's config that still read_bases the old
    opencompass_longctx.configs.<table> paths gets every public name, equal to the table's own."""
    from opencompass_longctx.tables import cost_model, lmdeploy_models, tier_table
    cfg = tmp_path / 'old_paths.py'
    cfg.write_text('from mmengine.config import read_base\n\nwith read_base():\n'
                   '    from opencompass_longctx.configs.tier_table import STANDARD_TIERS, TIER_BANDS, TIERS\n'
                   '    from opencompass_longctx.configs.cost_model import COST_MODEL, CUDA_NOT_FREE_GIB, GPUS\n'
                   '    from opencompass_longctx.configs.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS\n')
    got = Config.fromfile(str(cfg)).to_dict()
    for table in (tier_table, cost_model, lmdeploy_models):
        for name in (n for n in vars(table) if n.isupper() and not n.startswith('_')):
            assert got[name] == getattr(table, name), f'{table.__name__}.{name} does not arrive via the old path'
