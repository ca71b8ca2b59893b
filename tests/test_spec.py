"""Each benchmark's spec: found from a dataset config's type, sized (estimate, or exact from the build
record), its data checked with actionable problems, its tables as data."""
import pytest

from opencompass_longctx.babilong.dataset import BabilongDataset
from opencompass_longctx.cache import record_build
from opencompass_longctx.spec import BenchmarkSpec, all_specs, check_tokenizer, spec_of, load_kwargs, summary_tables
from opencompass_longctx.longbio.dataset import LongBioDataset
from opencompass_longctx.nolima.dataset import NoLiMaDataset
def test_every_room_has_a_spec_on_its_dataset_class():
    specs = {f.name: f for f in all_specs()}
    assert sorted(specs) == ['babilong', 'longbio', 'nolima']
    for cls in (BabilongDataset, LongBioDataset, NoLiMaDataset):
        assert isinstance(cls.benchmark, BenchmarkSpec) and cls.benchmark.dataset_type == cls.__name__
        assert specs[cls.benchmark.name] is cls.benchmark
    assert [f.tier_unit for f in all_specs()] == [1000, 1024, 1000]


def test_a_spec_is_found_from_a_class_a_dotted_path_or_a_lazy_object():
    from mmengine.config.lazy import LazyObject
    assert spec_of(dict(type=NoLiMaDataset)) is NoLiMaDataset.benchmark
    assert spec_of(dict(type='opencompass_longctx.longbio.dataset.LongBioDataset')) is LongBioDataset.benchmark
    assert spec_of(dict(type=str(LongBioDataset))) is LongBioDataset.benchmark      # "<class '...'>"
    assert spec_of(dict(type=LazyObject('opencompass_longctx.babilong.dataset', 'BabilongDataset'))) \
        is BabilongDataset.benchmark
    # a subclass (the demo's types) keeps its parent's spec
    from opencompass_longctx.demo.datasets import DemoBabilongDataset
    assert spec_of(dict(type=DemoBabilongDataset)) is BabilongDataset.benchmark
    for other in ('opencompass.datasets.GSM8KDataset', 'BabilongDataset', 'no.such.Module', None, dict):
        assert spec_of(dict(type=other)) is None


def test_sizes_by_the_tier_arithmetic():
    b, lb, nl = BabilongDataset.benchmark, LongBioDataset.benchmark, NoLiMaDataset.benchmark
    assert b.size(dict(tier='32k', sample_source='official')).rows == 1000
    assert b.size(dict(tier='64k', sample_source='official')).rows == 100
    s = b.size(dict(tier='4k', task='qa1', num_samples=7))
    assert (s.rows, s.row_tokens, s.prompt_tokens, s.exact, s.tier.name) == (7, 4000, 28000, False, '4k')
    assert b.size(dict(tier='0k')).row_tokens == 2000
    s = lb.size(dict(tier='8k', cell='idk', num_samples=10, reserve_tokens=512))
    assert (s.tier_tokens, s.rows, s.row_tokens) == (8192, 20, 8192 - 512)
    assert lb.size(dict(tier='0k', cell='rank_5', num_samples=1)).row_tokens == 2129
    assert nl.size(dict(tier='1k')).rows == 58 * 5 * 26
    assert nl.size(dict(tier='64k', needle_set='hard', haystacks=[0, 1])).rows == 10 * 2 * 11
    assert nl.size(dict(tier='2k', pairs=3, depth_indices=[0, 1])).row_tokens == 2150
    assert nl.data_tokenizer({'tier': '1k'}) == 'tiktoken:cl100k_base'
    assert b.data_tokenizer({'tier': '1k', 'tokenizer': 'x'}) == 'tiktoken:gpt2'
    assert lb.data_tokenizer({'tier': '1k', 'tokenizer': 'default'}) == 'tiktoken:qwen2'


def test_a_build_record_makes_the_size_exact():
    from datasets import Dataset
    d = dict(type=BabilongDataset, abbr='babilong_qa1_1k', tier='1k', task='qa1', path='somewhere')
    spec = spec_of(d)
    assert not spec.size(d).exact
    record_build(spec.dataset_type, load_kwargs(d), Dataset.from_dict({'prompt_tokens': [900, 950, 10]}),
                 spec.tokens_column)
    s = spec.size(d)
    assert (s.exact, s.rows, s.prompt_tokens, s.row_tokens) == (True, 3, 1860, 1000)
    assert not spec.size(dict(d, task='qa2')).exact     # another dataset, another record


def test_missing_data_is_a_problem_that_names_the_download(tmp_path):
    missing = str(tmp_path / 'nothing-here')
    (problem,) = BabilongDataset.benchmark.problems(dict(tier='4k', task='qa1', path=missing))
    assert 'huggingface-cli download RMT-team/babilong' in problem
    (problem,) = BabilongDataset.benchmark.problems(dict(tier='192k', task='qa1', sample_source='generated'))
    assert problem.startswith('BABILong 192k is generated: it needs babi_dir / $BABI_DIR (not set)')
    (problem,) = NoLiMaDataset.benchmark.problems(dict(tier='1k', path=missing))
    assert 'DataNotFoundError' in problem and 'huggingface-cli download amodaresi/NoLiMa' in problem
    assert LongBioDataset.benchmark.problems(dict(tier='1k', cell='standard')) == []
    assert check_tokenizer(str(tmp_path / 'tok')) == [f"tokenizer {str(tmp_path / 'tok')!r} does not exist (give the "
                                                      "evaluated model's tokenizer directory)"]


def test_nolima_data_present_is_no_problem(tmp_path):
    from opencompass_longctx.demo import nolima_data
    nolima_data.write(str(tmp_path / 'n'), book_tokens=2000)
    assert NoLiMaDataset.benchmark.problems(dict(tier='1k', path=str(tmp_path / 'n'))) == []
    assert NoLiMaDataset.benchmark.sample_text(dict(tier='1k', path=str(tmp_path / 'n')))


@pytest.mark.parametrize('cell,tier,reserve,fits', [('multihop_5', '2k', 512, False), ('multihop_5', '2k', 0, True),
                                                    ('standard', '2k', 512, True), ('multi_standard_10', '4k', 0, False),
                                                    ('multi_standard_10', '0k', 512, True)])
def test_longbio_cells_that_cannot_fit_a_tier(cell, tier, reserve, fits):
    why = LongBioDataset.benchmark.fits(dict(cell=cell, tier=tier, reserve_tokens=reserve))
    assert (why is None) == fits
    if not fits:
        assert why.startswith(f'LongBioBench {cell} needs ')
    assert BabilongDataset.benchmark.fits(dict(tier='1k')) is None


def test_the_summary_tables_come_from_the_specs():
    from opencompass_longctx.leaderboard.benchmarks import BENCHMARKS
    assert [b.name for b in summary_tables()] == ['babilong', 'longbio', 'nolima', 'longbio_strict']
    assert BENCHMARKS == summary_tables()
    nolima = NoLiMaDataset.benchmark.summary[0]
    assert nolima.match('nolima_main_4k@qwen') == ('main', '4k') and nolima.base_tiers == ('250', '500', '1k')
    assert [r.name for r in LongBioDataset.benchmark.summary[0].rows] == ['understanding', 'reasoning',
                                                                          'trustworthiness', 'mean']
