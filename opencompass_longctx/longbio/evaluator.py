"""LongBioBench evaluator: one headline accuracy per cell in a named scoring mode, with per-sample details."""
import json
import os

from opencompass.utils import get_logger

from opencompass_longctx import overlength
from opencompass_longctx.base import LongCtxEvaluator, column
from opencompass_longctx.errors import ScoringError
from opencompass_longctx.models.prefill import is_prefilled
from opencompass_longctx.longbio.scoring import MODES, score_cell, truncate_for
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


class LongBioEvaluator(LongCtxEvaluator):
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

    def read(self, samples):
        test_set = samples.test_set
        samples.columns['sent'] = [prefix_sent(p, x) for p, x in zip(samples.origin_prompt or [None] * len(test_set),
                                                                   test_set['prefix'])]
        samples.columns['sample'] = list(test_set['sample'])
        data_mode = test_set['mode'][0]
        mode = self.mode or data_mode
        model = self._model_name()
        truncate = truncate_for(model) if self.authors_truncation == 'auto' else self.authors_truncation
        samples.columns['scoring'] = {'mode': mode, 'data_mode': data_mode, 'cell': test_set['cell'][0],
                                      'model': model, 'authors_truncation': bool(truncate) and mode == 'compat',
                                      'answer_prefix': prefix_summary(samples.columns['sent'])}

    def left_out(self, predictions, samples):
        # a sample with a prompt the model could not hold (over-length, never truncated) is left out whole
        ids = samples.columns['sample']
        over = {s for s, p in zip(ids, predictions) if overlength.is_over_length(p)}
        return {i for i, s in enumerate(ids) if s in over}

    def score_answered(self, rows, predictions, samples):
        test_set, scoring = samples.test_set, samples.columns['scoring']
        labels, row_ids, depths = test_set['label'], test_set['row'], test_set['needle_depths']
        ids = samples.columns['sample']
        res = score_cell([predictions[i] for i in rows], [json.loads(labels[i]) for i in rows],
                         [row_ids[i] for i in rows], [ids[i] for i in rows], test_set['task'][0], scoring['mode'],
                         scoring['authors_truncation'], self.headline)
        for i, d in zip(rows, res['details']):
            d['answer'] = samples.references[i]   # the reference text; citation hits are answer_hit/citation_hit
            d['depth'] = depths[i][0] if depths[i] else None  # first test needle, for depth heatmaps
        return {'headline': res['headline'], 'scoring': scoring, 'accuracy': res['accuracy'],
                'submetrics': res['submetrics'], 'details': res['details'], 'counts': res['counts']}

    def nothing_answered(self, samples):
        return {'headline': None, 'scoring': samples.columns['scoring'],
                'counts': {'samples': 0, 'rows': 0, 'correct': 0, 'invalid_predictions': 0}}

    def marker_counts(self, predictions, samples):
        ids = samples.columns['sample']
        return dict(samples=len(set(ids)), n=len(set(ids)), **overlength.marker_counts(predictions, ids))

    def finish(self, out, samples):
        sent = samples.columns['sent']
        if False in sent:
            get_logger().warning(
                f"{samples.columns['scoring']['cell']}: {sent.count(False)} of {len(sent)} prompts lost the answer "
                'prefix (the model wrapper drops a final assistant turn, as OpenCompass\'s chat wrappers do; the '
                'authors prefill it). Use opencompass_longctx.models.hf.LongCtxHFChatModel or '
                'models.lmdeploy.LongCtxTurboMindModel.')
        seeds = column(samples.test_set, 'seed', [None] * len(out['details']))
        for d, s, seed in zip(out['details'], sent, seeds):
            d['answer_prefix'] = s
            if seed is not None:
                d['seed'] = seed   # names the sample's cluster (the spec's cluster_keys)
