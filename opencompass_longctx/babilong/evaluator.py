"""BABILong evaluator: accuracy in a named scoring mode, with per-sample details."""
from opencompass.openicl.icl_evaluator import BaseEvaluator

from .. import __version__
from .scoring import MODES, ScoringError, score_many


class BabilongEvaluator(BaseEvaluator):
    """``evaluator=dict(type=BabilongEvaluator, mode='official'|'fixed'|'lenient')``.

    ``score`` reads the question and task of each sample from the test set (the official rule ignores
    labels that occur in the question). Empty, ``None`` or non-string predictions count as wrong and are
    reported in ``counts['invalid_predictions']``.
    """

    def __init__(self, mode: str = 'official', pred_postprocessor=None):
        if mode not in MODES:
            raise ScoringError(f'unknown BABILong scoring mode {mode!r}; choose one of {MODES}')
        super().__init__(pred_postprocessor=pred_postprocessor)
        self.mode = mode

    def score(self, predictions, references, test_set):
        res = score_many(list(predictions), list(references), list(test_set['question']),
                         list(test_set['task']), self.mode)
        # Only 'accuracy' is numeric at the top level, so OpenCompass's summary shows one row per dataset;
        # the counts sit in the results file under 'counts'.
        return {'accuracy': res['accuracy'], 'scoring_mode': self.mode, 'package_version': __version__,
                'counts': {'n': res['n'], 'correct': res['correct'],
                           'invalid_predictions': res['invalid_predictions']},
                'details': res['details']}
