import pytest
from datasets import Dataset

from opencompass_longctx.babilong.evaluator import BabilongEvaluator
from opencompass_longctx.babilong.scoring import ScoringError
from opencompass_longctx.overlength import OVER_LENGTH
def test_evaluator_counts_over_length_and_invalid_predictions():
    ts = Dataset.from_dict({'question': ['Where is Mary? '] * 4, 'task': ['qa1'] * 4})
    res = BabilongEvaluator('official').score([OVER_LENGTH, 'kitchen', None, 'garden'], ['kitchen'] * 4, ts)
    assert res['accuracy'] == pytest.approx(100 / 3)  # over-length left out: 1 of 3 answered right
    assert res['counts'] == {'n': 4, 'correct': 1, 'invalid_predictions': 1, 'over_length': 1, 'engine_too_small': 0, 'engine_error': 0}
    assert res['details'][0]['over_length'] is True and res['details'][1]['correct'] is True
    assert res['scoring_mode'] == 'official' and res['package_version']


def test_all_over_length_gives_no_accuracy():
    ts = Dataset.from_dict({'question': ['Where is Mary? '] * 2, 'task': ['qa1'] * 2})
    res = BabilongEvaluator('fixed').score([OVER_LENGTH] * 2, ['kitchen'] * 2, ts)
    assert 'accuracy' not in res and res['counts']['over_length'] == 2


def test_unknown_mode():
    with pytest.raises(ScoringError, match='official'):
        BabilongEvaluator('strict')


@pytest.mark.parametrize('n_preds,n_refs,n_rows', [(2, 3, 3), (3, 2, 3), (3, 3, 2), (4, 3, 3)])
def test_item17_lengths_that_differ_raise_one_clear_error(n_preds, n_refs, n_rows):
    ts = Dataset.from_dict({'question': ['Where is Mary? '] * n_rows, 'task': ['qa1'] * n_rows})
    with pytest.raises(ScoringError, match=rf'{n_preds} predictions for {n_refs} references and {n_rows} rows'):
        BabilongEvaluator('official').score(['kitchen'] * n_preds, ['kitchen'] * n_refs, ts)
