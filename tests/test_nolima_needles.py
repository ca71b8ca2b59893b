"""NoLiMa needle sets: variants, schema errors naming the entry, expansion and the released pair counts."""
import json
import os

import pytest

from opencompass_longctx.nolima import needles as nd
from opencompass_longctx.demo import nolima_data
@pytest.fixture(scope='module')
def sets_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp('nolima_sets')
    nolima_data.write(str(root), book_tokens=300, books=1)
    return root / 'needlesets'


def _load(sets_dir, variant):
    return json.load(open(sets_dir / nd.VARIANT_FILES[variant], encoding='utf-8'))


def test_main_set_expands_to_58_pairs_in_entry_qtype_test_order(sets_dir):
    entries = _load(sets_dir, 'main')
    pairs = nd.load_pairs(str(sets_dir / 'needle_set.json'), 'main')
    assert len(pairs) == 58
    expected = [f"{e['id']}_{t}_{q}" for e in entries for q in e['questions'] for t in e['tests']]
    assert [p.name for p in pairs] == expected
    assert {p.question_type for p in pairs} == {'onehop', 'twohop'}
    assert {p.order for p in pairs} == {'default', 'inverted'}
    assert all((p.order == 'inverted') == p.entry_id.endswith('Inv') for p in pairs)
    assert all(p.group == int(p.entry_id[:4]) for p in pairs)
    # 5 groups, each in both orders
    assert len({p.group for p in pairs}) == 5 and len({p.entry_id for p in pairs}) == 10
    p = pairs[0]
    e = entries[0]
    args = e['tests'][p.test_id]['input_args']
    assert p.needle == e['needle'].replace('{1}', args[0]) and '{CHAR}' in p.needle
    assert p.question == e['questions'][p.question_type].replace('{2}', args[1])
    assert p.gold_answers is None and p.character_set == e['character_set']


def test_released_counts_are_asserted(sets_dir, tmp_path):
    assert len(nd.load_pairs(str(sets_dir / 'needle_set_hard.json'), 'hard')) == 10
    entries = _load(sets_dir, 'main')
    del entries[0]['tests'][next(iter(entries[0]['tests']))]  # one test fewer: 2 pairs fewer
    f = tmp_path / 'needle_set.json'
    f.write_text(json.dumps(entries))
    with pytest.raises(nd.NeedleSetError, match=r'gives 56 question-needle pairs, but the main set must give 58'):
        nd.load_pairs(str(f), 'main')
    assert len(nd.load_pairs(str(f), 'main', expected_pairs=None)) == 56


def test_every_variant_loads_and_direct_questions_are_excluded_from_other_sets(sets_dir, tmp_path):
    for v in nd.VARIANTS:
        pairs = nd.load_pairs(str(sets_dir / nd.VARIANT_FILES[v]), v)
        assert pairs
        if v == 'direct':
            assert all(p.question_type == 'direct' for p in pairs)
        if v == 'cot':
            assert all(p.task_template and '{haystack}' in p.task_template for p in pairs)
        if v == 'mc':
            assert all(p.question.count('{CHAR}') == 1 for p in pairs)
        if v == 'distractor':
            assert all(p.distractor and '{' not in p.distractor for p in pairs)
    # a "direct" question type inside another set is dropped (as gather_results drops "direct" files)
    entries = _load(sets_dir, 'main')
    entries[0]['questions']['direct'] = 'Which character has a flat right beside {1}?'
    f = tmp_path / 'needle_set.json'
    f.write_text(json.dumps(entries))
    assert len(nd.load_pairs(str(f), 'main')) == 58
    assert len(nd.load_pairs(str(f), 'main', exclude_direct=False, expected_pairs=None)) == 62


def test_substitution_is_cumulative_and_must_match_the_original():
    assert nd.fill_cumulative('{1} and {2}', ['a', 'b']) == 'a and b'
    assert nd.fill_original('{1} and {2}', ['a', 'b']) == '{1} and b'  # the authors' question substitution
    assert nd.fill_original('to {3}?', ['a', 'b', 'c']) == nd.fill_cumulative('to {3}?', ['a', 'b', 'c'])


def _entry():
    return {'id': '0101', 'needle': 'Actually, {CHAR} lives next to {1}.',
            'questions': {'onehop': 'Which character has been to {2}?'},
            'tests': {'T01_C01': {'input_args': ['the Atomium', 'Brussels']}},
            'character_set': ['Yara', 'Emrys'], 'system_prompt': 'You are a helpful assistant.'}


def _mutations():
    def m(fn, match):
        e = _entry()
        fn(e)
        return e, match
    return [
        m(lambda e: e.pop('needle'), "missing field 'needle'"),
        m(lambda e: e.update(id='A1'), "field 'id' must be a string starting with 4 digits"),
        m(lambda e: e.update(questions={}), "field 'questions'"),
        m(lambda e: e.update(tests={'T01': {'input_args': 'Brussels'}}), "test 'T01' needs 'input_args'"),
        m(lambda e: e.update(character_set=[]), "'character_set' must be a non-empty list"),
        m(lambda e: e.update(needle='Someone lives next to {1}.'), "needs 'gold_answers'"),
        m(lambda e: e.update(task_template='no slots'), "'task_template' must be a string with"),
        m(lambda e: e['questions'].update(onehop='Which character has been to {3}?'),
          r"still has placeholder\(s\) \['\{3\}'\]"),
        m(lambda e: e['questions'].update(onehop='Which of {1} or {2}?'), 'more than one numeric placeholder'),
    ]


@pytest.mark.parametrize('entry,match', _mutations())
def test_a_malformed_entry_is_named(tmp_path, entry, match):
    good = _entry()
    good['id'] = '0100'
    f = tmp_path / 'set.json'
    f.write_text(json.dumps([good, entry]))
    with pytest.raises(nd.NeedleSetError, match=match) as e:
        nd.load_pairs(str(f), 'main', expected_pairs=None)
    assert 'set.json: entry #1' in str(e.value)


def test_bad_files_and_unknown_variants(tmp_path, sets_dir):
    f = tmp_path / 'bad.json'
    f.write_text('{"not": "a list"}')
    with pytest.raises(nd.NeedleSetError, match='non-empty JSON list'):
        nd.load_pairs(str(f), 'main')
    f.write_text('[{"id": "0101",')
    with pytest.raises(nd.NeedleSetError, match='not valid JSON'):
        nd.load_pairs(str(f), 'main')
    with pytest.raises(nd.NoLiMaError, match=r"unknown NoLiMa variant 'easy'; choose one of main, hard, cot"):
        nd.resolve_variant('easy')
    assert nd.resolve_variant('needle_set_w_CoT') == 'cot' and nd.resolve_variant('MC') == 'mc'
    entries = _load(sets_dir, 'main')
    for e in entries:
        e.pop('distractors', None)
    f.write_text(json.dumps(entries))
    with pytest.raises(nd.NeedleSetError, match="distractor variant needs 'distractors'"):
        nd.load_pairs(str(f), 'distractor')
    with pytest.raises(nd.NoLiMaError, match=r"has no question type\(s\) \['threehop'\]"):
        nd.load_pairs(str(sets_dir / 'needle_set.json'), 'main', question_types=['threehop'])
    one = nd.load_pairs(str(sets_dir / 'needle_set.json'), 'main', question_types=['twohop'])
    assert one and all(p.question_type == 'twohop' for p in one)


def test_pair_selection(sets_dir):
    pairs = nd.load_pairs(str(sets_dir / 'needle_set.json'), 'main')
    assert [p.name for p in nd.select_pairs(pairs, 3)] == [p.name for p in pairs[:3]]
    names = [pairs[10].name, pairs[2].name]
    assert [p.name for p in nd.select_pairs(pairs, names)] == [pairs[2].name, pairs[10].name]
    with pytest.raises(nd.NoLiMaError, match='unknown pair name'):
        nd.select_pairs(pairs, ['0999_T01_onehop'])
    with pytest.raises(nd.NoLiMaError):
        nd.select_pairs(pairs, 0)


def test_sample_data_is_deterministic_and_free_of_names_and_keywords(tmp_path):
    a, b = tmp_path / 'a', tmp_path / 'b'
    nolima_data.write(str(a), book_tokens=2000)
    nolima_data.write(str(b), book_tokens=2000)
    files = sorted(os.path.relpath(os.path.join(d, f), a) for d, _, fs in os.walk(a) for f in fs)
    assert len(files) == 6 + 5 + 1
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    import re
    words = set()
    for rel in files:
        if rel.endswith('.txt'):
            text = (a / rel).read_text(encoding='utf-8')
            assert all(line.endswith(' ') and len(line) >= 1000 for line in text.split('\n')[:-1])
            assert text.endswith(' \n') and '\n\n' not in text
            words |= set(re.findall(r"[A-Za-z][A-Za-z'-]*", text))
    pairs = nd.load_pairs(str(a / 'needlesets' / 'needle_set.json'), 'main')
    for p in pairs:
        assert not set(p.character_set) & words
        for arg in p.input_args[1:]:  # the question keywords W_q never occur in the haystack
            assert not set(re.findall(r"[A-Za-z][A-Za-z'-]*", arg)) - {'a', 'the'} & words, arg
