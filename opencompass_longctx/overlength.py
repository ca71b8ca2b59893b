"""Prompts longer than the model can hold: never truncated silently.

``LongCtxGenInferencer`` (see :mod:`opencompass_longctx.run.inferencer`) does not send such a prompt to the model
and records :data:`OVER_LENGTH` as its prediction. Every evaluator of this package leaves those samples out of
its score and counts them (``counts['over_length']``); the summarizer shows a tier whose samples are all
over-length as N/A, never 0. Another evaluator would see the marker as a wrong answer, never as a right one.
"""
OVER_LENGTH = '[opencompass-longctx: prompt longer than the model can hold; not sent to the model]'
# A prompt the model could hold but its engine for this tier band could not (LongCtxPartitioner sized the band's
# engine too small): not sent either, left out of the score like an over-length one, and counted apart
# (``counts['engine_too_small']``): the tier table shows such a dataset as missing with the reason, never as a
# score over fewer samples or as N/A. LMDeploy's own refusals of a prompt its engine cannot hold (session_len, KV
# cache), and an answer its engine cut short, get this marker too (:mod:`opencompass_longctx.models.responses`).
ENGINE_TOO_SMALL = ('[opencompass-longctx: prompt fits the model but not the engine sized for its tier band; '
                    'not sent to the model]')
# The engine answered a prompt with an error that is neither of the above (LMDeploy's Response with
# finish_reason 'error', see :mod:`opencompass_longctx.models.responses`): its empty text would be scored as a
# wrong answer. Left out of the score like the others and counted apart (``counts['engine_error']``); the error
# itself is in the task's log, and the tier table shows the dataset as missing with the reason.
ENGINE_ERROR = '[opencompass-longctx: the engine returned an error for this prompt (see the infer log); not scored]'
MARKERS = (OVER_LENGTH, ENGINE_TOO_SMALL, ENGINE_ERROR)


def is_over_length(prediction) -> bool:
    """Whether a prediction is one of the markers: a sample left out of the score (counted in 'over_length')."""
    return isinstance(prediction, str) and prediction in MARKERS


def engine_misses(predictions) -> int:
    return sum(isinstance(p, str) and p == ENGINE_TOO_SMALL for p in predictions)


def marker_counts(predictions, samples=None) -> dict:
    """The counts every evaluator of this package writes: 'over_length' (samples left out of the score, any
    marker), 'engine_too_small' and 'engine_error'. With ``samples`` (one sample id per prediction, as
    LongBioBench's rows), each counts distinct samples instead of predictions."""
    keys = list(range(len(predictions))) if samples is None else list(samples)
    marked = {name: {k for k, p in zip(keys, predictions) if is_over_length(p) and (marker is None or p == marker)}
              for name, marker in (('over_length', None), ('engine_too_small', ENGINE_TOO_SMALL),
                                   ('engine_error', ENGINE_ERROR))}
    return {name: len(ks) for name, ks in marked.items()}


def split(predictions):
    """(indices that were answered, number over-length)."""
    kept = [i for i, p in enumerate(predictions) if not is_over_length(p)]
    return kept, len(predictions) - len(kept)


def check_predictions(predictions, n_references: int, n_rows: int = None, error=ValueError) -> list:
    """The predictions as a list, or one clear ``error``: not a list, empty, or a length other than the
    references' (and the test set's rows', when given). Never scores over the shorter list."""
    if isinstance(predictions, (str, bytes, dict)) or not hasattr(predictions, '__len__'):
        raise error(f'predictions must be a list of responses, got {type(predictions).__name__}')
    predictions = list(predictions)
    if not predictions:
        raise error('no predictions to score (the prediction list is empty): did inference run?')
    if len(predictions) != n_references or (n_rows is not None and n_rows != n_references):
        rows = '' if n_rows is None else f' and {n_rows} rows'
        raise error(f'{len(predictions)} predictions for {n_references} references{rows}: they must be equal '
                    '(one prediction per row of the test set)')
    return predictions
