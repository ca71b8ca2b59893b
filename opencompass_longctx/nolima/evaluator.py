"""NoLiMa evaluator: the headline metric with per-sample details (pair, question type, order, haystack, depth)."""
import json
from collections import defaultdict

from opencompass_longctx.base import LongCtxEvaluator, column
from opencompass_longctx.nolima.needles import NoLiMaError
from opencompass_longctx.nolima.scoring import METRICS, check_metric, score_many
DETAIL_FIELDS = ('pair', 'entry_id', 'group', 'test_id', 'question_type', 'order', 'reasoning_type', 'variant',
                 'haystack',
                 'haystack_index', 'haystack_tier', 'depth', 'depth_index', 'context_length', 'tier', 'character',
                 'length_tokenizer', 'canonical_length')


def _split(details, key, metric='correct'):
    acc = defaultdict(list)
    for d in details:
        acc[str(d.get(key))].append(d[metric])
    return {k: 100.0 * sum(v) / len(v) for k, v in sorted(acc.items())}


class NoLiMaEvaluator(LongCtxEvaluator):
    """``evaluator=dict(type=NoLiMaEvaluator, metric='contains', strip_think=True)``.

    Returns one numeric top-level value, ``accuracy`` (in ``metric``; the authors use ``contains``), so
    OpenCompass's summary shows one row per dataset; the four metrics, the counts (empty, blocked and invalid
    responses are wrong and counted separately) and the one-hop/two-hop and default/inverted splits sit in
    non-numeric fields; ``details`` has one entry per test. Prompts the model could not hold (marked by the
    package's over-length policy) are left out of the accuracy and counted in ``counts['over_length']``.
    """
    error = NoLiMaError

    def __init__(self, metric: str = 'contains', strip_think: bool = True, pred_postprocessor=None):
        self.metric = check_metric(metric)
        self.strip_think = bool(strip_think)
        super().__init__(pred_postprocessor=pred_postprocessor)

    def read(self, samples):
        golds = column(samples.test_set, 'gold_answers')
        samples.columns['golds'] = ([[r] for r in samples.references] if golds is None else
                                    [json.loads(g) for g in golds])
        columns = {k: column(samples.test_set, k) for k in DETAIL_FIELDS}   # column reads: no prompt copies
        columns = {k: v for k, v in columns.items() if v is not None}
        samples.columns['meta'] = [{k: v[i] for k, v in columns.items()} for i in range(len(samples.test_set))]

    def score_answered(self, rows, predictions, samples):
        golds, meta = samples.columns['golds'], samples.columns['meta']
        res = score_many([predictions[i] for i in rows], [golds[i] for i in rows], self.metric, self.strip_think,
                         [meta[i] for i in rows])
        return {**self._settings(), 'metrics': res['metrics'], 'accuracy': res['accuracy'],
                'details': res['details'], 'counts': res['counts']}

    def nothing_answered(self, samples):
        return {**self._settings(), 'metrics': None, 'counts': {'correct': 0}}

    def _settings(self):
        return {'metric': self.metric, 'strip_think': str(self.strip_think)}

    def marker_detail(self, i, samples):
        return dict({'pred': None, 'answer': samples.columns['golds'][i], 'status': 'over_length',
                     'over_length': True, 'correct': False, **{m: False for m in METRICS}}, **samples.columns['meta'][i])

    def finish(self, out, samples):
        answered = [d for d in out['details'] if not d.get('over_length')]
        out['by_question_type'] = _split(answered, 'question_type')
        out['by_order'] = _split(answered, 'order')
