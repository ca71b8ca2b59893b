"""``LongCtxGenInferencer``: OpenCompass's GenInferencer with an explicit over-length policy.

Before a batch goes to the model, each prompt's length is measured with the model's own tokenizer *after* its
chat template, as the wrapper renders it (each message, the answer prefix continued). A prompt whose length plus ``max_out_len`` exceeds the
model's ``max_seq_len`` is not sent (OpenCompass's HF wrapper would cut its start, TurboMind's ``drop_middle``
its middle, where the needle is): its prediction is :data:`~opencompass_longctx.overlength.OVER_LENGTH` and
the evaluators count it as over-length. ``overlength='skip'`` is the only policy, and the default; it is
recorded in the log with the counts.

``model_window`` (set by :class:`~opencompass_longctx.run.partitioner.LongCtxPartitioner` when it gives a tier band an
engine smaller than the model's window): a prompt over the band's ``max_seq_len`` that the model's own window
would hold is an engine-sizing miss, not an over-length prompt. It is not sent either, but its prediction is
:data:`~opencompass_longctx.overlength.ENGINE_TOO_SMALL`, the log says so at ERROR level, and the evaluators and
the tier table report the dataset as incomplete with the reason.
"""
import json

from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.utils import get_logger

from opencompass_longctx.overlength import ENGINE_TOO_SMALL, OVER_LENGTH
POLICIES = ('skip',)


class LongCtxGenInferencer(GenInferencer):

    def __init__(self, *args, overlength: str = 'skip', model_window: int = None, **kwargs):
        if overlength not in POLICIES:
            raise ValueError(f'unknown over-length policy {overlength!r}; choose one of {POLICIES}')
        super().__init__(*args, **kwargs)
        self.overlength, self.model_window = overlength, model_window

    def inference(self, *args, **kwargs):
        model = self.model
        limit = self.max_seq_len or getattr(model, 'max_seq_len', None)
        if not limit:
            return super().inference(*args, **kwargs)
        real_generate, real_len = model.generate_from_template, model.get_token_len
        memo = {}
        stats = {'sent': 0, 'over': 0, 'engine': 0}
        window = self.model_window if self.model_window and self.model_window > limit else None

        def token_len(prompt):  # GenInferencer measures every prompt too: tokenize each one once
            key = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
            if key not in memo:
                memo[key] = real_len(prompt)
            return memo[key]

        def measure(template):
            """The prompt's tokens as the wrapper sends it: its messages through the chat template (OpenCompass's
            get_token_len_from_template joins them into one user message, a few tokens short per message)."""
            parsed = model.parse_template(template, mode='gen')
            if not isinstance(parsed, str):
                try:
                    return token_len(parsed)
                except (TypeError, AttributeError, KeyError):  # a model that measures strings only
                    pass
            return token_len(str(parsed))

        def guarded(templates, max_out_len, **kw):
            # the model returns num_return_sequences outputs per prompt, one after another; GenInferencer groups
            # them again (it reads the count the same way): an unsent prompt gets as many markers
            per_prompt = getattr(model, 'generation_kwargs', {}).get('num_return_sequences', 1)
            need = [measure(t) + max_out_len for t in templates]
            fits = [n <= limit for n in need]
            unsent = [None if ok else ENGINE_TOO_SMALL if window and n <= window else OVER_LENGTH
                      for n, ok in zip(need, fits)]
            keep = [t for t, ok in zip(templates, fits) if ok]
            # the count each sent prompt was judged by: the LMDeploy wrapper compares it with the engine's own
            model.sent_token_counts = [n - max_out_len for n, ok in zip(need, fits) if ok]
            outs = iter(real_generate(keep, max_out_len=max_out_len, **kw) if keep else [])
            stats['sent'] += len(keep)
            stats['engine'] += unsent.count(ENGINE_TOO_SMALL)
            stats['over'] += unsent.count(OVER_LENGTH)
            return [next(outs) if ok else marker for ok, marker in zip(fits, unsent) for _ in range(per_prompt)]

        # model_window: read by the LMDeploy wrapper for a prompt its engine refuses (models/responses.py)
        model.generate_from_template, model.get_token_len, model.model_window = guarded, token_len, window
        try:
            return super().inference(*args, **kwargs)
        finally:
            del model.generate_from_template, model.get_token_len, model.model_window
            model.__dict__.pop('sent_token_counts', None)
            total = stats['over'] + stats['engine'] + stats['sent']
            get_logger().info(f'over-length policy {self.overlength!r}: {stats["over"]} of {total} prompts longer '
                              f'than max_seq_len {limit} minus max_out_len were not sent to the model')
            if stats['engine']:
                get_logger().error(
                    f'{stats["engine"]} of {total} prompts fit the model (window {window}) but not the engine '
                    f'LongCtxPartitioner sized for this tier band (max_seq_len {limit}); they were not sent and the '
                    'dataset is reported as incomplete. Delete its predictions and rerun it with -r and '
                    'LongCtxPartitioner(headroom=...) larger, or a band of its own.')
