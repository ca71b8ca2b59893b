"""BABILong prompts.

The authors' 20 task prompts and template are read from the copy that ships inside the installed
``opencompass`` package (``opencompass/datasets/babilong/prompts.py``, byte-identical to the authors' in all
20 entries); they are not retyped here. The file is loaded directly, without importing
``opencompass.datasets`` (which pulls in torch, nltk and every OpenCompass dataset).

Variants:

* ``official``: byte-exact; assembled like the authors' ``get_formatted_input`` (template
  ``{instruction}\\n\\n{examples}\\n\\n{post_prompt}\\n\\n<context>\\n{context}\\n</context>\\n\\nQuestion: {question}``,
  context stripped, result stripped; disabled parts become empty strings).
* ``cleaned``: the same prompts with the authors' quirks fixed: the stray ``<context>`` after the examples of
  qa10-qa16 and qa20 removed, the swapped qa4/qa5 instructions swapped back, missing spaces after sentence
  ends restored (qa2 instruction, qa18 and qa20 examples), newlines between ``</example><example>``
  (qa17, qa18), and "ordinal" -> "cardinal" directions in qa19.
"""
import functools
import importlib.util
import os
import re
from typing import Dict
from opencompass_longctx.errors import LongCtxError

VARIANTS = ('official', 'cleaned')
TASKS = tuple(f'qa{i}' for i in range(1, 21))
# "You are a helpful assistant." is the system prompt of most of the authors' API-path scripts.
LEADERBOARD_SYSTEM_PROMPT = 'You are a helpful assistant.'


class PromptError(LongCtxError, ValueError):
    pass


@functools.lru_cache(maxsize=1)
def _opencompass_prompts():
    spec = importlib.util.find_spec('opencompass')
    if spec is None or not spec.submodule_search_locations:
        raise PromptError('opencompass is not installed: the BABILong prompts are read from its package')
    path = os.path.join(list(spec.submodule_search_locations)[0], 'datasets', 'babilong', 'prompts.py')
    mod_spec = importlib.util.spec_from_file_location('_longctx_babilong_prompts', path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod


def _clean(task: str, parts: Dict[str, str], official: Dict[str, Dict[str, str]]) -> Dict[str, str]:
    parts = dict(parts)
    if task in ('qa4', 'qa5'):  # each instruction describes the other task's domain
        parts['instruction'] = official['qa5' if task == 'qa4' else 'qa4']['instruction']
    ex = parts['examples']
    if ex.rstrip().endswith('<context>'):
        ex = ex.rstrip()[:-len('<context>')]
    ex = ex.replace('</example><example>', '</example>\n<example>')
    ex = re.sub(r'\.(?=[A-Z])', '. ', ex)
    parts['examples'] = ex.strip()
    parts['instruction'] = re.sub(r'\.(?=[A-Z])', '. ', parts['instruction'])
    parts['post_prompt'] = parts['post_prompt'].replace('ordinal directions', 'cardinal directions')
    return parts


def prompt_parts(task: str, variant: str = 'official', use_instruction: bool = True,
                 use_examples: bool = True, use_post_prompt: bool = True) -> Dict[str, str]:
    if variant not in VARIANTS:
        raise PromptError(f'unknown BABILong prompt variant {variant!r}; choose one of {VARIANTS}')
    official = _opencompass_prompts().DEFAULT_PROMPTS
    if task not in official:
        raise PromptError(f'unknown BABILong task {task!r}; choose one of qa1..qa20')
    parts = dict(official[task])
    if variant == 'cleaned':
        parts = _clean(task, parts, official)
    return {'instruction': parts['instruction'] if use_instruction else '',
            'examples': parts['examples'] if use_examples else '',
            'post_prompt': parts['post_prompt'] if use_post_prompt else ''}


def template() -> str:
    return _opencompass_prompts().DEFAULT_TEMPLATE


def format_prompt(context: str, question: str, parts: Dict[str, str]) -> str:
    """The authors' assembly: fill the template with the stripped context; strip the whole result."""
    return template().format(instruction=parts['instruction'], examples=parts['examples'],
                             post_prompt=parts['post_prompt'], context=context.strip(),
                             question=question).strip()
