"""Continue a final assistant message: the answer prefix LongBioBench's authors prefill.

The authors render system, user and a prefilled assistant message with ``continue_final_message=True`` and trim
the prompt so that it ends exactly at the stripped prefix: the model continues "Based on the provided context,
the hobby of X is". OpenCompass loses that turn in two places:

1. the template parser: a dataset's prompt template gives the prefix as the last round's ``BOT`` turn, and in
   generation mode ``APITemplateParser._role2api_role`` stops *before* the meta template's ``generate=True`` role
   (``BOT``), so the prefix never reaches the model wrapper;
2. the chat wrappers (``HuggingFacewithChatTemplate``, ``TurboMindModelwithChatTemplate``) render every
   conversation with ``add_generation_prompt=True``, which would close a final assistant message and open a new
   one.

:func:`enable` fixes both for one model object: :class:`PrefillTemplateParser` keeps a final ``BOT`` turn *that
has text* in generation mode (marked ``'prefill': True``, so the predictions file's ``origin_prompt`` says the
prefix was sent), and the wrapper's tokenizer renders a conversation that ends with an assistant message with
``continue_final_message=True`` instead (and without ``add_generation_prompt``), its content right-stripped as the
authors trim it. Templates whose last ``BOT`` turn is empty in generation (every other benchmark here, and
OpenCompass's own datasets, whose ``{answer}`` is blanked) are parsed exactly as before.
"""
from opencompass.models.base_api import APITemplateParser
from opencompass_longctx.errors import LongCtxError


class PrefillError(LongCtxError, ValueError):
    pass


class PrefillTemplateParser(APITemplateParser):
    """``APITemplateParser`` that, in generation mode, sends the generating role's turn when it has text."""

    def _role2api_role(self, role_prompt, role_dict, for_gen=False):
        merged = role_dict.get(role_prompt['role'], role_dict.get(role_prompt.get('fallback_role')))
        if for_gen and merged.get('generate', False) and merged.get('prompt'):
            # no 'end': the model continues this message
            return {'role': merged['api_role'], 'prompt': merged.get('begin', '') + merged['prompt'],
                    'prefill': True}, False
        return super()._role2api_role(role_prompt, role_dict, for_gen)


def is_prefilled(origin_prompt) -> bool:
    """Whether a prompt, as OpenCompass saves it (``origin_prompt``), ends with a prefilled message."""
    return (isinstance(origin_prompt, (list, tuple)) and bool(origin_prompt)
            and isinstance(origin_prompt[-1], dict) and origin_prompt[-1].get('prefill') is True)


def _continuing(apply_chat_template):
    def render(conversation, *args, **kwargs):
        last = conversation[-1] if isinstance(conversation, (list, tuple)) and conversation else None
        if isinstance(last, dict) and last.get('role') == 'assistant':
            conversation = list(conversation[:-1]) + [dict(last, content=last['content'].rstrip())]
            kwargs.update(add_generation_prompt=False, continue_final_message=True)
            try:
                return apply_chat_template(conversation, *args, **kwargs)
            except ValueError as e:
                raise PrefillError(
                    f'the chat template cannot continue the final assistant message ({e}); give the model '
                    'continue_final_message=False to answer without the prefix (as OpenCompass does)') from e
        return apply_chat_template(conversation, *args, **kwargs)
    return render


def enable(model) -> None:
    """Make an OpenCompass chat wrapper (after its ``__init__``) send and continue a final assistant message."""
    if getattr(model, 'fastchat_template', None):
        raise PrefillError('continue_final_message needs the tokenizer\'s chat template: a fastchat_template '
                           'always opens a new assistant turn (set continue_final_message=False)')
    model.template_parser = PrefillTemplateParser(model.template_parser.meta_template)
    model.tokenizer.apply_chat_template = _continuing(model.tokenizer.apply_chat_template)
