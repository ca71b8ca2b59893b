"""NoLiMa loader: the test grid, prompts, seeds, caching, haystack tiers and clear errors for bad input."""
import json
import os
import re
import shutil

import numpy as np
import pytest

from opencompass_longctx.nolima import dataset as nds
from opencompass_longctx.nolima import haystack as hs
from opencompass_longctx.demo import nolima_data
from opencompass_longctx.nolima.dataset import load_nolima
from opencompass_longctx.nolima.needles import NeedleSetError, NoLiMaError, load_pairs
from opencompass_longctx.nolima.prompts import TASK_TEMPLATE
from opencompass_longctx.data_files import DataIntegrityError, DataNotFoundError, write_manifest
@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp('nolima_data') / 'nolima'
    nolima_data.write(str(root), book_tokens=4000, long_book_tokens=9000)
    return root


def _copy(data_dir, tmp_path):
    dst = tmp_path / 'copy'
    shutil.copytree(data_dir, dst)
    return dst


def test_one_tier_is_58_pairs_x_26_depths_x_5_books(data_dir):
    ds = load_nolima('1k', path=str(data_dir))
    assert len(ds) == 58 * 26 * 5 == 7540
    assert set(ds['context_length']) == {1000} and set(ds['tier']) == {'1k'}
    assert len(set(ds['pair'])) == 58 and set(ds['haystack']) == {f'rand_book_{i}' for i in range(1, 6)}
    assert sorted(set(ds['depth_index'])) == list(range(26))
    assert np.allclose(sorted(set(ds['depth'])), np.linspace(0, 1, 26))
    assert set(ds['haystack_tier']) == {'rand_shuffle'} and set(ds['canonical_length']) == {False}
    # rows are in (pair, haystack, depth) order and each is its own test
    assert ds[0]['pair'] == ds[129]['pair'] != ds[130]['pair'] and ds[25]['haystack'] != ds[26]['haystack']


def test_tiers_map_to_1000_based_lengths_and_depth_counts(data_dir):
    for tier, L in (('250', 250), ('500', 500), ('2k', 2000)):
        ds = load_nolima(tier, path=str(data_dir), pairs=1, haystacks=[0])
        assert set(ds['context_length']) == {L} and len(ds) == 26
    ds = load_nolima('4k', path=str(data_dir), pairs=1, haystacks=[0], depth_intervals=11)
    assert len(ds) == 11
    assert hs.default_depth_intervals(32000) == 26 and hs.default_depth_intervals(64000) == 11


def test_prompts_names_and_seeds_follow_the_authors(data_dir):
    ds = load_nolima('500', path=str(data_dir), pairs=['0102Inv_T02_C02_twohop', '0103_T01_C03_onehop'])
    pairs = {p.name: p for p in load_pairs(str(data_dir / 'needlesets' / 'needle_set.json'), 'main')}
    rows = list(ds)
    assert len(rows) == 2 * 5 * 26
    for start in range(0, len(rows), 26):
        block = rows[start:start + 26]
        p, h = pairs[block[0]['pair']], block[0]['haystack_index']
        # the legacy global NumPy generator, seeded as the authors do: 42 + int(id[:4]) + haystack index
        np.random.seed(42 + int(p.entry_id[:4]) + h)
        names = [np.random.choice(p.character_set) for _ in range(26)]
        assert [r['character'] for r in block] == names
        assert all(r['seed'] == 42 + p.group + h for r in block)
    for r in rows:
        p = pairs[r['pair']]
        needle = p.needle.replace('{CHAR}', r['character'])
        assert r['needle'] == needle and json.loads(r['gold_answers']) == [r['character']] == [r['answer']]
        head, tail = TASK_TEMPLATE.split('{haystack}')
        assert r['prompt'].startswith(head) and r['prompt'].endswith(tail.format(question=r['question']))
        haystack = r['prompt'][len(head):len(r['prompt']) - len(tail.format(question=r['question']))]
        assert haystack.count(' ' + needle + '\n') == 1
        assert '{CHAR}' not in r['prompt'] and '{1}' not in r['prompt']
    # default and inverted entries of a group share the seed, hence the name sequence
    inv = load_nolima('500', path=str(data_dir), pairs=['0102_T02_C02_twohop'], haystacks=[2])
    inv2 = load_nolima('500', path=str(data_dir), pairs=['0102Inv_T02_C02_twohop'], haystacks=[2])
    assert inv['character'] == inv2['character']


def test_cot_set_uses_its_own_template_and_mc_puts_the_name_in_the_question(data_dir):
    cot = load_nolima('250', needle_set='cot', path=str(data_dir), pairs=1, haystacks=[0], depth_indices=[5])
    (entry,) = [e for e in json.load(open(data_dir / 'needlesets' / 'needle_set_w_CoT.json'))
                if e['id'] == '0101']
    r = cot[0]
    assert r['prompt'].startswith(entry['task_template'].split('{haystack}')[0])
    assert r['prompt'].endswith(entry['task_template'].split('{question}')[1])
    mc = load_nolima('250', needle_set='mc', path=str(data_dir), pairs=3, haystacks=[1])
    assert all(r['character'] in r['question'] and r['question'].count(',') == 2 for r in mc)


def test_subsets_are_slices_of_the_full_grid(data_dir):
    full = load_nolima('1k', path=str(data_dir), needle_set='distractor')
    sub = load_nolima('1k', path=str(data_dir), needle_set='distractor', pairs=['0105_T03_C05_twohop'],
                      haystacks=[3], depth_indices=[2, 17])
    want = [r for r in full.select_columns(['pair', 'haystack_index', 'depth_index', 'prompt', 'character',
                                           'distractor_depth'])
            if r['pair'] == '0105_T03_C05_twohop' and r['haystack_index'] == 3 and r['depth_index'] in (2, 17)]
    assert [(r['prompt'], r['character'], r['distractor_depth']) for r in want] == \
        [(r['prompt'], r['character'], r['distractor_depth']) for r in sub]
    assert all(r['distractor'] and r['prompt'].count(r['distractor']) == 1 for r in sub)


def test_distractor_variant_draws_between_names(data_dir):
    """The distractor-depth draw consumes the same generator between name draws (authors' call order)."""
    ds = load_nolima('2k', path=str(data_dir), needle_set='distractor', pairs=1, haystacks=[0])
    pool = json.load(open(data_dir / 'needlesets' / 'needle_set_w_Distractor.json'))[0]['character_set']
    rng = np.random.RandomState(42 + 101 + 0)  # pair 0101_T01_C01_onehop, haystack 0
    names, dds = [], []
    for d in np.linspace(0, 1, 26):
        names.append(str(rng.choice(pool)))
        dds.append(hs.draw_distractor_depth(rng, float(d), 2000))
    assert ds['character'] == names and np.allclose(ds['distractor_depth'], dds)
    plain = load_nolima('2k', path=str(data_dir), pairs=1, haystacks=[0])
    assert plain['character'] != names  # without the extra draws the names differ


def test_built_once_then_served_from_the_cache(data_dir, monkeypatch):
    hs._MEMO.clear()  # (this test's cache directory starts empty)
    first = load_nolima('500', path=str(data_dir), pairs=4)
    calls = []
    monkeypatch.setattr(nds, 'build_rows', lambda *a, **k: calls.append(1) or iter(()))
    monkeypatch.setattr(hs, 'preprocess', lambda *a, **k: calls.append(2))
    hs._MEMO.clear()
    again = load_nolima('500', path=str(data_dir), pairs=4)
    assert not calls and again['prompt'] == first['prompt']
    with pytest.raises(ValueError, match='no rows'):  # anything else is a new key: a new build
        load_nolima('500', path=str(data_dir), pairs=5)
    assert calls == [1]


def test_books_are_tokenised_once_per_tokenizer_whatever_the_number_of_tests(data_dir, monkeypatch):
    calls = []
    real = hs.preprocess
    monkeypatch.setattr(hs, 'preprocess', lambda p, t: calls.append(os.path.basename(p)) or real(p, t))
    hs._MEMO.clear()
    load_nolima('1k', path=str(data_dir))               # 7,540 tests
    load_nolima('500', path=str(data_dir), needle_set='hard')
    assert sorted(calls) == [f'rand_book_{i}.txt' for i in range(1, 6)]


def test_hf_tokenizer_counts_lengths_and_is_canonical(data_dir, tiny_model_dir):
    ds = load_nolima('500', path=str(data_dir), tokenizer=tiny_model_dir, pairs=1, haystacks=[0, 1])
    assert set(ds['canonical_length']) == {True} and ds[0]['length_tokenizer'] == os.path.abspath(tiny_model_dir)
    from opencompass_longctx.tokenizer.counting import get_tokenizer
    tok = get_tokenizer(tiny_model_dir)
    for r in ds:
        if r['depth_index'] in (0, 25):
            continue
        hay = r['prompt'].split('book snippet:\n\n', 1)[1].rsplit('\n\nUse the information', 1)[0]
        n = len(tok.encode(hay.replace(' ' + r['needle'] + '\n', '\n')))
        assert abs(n - 500) <= 3  # decoded and re-encoded: within a few tokens of L


def test_prompt_tokens_estimate_is_close_to_the_real_count(data_dir):
    from opencompass_longctx.tokenizer.counting import get_tokenizer
    tok = get_tokenizer(None)
    ds = load_nolima('1k', path=str(data_dir), pairs=3, haystacks=[4])
    for r in ds:
        assert abs(len(tok.encode(r['prompt'])) - r['prompt_tokens_approx']) <= 4


def test_auto_tier_switches_to_the_long_books_and_records_it(data_dir):
    ds = load_nolima('8k', path=str(data_dir), pairs=1, haystacks=[0], depth_indices=[0, 25])
    assert set(ds['haystack_tier']) == {'rand_shuffle_long'}
    with pytest.raises(hs.HaystackTooShortError, match=r'holds \d+ tokens .*needs \d+ \(\d+ more\)'):
        load_nolima('8k', path=str(data_dir), pairs=1, haystack_tier='rand_shuffle')


def test_tier_longer_than_every_book_says_by_how_much(data_dir, tmp_path):
    with pytest.raises(hs.HaystackTooShortError) as e:
        load_nolima('16k', path=str(data_dir), pairs=1)
    msg = str(e.value)
    assert msg.startswith('no haystack tier holds this length')
    for tier in ('rand_shuffle', 'rand_shuffle_long'):
        assert re.search(rf'  {tier}: haystack too short for L=16000: \S*/{tier}/rand_book_1.txt holds \d+ tokens', msg)
    d = _copy(data_dir, tmp_path)
    shutil.rmtree(d / 'haystack' / 'rand_shuffle_long')
    with pytest.raises(hs.HaystackTooShortError) as e:
        load_nolima('8k', path=str(d), pairs=1)
    assert 'more)' in str(e.value) and 'The longer tier is not available either' in str(e.value)
    assert 'rand_shuffle_long/rand_book_1.txt' in str(e.value)


def test_missing_and_partial_data_directories_list_the_files(data_dir, tmp_path):
    with pytest.raises(DataNotFoundError) as e:
        load_nolima('1k', path=str(tmp_path / 'nowhere'))
    msg = str(e.value)
    assert 'needlesets/needle_set.json' in msg and 'huggingface-cli download amodaresi/NoLiMa' in msg
    assert '--revision 378115b1f136b6ba78f90f78682bc55f70ec3ddd' in msg and 'non-commercial' in msg
    d = _copy(data_dir, tmp_path)
    os.remove(d / 'haystack' / 'rand_shuffle' / 'rand_book_3.txt')
    os.remove(d / 'haystack' / 'rand_shuffle' / 'rand_book_5.txt')
    with pytest.raises(DataNotFoundError) as e:
        load_nolima('1k', path=str(d))
    msg = str(e.value)
    assert 'is incomplete' in msg and 'rand_book_3.txt' in msg and 'rand_book_5.txt' in msg
    assert 'rand_book_1.txt' not in msg
    os.remove(d / 'needlesets' / 'needle_set_MC.json')
    with pytest.raises(DataNotFoundError, match='needle_set_MC.json'):
        load_nolima('1k', path=str(d), needle_set='mc', haystacks=[0])


def test_data_root_from_compass_data_cache_and_authors_data_prefix(data_dir, tmp_path, monkeypatch):
    root = tmp_path / 'cache_root'
    shutil.copytree(data_dir, root / 'nolima' / 'data')  # the authors' scripts download under data/
    monkeypatch.setenv('COMPASS_DATA_CACHE', str(root))
    ds = load_nolima('250', pairs=1, haystacks=[0])
    assert len(ds) == 26


def test_a_file_that_does_not_match_its_sha256_is_refused(data_dir, tmp_path):
    d = _copy(data_dir, tmp_path)
    write_manifest(str(d))
    assert len(load_nolima('250', path=str(d), pairs=1)) == 130
    book = d / 'haystack' / 'rand_shuffle' / 'rand_book_2.txt'
    book.write_text(book.read_text(encoding='utf-8').replace('the', 'teh', 1), encoding='utf-8')
    with pytest.raises(DataIntegrityError, match=r'rand_book_2.txt does not match its manifest'):
        load_nolima('250', path=str(d), pairs=1)
    needles = d / 'needlesets' / 'needle_set.json'
    needles.write_text(needles.read_text(encoding='utf-8') + ' ', encoding='utf-8')
    with pytest.raises(DataIntegrityError, match='needle_set.json'):
        load_nolima('250', path=str(d), pairs=1, haystacks=[0])


def test_a_malformed_needle_entry_is_named_by_the_loader(data_dir, tmp_path):
    d = _copy(data_dir, tmp_path)
    f = d / 'needlesets' / 'needle_set.json'
    entries = json.load(open(f))
    del entries[3]['tests']['T02_C02']['input_args']
    f.write_text(json.dumps(entries))
    with pytest.raises(NeedleSetError, match=r"needle_set.json: entry #3 \(id '0102Inv'\): test 'T02_C02' needs"):
        load_nolima('1k', path=str(d))


@pytest.mark.parametrize('kwargs,match', [
    (dict(needle_set='easy'), "unknown NoLiMa variant 'easy'"),
    (dict(placement='middle'), "unknown placement 'middle'"),
    (dict(haystack_tier='rand'), "unknown haystack_tier 'rand'"),
    (dict(placement='static'), 'needs static_depth'),
    (dict(needle_set='distractor', placement='last2k'), 'distractor variant needs the standard placement'),
    (dict(haystacks=[7]), r'haystacks must be a non-empty list of indices in \[0, 5\)'),
    (dict(depth_indices=[26]), r'depth_indices must be'),
    (dict(pairs=['nope']), 'unknown pair name'),
    (dict(tier='0k'), 'has no haystack tokens'),
    (dict(tier='12q'), "unknown tier '12q'"),
])
def test_bad_arguments_are_refused_clearly(data_dir, kwargs, match):
    kwargs = dict(dict(tier='1k', path=str(data_dir)), **kwargs)
    with pytest.raises(ValueError, match=match):
        load_nolima(**kwargs)


def test_prompts_that_would_not_fit_the_model_are_refused(data_dir):
    with pytest.raises(NoLiMaError, match=r'does not fit max_seq_len=1100.*cut the start of the prompt'):
        load_nolima('1k', path=str(data_dir), max_seq_len=1100)
    assert len(load_nolima('1k', path=str(data_dir), max_seq_len=1600, pairs=1, haystacks=[0])) == 26


def test_last2k_placement_keeps_the_needle_a_fixed_distance_from_the_end(data_dir):
    a = load_nolima('1k', path=str(data_dir), placement='last2k', aligned_tokens=500, pairs=1, haystacks=[0])
    b = load_nolima('2k', path=str(data_dir), placement='last2k', aligned_tokens=500, pairs=1, haystacks=[0])
    assert set(a['placement']) == {'last2k'} and len(set(a['line_break'])) == 1 == len(set(b['line_break']))
    for ra, rb in zip(a, b):
        tail = lambda r: r['prompt'].split(' ' + r['needle'] + '\n', 1)[1]  # noqa: E731
        assert tail(ra) == tail(rb)
        assert 1000 - ra['needle_token_depth'] == 2000 - rb['needle_token_depth']


def test_name_collisions_with_the_haystack_are_warned_about(data_dir, tmp_path):
    d = _copy(data_dir, tmp_path)
    book = d / 'haystack' / 'rand_shuffle' / 'rand_book_4.txt'
    book.write_text(book.read_text(encoding='utf-8').replace('the doctor', 'Ingrid', 1), encoding='utf-8')
    with pytest.warns(UserWarning, match=r"rand_book_4': \['Ingrid'\]"):
        load_nolima('250', path=str(d), pairs=1)


def test_the_demo_type_writes_the_stand_in_data_once_and_the_loader_refuses_the_old_flag(tmp_path):
    from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
    from opencompass_longctx.nolima.dataset import NoLiMaDataset
    root = tmp_path / 'demo' / 'nolima'
    kw = dict(tier='250', path=str(root), pairs=2, haystacks=[0], depth_indices=[0, 13])
    ds = DemoNoLiMaDataset.load(**kw)
    needles = root / 'needlesets' / 'needle_set_w_Distractor.json'
    assert len(ds) == 4 and needles.is_file()
    needles.write_text('[]', encoding='utf-8')        # not written again: the files are there
    assert DemoNoLiMaDataset.load(**kw)['prompt'] == ds['prompt'] and needles.read_text(encoding='utf-8') == '[]'
    assert NoLiMaDataset.load(**kw)['prompt'] == ds['prompt']     # the production loader on the same files
    with pytest.raises(NoLiMaError, match='DemoNoLiMaDataset needs path='):
        DemoNoLiMaDataset.load(tier='250')
    with pytest.raises(NoLiMaError, match=r"has no option 'sample_data'"):
        NoLiMaDataset.load(sample_data=True, **kw)


def test_opencompass_dataset_class_matches_basedataset_without_copying_prompts(data_dir):
    from opencompass.datasets.base import BaseDataset

    class Reference(BaseDataset):  # OpenCompass's own __init__ (Dataset.map over every row)
        @staticmethod
        def load(**kw):
            return load_nolima(**kw)
    kw = dict(reader_cfg=dict(input_columns=['prompt'], output_column='answer'), abbr='nolima_main_500',
              tier='500', path=str(data_dir), pairs=2, haystacks=[1])
    for n in (1, 2):
        ours, ref = nds.NoLiMaDataset(n=n, **kw), Reference(n=n, **kw)
        assert ours.test.features == ref.test.features and ours.test.to_list() == ref.test.to_list()
    assert set(ours.test['subdivision']) == {'nolima_main_500'} and ours.test['idx'][:3] == [0, 1, 2]


def test_opt_in_download_fetches_missing_files_at_the_pinned_revision(data_dir, tmp_path, monkeypatch):
    from opencompass_longctx.nolima import data as ndata
    fetched = []

    def fake_fetch(source, rel, revision=None, path=None):  # stands in for the Hugging Face hub
        fetched.append((source.hub_repo, rel, revision))
        dst = os.path.join(path, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(data_dir / rel, dst)
        return dst
    monkeypatch.setattr(ndata, 'fetch', fake_fetch)
    target = tmp_path / 'dl'
    with pytest.raises(DataNotFoundError):
        load_nolima('250', path=str(target), pairs=1)  # no download unless asked
    assert not fetched
    ds = load_nolima('250', path=str(target), pairs=1, download=True)
    assert len(ds) == 130
    assert sorted(r for _, r, _ in fetched) == ['haystack/rand_shuffle/rand_book_%d.txt' % i for i in range(1, 6)] + \
        ['needlesets/needle_set.json']
    assert {(h, rev) for h, _, rev in fetched} == {('amodaresi/NoLiMa', '378115b1f136b6ba78f90f78682bc55f70ec3ddd')}
    fetched.clear()
    os.remove(target / 'haystack' / 'rand_shuffle' / 'rand_book_4.txt')  # a partial directory is completed
    monkeypatch.setenv('LONGCTX_DOWNLOAD', '1')
    assert len(load_nolima('250', path=str(target), pairs=1)) == 130
    assert [r for _, r, _ in fetched] == ['haystack/rand_shuffle/rand_book_4.txt']


def test_the_tier_is_parsed_once(data_dir, monkeypatch):
    from opencompass_longctx import tiers
    calls = []
    real = tiers._parse
    monkeypatch.setattr(tiers, '_parse', lambda text: calls.append(text) or real(text))
    ds = load_nolima('250', path=str(data_dir), pairs=1, haystacks=[0])   # ('0.25k' is refused: its name is 250)
    assert calls == ['250'] and set(ds['context_length']) == {250} and set(ds['tier']) == {'250'}
