"""LongBioBench generator: determinism, token-exact lengths, layout, density/depth, bad input."""
import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS, LONGBIO_NEED_TOKENS
from opencompass_longctx.longbio.generator import (IDK_COMPAT_SHORTFALL, Generator, TierTooSmallError, generate,
                                                   cell_settings)
from opencompass_longctx.longbio.cells import LongBioConfigError
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.tokenizer.counting import TokenizerError, get_tokenizer
CELLS = [c['cell'] for c in LONGBIO_CELLS]
TOK = get_tokenizer('tiktoken:qwen2')


def rows_of(tier, cell, mode='compat', k=2, **kw):
    return list(generate(cell_settings(tier, cell=cell, mode=mode, **kw), k))


def real_tokens(r):
    return TOK.count(r['system']) + TOK.count(r['user']) + TOK.count(r['prefix'])


def fits(tier, cell, k=3):
    """The cell's needles and prompt leave at least 10% of the tier for the haystack (so it can be filled)."""
    gen = Generator(cell_settings(tier, cell=cell))
    return max(gen.needed_tokens(i) for i in range(k)) <= 0.9 * gen.settings.budget


_DIGEST = r'''
import hashlib, json, sys
from opencompass_longctx.longbio.generator import generate, cell_settings
from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS, LONGBIO_NEED_TOKENS
h = hashlib.sha256()
for c in LONGBIO_CELLS:
    for mode in ('compat', 'strict'):
        for r in generate(cell_settings('8k', cell=c['cell'], mode=mode), 2):
            h.update(json.dumps(r, sort_keys=True, ensure_ascii=False).encode())
print(h.hexdigest())
'''


@pytest.mark.e2e
def test_byte_identical_across_processes_and_hash_seeds():
    digests = []
    for seed in ('0', '4242'):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, '-c', _DIGEST], env=env, capture_output=True, text=True, check=True)
        digests.append(out.stdout.strip())
    assert len(digests[0]) == 64 and digests[0] == digests[1]
    # and the same bytes in this process
    h = hashlib.sha256()
    for c in LONGBIO_CELLS:
        for mode in ('compat', 'strict'):
            for r in rows_of('8k', c['cell'], mode):
                h.update(json.dumps(r, sort_keys=True, ensure_ascii=False).encode())
    assert h.hexdigest() == digests[0]


def test_other_seed_gives_other_data_and_the_seed_is_recorded():
    a, b = rows_of('2k', 'standard', seed=1), rows_of('2k', 'standard', seed=2)
    assert a[0]['user'] != b[0]['user'] and a[0]['seed'] != b[0]['seed']
    assert json.loads(a[0]['params'])['seed'] == 1


@pytest.mark.parametrize('tier,k', [('2k', 3), ('8k', 2), ('128k', 1)])
def test_real_length_is_recorded_and_within_one_percent_below_the_budget(tier, k):
    budget = {'2k': 2048, '8k': 8192, '128k': 131072}[tier]
    checked = 0
    for cell in CELLS:
        if not fits(tier, cell):
            continue
        for mode in ('compat', 'strict'):
            rows = rows_of(tier, cell, mode, k)
            for r in rows:
                assert r['prompt_tokens'] == real_tokens(r), (cell, mode, r['row'])   # the recorded length is real
                assert r['tier_tokens'] == r['budget_tokens'] == budget
                assert r['prompt_tokens'] <= budget, (cell, mode)
                low = budget - budget // 100
                if cell == 'idk' and mode == 'compat' and r['row'] == 'unanswerable':
                    low -= IDK_COMPAT_SHORTFALL   # the stated exception (the answerable context minus a sentence)
                assert r['prompt_tokens'] >= low, (cell, mode, r['sample'], r['prompt_tokens'])
                checked += 1
    assert checked >= 2 * k * sum(fits(tier, c) for c in CELLS)


def test_idk_pairs_share_their_context_minus_the_answer_sentence():
    for mode in ('compat', 'strict'):
        for r_ans, r_un in zip(*[iter(rows_of('8k', 'idk', mode, 3))] * 2):
            assert (r_ans['row'], r_un['row']) == ('answerable', 'unanswerable')
            value = r_ans['answer']
            ctx_a = r_ans['user'].split('\n\n')[0]
            ctx_u = r_un['user'].split('\n\n')[0]
            assert value in ctx_a and value not in ctx_u
            # exactly one sentence (the answer) differs
            sa, su = ctx_a.split('. '), ctx_u.split('. ')
            assert len(sa) == len(su) + 1 and all(s in sa for s in su)
            assert r_un['prompt_tokens'] < r_ans['prompt_tokens'] <= 8192


@pytest.mark.parametrize('tier', ['1k', '2k', '8k'])
def test_the_readme_length_claim_holds_as_stated(tier):
    """README: every sample is filled to within 1% below its budget from 2k up and, at 1k, for the one-needle
    cells; at 1k the two-needle cells within 9% (a bio is ~10% of the budget); strict idk's rows, which share
    one context, within 2.5% at 1k and 2k; compat idk's unanswerable row is its answerable row's context less
    the answer sentence, asked 0-shot, so it is shorter than that row by at most IDK_COMPAT_SHORTFALL tokens.
    Every row's recorded length is its real length. Checked over 40 samples of every cell the tier holds."""
    budget = parse_tier(tier).tokens(1024)
    exception_seen = False
    for c in LONGBIO_CELLS:
        if LONGBIO_NEED_TOKENS[c['cell']] > budget:
            continue
        for mode in ('compat', 'strict'):
            rows = rows_of(tier, c['cell'], mode, 40)
            for r in rows:
                assert r['prompt_tokens'] == real_tokens(r) and r['prompt_tokens'] <= budget
                tol = 0.01
                if tier == '1k' and c['n'] >= 2:
                    tol = 0.09
                if c['cell'] == 'idk' and mode == 'strict' and budget <= 2048:
                    tol = 0.025
                low = budget - int(tol * budget)
                if c['cell'] == 'idk' and mode == 'compat' and r['row'] == 'unanswerable':
                    answerable = rows[rows.index(r) - 1]
                    low = answerable['prompt_tokens'] - IDK_COMPAT_SHORTFALL
                    exception_seen |= r['prompt_tokens'] < budget - budget // 100
                assert r['prompt_tokens'] >= low, (tier, c['cell'], mode, r['row'], r['sample'], r['prompt_tokens'])
    assert exception_seen   # the compat idk exception is real at these tiers (so the README must state it)


def test_compat_idk_answer_half_is_the_standard_cells_own_sample():
    std = rows_of('8k', 'standard', 'compat', 3)
    idk = rows_of('8k', 'idk', 'compat', 3)
    for s, a in zip(std, idk[0::2]):
        assert (a['system'], a['user'], a['prefix']) == (s['system'], s['user'], s['prefix'])
    strict = rows_of('8k', 'idk', 'strict', 1)
    assert strict[0]['system'] == strict[1]['system'] and 'not stated' in strict[0]['system']


def test_zero_k_holds_the_needles_only():
    for cell in CELLS:
        c = next(x for x in LONGBIO_CELLS if x['cell'] == cell)
        for r in rows_of('0k', cell, 'compat', 1):
            assert r['num_bios'] == 3 * c['n'] and r['budget_tokens'] == 0
            assert r['prompt_tokens'] == real_tokens(r)


def test_same_questions_at_every_tier():
    small, big = rows_of('2k', 'rank_2', k=2), rows_of('128k', 'rank_2', k=2)
    for a, b in zip(small, big):
        assert a['label'] == b['label'] or json.loads(a['label'])['items'] == json.loads(b['label'])['items']
        assert a['user'].rsplit('Question: ', 1)[1] == b['user'].rsplit('Question: ', 1)[1]


def test_group_order_compat_test_first_strict_interleaved():
    for r in rows_of('8k', 'multi_standard_5', 'compat', 10):
        assert r['needle_groups'] == sorted(r['needle_groups'])   # test group always first (authors' bias)
    strict = rows_of('8k', 'multi_standard_5', 'strict', 10)
    assert any(r['needle_groups'] != sorted(r['needle_groups']) for r in strict)
    assert all(sorted(r['needle_groups']) == [0] * 5 + [1] * 5 + [2] * 5 for r in strict)
    compat_depth = sum(d for r in rows_of('8k', 'standard', 'compat', 12) for d in r['needle_depths'])
    strict_depth = sum(d for r in rows_of('8k', 'standard', 'strict', 12) for d in r['needle_depths'])
    assert compat_depth < strict_depth   # min of 3 draws (~25%) vs uniform (~50%)


def test_depth_window_and_density():
    for r in rows_of('8k', 'standard', 'strict', 6, depth=(0.6, 1.0)):
        assert all(d >= 0.55 for d in r['needle_depths']), r['needle_depths']
    for r in rows_of('8k', 'standard', 'strict', 6, depth=[0.0, 0.2]):
        assert all(d <= 0.25 for d in r['needle_depths']), r['needle_depths']
    marker = {'birthdate': 'The birthday of', 'birthplace': ' was born in ', 'hobby': 'The hobby of',
              'university': 'The university where', 'major': 'The major of', 'work_city': 'The city where'}
    for density, check in ((0.0, lambda k, bios: k == 3), (1.0, lambda k, bios: k == bios)):
        for r in rows_of('8k', 'standard', 'compat', 3, density=density):
            ctx = r['user'].split('\n\n')[0]
            k = ctx.count(marker[r['attribute']])
            assert check(k, r['num_bios']), (density, k, r['num_bios'])


def test_haystack_repeats_people_in_compat_only():
    def names(r):
        return re.findall(r'Below is the bio of ([^.]+)\.', r['user'])
    c = names(rows_of('128k', 'standard', 'compat', 1)[0])
    s = names(rows_of('128k', 'standard', 'strict', 1)[0])
    assert len(c) > 1000 and len(set(c)) < len(c)        # drawn with replacement from a 10k pool
    assert len(s) > 1000 and len(set(s)) == len(s)


def test_pronoun_bios_keep_the_authors_grammar_in_compat_only():
    bad = re.compile(r'\bI (?:is|has|finds|enjoys|hails|traces|calls|relaxes|spends|celebrates)\b')
    c = rows_of('8k', 'pronoun', 'compat', 1)[0]['user']
    s = rows_of('8k', 'pronoun', 'strict', 1)[0]['user']
    assert bad.search(c) and not bad.search(s)
    assert 'Below is the self-introduction of ' in c and 'This is the end of the introduction.' in s


def test_tier_too_small_names_the_smallest_tier_that_fits():
    with pytest.raises(TierTooSmallError, match=r"'multi_standard_10' does not fit tier 2k .*Smallest standard "
                                                r"tier that fits: 4k"):
        rows_of('2k', 'multi_standard_10', k=3)
    with pytest.raises(TierTooSmallError, match='fits: 2k'):
        rows_of('1k', 'rank_5', k=3)
    gen = Generator(cell_settings('1m', cell='multi_standard_10'))
    assert 3000 < max(gen.needed_tokens(i) for i in range(5)) <= 4096


@pytest.mark.parametrize('kwargs,message', [
    (dict(cell='nope'), 'unknown LongBioBench cell'),
    (dict(task='summarise'), 'unknown LongBioBench task'),
    (dict(task='rank', n=3), r'n=3 is not offered for LongBioBench task .rank.; offered: \(2, 5\)'),
    (dict(cell='standard', mode='lenient'), 'unknown LongBioBench mode'),
    (dict(cell='standard', density=1.5), r'density must be a number in \[0, 1\]'),
    (dict(cell='standard', density='high'), 'density must be a number'),
    (dict(cell='standard', depth=(0.8, 0.2)), 'start 0.8 is after its end 0.2'),
    (dict(cell='standard', depth=(-0.1, 1.0)), r'depth start must be a number in \[0, 1\]'),
    (dict(cell='standard', depth=0.5), 'pair of fractions'),
    (dict(cell='idk', shots=2), 'idk task is 0-shot only'),
    (dict(cell='citation_1', shots=0), 'needs demos'),
    (dict(cell='standard', reserve_tokens=-1), 'reserve_tokens'),
])
def test_bad_parameters_are_clear_errors(kwargs, message):
    with pytest.raises(LongBioConfigError, match=message):
        cell_settings('2k', **kwargs)


def test_bad_tier_and_missing_tokenizer():
    from opencompass_longctx.tiers import TierError
    with pytest.raises(TierError, match="unknown tier '12q'"):
        cell_settings('12q', cell='standard')
    with pytest.raises(TokenizerError, match='does not exist'):
        cell_settings('2k', cell='standard', tokenizer='/no/such/tokenizer')


def test_hf_tokenizer_is_verified_by_a_full_encode(tiny_model_dir):
    # the project's tiny BPE (vocabulary 600) spends ~300 tokens on a bio, so use a tier of ~27 bios
    settings = cell_settings('8k', cell='standard', tokenizer=tiny_model_dir)
    assert settings.verify
    tok = get_tokenizer(tiny_model_dir)
    for r in generate(settings, 2):
        real = len(tok.encode(r['system'])) + len(tok.encode(r['user'])) + len(tok.encode(r['prefix']))
        assert r['prompt_tokens'] == real and 0.99 * 8192 <= real <= 8192
        assert json.loads(r['params'])['tokenizer'] == tok.name


@pytest.fixture(scope='module')
def qwen_hf_dir(tmp_path_factory):
    from opencompass_longctx.tokenizer.qwen_dir import build
    return build(str(tmp_path_factory.mktemp('tok') / 'qwen2.5'))


def test_the_default_data_tokenizer_is_the_authors_qwen_vocabulary():
    settings = cell_settings('8k', cell='standard')
    assert settings.tokenizer.name == 'tiktoken:qwen2' and not settings.verify
    r = next(generate(settings, 1))
    assert json.loads(r['params'])['tokenizer'] == 'tiktoken:qwen2' and r['tokenizer_engine'] == 'tiktoken'
    assert r['prompt_tokens'] == real_tokens(r) and 8110 <= r['prompt_tokens'] <= 8192
    # another tokenizer is another length accounting, with the same questions
    other = next(generate(cell_settings('8k', cell='standard', tokenizer='tiktoken:cl100k_base'), 1))
    cl100k = get_tokenizer('tiktoken:cl100k_base')
    assert other['prompt_tokens'] == sum(cl100k.count(other[k]) for k in ('system', 'user', 'prefix'))
    assert other['user'] != r['user'] and other['label'] == r['label']


def test_a_qwen_hf_directory_gives_the_same_data_counted_by_its_tiktoken_twin(qwen_hf_dir, monkeypatch):
    settings = cell_settings('8k', cell='citation_2', tokenizer=qwen_hf_dir)
    tok = settings.tokenizer
    assert tok.engine == 'tiktoken-twin' and settings.verify          # an HF tokenizer: the final check stays
    hf = get_tokenizer(qwen_hf_dir, twin=False)

    class NoHF:
        def __call__(self, *a, **k):
            raise AssertionError('the Hugging Face tokenizer was called during generation')
    monkeypatch.setattr(tok, '_hf', NoHF())
    rows = list(generate(settings, 3))
    monkeypatch.undo()
    same = list(generate(cell_settings('8k', cell='citation_2'), 3))
    for r, q in zip(rows, same):
        assert r['tokenizer_engine'] == 'tiktoken-twin'
        assert r['prompt_tokens'] == sum(len(hf.encode(r[k])) for k in ('system', 'user', 'prefix'))
        assert (r['user'], r['prompt_tokens']) == (q['user'], q['prompt_tokens'])   # the same ids, the same data


def test_the_tier_is_parsed_once_and_must_be_whole_tokens(monkeypatch):
    from opencompass_longctx import tiers
    from opencompass_longctx.longbio.dataset import load_longbio
    calls = []
    real = tiers._parse
    monkeypatch.setattr(tiers, '_parse', lambda text: calls.append(text) or real(text))
    load_longbio('2k', cell='standard', num_samples=1)
    assert calls == ['2k']
    with pytest.raises(tiers.TierError, match=r"'0.1k' is 102.4 tokens when 1k = 1024 tokens"):
        cell_settings('0.1k', cell='standard')
    assert cell_settings('0.125k', cell='standard').tier_tokens == 128


def test_max_prompt_tokens_builds_the_tier_to_a_models_window():
    """max_prompt_tokens caps the budget whatever the tier (a model whose window is below it, as the authors size
    their prompts to the model): the rows fill the cap within 1%, record it as their budget, and the cache key and
    the build differ from the uncapped tier's."""
    capped = cell_settings(parse_tier('8k'), cell='standard', reserve_tokens=512, max_prompt_tokens=6000)
    plain = cell_settings(parse_tier('8k'), cell='standard', reserve_tokens=512)
    assert (capped.budget, plain.budget) == (6000, 8192 - 512)
    assert capped.public()['max_prompt_tokens'] == 6000 and 'max_prompt_tokens' not in plain.public()
    assert cell_settings(parse_tier('8k'), cell='standard', max_prompt_tokens=9000).budget == 8192   # the tier is less
    rows = list(generate(capped, 2))
    for r in rows:
        assert r['tier_tokens'] == 8192 and r['budget_tokens'] == 6000
        assert 6000 - 60 <= r['prompt_tokens'] == real_tokens(r) <= 6000
    with pytest.raises(LongBioConfigError, match='max_prompt_tokens must be a positive integer'):
        cell_settings(parse_tier('8k'), cell='standard', max_prompt_tokens=0)
    with pytest.raises(LongBioConfigError):   # below the cell's needles: the generator's own error
        list(generate(cell_settings(parse_tier('8k'), cell='multi_standard_10', max_prompt_tokens=3000), 1))
