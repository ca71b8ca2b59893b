import json
import os
import subprocess
import sys

import pytest

from opencompass_longctx.babilong import generator as G
from opencompass_longctx.babilong.dataset import load_babilong
from opencompass_longctx.babilong.data import BabilongDataError
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.tokenizer.counting import get_tokenizer
def test_parse_babi_one_sample_per_question(babi_inputs):
    stories = G.parse_babi(G.babi_file(babi_inputs[0], 'qa1'))
    assert len(stories) == 40  # 20 stories x 2 questions
    first, second = stories[0], stories[1]
    assert first.story == second.story == 0 and stories[2].story == 1
    assert second.facts[:len(first.facts)] == first.facts and len(second.facts) > len(first.facts)
    assert first.question.startswith('Where is') and first.question.endswith('? ')
    assert stories[2].facts == G.parse_babi(G.babi_file(babi_inputs[0], 'qa1'))[2].facts


def test_max_n_facts_and_the_len_off_by_one(babi_inputs):
    stories = G.parse_babi(G.babi_file(babi_inputs[0], 'qa2'))
    allowed = G.eligible(stories, parse_tier('1k'), fix_len_off_by_one=True)
    assert allowed == list(range(len(stories)))  # 1k: up to 87 facts
    assert G.eligible(stories, parse_tier('1k')) == allowed[:-1]  # the authors drop the last sample
    tiny = G.eligible(stories, parse_tier('350'), fix_len_off_by_one=True)  # 50 tokens -> at most 6 facts
    assert tiny and all(len(stories[i].facts) <= 6 for i in tiny) and len(tiny) < len(stories)


@pytest.mark.parametrize('tier', ['0k', '2k', '5k'])
def test_facts_in_order_and_length_within_one_percent_below(babi_inputs, tier):
    gen = G.Generator(*babi_inputs)
    gpt2 = get_tokenizer('tiktoken:gpt2')
    tier = parse_tier(tier)
    target = max(G.sample_size(tier), 0)
    for i, story_index in enumerate(gen.questions('qa3', tier, 4)):
        s = gen.make('qa3', tier, i, story_index)
        story = gen.stories('qa3')[story_index]
        pos = 0
        for fact in story.facts:  # every fact, in the story's order
            pos = s['input'].index(fact, pos) + len(fact)
        assert s['question'] == story.question and s['target'] == story.answer
        assert s['generation']['tokens'] == (target or s['generation']['tokens'])
        if target:
            n = gpt2.count(s['input'])
            assert 0.99 * target <= n <= target, (n, target)
        else:
            assert s['input'] == ' '.join(story.facts)


def test_background_comes_from_the_books_in_whole_sentences(babi_inputs):
    gen = G.Generator(*babi_inputs)
    s = gen.make('qa1', parse_tier('2k'), 0, gen.questions('qa1', parse_tier('2k'), 1)[0])
    books = ''.join(open(os.path.join(babi_inputs[1], b)).read() for b in sorted(os.listdir(babi_inputs[1])))
    facts = set(gen.stories('qa1')[s['generation']['story'] * 2].facts) | set(
        gen.stories('qa1')[s['generation']['story'] * 2 + 1].facts)
    sentences = [x for x in G.split_sentences(s['input'].encode(), False)[0].decode().split('. ') if x]
    body = [x.strip() for x in sentences[:-1] if x.strip() + '.' not in facts]
    assert body and all(x in books for x in body)
    assert s['generation']['background'] and s['generation']['background'][0][0].startswith('book_')


def _run_cli(out, babi_inputs, hashseed):
    env = dict(os.environ, PYTHONHASHSEED=str(hashseed), LONGCTX_PROGRESS='0')
    subprocess.run([sys.executable, '-m', 'opencompass_longctx.babilong.generator', str(out),
                    '--babi-dir', babi_inputs[0], '--background-dir', babi_inputs[1], '--tiers', '3k', '1k',
                    '--tasks', 'qa1', 'qa8', '--samples', '3'], check=True, env=env, capture_output=True)


@pytest.mark.e2e
def test_cli_is_byte_identical_across_processes_and_hash_seeds(tmp_path, babi_inputs):
    _run_cli(tmp_path / 'a', babi_inputs, 1)
    _run_cli(tmp_path / 'b', babi_inputs, 2)
    files = sorted(os.path.relpath(os.path.join(d, f), tmp_path / 'a')
                   for d, _, fs in os.walk(tmp_path / 'a') for f in fs)
    assert 'data/qa8/3k.json' in files and G.MANIFEST_NAME in files
    for f in files:
        assert (tmp_path / 'a' / f).read_bytes() == (tmp_path / 'b' / f).read_bytes(), f
    manifest = json.loads((tmp_path / 'a' / G.MANIFEST_NAME).read_text())
    assert manifest['generator']['tokenizer'] == 'tiktoken:gpt2' and manifest['generator']['seed'] == 0
    assert set(manifest['inputs']) >= {'qa1_single-supporting-fact_test.txt', 'book_00.txt'}
    samples = manifest['outputs']['data/qa1/3k.json']['samples']
    assert len(samples) == 3 and all(s['tokens'] == 2700 and s['background'] for s in samples)
    # the loader reads the written layout for a tier BABILong does not publish, and labels it
    ds = load_babilong(tier='3k', task='qa8', path=str(tmp_path / 'a'))
    assert len(ds) == 3 and ds[0]['sample_source'] == 'generated'


def test_loader_generates_a_missing_tier_through_the_cache(babi_inputs, monkeypatch):
    kw = dict(tier='3k', task='qa2', babi_dir=babi_inputs[0], background_dir=babi_inputs[1], num_samples=3)
    ds = load_babilong(**kw)
    assert len(ds) == 3 and set(ds['sample_source']) == {'generated'} and set(ds['tier']) == {'3k'}
    assert all(json.loads(g)['tokens'] == 2700 for g in ds['generation'])
    monkeypatch.setattr(G.Generator, 'make', lambda *a, **k: pytest.fail('regenerated instead of cached'))
    assert load_babilong(**kw).to_list() == ds.to_list()
    monkeypatch.setenv('BABI_DIR', babi_inputs[0])
    monkeypatch.setenv('PG19_DIR', babi_inputs[1])
    assert load_babilong(tier='3k', task='qa2', num_samples=3).to_list() == ds.to_list()


def test_missing_tier_without_inputs_says_what_to_provide(tmp_path):
    with pytest.raises(BabilongDataError, match='babi_dir=.*background_dir=.*BABI_DIR'):
        load_babilong(tier='192k', task='qa1', path=str(tmp_path))


@pytest.mark.parametrize('content', ['not a babi line\n', '1 Mary went home.\n'])
def test_bad_generator_inputs(tmp_path, babi_inputs, content):
    bad = tmp_path / 'bad'
    bad.mkdir()
    (bad / 'qa1_single-supporting-fact_test.txt').write_text(content)
    with pytest.raises(G.GeneratorInputError, match='qa1_single-supporting-fact_test.txt'):
        G.Generator(str(bad), babi_inputs[1]).stories('qa1')
    with pytest.raises(G.GeneratorInputError, match='no bAbI test file for qa5'):
        G.Generator(str(bad), babi_inputs[1]).stories('qa5')
    with pytest.raises(G.GeneratorInputError, match='background_dir'):
        G.Generator(str(bad), str(tmp_path / 'nope'))
    (tmp_path / 'empty').mkdir()
    with pytest.raises(G.GeneratorInputError, match='no background books'):
        G.Generator(babi_inputs[0], str(tmp_path / 'empty')).make('qa1', parse_tier('2k'), 0, 0)
