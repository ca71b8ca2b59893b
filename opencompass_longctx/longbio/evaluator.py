"""LongBioBench evaluator: one headline accuracy per cell in a named scoring mode, with per-sample details."""
import json
import os

from opencompass.openicl.icl_evaluator import BaseEvaluator

from .. import __version__, overlength
from .scoring import MODES, ScoringError, score_cell, truncate_for


class LongBioEvaluator(BaseEvaluator):
    """``evaluator=dict(type=LongBioEvaluator)``.

    * ``mode``: None (default) scores in the mode the data was generated in; 'compat' or 'strict' overrides.
    * ``authors_truncation``: 'auto' (default) applies the authors' base-model cut in compat mode when the
      model's name (its abbr, read from the results path) lacks "instruct", as the authors decided from the
      model path; True / False force it. Never applied in strict mode.
    * ``headline``: the sub-metric reported as ``accuracy`` for citation ('answer', 'citation', 'both';
      default compat 'citation', strict 'both') and idk ('answer', 'refusal', 'both'; default 'both').

    Only ``accuracy`` is numeric at the top level (one summary row per dataset); the sub-metrics, counts and
    scoring settings sit in nested entries of the results file. Samples whose prompt the model could not hold
    (:mod:`opencompass_longctx.overlength`) are left out of the accuracy and counted in
    ``counts['over_length']``; with none left there is no accuracy (the tier table shows N/A).
    """

    def __init__(self, mode=None, authors_truncation='auto', headline=None, pred_postprocessor=None):
        if mode is not None and mode not in MODES:
            raise ScoringError(f'unknown LongBioBench scoring mode {mode!r}; modes: {MODES} (or None)')
        if authors_truncation not in ('auto', True, False):
            raise ScoringError(f"authors_truncation must be 'auto', True or False, got {authors_truncation!r}")
        super().__init__(pred_postprocessor=pred_postprocessor)
        self.mode, self.authors_truncation, self.headline = mode, authors_truncation, headline

    def _model_name(self):
        out = getattr(self, '_out_dir', None)
        return os.path.basename(os.path.dirname(out)) if out else None

    def score(self, predictions, references, test_set):
        predictions = overlength.check_predictions(predictions, len(references), len(test_set), ScoringError)
        data_mode, task, cell = test_set['mode'][0], test_set['task'][0], test_set['cell'][0]
        mode = self.mode or data_mode
        model = self._model_name()
        truncate = (truncate_for(model) if self.authors_truncation == 'auto' else self.authors_truncation)
        truncate = bool(truncate) and mode == 'compat'
        samples = list(test_set['sample'])
        # a sample with a prompt the model could not hold (over-length, never truncated) is left out whole
        over = {s for s, p in zip(samples, predictions) if overlength.is_over_length(p)}
        keep = [i for i, s in enumerate(samples) if s not in over]
        labels, rows, depths = test_set['label'], test_set['row'], test_set['needle_depths']
        out = {'headline': None, 'scoring': {'mode': mode, 'data_mode': data_mode, 'cell': cell, 'model': model,
                                             'authors_truncation': truncate}, 'package_version': __version__}
        details = [{'pred': None, 'answer': ref, 'correct': False, 'over_length': True} for ref in references]
        counts = {'samples': 0, 'rows': 0, 'correct': 0, 'invalid_predictions': 0}
        if keep:
            res = score_cell([predictions[i] for i in keep], [json.loads(labels[i]) for i in keep],
                             [rows[i] for i in keep], [samples[i] for i in keep], task, mode, truncate,
                             self.headline)
            for i, d in zip(keep, res['details']):
                d['answer'] = references[i]   # the reference text; citation hits are answer_hit/citation_hit
                d['depth'] = depths[i][0] if depths[i] else None  # first test needle, for depth heatmaps
                details[i] = d
            out.update(accuracy=res['accuracy'], headline=res['headline'], submetrics=res['submetrics'])
            counts = res['counts']
        out['counts'] = dict(counts, samples=len(set(samples)), n=len(set(samples)), over_length=len(over))
        out['details'] = details
        return out
