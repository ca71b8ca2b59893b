"""LongBioBench tasks: questions, answers, demos and prompts of the 15 cells in both modes.

Wording is the authors' (their repository at HEAD 7238f69; docs/faithfulness.md#longbiobench), including their typos.
Where the authors' description elides a string it is marked [inferred] here.

Modes:
* ``compat`` reproduces the authors' prompts, demo bugs included: multi-standard demos show only the first
  answer attached to the last line; multihop demos show only the first character of the answer; single
  citation demos show a list repr and double brackets; prefixes get their first character lower-cased, even
  when it is a name ("elizabeth Upton Schmidt was born in").
* ``strict`` renders the demos correctly (every answer, the whole answer, "value [k]") and lower-cases a
  prefix only when it starts with "The".
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS, LONGBIO_DEFAULT_SHOTS, LONGBIO_MODES, LONGBIO_NEED_TOKENS
from opencompass_longctx.longbio.people import CHAIN_NAMES, Person
from opencompass_longctx.longbio.pools import SUBJECT, VALUE, load_pools
from opencompass_longctx.errors import LongCtxError
TASKS = tuple(dict.fromkeys(c['task'] for c in LONGBIO_CELLS))
OFFERED_N: Dict[str, Tuple[int, ...]] = {}
for _c in LONGBIO_CELLS:
    OFFERED_N.setdefault(_c['task'], ())
    OFFERED_N[_c['task']] += (_c['n'],)
CELLS = {c['cell']: c for c in LONGBIO_CELLS}
MATH_TASKS = ('calculation', 'rank', 'twodiff')
MAX_SHOTS = 5


class LongBioConfigError(LongCtxError, ValueError):
    """Bad LongBioBench parameters (unknown task/mode, n not offered, values out of range...)."""


def cell_name(task: str, n: int) -> str:
    for c in LONGBIO_CELLS:
        if c['task'] == task and c['n'] == n:
            return c['cell']
    raise LongBioConfigError(f'n={n!r} is not offered for LongBioBench task {task!r}; offered: '
                             f'{OFFERED_N.get(task)}')


def resolve_cell(cell: Optional[str] = None, task: Optional[str] = None, n: Optional[int] = None) -> Dict:
    """The catalogue entry for a cell name, or for (task, n). Raises LongBioConfigError with the choices."""
    if cell is not None:
        if cell not in CELLS:
            raise LongBioConfigError(f'unknown LongBioBench cell {cell!r}; cells: {", ".join(CELLS)}')
        c = CELLS[cell]
        if (task is not None and task != c['task']) or (n is not None and n != c['n']):
            raise LongBioConfigError(f'cell {cell!r} is task {c["task"]!r} with n={c["n"]}, not task={task!r} n={n!r}')
        return c
    if task not in OFFERED_N:
        raise LongBioConfigError(f'unknown LongBioBench task {task!r}; tasks: {", ".join(TASKS)}')
    if n is None and len(OFFERED_N[task]) == 1:
        n = OFFERED_N[task][0]
    if isinstance(n, bool) or not isinstance(n, int) or n not in OFFERED_N[task]:
        raise LongBioConfigError(f'n={n!r} is not offered for LongBioBench task {task!r}; offered: {OFFERED_N[task]}')
    return CELLS[cell_name(task, n)]


def check_mode(mode: str) -> str:
    if mode not in LONGBIO_MODES:
        raise LongBioConfigError(f'unknown LongBioBench mode {mode!r}; modes: {LONGBIO_MODES}')
    return mode


def check_shots(task: str, shots) -> int:
    if shots is None:
        return LONGBIO_DEFAULT_SHOTS[task]
    if isinstance(shots, bool) or not isinstance(shots, int) or not 0 <= shots <= MAX_SHOTS:
        raise LongBioConfigError(f'shots must be an integer in 0..{MAX_SHOTS}, got {shots!r}')
    if task == 'idk' and shots:
        raise LongBioConfigError('the idk task is 0-shot only (the authors define no IDK demos)')
    if task == 'citation' and not shots:
        raise LongBioConfigError('the citation task needs demos (shots >= 1): its prompt refers to "the examples"')
    return shots


# ------------------------------------------------------------------------------------- questions, answers
QUESTIONS = dict(birthdate='What is the birthday of {}?', birthplace='What is the birthplace of {}?',
                 hobby='What is the hobby of {}?', university='Which university did {} graduate from?',
                 major='What was the major of {}?', work_city='Which city did {} work in?')


def question_prefix(attr: str, name: str) -> str:
    """The standard sentence without its value and final period: 'The hobby of X is', 'X was born in'."""
    return load_pools().standard[attr].replace(SUBJECT, name).split(' ' + VALUE)[0]


def join_names(names: List[str]) -> str:
    return names[0] if len(names) == 1 else ', '.join(names[:-1]) + ' and ' + names[-1]


@dataclass
class Group:
    """One question over n needle people (test question or demo)."""
    people: List[Person]            # in context order
    attr: str
    question: str
    prefix: str
    answer: object                  # list[str] | int | str | dict (twodiff)
    rationale: str = ''
    prefixes: List[str] = field(default_factory=list)   # per-question prefixes (multi / cite-2)
    chain: Dict[int, str] = field(default_factory=dict)  # multihop: person index -> replacement sentence


def make_group(task: str, people: List[Person], attr: str, standard: Dict[str, str]) -> Group:
    names = [p.name for p in people]
    if task in ('standard', 'multi_standard', 'paraphrase', 'pronoun', 'citation', 'idk'):
        qs = [QUESTIONS[attr].format(nm) for nm in names]
        pres = [question_prefix(attr, nm) for nm in names]
        values = [p.value(attr) for p in people]
        if len(people) == 1:
            return Group(people, attr, qs[0], pres[0], values, prefixes=pres)
        return Group(people, attr, '\n'.join(f'Question{k + 1}: {q}' for k, q in enumerate(qs)),
                     '\n'.join(f'Question{k + 1}: {p}' for k, p in enumerate(pres)), values, prefixes=pres)
    if task == 'multihop':
        chain = {k: f'The {CHAIN_NAMES[attr]} of {names[k]} is the same as {names[k - 1]}.'
                 for k in range(1, len(people))}
        first = standard[attr].format(*people[0])
        rationale = ' '.join([chain[k] for k in range(len(people) - 1, 0, -1)] + [first]) + ' '  # [inferred]
        return Group(people, attr, QUESTIONS[attr].format(names[-1]), question_prefix(attr, names[-1]),
                     people[0].value(attr), rationale=rationale, chain=chain)
    ages = [p.age for p in people]
    if task == 'rank':
        order = sorted(range(len(people)), key=lambda i: ages[i])
        rationale = (' '.join(f'The age of {nm} is {a}.' for nm, a in zip(names, ages)) + ' '
                     + ' < '.join(str(ages[i]) for i in order) + '. Therefore, '
                     + ' < '.join(f'the age of {names[i]}' for i in order) + '. ')
        return Group(people, 'age', 'Rank the following people in order of age from the youngest to the oldest: '
                     + join_names(names), f'The names list after ranking the age of {join_names(names)} is',
                     [names[i] for i in order], rationale=rationale)
    a, b = ages
    d = abs(b - a)
    if task == 'calculation':
        return Group(people, 'age', f'What’s the age difference between {names[0]} and {names[1]}?',
                     'The age difference is', d,
                     rationale=f'The age of {names[0]} is {a}. The age of {names[1]} is {b}. |{b} - {a}| = {d}. ')
    if task == 'twodiff':
        # [inferred] the authors' search narrative is not written out; this one states the two ages.
        return Group(people, 'age', 'From the given profiles of these individuals, identify two individuals such '
                     f'that the age difference between them is {d}. Only one pair of answers is needed.',
                     'The two people identified are', {'age_difference': d, 'ref_names': names},
                     rationale=f'The age of {names[0]} is {a}. The age of {names[1]} is {b}. The difference '
                               f'between {a} and {b} is {d}. Therefore, {names[0]} and {names[1]} satisfy the '
                               'question.')
    raise LongBioConfigError(f'unknown task {task!r}')


# ------------------------------------------------------------------------------------------------- prompts
SYS_A = ("Your task is to answer the user’s question based on a long context, which consists of many bios. "
         "Output the answer only. Don't explain or output other things.")
SYS_FEWSHOT_SINGLE = 'Following the format of the examples, y' + SYS_A[1:]
SYS_MULTI = ("Your task is to answer all the user’s questions based on a long context, which consists of many "
             "bios. Output only the answers for each question sequentially. Don't explain or output other things.")
SYS_FEWSHOT_MULTI = 'Following the format of the examples, y' + SYS_MULTI[1:]
SYS_RANK = ('Your task is to rank the users based on their bios in a long context. Output the answer only. '
            "Don't explain or output other things.")
SYS_FEWSHOT_RANK = ('Following the format of the examples, your task is to rank the users based on their bios in '
                    'a long context')
SYS_CALC = ("Your task is to calculate the difference between the users' age based on a long context, which "
            "consists of many bios. Output the answer only. Don't explain or output other things.")  # [inferred] tail
SYS_FEWSHOT_CALC = ('Your task is to calculate the age difference of the given people based on the given '
                    'instruction from a long context containing multiple bios.')
SYS_TWODIFF = ('Your task is to follow the instruction and provide the names of the people based on a long '
               'context, which consists of many bios.')
SYS_FEWSHOT_TWODIFF = ('Your task is to find the names of people based on the given instruction from a long '
                       'context containing multiple bios. Follow the format provided in the examples closely and '
                       'give the final answer.')
SYS_IDK = ("Your task is to answer the user’s question based on a long context, which consists of many bios. "
           "Output the answer only. If you don't know the answer or the answer is no explicitly stated, you "
           "should strictly output 'The answer is not stated.'. Don't explain or output other things.")
SYS_CITE = ("Your task is to answer the user’s question with citation based on a long context, which consists "
            "of many bios. Following the format of the examples, you must output the answer ending with the "
            "citation number of the relevant bios strictly surrounded by square brackets such as [1]. Don't "
            "explain or output other things.")
SYS_CITE_MULTI = ("Your task is to answer all the user’s questions with citation based on a long context, which "
                  "consists of many bios. Following the format of the examples, you must output the answers "
                  "ending with the citation number of the relevant bios strictly surrounded by square brackets "
                  "such as [1]. You should give the answer and citation for each question sequentially. Don't "
                  "explain or output other things.")  # [inferred] the authors' description paraphrases this one
IDK_SUFFIX = " Output 'The answer is not stated' if the answer is not explicitly told in the context."
CONTEXT_HEAD = 'Context: '
BASED = 'Based on the provided context,'


def lc(text: str, mode: str) -> str:
    """The authors lower-case the first character of a prefix (names too); strict only lower-cases 'The'."""
    if mode == 'compat' or text.startswith('The '):
        return text[:1].lower() + text[1:]
    return text


@dataclass(frozen=True)
class Prompt:
    system: str
    tail: str       # the user message after the context ("Context: " + context + tail)
    prefix: str     # the assistant prefix (prefilled by the authors)


def _examples(task: str, n: int, demos: List[Group], mode: str, cites: List[List[int]]) -> str:
    out = []
    for i, g in enumerate(demos):
        if task in ('standard', 'paraphrase', 'pronoun') or (task == 'multi_standard' and mode == 'compat'):
            # compat multi: the multi-line prefix with only the first answer attached to its last line
            out.append(f'Question: {g.question}\nAnswer: {BASED} {lc(g.prefix, mode)} {g.answer[0]}.\n')
        elif task == 'multi_standard':
            lines = '\n'.join(f'Question{k + 1}: {p} {a}.' for k, (p, a) in enumerate(zip(g.prefixes, g.answer)))
            out.append(f'Question: {g.question}\nAnswer: {BASED}\n{lines}\n')
        elif task in ('rank', 'calculation'):
            ans = repr(g.answer) if task == 'rank' else g.answer
            out.append(f'Question: {g.question}\nAnswer: {BASED} {lc(g.rationale, mode)} Therefore, '
                       f'{lc(g.prefix, mode)} {ans}.\n')
        elif task == 'twodiff':
            out.append(f'Question: {g.question}\nAnswer: {g.rationale}\n')
        elif task == 'multihop':  # [inferred] format; compat keeps the first-character bug
            ans = g.answer[0] if mode == 'compat' else g.answer
            out.append(f'Question: {g.question}\nAnswer: {BASED} {lc(g.rationale, mode)} Therefore, '
                       f'{lc(g.prefix, mode)} {ans}.\n')
        elif task == 'citation' and n == 1:
            if mode == 'compat':  # list repr and double brackets, prefix not lower-cased
                out.append(f'Question: {g.question}\nAnswer: {BASED} {g.prefix} {g.answer!r} [[{cites[i][0]}]].\n')
            else:
                out.append(f'Question: {g.question}\nAnswer: {BASED} {lc(g.prefix, mode)} {g.answer[0]} '
                           f'[{cites[i][0]}].\n')
        elif task == 'citation':
            parts = ''.join(f'{p} {a} [{c}]. ' for p, a, c in zip(g.prefixes, g.answer, cites[i]))
            out.append(f'Examples{i + 1}: {g.question}\nAnswer: {BASED} {parts}\n')
        else:
            raise LongBioConfigError(f'task {task!r} has no demos')
    return ''.join(out)


def build_prompt(task: str, n: int, mode: str, test: Group, demos: List[Group],
                 demo_cites: Optional[List[List[int]]] = None) -> Prompt:
    """System message, user text after the context, and assistant prefix of one question."""
    shots = len(demos)
    ex = _examples(task, n, demos, mode, demo_cites or []) if shots else ''
    q = test.question
    if task in ('standard', 'paraphrase', 'pronoun'):
        if shots:
            return Prompt(SYS_FEWSHOT_SINGLE, f'\n\n{ex}\n\nQuestion: {q}\nAnswer: ', f'{BASED} {test.prefix}')
        return Prompt(SYS_A, f'\n\nQuestion: {q}', f'{BASED} {lc(test.prefix, mode)}')
    if task == 'multi_standard':
        if shots:
            return Prompt(SYS_FEWSHOT_MULTI, f'\n\n{ex}\n\n{q}\nAnswers:\n', BASED)
        return Prompt(SYS_MULTI, f'\n\nThe Questions are as follows:\n{q}\nAnswer each question in sequence.',
                      f'{BASED} the answer is')
    if task in ('rank', 'calculation', 'twodiff'):
        if shots:
            system = {'rank': SYS_FEWSHOT_RANK, 'calculation': SYS_FEWSHOT_CALC, 'twodiff': SYS_FEWSHOT_TWODIFF}[task]
            prefix = {'rank': 'Answer:Based on the provided context,', 'calculation': f'Answer: {BASED}',
                      'twodiff': 'Answer:'}[task]
            return Prompt(system, f'\n\n{ex}\n\nQuestion: {q}', prefix)
        system = {'rank': SYS_RANK, 'calculation': SYS_CALC, 'twodiff': SYS_TWODIFF}[task]
        return Prompt(system, f'\n\nQuestion: {q}', f'Answer: {BASED} {lc(test.prefix, mode)}')
    if task == 'multihop':
        if shots:
            return Prompt(SYS_FEWSHOT_SINGLE, f'\n\n{ex}\n\nQuestion: {q}\nAnswer: ', BASED)
        return Prompt(SYS_A, f'\n\nQuestion: {q}', f'{BASED} {lc(test.prefix, mode)}')
    if task == 'idk':
        return Prompt(SYS_IDK, f'\n\nQuestion: {q}{IDK_SUFFIX}', f'Answer: {BASED} the answer is')
    if task == 'citation':
        if n == 1:
            return Prompt(SYS_CITE, f'\n\n{ex}\n\nQuestion: {q}\nAnswer: ', f'{BASED} {lc(test.prefix, mode)}')
        return Prompt(SYS_CITE_MULTI, f'\n\n{ex}\n\n{q}\nAnswers:\n', BASED)
    raise LongBioConfigError(f'unknown task {task!r}')


def tier_cells(tier) -> List[str]:
    """The cells a tier config holds: those whose needles and prompt fit the tier's budget (LongBioBench's 1k = 1024
    tokens; :data:`LONGBIO_NEED_TOKENS`). 0k holds the needles only, so every cell; so does a tier that does not
    parse, whose loaders then say what is wrong with it."""
    from opencompass_longctx.tiers import TierError, parse_tier
    try:
        tokens = parse_tier(tier).tokens(1024)
    except TierError:
        tokens = 0
    return [cell for cell, need in LONGBIO_NEED_TOKENS.items() if not tokens or need <= tokens]
