"""One validation of dataset options: each benchmark's load and the run checks parse a config's keys with the same
options dataclass, so every option a load would refuse (a bad int/bool/choice, an unknown key with the closest
known one, a tier not written as its canonical name) is a plan problem with the load's message, and a real run
with problems stops before any task starts."""
import glob
import json
import os

import pytest

from conftest import REPO, run_opencompass
from opencompass_longctx.babilong.dataset import BabilongDataset, BabilongOptions
from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
from opencompass_longctx.longbio.dataset import LongBioDataset, LongBioOptions
from opencompass_longctx.nolima.dataset import NoLiMaDataset, NoLiMaOptions
from opencompass_longctx.options import parse_config, unknown_keys
from opencompass_longctx.plan import check_run
from opencompass_longctx.tiers import TierError, dataset_tier
BAD_COUNTS = [-3, 0, 2.5, True, '2']
BASE = {BabilongOptions: dict(tier='1k', task='qa1'), LongBioOptions: dict(tier='1k', cell='standard'),
        NoLiMaOptions: dict(tier='1k')}
# every int / bool / choice option of the three benchmarks, with a value its load refuses
REFUSED = [(BabilongOptions, k, v) for k, v in [
    ('num_samples', -3), ('num_samples', 0), ('num_samples', 2.5), ('num_samples', True), ('num_samples', '2'),
    ('seed', 'x'), ('seed', 1.0), ('num_proc', 0), ('num_proc', '2'), ('use_instruction', 1),
    ('use_examples', 'no'), ('use_post_prompt', None), ('fix_len_off_by_one', 0), ('download', 'yes'),
    ('sample_source', 'all'), ('prompt_variant', 'fancy'), ('task', 'qa21'), ('sample_indices', [-1]),
    ('sample_indices', 3), ('path', 3), ('count_tokenizer', None)]] + [
    (LongBioOptions, k, v) for k, v in [
        ('num_samples', -3), ('num_samples', 0), ('num_samples', 2.5), ('num_samples', True), ('num_samples', '2'),
        ('start_index', -1), ('start_index', '0'), ('seed', 'x'), ('reserve_tokens', -1), ('num_proc', 0),
        ('verify_length', 'no'), ('mode', 'loose'), ('cell', 'rank_99'), ('shots', -1), ('density', 2)]] + [
    (NoLiMaOptions, k, v) for k, v in [
        ('depth_intervals', 0), ('depth_intervals', 2.5), ('depth_intervals', '26'), ('shift', -1), ('shift', True),
        ('base_seed', 'x'), ('aligned_tokens', 0), ('max_seq_len', 2.5), ('num_proc', 0), ('pairs', 0),
        ('pairs', True), ('haystacks', [7]), ('depth_indices', [99]), ('exclude_direct', 1), ('download', 'no'),
        ('expected_pairs', 0), ('question_types', 'onehop'), ('placement', 'middle'), ('haystack_tier', 'x'),
        ('needle_set', 'harder')]]


@pytest.mark.parametrize('opts,key,value', REFUSED, ids=lambda x: getattr(x, '__name__', repr(x)))
def test_every_refused_value_names_the_option(opts, key, value):
    with pytest.raises(ValueError) as e:
        opts.parse(dict(BASE[opts], **{key: value}))
    assert key.replace('_', ' ').split()[0] in str(e.value).replace('_', ' ')


@pytest.mark.parametrize('opts', list(BASE), ids=lambda o: o.__name__)
def test_good_options_parse_and_the_tier_is_parsed_once(opts):
    o = opts.parse(BASE[opts])
    assert str(o.tier if opts is not LongBioOptions else o.settings.tier) == '1k'


def test_counts_are_refused_by_the_load_itself():
    for value in BAD_COUNTS:
        with pytest.raises(ValueError, match=r'num_samples must be a positive integer.*got ' + repr(value)[:2]):
            LongBioDataset.load(tier='1k', cell='standard', num_samples=value)
        with pytest.raises(ValueError, match='num_samples must be a positive integer'):
            BabilongDataset.load(tier='1k', task='qa1', num_samples=value, path='/nowhere')


def test_unknown_keys_are_refused_with_the_closest_known_one():
    with pytest.raises(ValueError, match="LongBioDataset has no option 'num_smaples': did you mean num_samples?"):
        LongBioDataset.load(tier='1k', cell='standard', num_smaples=1)
    with pytest.raises(ValueError, match="BabilongDataset has no option 'sample_sorce': did you mean sample_source?"):
        BabilongDataset.load(tier='1k', task='qa1', sample_sorce='100')
    with pytest.raises(ValueError, match="NoLiMaDataset has no option 'haystcks': did you mean haystacks?"):
        NoLiMaDataset.load(tier='1k', haystcks=[0])
    (msg,) = unknown_keys(['zzz'], ['tier', 'task'], 'X')
    assert msg == "X has no option 'zzz': its options are task, tier"
    # several refusals at once are one error of the benchmark's type that lists them all
    with pytest.raises(ValueError, match=r"2 options refused: .*num_smaples.*start_index must be a non-negative integer"):
        LongBioOptions.parse(dict(BASE[LongBioOptions], num_smaples=1, start_index='1'))


def test_a_subclass_load_may_take_more_keys():
    assert parse_config(DemoNoLiMaDataset, dict(tier='1k', sample_book_tokens=3000)).tier.name == '1k'
    with pytest.raises(ValueError, match='did you mean sample_book_tokens'):
        parse_config(DemoNoLiMaDataset, dict(tier='1k', sample_book_token=3000))


@pytest.mark.parametrize('written', ['4K ', ' 4k', '4K', '4 k', '04k', '4.0k'])
def test_a_dataset_tier_is_written_as_its_canonical_name(written):
    with pytest.raises(TierError, match=r"tier '.*' is not written as its canonical name: write '4k'"):
        dataset_tier(written)
    for load, extra in ((BabilongDataset.load, dict(task='qa1', path='/nowhere')),
                        (LongBioDataset.load, dict(cell='standard', num_samples=1)), (NoLiMaDataset.load, {})):
        with pytest.raises(TierError, match="write '4k'"):
            load(tier=written, **extra)
    assert dataset_tier('4k').name == '4k' and dataset_tier('500').name == '500'


@pytest.mark.parametrize('written,unit,name', [('0', 1000, '0k'), ('0K', 1000, '0k'), ('1000k', 1000, '1m'),
                                               ('0.5k', 1000, '500'), ('1024k', 1024, '1m'), ('0.5k', 1024, '512')])
def test_a_dataset_tier_is_written_as_its_lengths_one_name(written, unit, name):
    with pytest.raises(TierError, match=f"tier '{written}' is not written as its canonical name: write '{name}'"):
        dataset_tier(written, unit)
    assert dataset_tier(name, unit).name == name
    load, extra = ((LongBioDataset.load, dict(cell='standard', num_samples=1)) if unit == 1024 else
                   (NoLiMaDataset.load, {}))
    with pytest.raises(TierError, match=f"write '{name}'"):
        load(tier=written, **extra)


def _longbio(tier='1k', **kw):
    d = dict(type=LongBioDataset, abbr=f'longbio_standard_{tier}', tier=tier, cell='standard')
    return dict(d, **kw)


def test_the_run_checks_report_what_the_load_refuses():
    for value in BAD_COUNTS:
        (p,) = check_run([], [_longbio(num_samples=value)])
        assert p['problem'] == f'LongBioConfigError: num_samples must be a positive integer, got {value!r}'
    (p,) = check_run([], [_longbio(num_smaples=1)])
    assert 'did you mean num_samples?' in p['problem'] and p['where'] == ['longbio_standard_1k']
    problems = [p['problem'] for p in check_run([], [_longbio('4K ')])]
    assert any("tier '4K ' is not written as its canonical name: write '4k'" in p for p in problems), problems
    (p,) = check_run([], [dict(_longbio(), abbr='longbio_standard_2k')])
    assert "names tier '2k' but its tier is '1k'" in p['problem']
    (p,) = check_run([], [dict(_longbio(), abbr='longbio_standard_1k ')])
    assert 'has spaces around it' in p['problem']
    assert check_run([], [_longbio(num_samples=2)]) == []


def test_the_plan_estimates_do_not_use_a_refused_value():
    spec = LongBioDataset.benchmark
    assert spec.size(_longbio(num_samples=-3)).rows == 800 and spec.size(_longbio(num_samples='2')).rows == 800
    assert BabilongDataset.benchmark.size(dict(tier='1k', num_samples=-3)).rows == 100
    assert NoLiMaDataset.benchmark.size(dict(tier='1k', depth_intervals='x')).rows == 58 * 5 * 26


RUN = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.longbio.longbio_1k_gen import longbio_datasets as longbio_1k
    from opencompass_longctx.configs.datasets.nolima.nolima_1k_gen import nolima_datasets as nolima_1k
    from opencompass_longctx.configs.models.longctx_tiny_chat import models
    from .longbio_4k_gen import longbio_datasets as longbio_4k     # a tier copied with TIER = '4K '

standard = [d for d in longbio_1k if d['cell'] == 'standard'][0]
datasets = [dict(standard, num_samples=v, abbr=standard['abbr'] + '_' + str(i)) for i, v in enumerate(COUNTS)]
datasets += [dict(standard, num_smaples=1), [d for d in longbio_4k if d['cell'] == 'standard'][0]]
datasets += [dict(nolima_1k[0], type=DemoNoLiMaDataset, path=NOLIMA, depth_intervals=0, haystcks=[0])]
datasets += [dict(standard, num_samples=1, abbr='longbio_standard_2k')]
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
'''


def _workspace(tmp_path, counts):
    ws = tmp_path / 'ws'
    ws.mkdir()
    tier_file = (REPO / 'opencompass_longctx' / 'configs' / 'datasets' / 'longbio' / 'longbio_4k_gen.py').read_text()
    (ws / 'longbio_4k_gen.py').write_text(tier_file.replace("TIER = '4k'", "TIER = '4K '"))
    (ws / 'run.py').write_text(RUN.replace('COUNTS', repr(counts)).replace('NOLIMA', repr(str(tmp_path / 'n'))))
    return ws


@pytest.mark.e2e
def test_the_dry_run_lists_every_refused_option_and_a_real_run_stops_before_any_task(tmp_path):
    ws = _workspace(tmp_path, BAD_COUNTS)
    env = {'LONGCTX_CACHE_DIR': str(tmp_path / 'cache'), 'LONGCTX_TINY_MODEL': str(tmp_path / 'tiny')}
    proc = run_opencompass([str(ws / 'run.py'), '--dry-run', '-w', str(tmp_path / 'dry')], tmp_path, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    (plan,) = glob.glob(str(tmp_path / 'dry' / '*' / 'plan' / 'longctx_plan.json'))
    problems = {p['problem']: p['where'] for p in json.load(open(plan))['problems']}
    for i, value in enumerate(BAD_COUNTS):
        text = f'LongBioConfigError: num_samples must be a positive integer, got {value!r}'
        assert problems.get(text) == [f'longbio_standard_1k_{i}'], (text, problems)
    assert problems["LongBioConfigError: LongBioDataset has no option 'num_smaples': did you mean num_samples?"] \
        == ['longbio_standard_1k']
    (tier,) = [w for p, w in problems.items() if "tier '4K ' is not written as its canonical name: write '4k'" in p]
    assert tier == ['longbio_standard_4K ']
    (nolima,) = [w for p, w in problems.items() if 'depth_intervals must be a positive integer' in p
                 and 'did you mean haystacks?' in p]
    assert nolima == ['nolima_main_1k']
    assert any("names tier '2k' but its tier is '1k'" in p for p in problems)
    assert 'Problems found without a GPU (0)' not in out

    proc = run_opencompass([str(ws / 'run.py'), '-w', str(tmp_path / 'real')], tmp_path, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and 'problem(s) found before any task started' in out, out[-3000:]
    assert not glob.glob(str(tmp_path / 'real' / '*' / 'predictions' / '*' / '*'))
    assert not glob.glob(str(tmp_path / 'real' / '*' / 'logs' / 'infer' / '*' / '*'))
