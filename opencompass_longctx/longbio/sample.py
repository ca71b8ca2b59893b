"""One LongBioBench sample's material: its seed, needle bios, haystack bio stream and prompts.

:class:`Sample` draws a sample's needles (people, queried attribute, templates; the same at every tier)
and streams its haystack bios, each counted by :class:`.counting.Counter`; :mod:`.generator` fills a tier's
budget with them, places the needles and assembles the rows. What changes here: what a sample holds (the authors'
protocol: people, templates, repeats), not how it is fitted to a tier.
"""
import hashlib
import random
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from opencompass_longctx.longbio.counting import Counter
from opencompass_longctx.longbio.people import (PersonStream, bio_text, cite_body, draw_people, redraw_birthdate, render_sentences,
                     standard_bio_format, template_set)
from opencompass_longctx.longbio.pools import ATTRIBUTES, load_pools
from opencompass_longctx.longbio.cells import CONTEXT_HEAD, MATH_TASKS, Prompt, build_prompt, make_group
POOL_SIZE = 10_000        # compat: the authors' per-run seed pool of distinct people


def _family(task: str) -> str:
    return 'standard' if task in ('standard', 'multi_standard', 'citation', 'idk') else task


def _style(task: str) -> str:
    return {'paraphrase': 'paraphrase', 'pronoun': 'first_person'}.get(task, 'standard')


def sample_seed(base_seed: int, task: str, n: int, index: int) -> int:
    h = hashlib.sha256(f'longbio|{base_seed}|{_family(task)}|{n}|{index}'.encode()).digest()
    return int.from_bytes(h[:8], 'big') >> 1


@dataclass
class Unit:
    """One bio in the context: its text (ending with a space) and the tokens of ' ' + text[:-1]."""
    text: str
    tokens: int
    name: str
    age: Optional[int]          # the age the bio states (math tasks), else None
    needle: Optional[Tuple[int, int]] = None   # (group, index in group) for needles


def bio_label(i: int) -> str:
    return f'\nBio [{i}]: '


class Sample:
    """Builds one sample of a CellSettings."""

    def __init__(self, settings, index: int, counter: Counter):   # settings: a generator.CellSettings
        self.settings, self.index, self.count = settings, index, counter
        self.pools = load_pools()
        self.seed = sample_seed(settings.seed, settings.task, settings.n, index)
        self.cite = settings.task == 'citation'
        self.math = settings.task in MATH_TASKS
        self.attrs = tuple('age' if (a == 'birthdate' and self.math) else a for a in ATTRIBUTES)
        self.style = _style(settings.task)
        self.tset = template_set(self.style, settings.mode)
        self.para_lens = ([len(self.tset.paraphrase[a]) if a != 'age' else 1 for a in self.attrs]
                          if self.style != 'standard' else None)

    # ----------------------------------------------------------------------------------------- needles
    def needles(self):
        settings, rng = self.settings, random.Random(f'{self.seed}:needles')
        attr = 'age' if self.math else rng.choice(ATTRIBUTES)
        self.attr = attr
        people, names, ages = [], set(), set()
        for _ in range(settings.groups):
            group = []
            for p in draw_people(rng, self.pools, settings.n):
                while p.name in names:
                    p = draw_people(rng, self.pools, 1)[0]
                if self.math:
                    while p.age in ages:
                        p = redraw_birthdate(p, rng)
                    ages.add(p.age)
                names.add(p.name)
                group.append(p)
            people.append(group)
        self.needle_names = names
        self.groups = [make_group(settings.task, g, attr, self.tset.standard) for g in people]
        # needle bios: template draws in group order
        self.needle_sentences = []
        for gi, g in enumerate(self.groups):
            row = []
            for k, p in enumerate(g.people):
                choices = [rng.randrange(m) for m in self.para_lens] if self.para_lens else None
                replace = {attr: g.chain[k]} if k in g.chain else None
                row.append((p, choices, replace))
            self.needle_sentences.append(row)

    def needle_unit(self, gi: int, k: int, delete_answer: bool = False) -> Unit:
        p, choices, replace = self.needle_sentences[gi][k]
        sent = render_sentences(p, self.attrs, self.tset, choices, omit=self.attr if delete_answer else None,
                                replace=replace)
        return self._unit(p, sent, needle=(gi, k))

    def _unit(self, p, sentences, needle=None) -> Unit:
        text = cite_body(p, sentences) if self.cite else bio_text(p, sentences, self.tset.first_person)
        age = p.age if (self.math and any(x.startswith(f'The age of {p.name} is') for x in sentences)) else None
        return Unit(text, self.count.bio(text), p.name, age, needle)

    # ---------------------------------------------------------------------------------------- haystack
    def haystack_stream(self) -> Iterator[Unit]:
        settings = self.settings
        key = f'{self.seed}:haystack:{settings.tier_tokens}:{settings.reserve_tokens}:{settings.density}:{settings.mode}'
        rng = random.Random(key)
        stream = PersonStream(f'{self.seed}:haystack-people', self.pools)
        excluded, seen = set(self.needle_names), {}
        rendered = {}   # standard style: a repeated person renders identically (unless density drops a line)
        count_bio, attrs, cite, math, attr = self.count.bio, self.attrs, self.cite, self.math, self.attr
        rnd, para_lens = rng.random, self.para_lens
        k = 0
        while True:
            if settings.mode == 'compat':   # with replacement from a pool of 10k distinct people
                while True:
                    j = int(rnd() * POOL_SIZE)
                    p = stream[j]
                    if p.name in excluded or seen.setdefault(p.name, j) != j:
                        continue
                    break
            else:                       # strict: every haystack person once
                while True:
                    p = stream[k]
                    k += 1
                    if p.name not in excluded:
                        excluded.add(p.name)
                        break
            choices = [int(rnd() * m) for m in para_lens] if para_lens else None
            omit = attr if settings.density < 1.0 and rnd() >= settings.density else None
            age = p.age if (math and omit != 'age') else None
            if choices is None:
                rk = (p.name, omit)
                u = rendered.get(rk)
                if u is None:
                    text = standard_bio_format(attrs, omit, cite).format(*p)
                    u = rendered[rk] = Unit(text, count_bio(text), p.name, age)
                yield u
            else:
                text = bio_text(p, render_sentences(p, attrs, self.tset, choices, omit=omit), self.tset.first_person)
                yield Unit(text, count_bio(text), p.name, age)

    # ------------------------------------------------------------------------------------------ prompts
    def prompt(self, task: str, shots: int, cites: Optional[List[List[int]]] = None) -> Prompt:
        demos = self.groups[1:1 + shots]
        return build_prompt(task, self.settings.n, self.settings.mode, self.groups[0], demos,
                            demo_cites=(cites or [])[1:1 + shots])

    def fixed_tokens(self, prompt: Prompt) -> int:
        return (self.count(prompt.system) + self.count(prompt.prefix) + self.count(CONTEXT_HEAD[:-1])
                + self.count(' ' + prompt.tail))

    def label_tokens(self, i: int) -> int:
        return self.count(' ' + bio_label(i)[:-1]) if self.cite else 0
