"""BABILong evaluator: accuracy in a named scoring mode, with per-sample details."""
from opencompass_longctx.base import LongCtxEvaluator
from opencompass_longctx.errors import ScoringError
from opencompass_longctx.babilong.scoring import MODES, score_many


class BabilongEvaluator(LongCtxEvaluator):
    """``evaluator=dict(type=BabilongEvaluator, mode='official'|'fixed'|'lenient')``.

    ``score`` reads the question and task of each sample from the test set (the official rule ignores
    labels that occur in the question). Empty, ``None`` or non-string predictions count as wrong and are
    reported in ``counts['invalid_predictions']``. Prompts the model could not hold (see
    :mod:`opencompass_longctx.overlength`) are left out of the accuracy and counted in ``counts['over_length']``.
    """

    def __init__(self, mode: str = 'official', pred_postprocessor=None):
        if mode not in MODES:
            raise ScoringError(f'unknown BABILong scoring mode {mode!r}; choose one of {MODES}')
        super().__init__(pred_postprocessor=pred_postprocessor)
        self.mode = mode

    def score_answered(self, rows, predictions, samples):
        questions, tasks = samples.test_set['question'], samples.test_set['task']
        res = score_many([predictions[i] for i in rows], [samples.references[i] for i in rows],
                         [questions[i] for i in rows], [tasks[i] for i in rows], self.mode)
        return {'scoring_mode': self.mode, 'accuracy': res['accuracy'], 'details': res['details'],
                'counts': {'correct': res['correct'], 'invalid_predictions': res['invalid_predictions']}}

    def nothing_answered(self, samples):
        return {'scoring_mode': self.mode, 'counts': {'correct': 0, 'invalid_predictions': 0}}
