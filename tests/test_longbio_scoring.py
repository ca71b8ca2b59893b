"""LongBioBench scoring: oracle predictions score 100% in both modes, wrong and malformed ones 0, and each
compat-vs-strict difference on a hand-written prediction."""
import json

import pytest

from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS
from opencompass_longctx.longbio.dataset import load_longbio
from opencompass_longctx.longbio.evaluator import LongBioEvaluator
from opencompass_longctx.longbio.generator import generate, cell_settings
from opencompass_longctx.longbio.scoring import (ScoringError, authors_cut, oracle_prediction, score_cell,
                                                 score_row)

CELLS = [(c['cell'], c['task']) for c in LONGBIO_CELLS]


def rows_of(tier, cell, mode, k=3, **kw):
    return list(generate(cell_settings(tier, cell=cell, mode=mode, **kw), k))


def score(rows, preds, mode, truncate=False):
    labels = [json.loads(r['label']) for r in rows]
    return score_cell(preds, labels, [r['row'] for r in rows], [r['sample'] for r in rows], rows[0]['task'],
                      mode, truncate)


@pytest.mark.parametrize('cell,task', CELLS)
@pytest.mark.parametrize('mode', ['compat', 'strict'])
def test_oracle_scores_100_and_garbage_scores_0(cell, task, mode):
    # 0k holds every cell (the needles only); citation needs a haystack for its bio numbers to differ by sample
    rows = rows_of('2k' if task == 'citation' else '0k', cell, mode)
    oracle = [oracle_prediction(json.loads(r['label'])) for r in rows]
    for truncate in (False, True):
        res = score(rows, oracle, mode, truncate)
        assert res['accuracy'] == 100.0, [d for d in res['details'] if not d['correct']][:2]
        if res['submetrics']:
            assert set(res['submetrics'].values()) == {100.0}
    for junk in (None, '', '   ', 17, ['a list'], 'I cannot help with that.'):
        res = score(rows, [junk] * len(rows), mode, True)
        assert res['accuracy'] == 0.0 and res['counts']['correct'] == 0
        if junk is None or not isinstance(junk, str) or not junk.strip():
            assert res['counts']['invalid_predictions'] == len(rows)
            assert all(d['invalid_prediction'] for d in res['details'])
    # the right answer to another sample of the cell is wrong here
    shifted = oracle[2:] + oracle[:2] if task == 'idk' else oracle[1:] + oracle[:1]
    assert score(rows, shifted, mode)['accuracy'] < 100.0


def test_the_evaluator_through_opencompass_api(tmp_path):
    from opencompass_longctx.longbio.dataset import LongBioDataset
    ds = LongBioDataset(reader_cfg=dict(input_columns=['system', 'user', 'prefix'], output_column='answer'),
                        abbr='longbio_citation_2_2k', tier='2k', cell='citation_2', num_samples=4).test
    ev = LongBioEvaluator()
    preds = [oracle_prediction(json.loads(x)) for x in ds['label']]
    preds[0] = preds[0].replace('[', '(').replace(']', ')')   # right answers, citations lost
    res = ev.evaluate(k=1, n=1, original_dataset=ds, predictions=preds, references=list(ds['answer']), test_set=ds)
    # OpenCompass keeps one value per replica of the non-numeric entries
    assert res['accuracy'] == 75.0 and res['headline'] == ['citation']
    assert res['submetrics'] == [{'answer': 100.0, 'citation': 75.0, 'both': 75.0}]
    assert res['scoring'][0]['mode'] == 'compat' and res['counts'][0]['samples'] == 4
    assert len(res['details']) == 4 and res['details'][0]['correct'] == [False]
    # only one numeric top-level metric: the summary shows one row per dataset
    assert [k for k, v in res.items() if isinstance(v, (int, float))] == ['accuracy']
    strict = LongBioEvaluator(mode='strict').evaluate(k=1, n=1, original_dataset=ds, predictions=preds,
                                                      references=list(ds['answer']), test_set=ds)
    assert strict['headline'] == ['both'] and strict['scoring'][0]['mode'] == 'strict'
    assert strict['accuracy'] == 75.0
    with pytest.raises(ScoringError, match='unknown LongBioBench scoring mode'):
        LongBioEvaluator(mode='lenient')


def test_idk_reports_answer_refusal_and_both():
    ds = load_longbio('2k', cell='idk', mode='compat', num_samples=2)
    labels = [json.loads(x) for x in ds['label']]
    good = [oracle_prediction(lab) for lab in labels]
    res = LongBioEvaluator().score(good, list(ds['answer']), ds)
    assert res['submetrics'] == {'answer': 100.0, 'refusal': 100.0, 'both': 100.0}
    always_refuse = ['The answer is not stated.'] * 4
    res = LongBioEvaluator().score(always_refuse, list(ds['answer']), ds)
    assert res['submetrics'] == {'answer': 0.0, 'refusal': 100.0, 'both': 0.0} and res['accuracy'] == 0.0
    assert [d['row'] for d in res['details']] == ['answerable', 'unanswerable'] * 2


# ------------------------------------------------------------------- compat vs strict, hand-written predictions
def test_rank_compat_credits_a_rationale_whose_final_list_is_wrong():
    label = {'kind': 'rank', 'items': ['Bea Lane', 'Al Hart'], 'names': ['Al Hart', 'Bea Lane']}
    wrong_final = ("the age of Al Hart is 50. the age of Bea Lane is 30. 30 < 50. Therefore, the names list after "
                   "ranking the age of Al Hart and Bea Lane is ['Al Hart', 'Bea Lane'].")
    right_final = wrong_final.replace("['Al Hart', 'Bea Lane']", "['Bea Lane', 'Al Hart']")
    assert score_row(wrong_final, label, 'compat')['correct'] is True
    assert score_row(wrong_final, label, 'strict')['correct'] is False
    assert score_row(right_final, label, 'strict')['correct'] is True
    assert score_row('Bea Lane, then Al Hart.', label, 'strict')['correct'] is True


def test_idk_not_explicitly_stated_is_a_refusal_in_strict_only():
    label = {'kind': 'refusal'}
    pred = 'The answer is not explicitly stated.'
    assert score_row(pred, label, 'compat')['correct'] is False
    assert score_row(pred, label, 'strict')['correct'] is True
    assert score_row('The answer is not stated.', label, 'compat')['correct'] is True


def test_last_character_cut_of_the_authors_base_model_rule():
    label = {'kind': 'list', 'items': ['dandyism']}
    pred = 'Based on the provided context, the hobby of Ann Bo Lee is dandyism'
    assert authors_cut(pred) == pred[:-1]
    assert score_row(pred, label, 'compat', truncate=True)['correct'] is False   # " dandyis"
    assert score_row(pred, label, 'compat', truncate=False)['correct'] is True
    assert score_row(pred, label, 'strict', truncate=True)['correct'] is True   # never cut in strict
    assert score_row(pred + '\nQuestion: next', label, 'compat', truncate=True)['correct'] is True


def test_evaluator_applies_the_cut_from_the_model_name():
    ds = load_longbio('0k', cell='standard', mode='compat', num_samples=2)
    preds = [f"Based on the provided context, {json.loads(x)['items'][0]}" for x in ds['label']]   # no period
    ev = LongBioEvaluator()
    ev._out_dir = '/w/results/glm-4-9b-chat-1m/longbio_standard_0k'       # no "instruct": a base model to the authors
    assert ev.score(preds, list(ds['answer']), ds)['accuracy'] == 0.0
    ev._out_dir = '/w/results/qwen2.5-7b-instruct/longbio_standard_0k'
    assert ev.score(preds, list(ds['answer']), ds)['accuracy'] == 100.0
    assert LongBioEvaluator(authors_truncation=True).score(preds, list(ds['answer']), ds)['accuracy'] == 0.0
    strict = LongBioEvaluator(mode='strict')
    strict._out_dir = '/w/results/glm-4-9b-chat-1m/longbio_standard_0k'
    assert strict.score(preds, list(ds['answer']), ds)['accuracy'] == 100.0


def test_twodiff_third_person_fails_in_compat_only():
    label = {'kind': 'twodiff', 'diff': 10, 'ref_names': ['Al Hart', 'Bea Lane'],
             'roster': [['Cy Moss', 41], ['Al Hart', 30], ['Bea Lane', 40], ['Di Fox', 52]]}
    pred = ('The age of Al Hart is 30. The age of Cy Moss is 41. The age of Bea Lane is 40. '
            'Therefore, Al Hart and Bea Lane satisfy the question.')
    assert score_row(pred, label, 'compat')['correct'] is False
    assert score_row(pred, label, 'strict')['correct'] is True
    other_pair = 'Cy Moss and Di Fox satisfy the question.'   # 52 - 41 = 11: wrong pair
    assert not score_row(other_pair, label, 'compat')['correct']
    assert not score_row(other_pair, label, 'strict')['correct']
    any_valid = {**label, 'roster': label['roster'] + [['Ed Gray', 51]]}
    assert score_row('Cy Moss and Ed Gray.', any_valid, 'compat')['correct'] is True   # any pair with the difference


def test_idk_answer_half_must_not_refuse_in_strict():
    label = {'kind': 'answer', 'items': ['Lund University']}
    pred = 'Lund University, although the answer is not stated.'
    assert score_row(pred, label, 'compat')['correct'] is True
    assert score_row(pred, label, 'strict')['correct'] is False


def test_compat_idk_answer_half_comes_from_the_standard_prompt_strict_from_the_idk_prompt():
    compat = rows_of('2k', 'idk', 'compat', 1)
    strict = rows_of('2k', 'idk', 'strict', 1)
    assert compat[0]['system'].startswith('Following the format of the examples')   # the 2-shot standard prompt
    assert compat[1]['system'] == strict[0]['system'] == strict[1]['system']        # the IDK prompt
    assert "not stated" in compat[1]['system']


def test_demos_buggy_in_compat_and_fixed_in_strict():
    def demos(r):
        return r['user'].split('\n\n')[1]
    mc, ms = rows_of('2k', 'multi_standard_2', 'compat', 1)[0], rows_of('2k', 'multi_standard_2', 'strict', 1)[0]
    # compat: the multi-line prefix with only the first answer; strict: every answer
    for r in (mc, ms):
        assert demos(r).count('Question: Question1: ') == 2
    assert demos(mc).count('Question2: ') == 4 and '\nAnswer: Based on the provided context, question1: ' in demos(mc)
    assert demos(ms).count('Question2: ') == 4 and demos(ms).count('.\nQuestion2: ') == 2
    cc, cs = rows_of('2k', 'citation_1', 'compat', 1)[0], rows_of('2k', 'citation_1', 'strict', 1)[0]
    assert "['" in demos(cc) and '[[' in demos(cc)
    assert "['" not in demos(cs) and '[[' not in demos(cs) and ' [' in demos(cs)
    hc = rows_of('2k', 'multihop_2', 'compat', 1, shots=2)[0]
    hs = rows_of('2k', 'multihop_2', 'strict', 1, shots=2)[0]
    first_lines = [ln for ln in demos(hc).split('\n') if ln.startswith('Answer:')]
    assert all(ln.endswith(' is ' + ln[-2] + '.') for ln in first_lines)      # first character only
    assert all(len(ln.rsplit(' is ', 1)[1]) > 2 for ln in demos(hs).split('\n') if ln.startswith('Answer:'))


def test_prefix_case_compat_lowercases_names_strict_does_not():
    found = False
    for i, (c, s) in enumerate(zip(rows_of('2k', 'paraphrase', 'compat', 12, shots=0),
                                   rows_of('2k', 'paraphrase', 'strict', 12, shots=0))):
        if c['attribute'] == 'birthplace':   # "X was born in": the prefix starts with a name
            name = json.loads(c['label'])['items'] and c['prefix'].split('context, ', 1)[1]
            assert name[0].islower() and s['prefix'].split('context, ', 1)[1][0].isupper()
            found = True
        else:
            assert c['prefix'] == s['prefix']
    assert found


def test_bad_labels_and_lengths_raise():
    with pytest.raises(ScoringError, match='unknown label kind'):
        score_row('x', {'kind': 'nope'}, 'compat')
    with pytest.raises(ScoringError, match='differ in length'):
        score_cell(['a'], [], [], [], 'standard', 'compat')


# ------------------------------------------------------------------- issue 12
def test_item1_compat_idk_refusal_takes_the_authors_base_model_cut():
    """The authors' IDKEvaluator cuts the output of a base-model name before the refusal check too."""
    label = {'kind': 'refusal'}
    for pred in ('The answer is not stated', 'not stated'):   # no final character to spare: "not state"
        assert score_row(pred, label, 'compat', truncate=True)['correct'] is False
        assert score_row(pred, label, 'compat', truncate=False)['correct'] is True
        assert score_row(pred, label, 'strict', truncate=True)['correct'] is True
    assert score_row('The answer is not stated.', label, 'compat', truncate=True)['correct'] is True
    assert score_row('not stated\nQuestion: next', label, 'compat', truncate=True)['correct'] is True
    assert score_row('Question: x? The answer is not stated.', label, 'compat', truncate=True)['correct'] is False


def test_item1_evaluator_cuts_both_idk_halves_for_a_base_model_name():
    ds = load_longbio('0k', cell='idk', mode='compat', num_samples=2)
    labels = [json.loads(x) for x in ds['label']]
    preds = [oracle_prediction(lab).rstrip('.') for lab in labels]   # no final period on either half
    ev = LongBioEvaluator()
    ev._out_dir = '/w/results/glm-4-9b-chat-1m/longbio_idk_0k'
    assert ev.score(preds, list(ds['answer']), ds)['submetrics'] == {'answer': 0.0, 'refusal': 0.0, 'both': 0.0}
    ev._out_dir = '/w/results/qwen2.5-7b-instruct/longbio_idk_0k'
    assert ev.score(preds, list(ds['answer']), ds)['submetrics'] == {'answer': 100.0, 'refusal': 100.0,
                                                                     'both': 100.0}


RANK = {'kind': 'rank', 'items': ['Bea Lane', 'Al Hart', 'Cy Moss'], 'names': ['Al Hart', 'Bea Lane', 'Cy Moss']}


@pytest.mark.parametrize('pred', [
    "The names list after ranking the age of Al Hart, Bea Lane and Cy Moss is ['Bea Lane', 'Al Hart', 'Cy Moss'].",
    '1. Bea Lane\n2. Al Hart\n3. Cy Moss',
    '1) Bea Lane (30)\n2) Al Hart (41)\n3) Cy Moss (52)',
    'Bea Lane\nAl Hart\nCy Moss',
    '- Bea Lane\n- Al Hart\n- Cy Moss\n',
    'Bea Lane, Al Hart, Cy Moss',
    'Bea Lane, Al Hart and Cy Moss.',
    'bea lane < al hart < cy moss',
    'Bea Lane, Al Hart, Cy Moss.\nBea Lane is the youngest and Cy Moss the oldest.',
    'Al Hart is 41, Bea Lane is 30 and Cy Moss is 52. So: Bea Lane, Al Hart, Cy Moss.\nI hope this helps.',
    'Bea Lane, Al Hart, Cy Moss\nQuestion: Rank Cy Moss, Al Hart and Bea Lane ...\nAnswer: Cy Moss, Al Hart, Bea Lane',
])
def test_item2_strict_rank_reads_the_final_list_in_every_form(pred):
    assert score_row(pred, RANK, 'strict')['correct'] is True
    wrong = {**RANK, 'items': ['Al Hart', 'Bea Lane', 'Cy Moss']}
    assert score_row(pred, wrong, 'strict')['correct'] is False


@pytest.mark.parametrize('pred', [
    "The names list after ranking the age of Bea Lane, Al Hart and Cy Moss is ['Al Hart', 'Bea Lane', 'Cy Moss'].",
    '1. Bea Lane\n2. Al Hart',                  # a name missing
    'Bea Lane, Al Hart, Dee Ross, Cy Moss',     # someone else inside the list
    'Bea Lane is younger than Al Hart, who is younger than Cy Moss.',   # no list
])
def test_item2_strict_rank_refuses_a_wrong_or_missing_final_list(pred):
    assert score_row(pred, RANK, 'strict')['correct'] is False


def test_item3_strict_cuts_a_base_model_continuation_at_question():
    assert score_row('12\nQuestion: What is 5 + 5?', {'kind': 'int', 'value': 5}, 'strict')['correct'] is False
    assert score_row('12\nQuestion: What is 5 + 5?', {'kind': 'int', 'value': 12}, 'strict')['correct'] is True
    label = {'kind': 'list', 'items': ['dandyism']}
    assert score_row(' dandyism', label, 'strict')['correct'] is True     # no off-by-one
    assert score_row(' chess.\nQuestion: ... dandyism', label, 'strict')['correct'] is False
    assert score_row(' chess.\nQuestion: ... dandyism', label, 'compat')['correct'] is True   # as the authors
    refusal = {'kind': 'refusal'}
    assert score_row('Paris.\nQuestion: x?\nAnswer: not stated', refusal, 'strict')['correct'] is False
    rank = score_row("Bea Lane, Al Hart, Cy Moss\nQuestion: ...['Al Hart', 'Bea Lane', 'Cy Moss']", RANK, 'strict')
    assert rank['correct'] is True


def test_item4_evaluator_keeps_the_reference_and_the_answer_hit_of_citation_rows():
    ds = load_longbio('2k', cell='citation_1', mode='compat', num_samples=2)
    preds = [oracle_prediction(json.loads(x)) for x in ds['label']]
    preds[0] = preds[0].replace('[', '(').replace(']', ')')   # right answer, citation lost
    res = LongBioEvaluator().score(preds, list(ds['answer']), ds)
    d = res['details']
    # the hits under the authors' names, the reference text under 'answer' as in the other benchmarks' details
    assert [x['answer_hit'] for x in d] == [True, True] and [x['citation_hit'] for x in d] == [False, True]
    assert [x['answer'] for x in d] == list(ds['answer'])
    assert [x['correct'] for x in d] == [False, True]


def test_item17_lengths_that_differ_raise_one_clear_error():
    ds = load_longbio('0k', cell='standard', mode='compat', num_samples=2)
    refs = list(ds['answer'])
    preds = [oracle_prediction(json.loads(x)) for x in ds['label']]
    for p, r in ((preds[:1], refs), (preds, refs[:1]), (preds + preds, refs + refs)):
        with pytest.raises(ScoringError, match=r'\d predictions for \d references and \d rows'):
            LongBioEvaluator().score(p, r, ds)


def test_item17_calculation_digit_run_beyond_the_int_limit_is_a_wrong_answer():
    label = {'kind': 'int', 'value': 12}
    huge = 'The age difference is ' + '9' * 5000
    for mode in ('compat', 'strict'):
        d = score_row(huge, label, mode)
        assert d['correct'] is False and '5000 digits' in d['reason']
    rows = rows_of('0k', 'calculation', 'compat', 2)
    res = score(rows, [huge, oracle_prediction(json.loads(rows[1]['label']))], 'compat')
    assert res['accuracy'] == 50.0 and res['counts']['correct'] == 1
