"""``LongCtxGenInferencer``: OpenCompass's GenInferencer with an explicit over-length policy.

Before a batch goes to the model, each prompt's length is measured with the model's own tokenizer *after* its
chat template (``model.get_token_len_from_template``). A prompt whose length plus ``max_out_len`` exceeds the
model's ``max_seq_len`` is not sent (OpenCompass's HF wrapper would cut its start, TurboMind's ``drop_middle``
its middle, where the needle is): its prediction is :data:`~opencompass_longctx.overlength.OVER_LENGTH` and
the evaluators count it as over-length. ``overlength='skip'`` is the only policy, and the default; it is
recorded in the log with the counts.
"""
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.utils import get_logger

from .overlength import OVER_LENGTH

POLICIES = ('skip',)


class LongCtxGenInferencer(GenInferencer):

    def __init__(self, *args, overlength: str = 'skip', **kwargs):
        if overlength not in POLICIES:
            raise ValueError(f'unknown over-length policy {overlength!r}; choose one of {POLICIES}')
        super().__init__(*args, **kwargs)
        self.overlength = overlength

    def inference(self, *args, **kwargs):
        model = self.model
        limit = self.max_seq_len or getattr(model, 'max_seq_len', None)
        if not limit:
            return super().inference(*args, **kwargs)
        real_generate, real_len = model.generate_from_template, model.get_token_len
        memo = {}
        stats = {'sent': 0, 'over': 0}

        def token_len(prompt):  # GenInferencer measures every prompt too: tokenize each one once
            if prompt not in memo:
                memo[prompt] = real_len(prompt)
            return memo[prompt]

        def guarded(templates, max_out_len, **kw):
            # the model returns num_return_sequences outputs per prompt, one after another; GenInferencer groups
            # them again (it reads the count the same way): an unsent prompt gets as many markers
            per_prompt = getattr(model, 'generation_kwargs', {}).get('num_return_sequences', 1)
            fits = [model.get_token_len_from_template(t, mode='gen') + max_out_len <= limit for t in templates]
            keep = [t for t, ok in zip(templates, fits) if ok]
            outs = iter(real_generate(keep, max_out_len=max_out_len, **kw) if keep else [])
            stats['sent'] += len(keep)
            stats['over'] += len(templates) - len(keep)
            return [next(outs) if ok else OVER_LENGTH for ok in fits for _ in range(per_prompt)]

        model.generate_from_template, model.get_token_len = guarded, token_len
        try:
            return super().inference(*args, **kwargs)
        finally:
            del model.generate_from_template, model.get_token_len
            get_logger().info(f'over-length policy {self.overlength!r}: {stats["over"]} of '
                              f'{stats["over"] + stats["sent"]} prompts longer than max_seq_len {limit} minus '
                              f'max_out_len were not sent to the model')
