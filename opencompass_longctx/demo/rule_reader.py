"""A rule-based reader for bAbI-style questions: a CPU stand-in model for pipeline tests at any tier.

It is not a language model. It reads the ``<context>`` of a BABILong prompt, tracks where each person went
(qa1, qa6, qa11-style "X went to the Y"), which object each person carries (qa2), and answers in the format
the prompt asks for; anything else gets "I do not know." It reads the whole context in linear time, so a 1M-token
tier runs in seconds on a laptop: it proves that data, prompts, evaluation and the summary work end to end at
long tiers, where the tiny random-weight chat model is both useless and too slow. ``forget_after`` (tokens)
makes it ignore facts farther than that from the question, to give a realistic falling curve in demos.
"""
import re
from typing import Dict, List, Optional

from opencompass.models.base import BaseModel

from opencompass_longctx.tokenizer.counting import get_tokenizer
_MOVE = re.compile(r'\b([A-Z][a-z]+) (?:went back|went|journeyed|travelled|traveled|moved|came back) to the (\w+)')
_TAKE = re.compile(r'\b([A-Z][a-z]+) (?:picked up|took|got|grabbed) the (\w+)')
_DROP = re.compile(r'\b([A-Z][a-z]+) (?:dropped|put down|discarded|left) the (\w+)')
_WHERE_PERSON = re.compile(r'Where is ([A-Z][a-z]+)\?')
_WHERE_THING = re.compile(r'Where is the (\w+)\?')
_IS_IN = re.compile(r'Is ([A-Z][a-z]+) in the (\w+)\?')


class BabiRuleReader(BaseModel):
    is_api = False

    def __init__(self, path: str = 'rule-reader', max_seq_len: int = 2_000_000, tokenizer: Optional[str] = None,
                 forget_after: Optional[int] = None, meta_template: Optional[Dict] = None, **kwargs):
        super().__init__(path=path, max_seq_len=max_seq_len, meta_template=meta_template)
        self.tok = get_tokenizer(tokenizer)
        self.forget_after = forget_after

    def get_token_len(self, prompt: str) -> int:
        return self.tok.count(prompt)

    def _context(self, prompt: str) -> str:
        start = prompt.rfind('<context>')
        end = prompt.rfind('</context>')
        ctx = prompt[start + len('<context>'):end] if 0 <= start < end else prompt
        if self.forget_after:  # keep only the last forget_after tokens (approximated as 4 characters each)
            ctx = ctx[-4 * self.forget_after:]
        return ctx

    def answer(self, prompt: str) -> str:
        question = prompt[prompt.rfind('Question:'):]
        ctx = self._context(prompt)
        where: Dict[str, str] = {}
        carried: Dict[str, str] = {}
        events = sorted([(m.start(), 'move', m) for m in _MOVE.finditer(ctx)]
                        + [(m.start(), 'take', m) for m in _TAKE.finditer(ctx)]
                        + [(m.start(), 'drop', m) for m in _DROP.finditer(ctx)], key=lambda e: e[0])
        thing_at: Dict[str, str] = {}
        for _, kind, m in events:
            who, what = m.group(1), m.group(2)
            if kind == 'move':
                where[who] = what
                for thing, holder in carried.items():
                    if holder == who:
                        thing_at[thing] = what
            elif kind == 'take':
                carried[what] = who
                if who in where:
                    thing_at[what] = where[who]
            else:
                carried.pop(what, None)
        m = _WHERE_PERSON.search(question)
        if m and m.group(1) in where:
            return f'The most recent location of {m.group(1)} is {where[m.group(1)]}.'
        m = _WHERE_THING.search(question)
        if m and m.group(1) in thing_at:
            return f'The {m.group(1)} is in the {thing_at[m.group(1)]}.'
        m = _IS_IN.search(question)
        if m and m.group(1) in where:
            return 'yes' if where[m.group(1)] == m.group(2) else 'no'
        return 'I do not know.'

    def generate(self, inputs: List[str], max_out_len: int, **kwargs) -> List[str]:
        return [self.answer(p if isinstance(p, str) else str(p)) for p in inputs]
