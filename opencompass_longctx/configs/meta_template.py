# Meta template for chat models (pure data; model configs read_base() it).
#
# OpenCompass's chat wrappers default to a meta template that maps SYSTEM onto HUMAN inside every round,
# which appends "\n" to each user message and folds a system prompt into the user turn. With this one the
# user message is exactly the benchmark's prompt, and a SYSTEM prompt (begin=[dict(role='SYSTEM', ...)])
# becomes a real system message.
LONGCTX_META_TEMPLATE = dict(
    round=[
        dict(role='HUMAN', api_role='HUMAN'),
        dict(role='BOT', api_role='BOT', generate=True),
    ],
    reserved_roles=[dict(role='SYSTEM', api_role='SYSTEM')],
)
