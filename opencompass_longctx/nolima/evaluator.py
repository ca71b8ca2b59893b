"""NoLiMa evaluator: the headline metric with per-sample details (pair, question type, order, haystack, depth)."""
import json
from collections import defaultdict

from opencompass.openicl.icl_evaluator import BaseEvaluator

from opencompass_longctx import __version__
from opencompass_longctx.nolima.scoring import METRICS, check_metric, check_predictions, score_many
from opencompass_longctx.overlength import is_over_length, marker_counts
DETAIL_FIELDS = ('pair', 'entry_id', 'group', 'test_id', 'question_type', 'order', 'reasoning_type', 'variant',
                 'haystack',
                 'haystack_index', 'haystack_tier', 'depth', 'depth_index', 'context_length', 'tier', 'character',
                 'length_tokenizer', 'canonical_length')


def _split(details, key, metric='correct'):
    acc = defaultdict(list)
    for d in details:
        acc[str(d.get(key))].append(d[metric])
    return {k: 100.0 * sum(v) / len(v) for k, v in sorted(acc.items())}


class NoLiMaEvaluator(BaseEvaluator):
    """``evaluator=dict(type=NoLiMaEvaluator, metric='contains', strip_think=True)``.

    Returns one numeric top-level value, ``accuracy`` (in ``metric``; the authors use ``contains``), so
    OpenCompass's summary shows one row per dataset; the four metrics, the counts (empty, blocked and invalid
    responses are wrong and counted separately) and the one-hop/two-hop and default/inverted splits sit in
    non-numeric fields; ``details`` has one entry per test. Prompts the model could not hold (marked by the
    package's over-length policy) are left out of the accuracy and counted in ``counts['over_length']``.
    """

    def __init__(self, metric: str = 'contains', strip_think: bool = True, pred_postprocessor=None):
        self.metric = check_metric(metric)
        self.strip_think = bool(strip_think)
        super().__init__(pred_postprocessor=pred_postprocessor)

    def score(self, predictions, references, test_set):
        cols = set(test_set.column_names)
        if 'gold_answers' in cols:
            golds = [json.loads(g) for g in test_set['gold_answers']]
        else:
            golds = [[r] for r in references]
        columns = {k: list(test_set[k]) for k in DETAIL_FIELDS if k in cols}  # column reads: no prompt copies
        meta = [{k: v[i] for k, v in columns.items()} for i in range(len(test_set))]
        predictions = check_predictions(predictions, len(golds))
        kept = [i for i, p in enumerate(predictions) if not is_over_length(p)]
        res = score_many([predictions[i] for i in kept], [golds[i] for i in kept], self.metric, self.strip_think,
                         [meta[i] for i in kept]) if kept else None
        scored = iter(res['details'] if res else [])
        details = [dict({'pred': None, 'answer': golds[i], 'status': 'over_length', 'over_length': True,
                         'correct': False, **{m: False for m in METRICS}}, **meta[i])
                   if is_over_length(p) else next(scored) for i, p in enumerate(predictions)]
        counts = dict(res['counts']) if res else dict(n=0, correct=0)
        counts.update(n=len(predictions), **marker_counts(predictions))
        out = {
            'metric': self.metric,
            'strip_think': str(self.strip_think),
            'package_version': __version__,
            'metrics': res['metrics'] if res else None,
            'counts': counts,
            'by_question_type': _split([d for d in details if not d.get('over_length')], 'question_type'),
            'by_order': _split([d for d in details if not d.get('over_length')], 'order'),
            'details': details,
        }
        if res:  # every sample over-length: no accuracy (the summary shows the tier as not applicable)
            out['accuracy'] = res['accuracy']
        return out
