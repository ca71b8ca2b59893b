import pytest

from opencompass_longctx.babilong.scoring import TASK_LABELS, ScoringError, score_many, score_one
def ok(pred, target, question, task, mode):
    return score_one(pred, target, question, task, mode)['correct']


def test_official_rule_on_well_formed_answers():
    assert ok('The most recent location of Mary is kitchen.', 'kitchen', 'Where is Mary?', 'qa1', 'official')
    assert ok('bedroom', 'bedroom', 'What is the kitchen south of?', 'qa4', 'official')
    assert ok('Fred', 'Fred', 'Who did Mary give the apple to?', 'qa5', 'official')
    assert not ok('garden', 'kitchen', 'Where is Mary?', 'qa1', 'official')


def test_official_quirks_are_kept_and_fixed_mode_fixes_them():
    # qa7 'none' contains the label 'one': never correct in the official rule
    assert not ok('none', 'none', 'How many objects is Daniel carrying?', 'qa7', 'official')
    assert ok('none', 'none', 'How many objects is Daniel carrying?', 'qa7', 'fixed')
    # 'no' matches inside 'not'/'know' (substring): a refusal scores as the answer 'no'
    assert ok('I do not know', 'no', 'Is John in the garden?', 'qa6', 'official')
    assert not ok('I do not know', 'no', 'Is John in the garden?', 'qa6', 'fixed')
    assert ok('no', 'no', 'Is John in the garden?', 'qa6', 'official')
    assert not ok('I cannot say.', 'no', 'Is John in the garden?', 'qa6', 'fixed')
    assert ok('I cannot say.', 'no', 'Is John in the garden?', 'qa6', 'official')  # 'no' inside 'cannot'
    # a newline does not end the first sentence in the official rule
    pred = 'Answer: bedroom\n\nContext: The office is north of the garden'
    assert not ok(pred, 'bedroom', 'What is the kitchen south of?', 'qa4', 'official')
    assert ok(pred, 'bedroom', 'What is the kitchen south of?', 'qa4', 'fixed')
    # qa19 with a space after the comma
    assert not ok('s, e', 's,e', 'How do you go from the kitchen to the garden?', 'qa19', 'official')
    assert ok('s, e', 's,e', 'How do you go from the kitchen to the garden?', 'qa19', 'fixed')


def test_labels_in_the_question_are_ignored():
    # 'kitchen' is in the question, so naming it does not count against the answer
    assert ok('The bottle moved from the kitchen to the garden.', 'garden',
              'Where was the bottle before the kitchen?', 'qa3', 'official')


def test_qa8_lists_any_order():
    q = 'What is Daniel carrying?'
    for mode in ('official', 'fixed'):
        assert ok('apple, milk', 'apple,milk', q, 'qa8', mode)
        assert ok('milk,apple', 'apple,milk', q, 'qa8', mode)
        assert not ok('apple', 'apple,milk', q, 'qa8', mode)
        assert not ok('apple, milk, football', 'apple,milk', q, 'qa8', mode)
    assert not ok('milk,apple', 'apple,milk', q, 'qa8', 'lenient')  # lenient's false negative


def test_output_listing_every_label_is_wrong_except_in_lenient():
    pred = 'Options: (A) hallway (B) bathroom (C) bedroom (D) garden (E) kitchen (F) office'
    assert not ok(pred, 'garden', 'Where is Mary?', 'qa1', 'official')
    assert not ok(pred, 'garden', 'Where is Mary?', 'qa1', 'fixed')
    assert ok(pred, 'garden', 'Where is Mary?', 'qa1', 'lenient')
    every = ', '.join(TASK_LABELS['qa5'])
    assert not ok(every, 'Fred', 'Who gave the apple?', 'qa5', 'official')


def test_lenient_substring_false_positives():
    assert ok('none', 'one', 'How many objects is Mary carrying?', 'qa7', 'lenient')
    assert ok('I do not know', 'no', 'Is Mary in the garden?', 'qa6', 'lenient')


@pytest.mark.parametrize('pred', ['', '   \n ', None, 42, ['kitchen'], {'a': 1}])
@pytest.mark.parametrize('mode', ['official', 'fixed', 'lenient'])
def test_bad_predictions_are_counted_zeros(pred, mode):
    d = score_one(pred, 'kitchen', 'Where is Mary?', 'qa1', mode)
    assert d['correct'] is False and d['invalid_prediction'] is True
    res = score_many([pred, 'kitchen'], ['kitchen', 'kitchen'], ['Where is Mary?'] * 2, ['qa1'] * 2, mode)
    assert res['accuracy'] == 50.0 and res['invalid_predictions'] == 1 and res['n'] == 2


def test_errors():
    with pytest.raises(ScoringError, match='mode'):
        score_one('x', 'y', 'q', 'qa1', 'strictest')
    with pytest.raises(ScoringError, match='task'):
        score_one('x', 'y', 'q', 'qa99', 'official')
    with pytest.raises(ScoringError, match='length mismatch'):
        score_many(['a'], ['a', 'b'], ['q'], ['qa1'])
