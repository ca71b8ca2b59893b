"""Prompts longer than the model can hold: never truncated silently.

``LongCtxGenInferencer`` (see :mod:`opencompass_longctx.inferencer`) does not send such a prompt to the model
and records :data:`OVER_LENGTH` as its prediction. Every evaluator of this package leaves those samples out of
its score and counts them (``counts['over_length']``); the summarizer shows a tier whose samples are all
over-length as N/A, never 0. Another evaluator would see the marker as a wrong answer, never as a right one.
"""
OVER_LENGTH = '[opencompass-longctx: prompt longer than the model can hold; not sent to the model]'


def is_over_length(prediction) -> bool:
    return isinstance(prediction, str) and prediction == OVER_LENGTH


def split(predictions):
    """(indices that were answered, number over-length)."""
    kept = [i for i, p in enumerate(predictions) if not is_over_length(p)]
    return kept, len(predictions) - len(kept)
