"""NoLiMa needle sets: the variants, schema checks and the expansion into question-needle pairs.

No OpenCompass import: usable stand-alone.

A needle-set file is a JSON list of entries (the authors' ``needlesets/*.json``)::

    {"id": "0401", "needle": "... {CHAR} ... {1} ...", "questions": {"onehop": "... {2} ...", ...},
     "tests": {"T01_C02": {"input_args": ["...", "...", "..."]}, ...}, "character_set": [...],
     "system_prompt": "...", "task_template"?: "...{haystack}...{question}...",
     "distractors"?: {"onehop": "...", ...}, "reasoning_type"?: "..."}

Expansion (the authors' code): entry x question type x test, in file order; each triple is one question-needle pair
named ``{id}_{test_id}_{question_type}``. Placeholders ``{1}``, ``{2}``, ... are filled from ``input_args``
cumulatively (every placeholder is replaced); afterwards no ``{digit}`` may remain, and the result must equal
what the authors' non-cumulative substitution of the question and distractor gives (it keeps only the last
placeholder it replaced), so runs stay comparable. The released main set yields 58 pairs and NoLiMa-Hard 10;
both counts are asserted.
"""
import json
import os
import re
from dataclasses import dataclass, field
from typing import List, Optional, Sequence
from opencompass_longctx.errors import LongCtxError


class NoLiMaError(LongCtxError, ValueError):
    """Bad NoLiMa input (configuration, needle set, haystack, predictions)."""


class NeedleSetError(NoLiMaError):
    """A needle-set file that does not follow the schema; the message names the entry."""


# variant name -> file name under needlesets/ in amodaresi/NoLiMa
VARIANT_FILES = {
    'main': 'needle_set.json',
    'hard': 'needle_set_hard.json',
    'cot': 'needle_set_w_CoT.json',
    'mc': 'needle_set_MC.json',
    'direct': 'needle_set_ONLYDirect.json',
    'distractor': 'needle_set_w_Distractor.json',
}
VARIANTS = tuple(VARIANT_FILES)
# Pair counts the released files must give (paper: 58 pairs; NoLiMa-Hard: the 10 hardest pairs).
EXPECTED_PAIRS = {'main': 58, 'hard': 10}
CHAR = '{CHAR}'
_NUM_PLACEHOLDER = re.compile(r'\{(\d+)\}')


def resolve_variant(needle_set: str) -> str:
    """Variant name for ``needle_set``: a variant ('main', 'hard', ...) or a file stem ('needle_set_hard')."""
    if not isinstance(needle_set, str) or not needle_set:
        raise NoLiMaError(f'needle_set must be a string, got {needle_set!r}; choose one of {", ".join(VARIANTS)}')
    key = needle_set.strip()
    if key.lower() in VARIANT_FILES:
        return key.lower()
    for variant, fname in VARIANT_FILES.items():
        if key in (fname, fname[:-5]):
            return variant
    raise NoLiMaError(f'unknown NoLiMa variant {needle_set!r}; choose one of {", ".join(VARIANTS)} '
                      f'(or the file names {", ".join(VARIANT_FILES.values())})')


def fill_cumulative(template: str, args: Sequence[str]) -> str:
    """Replace every ``{i+1}`` by ``args[i]`` (the fix; the authors do this for the needle only)."""
    out = template
    for i, arg in enumerate(args):
        out = out.replace('{%d}' % (i + 1), arg)
    return out


def fill_original(template: str, args: Sequence[str]) -> str:
    """The authors' question/distractor substitution: each replacement starts again from the raw template,
    so only the last placeholder present survives as a substitution."""
    out = template
    for i, arg in enumerate(args):
        ph = '{%d}' % (i + 1)
        if ph in template:
            out = template.replace(ph, arg)
    return out


@dataclass
class Pair:
    """One question-needle pair (entry x question type x test)."""
    name: str                 # '{id}_{test_id}_{question_type}'
    entry_id: str             # '0401' or '0401Inv'
    group: int                # int(id[:4]): feeds the seed
    test_id: str
    question_type: str
    order: str                # 'default' or 'inverted' (id ends with 'Inv')
    needle: str               # placeholders filled, {CHAR} kept
    question: str             # placeholders filled, {CHAR} kept (MC)
    character_set: List[str]
    gold_answers: Optional[List[str]]   # only when the needle has no {CHAR}
    task_template: Optional[str]
    distractor: Optional[str]
    reasoning_type: str = ''
    input_args: List[str] = field(default_factory=list)

    @property
    def has_char(self) -> bool:
        return CHAR in self.needle


def _where(file: str, i: int, entry) -> str:
    eid = entry.get('id') if isinstance(entry, dict) else None
    return f'{os.path.basename(file)}: entry #{i}' + (f' (id {eid!r})' if eid is not None else '')


def _is_str_list(x) -> bool:
    return isinstance(x, list) and all(isinstance(s, str) for s in x)


def check_entry(entry, i: int, file: str, variant: str) -> None:
    """Raise NeedleSetError naming the entry if it does not follow the schema."""
    where = _where(file, i, entry)
    if not isinstance(entry, dict):
        raise NeedleSetError(f'{where}: an entry must be a JSON object, got {type(entry).__name__}')
    for key in ('id', 'needle', 'questions', 'tests'):
        if key not in entry:
            raise NeedleSetError(f'{where}: missing field {key!r}')
    eid = entry['id']
    if not isinstance(eid, str) or len(eid) < 4 or not eid[:4].isdigit():
        raise NeedleSetError(f'{where}: field \'id\' must be a string starting with 4 digits (e.g. "0401", '
                             f'"0401Inv"), got {eid!r}')
    if not isinstance(entry['needle'], str) or not entry['needle'].strip():
        raise NeedleSetError(f'{where}: field \'needle\' must be a non-empty string')
    qs = entry['questions']
    if not isinstance(qs, dict) or not qs or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                                     for k, v in qs.items()):
        raise NeedleSetError(f'{where}: field \'questions\' must map question types to non-empty strings')
    tests = entry['tests']
    if not isinstance(tests, dict) or not tests:
        raise NeedleSetError(f'{where}: field \'tests\' must be a non-empty object of test_id -> test')
    has_char = CHAR in entry['needle']
    for tid, test in tests.items():
        if not isinstance(test, dict) or not _is_str_list(test.get('input_args')):
            raise NeedleSetError(f'{where}: test {tid!r} needs \'input_args\', a list of strings')
        if not has_char:
            gold = test.get('gold_answers')
            if not _is_str_list(gold) or not gold:
                raise NeedleSetError(f'{where}: test {tid!r}: the needle has no {CHAR}, so the test needs '
                                     "'gold_answers', a non-empty list of strings")
    if has_char:
        cs = entry.get('character_set')
        if not _is_str_list(cs) or not cs or not all(c.strip() for c in cs):
            raise NeedleSetError(f'{where}: the needle has {CHAR}, so \'character_set\' must be a non-empty '
                                 'list of names')
    if 'system_prompt' in entry and not isinstance(entry['system_prompt'], str):
        raise NeedleSetError(f'{where}: field \'system_prompt\' must be a string')
    tt = entry.get('task_template')
    if tt is not None:
        if not isinstance(tt, str) or '{haystack}' not in tt or '{question}' not in tt:
            raise NeedleSetError(f'{where}: field \'task_template\' must be a string with {{haystack}} and '
                                 '{question}')
        try:
            tt.format(haystack='', question='')
        except (KeyError, IndexError, ValueError) as e:
            raise NeedleSetError(f'{where}: field \'task_template\' cannot be filled with str.format '
                                 f'({type(e).__name__}: {e}); literal braces must be doubled') from e
    ds = entry.get('distractors')
    if ds is not None and (not isinstance(ds, dict) or not all(isinstance(v, str) for v in ds.values())):
        raise NeedleSetError(f'{where}: field \'distractors\' must map question types to strings')
    if variant == 'distractor':
        missing = [q for q in qs if not isinstance(ds, dict) or q not in ds]
        if missing:
            raise NeedleSetError(f'{where}: the distractor variant needs \'distractors\' for question types '
                                 f'{missing}')


def read_needle_set(file: str, variant: str) -> list:
    try:
        with open(file, encoding='utf-8') as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise NeedleSetError(f'{file}: not valid JSON ({e})') from e
    if not isinstance(data, list) or not data:
        raise NeedleSetError(f'{file}: a needle set must be a non-empty JSON list of entries, got '
                             f'{type(data).__name__}')
    for i, entry in enumerate(data):
        check_entry(entry, i, file, variant)
    return data


def expand(entries: list, file: str, variant: str, question_types: Optional[Sequence[str]] = None,
           exclude_direct: Optional[bool] = None) -> List[Pair]:
    """All question-needle pairs of a needle set, in the authors' order (entry x question type x test)."""
    if exclude_direct is None:
        exclude_direct = variant != 'direct'
    if question_types is not None:
        if isinstance(question_types, str) or not _is_str_list(list(question_types)):
            raise NoLiMaError(f'question_types must be a list of names, got {question_types!r}')
        known = {q for e in entries for q in e['questions']}
        unknown = [q for q in question_types if q not in known]
        if unknown:
            raise NoLiMaError(f'{os.path.basename(file)} has no question type(s) {unknown}; it has '
                              f'{sorted(known)}')
    pairs = []
    for i, e in enumerate(entries):
        where = _where(file, i, e)
        for qtype, qtemplate in e['questions'].items():
            if question_types is not None and qtype not in question_types:
                continue
            for tid, test in e['tests'].items():
                name = f"{e['id']}_{tid}_{qtype}"
                if exclude_direct and 'direct' in name.lower():
                    continue  # gather_results drops result files whose name contains "direct"
                args = test['input_args']
                needle = fill_cumulative(e['needle'], args)
                question = fill_cumulative(qtemplate, args)
                distractor = None
                if variant == 'distractor' or e.get('distractors'):
                    dt = (e.get('distractors') or {}).get(qtype)
                    distractor = fill_cumulative(dt, args) if dt is not None else None
                for label, text, raw in (('needle', needle, e['needle']), ('question', question, qtemplate),
                                         ('distractor', distractor, (e.get('distractors') or {}).get(qtype))):
                    if text is None:
                        continue
                    left = _NUM_PLACEHOLDER.findall(text)
                    if left:
                        raise NeedleSetError(
                            f'{where}: test {tid!r}, {label} {raw!r} still has placeholder(s) '
                            f'{["{" + n + "}" for n in left]} after filling {len(args)} input_args')
                    if label != 'needle' and fill_original(raw, args) != text:
                        raise NeedleSetError(
                            f'{where}: test {tid!r}, {label} {raw!r} has more than one numeric placeholder: '
                            "the authors' code fills only one of them, so results would not be comparable")
                pairs.append(Pair(
                    name=name, entry_id=e['id'], group=int(e['id'][:4]), test_id=tid, question_type=qtype,
                    order='inverted' if e['id'].endswith('Inv') else 'default', needle=needle,
                    question=question, character_set=list(e.get('character_set') or []),
                    gold_answers=None if CHAR in needle else list(test['gold_answers']),
                    task_template=e.get('task_template'), distractor=distractor,
                    reasoning_type=str(e.get('reasoning_type', '')), input_args=list(args)))
    if variant == 'distractor':
        missing = [p.name for p in pairs if p.distractor is None]
        if missing:
            raise NeedleSetError(f'{os.path.basename(file)}: pairs without a distractor: {missing[:5]}')
    return pairs


def load_pairs(file: str, variant: str, question_types=None, exclude_direct=None,
               expected_pairs='auto') -> List[Pair]:
    """Read, check and expand one needle-set file; assert the released pair count."""
    pairs = expand(read_needle_set(file, variant), file, variant, question_types, exclude_direct)
    if expected_pairs == 'auto':
        expected_pairs = EXPECTED_PAIRS.get(variant) if question_types is None else None
    if expected_pairs is not None and len(pairs) != expected_pairs:
        raise NeedleSetError(
            f'{file}: expanding entry x question type x test gives {len(pairs)} question-needle pairs, but the '
            f'{variant} set must give {expected_pairs}. The file is not the released one (or is damaged); pass '
            'expected_pairs=None to run a custom needle set anyway.')
    if not pairs:
        raise NeedleSetError(f'{file}: no question-needle pairs left (question_types={question_types!r})')
    return pairs


def select_pairs(pairs: List[Pair], wanted) -> List[Pair]:
    """``wanted``: None (all), an int N (the first N) or a list of pair names."""
    if wanted is None:
        return pairs
    if isinstance(wanted, bool) or not isinstance(wanted, (int, list, tuple)):
        raise NoLiMaError(f'pairs must be None, a count or a list of pair names, got {wanted!r}')
    if isinstance(wanted, int):
        if wanted < 1:
            raise NoLiMaError(f'pairs must be a positive count, got {wanted}')
        return pairs[:wanted]
    by_name = {p.name: p for p in pairs}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        raise NoLiMaError(f'unknown pair name(s) {unknown}; e.g. {list(by_name)[:3]}')
    keep = set(wanted)
    return [p for p in pairs if p.name in keep]
