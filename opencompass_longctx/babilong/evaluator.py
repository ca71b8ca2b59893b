"""BABILong evaluator: accuracy in a named scoring mode, with per-sample details."""
from opencompass.openicl.icl_evaluator import BaseEvaluator

from opencompass_longctx import __version__, overlength
from opencompass_longctx.babilong.scoring import MODES, ScoringError, score_many
class BabilongEvaluator(BaseEvaluator):
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

    def score(self, predictions, references, test_set):
        predictions = overlength.check_predictions(predictions, len(references), len(test_set), ScoringError)
        kept, _ = overlength.split(predictions)
        questions, tasks = test_set['question'], test_set['task']
        res = score_many([predictions[i] for i in kept], [references[i] for i in kept],
                         [questions[i] for i in kept], [tasks[i] for i in kept], self.mode)
        details = iter(res['details'])
        details = [next(details) if not overlength.is_over_length(p) else
                   {'pred': None, 'answer': r, 'correct': False, 'over_length': True}
                   for p, r in zip(predictions, references)]
        # Only 'accuracy' is numeric at the top level, so OpenCompass's summary shows one row per dataset;
        # the counts sit in the results file under 'counts'. Over-length samples are left out of the
        # accuracy; when every sample is over-length there is no accuracy (the summarizer shows N/A).
        out = {'scoring_mode': self.mode, 'package_version': __version__,
               'counts': {'n': len(predictions), 'correct': res['correct'],
                          'invalid_predictions': res['invalid_predictions'], **overlength.marker_counts(predictions)},
               'details': details}
        if kept:
            out['accuracy'] = res['accuracy']
        return out
