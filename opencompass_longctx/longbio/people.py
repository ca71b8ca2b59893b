"""Fictional people and their biographies.

* A person has a full name "Given Middle Surname" and one value per attribute, each drawn uniformly and
  independently from the project's pools; the birthdate is uniform over 1950-01-01..2001-12-31 and
  age = 2024 - birth year (the authors' fixed reference year: ages 23..74).
* ``PersonStream`` is a deterministic, random-access sequence of people: person ``i`` is read from
  sha512('<seed>:<i>'), a 512-bit number whose mixed-radix digits in the pool sizes pick the nine attributes
  (the pools' size product is below 2^85, so the bias is below 2^-400), so a sample builds only the people it
  uses, and the same seed gives the same people on any machine and any PYTHONHASHSEED.
* Bios are rendered as in the authors' generator: "Below is the bio of X." + one sentence per attribute in a
  fixed order ([birthdate | age], birthplace, hobby, university, major, work_city), each followed by a space,
  + "This is the end of this bio." + a trailing space; first-person bios say "Below is the self-introduction
  of X." / "This is the end of the introduction.".
"""
import datetime
import functools
import hashlib
import random
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from opencompass_longctx.longbio.pools import ATTRIBUTES, OBJECT, SUBJECT, VALUE, Pools, load_pools
REFERENCE_YEAR = 2024
FIRST_DATE, LAST_DATE = datetime.date(1950, 1, 1), datetime.date(2001, 12, 31)
BIO_ORDER = ATTRIBUTES  # with 'age' in place of 'birthdate' in the math tasks
# The key name used by the multihop chain sentence ("The work city of A is the same as B.").
CHAIN_NAMES = dict(birthdate='birthdate', birthplace='birthplace', hobby='hobby', university='university',
                   major='major', work_city='work city')
THIRD_PREFIX, THIRD_SUFFIX = 'Below is the bio of {0}.', 'This is the end of this bio.'
FIRST_PREFIX, FIRST_SUFFIX = 'Below is the self-introduction of {0}.', 'This is the end of the introduction.'


@functools.lru_cache(maxsize=1)
def all_dates() -> Tuple[str, ...]:
    n = (LAST_DATE - FIRST_DATE).days + 1
    return tuple((FIRST_DATE + datetime.timedelta(days=i)).isoformat() for i in range(n))


class Person(NamedTuple):
    name: str
    given: str
    middle: str
    surname: str
    birthdate: str
    age: int
    birthplace: str
    hobby: str
    university: str
    major: str
    work_city: str

    def value(self, attr: str) -> str:
        return str(self.age) if attr == 'age' else getattr(self, attr)


FIELD = {f: i for i, f in enumerate(Person._fields)}


def make_person(given, middle, surname, birthdate, birthplace, hobby, university, major, work_city) -> Person:
    return Person(f'{given} {middle} {surname}', given, middle, surname, birthdate,
                  REFERENCE_YEAR - int(birthdate[:4]), birthplace, hobby, university, major, work_city)


def _columns(pools: Pools):
    v = pools.values
    return (v['given'], v['middle'], v['surname'], all_dates(), v['birthplace'], v['hobby'], v['university'],
            v['major'], v['work_city'])


def draw_people(rng: random.Random, pools: Pools, k: int) -> List[Person]:
    cols = [rng.choices(c, k=k) for c in _columns(pools)]
    return [make_person(*row) for row in zip(*cols)]


def redraw_birthdate(person: Person, rng: random.Random) -> Person:
    d = rng.choice(all_dates())
    return person._replace(birthdate=d, age=REFERENCE_YEAR - int(d[:4]))


class PersonStream:
    """Person ``i`` of a seeded random-access sequence (see the module docstring)."""

    def __init__(self, seed: str, pools: Pools):
        self.prefix, self.cols, self._cache = f'{seed}:'.encode(), _columns(pools), {}

    def __getitem__(self, i: int) -> Person:
        p = self._cache.get(i)
        if p is None:
            x = int.from_bytes(hashlib.sha512(self.prefix + str(i).encode()).digest(), 'big')
            vals = []
            for col in self.cols:   # mixed-radix digits of a uniform 512-bit number
                x, r = divmod(x, len(col))
                vals.append(col[r])
            p = self._cache[i] = make_person(*vals)
        return p


# ------------------------------------------------------------------------------------------------ templates
_THEIR = re.compile(r'\btheir\b')
_THEIR_CAP = re.compile(r'\bTheir\b')


def third_person(template: str) -> str:
    """Both person placeholders become the name, their -> his/her, Their -> His/her (the authors' rule)."""
    t = template.replace(OBJECT, '\x00').replace(SUBJECT, '\x00')
    return _THEIR_CAP.sub('His/her', _THEIR.sub('his/her', t)).replace('\x00', '{name}')


def first_person_mechanical(template: str) -> str:
    """The authors' first-person rule (compat): subject -> I, object -> me, their -> my, "I's" -> My/my.

    Subject-verb agreement is not fixed ("I finds", "I is"), exactly as in the authors' data."""
    t = template.replace(OBJECT, 'me').replace(SUBJECT, 'I')
    t = _THEIR_CAP.sub('My', _THEIR.sub('my', t))
    t = re.sub(r"^I's\b", 'My', t)
    return re.sub(r"\bI's\b", 'my', t)


def _positional(template: str, attr: str) -> str:
    """'{name}' -> '{0}', '<attr>' -> the attribute's field index, so that ``t.format(*person)`` fills it."""
    return template.replace('{name}', '{0}').replace(VALUE, '{%d}' % FIELD[attr])


class TemplateSet(NamedTuple):
    """Ready-to-fill sentence templates for one rendering style (``template.format(*person)``)."""
    standard: Dict[str, str]                  # attribute (and 'age') -> template
    paraphrase: Dict[str, Tuple[str, ...]]    # attribute -> templates (file order)
    first_person: bool


@functools.lru_cache(maxsize=8)
def template_set(style: str, mode: str) -> TemplateSet:
    """style: 'standard' | 'paraphrase' | 'first_person'; mode: 'compat' | 'strict' (first-person forms)."""
    pools = load_pools()
    std = {a: _positional(third_person(t), a) for a, t in pools.standard.items()}
    if style == 'first_person':
        if mode == 'compat':
            para = {a: tuple(_positional(first_person_mechanical(third), a) for third, _ in rows)
                    for a, rows in pools.paraphrase.items()}
        else:
            para = {a: tuple(_positional(first, a) for _, first in rows) for a, rows in pools.paraphrase.items()}
    else:
        para = {a: tuple(_positional(third_person(third), a) for third, _ in rows)
                for a, rows in pools.paraphrase.items()}
    return TemplateSet(standard=std, paraphrase=para, first_person=style == 'first_person')


def render_sentences(person: Person, attrs: Sequence[str], tset: TemplateSet, choices: Optional[Sequence[int]],
                     omit: Optional[str] = None, replace: Optional[Dict[str, str]] = None) -> List[str]:
    """One sentence per attribute in ``attrs`` (bio order). ``choices[i]`` picks the paraphrase template of
    attribute i (None: standard templates); ``omit`` drops one attribute's sentence (density, IDK);
    ``replace`` gives literal sentences for some attributes (multihop chain)."""
    out = []
    for i, a in enumerate(attrs):
        if a == omit:
            continue
        if replace and a in replace:
            out.append(replace[a])
        elif choices is None or a == 'age':
            out.append(tset.standard[a].format(*person))
        else:
            out.append(tset.paraphrase[a][choices[i]].format(*person))
    return out


def bio_text(person: Person, sentences: Sequence[str], first_person: bool = False) -> str:
    """The whole bio, ending with a space (bios are joined with '')."""
    pre, suf = (FIRST_PREFIX, FIRST_SUFFIX) if first_person else (THIRD_PREFIX, THIRD_SUFFIX)
    return ' '.join([pre.format(person.name), *sentences, suf]) + ' '


def cite_body(person: Person, sentences: Sequence[str]) -> str:
    """The citation form of a bio: the authors' bio[20:-29] (prefix and suffix sentences stripped)."""
    return ' '.join([f'{person.name}.', *sentences]) + ' '


@functools.lru_cache(maxsize=64)
def standard_bio_format(attrs: Tuple[str, ...], omit: Optional[str], cite: bool) -> str:
    """A whole standard-template bio (or citation body) as one format string: ``fmt.format(*person)``."""
    tset = template_set('standard', 'compat')
    sentences = [tset.standard[a] for a in attrs if a != omit]
    if cite:
        return ' '.join(['{0}.', *sentences]) + ' '
    return ' '.join([THIRD_PREFIX, *sentences, THIRD_SUFFIX]) + ' '
