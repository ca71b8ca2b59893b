"""Hugging Face chat models for long-context benchmarks: OpenCompass's ``HuggingFacewithChatTemplate`` that
continues a final assistant message (LongBioBench's answer prefix, :mod:`opencompass_longctx.models.prefill`).

    models = [dict(type=LongCtxHFChatModel, path='Qwen/Qwen2.5-7B-Instruct', meta_template=LONGCTX_META_TEMPLATE,
                   continue_final_message=True, ...)]

With ``continue_final_message=False`` it behaves exactly like OpenCompass's wrapper (the prefix is dropped).
"""
from opencompass.models import HuggingFacewithChatTemplate

from opencompass_longctx.models import prefill
class LongCtxHFChatModel(HuggingFacewithChatTemplate):
    """``HuggingFacewithChatTemplate`` plus ``continue_final_message`` (default True): a prompt template whose last
    ``BOT`` turn has text (an answer prefix) is rendered with transformers' ``continue_final_message=True`` and the
    model continues the prefix; every other prompt is rendered as OpenCompass renders it."""

    def __init__(self, path: str, continue_final_message: bool = True, **kwargs):
        super().__init__(path=path, **kwargs)
        self.continue_final_message = bool(continue_final_message)
        if self.continue_final_message:
            prefill.enable(self)
