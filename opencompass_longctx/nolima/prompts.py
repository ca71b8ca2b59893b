"""NoLiMa prompt and decoding settings, exactly as the authors' runner (docs/faithfulness.md#nolima)."""

# One system message (no final period), then the filled template as a single user message. The needle set's
# own `system_prompt` field is ignored, as in the authors' OpenAI/vLLM/Gemini paths.
SYSTEM_PROMPT = 'You are a helpful assistant'

# The default task template (note the space before "Return"); filled with str.format.
TASK_TEMPLATE = (
    'You will answer a question based on the following book snippet:\n\n{haystack}\n\n'
    'Use the information provided in the book snippet to answer the question. Your answer should be short '
    'and based on either explicitly stated facts or strong, logical inferences.\n\n'
    'Question: {question}\n\n Return only the final answer with no additional explanation or reasoning.')

# Greedy decoding, at most 192 new tokens (reasoning models: 1536, with the trace stripped before scoring).
MAX_NEW_TOKENS = 192
REASONING_MAX_NEW_TOKENS = 1536


def build_prompt(haystack: str, question: str, task_template=None) -> str:
    """The user message: the entry's ``task_template`` (CoT set) or the default template."""
    return (task_template or TASK_TEMPLATE).format(haystack=haystack, question=question)
