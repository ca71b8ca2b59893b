"""NoLiMa per-test metrics and the evaluator: the authors' `contains`, EM, last-line variants, reasoning traces,
empty/blocked responses, bad predictions."""
import json

import datasets
import pytest

from opencompass_longctx.nolima.evaluator import NoLiMaEvaluator
from opencompass_longctx.nolima.needles import NoLiMaError
from opencompass_longctx.nolima.scoring import METRICS, score_many, score_one, strip_reasoning
@pytest.mark.parametrize('pred,contains,em,ll_contains,ll_em', [
    ('Yuki', True, True, True, True),
    ('  Yuki\n', True, True, True, True),
    ('yuki', False, False, False, False),             # case-sensitive
    ('YUKI', False, False, False, False),
    ('Yukiko', True, False, True, False),             # raw substring, no word boundary
    ('Stuart, Yuki or Katie', True, False, True, False),  # a list that includes the name passes `contains`
    ('The answer is Yuki.', True, False, True, False),
    ('Yuki lives there.\nSo the answer:\nStuart', True, False, False, False),
    ('Because of the museum...\nYuki', True, False, True, True),
])
def test_metrics(pred, contains, em, ll_contains, ll_em):
    d = score_one(pred, ['Yuki'], 'contains')
    assert (d['contains'], d['EM'], d['lastline_contains'], d['lastline_EM']) == (contains, em, ll_contains, ll_em)
    assert d['correct'] == contains and d['status'] == 'ok'
    assert score_one(pred, ['Yuki'], 'lastline_EM')['correct'] == ll_em


def test_reasoning_traces_are_stripped_before_scoring():
    assert strip_reasoning('<think>Yuki? no</think>\nStuart') == ('\nStuart', 'stripped')
    assert strip_reasoning('was it Yuki...</think>Stuart') == ('Stuart', 'stripped')  # opening tag in the prompt
    assert strip_reasoning('<think>Yuki is the one') == ('', 'unfinished')
    d = score_one('<think>The museum is in Dresden, so Yuki.</think>Stuart', ['Yuki'])
    assert not d['correct'] and d['reasoning'] == 'stripped' and d['scored_text'] == 'Stuart'
    assert score_one('<think>Yuki</think>Stuart', ['Yuki'], strip_think=False)['correct']
    cut = score_one('<think>Yuki might be it but', ['Yuki'])
    assert not cut['correct'] and cut['status'] == 'empty_after_reasoning'


def test_empty_blocked_and_invalid_responses_are_wrong_and_counted():
    res = score_many(['Yuki', None, '', '   \n', 42, 'Stuart'], [['Yuki']] * 6)
    assert res['accuracy'] == pytest.approx(100 / 6)
    assert res['counts'] == dict(n=6, correct=1, blocked=1, empty=2, empty_after_reasoning=0, invalid=1,
                                 reasoning_stripped=0, unfinished_reasoning=0)
    assert [d['status'] for d in res['details']] == ['ok', 'blocked', 'empty', 'empty', 'invalid', 'ok']
    assert res['details'][4]['reason'] == 'prediction is int, not a string'
    assert set(res['metrics']) == set(METRICS)


@pytest.mark.parametrize('preds,refs,match', [
    ([], [], 'the prediction list is empty'),
    ('Yuki', [['Yuki']], 'predictions must be a list'),
    (None, [['Yuki']], 'predictions must be a list'),
    (['Yuki', 'Stuart'], [['Yuki']], '2 predictions for 1 references'),
    (['Yuki'], [[]], 'reference #0 must be a non-empty list'),
])
def test_bad_prediction_lists_raise(preds, refs, match):
    with pytest.raises(NoLiMaError, match=match):
        score_many(preds, refs)


def test_unknown_metric_is_refused():
    with pytest.raises(NoLiMaError, match=r"unknown NoLiMa metric 'f1'; choose one of contains, EM"):
        NoLiMaEvaluator(metric='f1')
    with pytest.raises(NoLiMaError):
        score_one('Yuki', ['Yuki'], 'exact')


def _test_set():
    rows = []
    for i, (name, qt, order) in enumerate([('Yuki', 'onehop', 'default'), ('Stuart', 'twohop', 'inverted'),
                                           ('Katie', 'onehop', 'inverted'), ('Gary', 'twohop', 'default')]):
        rows.append(dict(prompt='...', answer=name, gold_answers=json.dumps([name]), pair=f'0401_T0{i}_{qt}',
                         question_type=qt, order=order, haystack='rand_book_1', haystack_index=0,
                         depth=0.04 * i, depth_index=i, context_length=1000, variant='main'))
    return datasets.Dataset.from_list(rows)


def test_evaluator_returns_one_numeric_metric_counts_and_details():
    ev = NoLiMaEvaluator()
    ts = _test_set()
    res = ev.score(['Yuki', 'stuart', None, 'I think Gary.'], list(ts['answer']), ts)
    numeric = [k for k, v in res.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert numeric == ['accuracy'] and res['accuracy'] == 50.0
    assert res['metric'] == 'contains' and res['metrics']['EM'] == 25.0
    from opencompass_longctx import __version__
    assert res['package_version'] == __version__
    assert res['counts']['blocked'] == 1 and res['counts']['n'] == 4
    assert res['by_question_type'] == {'onehop': 50.0, 'twohop': 50.0}
    assert res['by_order'] == {'default': 100.0, 'inverted': 0.0}
    d = res['details'][1]
    assert d['pair'] == '0401_T01_twohop' and d['order'] == 'inverted' and d['depth_index'] == 1
    assert d['haystack'] == 'rand_book_1' and d['context_length'] == 1000 and d['correct'] is False
    # through OpenCompass's own evaluate() (replicas, details flattening)
    out = NoLiMaEvaluator(metric='EM').evaluate(k=1, n=1, original_dataset=ts.add_column(
        'subdivision', ['x'] * 4).add_column('idx', list(range(4))),
        predictions=['Yuki', 'Stuart', '', 'Gary'], references=list(ts['answer']), test_set=ts)
    assert out['accuracy'] == 75.0 and out['counts'] == [res['counts'] | dict(blocked=0, empty=1, correct=3)]
    assert [d['correct'] for d in out['details']] == [[True], [True], [False], [True]]


def test_prompts_the_model_could_not_hold_are_left_out_and_counted():
    OVER_LENGTH = pytest.importorskip('opencompass_longctx.overlength').OVER_LENGTH
    ts = _test_set()
    res = NoLiMaEvaluator().score(['Yuki', OVER_LENGTH, 'Katie', ''], list(ts['answer']), ts)
    assert res['accuracy'] == pytest.approx(200 / 3)  # 2 of the 3 answered
    assert res['counts']['over_length'] == 1 and res['counts']['n'] == 4 and res['counts']['empty'] == 1
    assert res['details'][1]['over_length'] and res['details'][1]['pair'] == '0401_T01_twohop'
    none = NoLiMaEvaluator().score([OVER_LENGTH] * 4, list(ts['answer']), ts)
    assert 'accuracy' not in none and none['counts']['over_length'] == 4  # not applicable, not 0
    with pytest.raises(NoLiMaError, match='3 predictions for 4 references'):
        NoLiMaEvaluator().score(['Yuki'] * 3, list(ts['answer']), ts)


@pytest.mark.parametrize('pred,ll_em', [
    ('Answer:\n Yuki ', False),       # the authors compare the last line of the stripped response unstripped
    ('Answer:\nYuki ', True),
    ('Answer:\nYuki\t\n', True),
    ('Answer:\n Yuki', False),
    ('Answer:\nYuki \nthanks', False),
])
def test_item7_lastline_em_compares_the_last_line_unstripped_as_the_authors(pred, ll_em):
    assert score_one(pred, ['Yuki'], 'lastline_EM')['correct'] is ll_em
    assert score_one(pred, ['Yuki'], 'lastline_contains')['correct'] is ('Yuki' in pred.strip().split('\n')[-1])
