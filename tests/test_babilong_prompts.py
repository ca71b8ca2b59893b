import hashlib

import pytest

from opencompass_longctx.babilong.prompts import (TASKS, PromptError, _opencompass_prompts, format_prompt,
                                                  prompt_parts)

CONTEXT = '\n  Mary went to the kitchen. Some book text. John went to the garden.  \n'
QUESTION = 'Where is Mary? '


@pytest.mark.parametrize('task', TASKS)
@pytest.mark.parametrize('flags', [(True, True, True), (False, False, False), (True, False, True)])
def test_official_prompt_is_the_authors_assembly(task, flags):
    """Byte-identical to the authors' get_formatted_input (the copy inside opencompass)."""
    oc = _opencompass_prompts()
    p = oc.DEFAULT_PROMPTS[task]
    expected = oc.get_formatted_input(CONTEXT, QUESTION, p['examples'] if flags[1] else '',
                                      p['instruction'] if flags[0] else '', p['post_prompt'] if flags[2] else '')
    got = format_prompt(CONTEXT, QUESTION, prompt_parts(task, 'official', *flags))
    assert hashlib.sha256(got.encode()).hexdigest() == hashlib.sha256(expected.encode()).hexdigest()


def test_all_parts_off_leaves_context_and_question():
    got = format_prompt(CONTEXT, QUESTION, prompt_parts('qa1', 'official', False, False, False))
    assert got == '<context>\nMary went to the kitchen. Some book text. John went to the garden.\n</context>\n\n' \
                  'Question: Where is Mary?'


def test_official_keeps_the_quirks_and_cleaned_fixes_them():
    off = {t: prompt_parts(t) for t in TASKS}
    cln = {t: prompt_parts(t, 'cleaned') for t in TASKS}
    assert 'question.You' in off['qa2']['instruction'] and 'question. You' in cln['qa2']['instruction']
    for t in ('qa10', 'qa11', 'qa12', 'qa13', 'qa14', 'qa15', 'qa16', 'qa20'):
        assert off[t]['examples'].rstrip().endswith('<context>')
        assert '<context>' not in cln[t]['examples'] and cln[t]['examples'].endswith('</example>')
    for t in ('qa17', 'qa18'):
        assert '</example><example>' in off[t]['examples'] and '</example><example>' not in cln[t]['examples']
    assert 'chocolate.The' in off['qa18']['examples'] and 'chocolate. The' in cln['qa18']['examples']
    assert 'there.Jason' in off['qa20']['examples'] and 'there. Jason' in cln['qa20']['examples']
    assert cln['qa4']['instruction'] == off['qa5']['instruction']
    assert cln['qa5']['instruction'] == off['qa4']['instruction']
    assert 'ordinal' in off['qa19']['post_prompt'] and 'cardinal directions' in cln['qa19']['post_prompt']
    # untouched elsewhere
    assert cln['qa1'] == off['qa1']


def test_unknown_task_or_variant():
    with pytest.raises(PromptError, match='qa1..qa20'):
        prompt_parts('qa21')
    with pytest.raises(PromptError, match='official'):
        prompt_parts('qa1', 'fancy')
