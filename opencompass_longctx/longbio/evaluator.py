"""LongBioBench evaluator: one headline accuracy per cell in a named scoring mode, with per-sample details."""
import json
import os

from opencompass.openicl.icl_evaluator import BaseEvaluator
from opencompass.utils import get_logger

from opencompass_longctx import __version__, overlength
from opencompass_longctx.models.prefill import is_prefilled
from opencompass_longctx.longbio.scoring import MODES, ScoringError, score_cell, truncate_for
def prefix_sent(origin_prompt, prefix: str):
    """Whether the model continued the answer prefix: its chat prompt ends with a prefilled message (the package's
    model wrappers, :mod:`opencompass_longctx.models.prefill`), or its plain-text prompt (a base model's) ends
    with the prefix. None when the prompt is not known (a direct ``score()`` call)."""
    if origin_prompt is None:
        return None
    if isinstance(origin_prompt, str):
        return origin_prompt.rstrip().endswith(prefix.rstrip())
    return is_prefilled(origin_prompt)


def prefix_summary(sent) -> str:
    known = {s for s in sent if s is not None}
    if not known:
        return 'unknown'
    return 'mixed' if len(known) > 1 else ('continued' if known == {True} else 'dropped')


class LongBioEvaluator(BaseEvaluator):
    """``evaluator=dict(type=LongBioEvaluator)``.

    * ``mode``: None (default) scores in the mode the data was generated in; 'compat' or 'strict' overrides.
    * ``authors_truncation``: 'auto' (default) applies the authors' base-model cut in compat mode when the
      model's name (its abbr, read from the results path) lacks "instruct", as the authors decided from the
      model path; True / False force it. Never applied in strict mode.
    * ``headline``: the sub-metric reported as ``accuracy`` for citation ('answer', 'citation', 'both';
      default compat 'citation', strict 'both') and idk ('answer', 'refusal', 'both'; default 'both').

    The authors prefill the assistant turn with an answer prefix. Each detail says whether this row's model
    continued it (``answer_prefix``: True, False, or None when OpenCompass gave no prompt), and
    ``scoring['answer_prefix']`` sums it up: 'continued', 'dropped' (a wrapper that drops a final assistant turn,
    as OpenCompass's own do: not the authors' protocol), 'mixed' or 'unknown'.

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

    def score(self, predictions, references, test_set, origin_prompt=None):
        predictions = overlength.check_predictions(predictions, len(references), len(test_set), ScoringError)
        sent = [prefix_sent(p, x) for p, x in zip(origin_prompt or [None] * len(test_set), test_set['prefix'])]
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
                                             'authors_truncation': truncate, 'answer_prefix': prefix_summary(sent)},
               'package_version': __version__}
        if False in sent:
            get_logger().warning(
                f'{cell}: {sent.count(False)} of {len(sent)} prompts lost the answer prefix (the model wrapper drops '
                'a final assistant turn, as OpenCompass\'s chat wrappers do; the authors prefill it). Use '
                'opencompass_longctx.models.hf.LongCtxHFChatModel or models.lmdeploy.LongCtxTurboMindModel.')
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
        out['counts'] = dict(counts, samples=len(set(samples)), n=len(set(samples)),
                             **overlength.marker_counts(predictions, samples))
        seeds = list(test_set['seed']) if 'seed' in getattr(test_set, 'column_names', test_set) else [None] * len(details)
        for d, s, seed in zip(details, sent, seeds):
            d['answer_prefix'] = s
            if seed is not None:
                d['seed'] = seed   # names the sample's cluster (the spec's cluster_keys)
        out['details'] = details
        return out
