"""Small BABILong-format data written by the project itself, for the demo and the tests.

It is *not* BABILong (that data is licensed and downloaded by the user): stories in the style of bAbI
tasks qa1-qa10 and "books" of background sentences, both made up here from a seeded RNG, written in the real
formats (bAbI ``qaN_<name>_test.txt``, plain-text books) and turned into BABILong files by the project's
generator, laid out exactly like RMT-team/babilong (``data/qaN/<LEN>.json``: a JSON array of
``{"input", "question", "target"}``). As in the real data, the input holds (tier - 300) GPT-2 tokens
(facts only at 0k). Deterministic: the same arguments give byte-identical files.

    python -m opencompass_longctx.demo.babilong_data OUT_DIR [--tiers 0k 1k 2k] [--tasks qa1 ... qa10] [--samples 5]
"""
import argparse
import os
import random
import sys
from typing import List, Tuple

from opencompass_longctx.util import atomic_write_text
PEOPLE = ['Mary', 'John', 'Sandra', 'Daniel']
GIVERS = ['Bill', 'Fred', 'Jeff', 'Mary']
PLACES = ['bathroom', 'bedroom', 'garden', 'hallway', 'kitchen', 'office']
OBJECTS = ['apple', 'football', 'milk']
MOVES = ['went to', 'journeyed to', 'travelled to', 'moved to', 'went back to']
NUMBERS = ['none', 'one', 'two', 'three']

_ADJ = ['old', 'quiet', 'narrow', 'distant', 'pale', 'heavy', 'bright', 'silent', 'crooked', 'gentle']
_NOUN = ['miller', 'river', 'carriage', 'lantern', 'orchard', 'captain', 'window', 'village', 'bridge',
         'stranger', 'letter', 'harbour', 'meadow', 'clock', 'sailor']
_VERB = ['watched', 'passed', 'remembered', 'followed', 'crossed', 'described', 'ignored', 'admired']
_ADV = ['slowly', 'at dawn', 'without a word', 'once more', 'in the rain', 'before supper', 'for a while']


def _story(task: str, rng: random.Random) -> Tuple[List[str], str, str]:
    """(facts, question, target) in the style of the bAbI task."""
    p = rng.sample(PEOPLE, 3)
    pl = rng.sample(PLACES, 4)
    obj = rng.choice(OBJECTS)

    def move(who, where):
        return f'{who} {rng.choice(MOVES)} the {where}.'
    if task == 'qa1':
        facts = [move(p[0], pl[0]), move(p[1], pl[1]), move(p[0], pl[2])]
        return facts, f'Where is {p[0]}? ', pl[2]
    if task in ('qa2', 'qa3'):
        facts = [move(p[0], pl[0]), f'{p[0]} picked up the {obj} there.', move(p[1], pl[3]), move(p[0], pl[1])]
        if task == 'qa2':
            return facts, f'Where is the {obj}? ', pl[1]
        return facts, f'Where was the {obj} before the {pl[1]}? ', pl[0]
    if task == 'qa4':
        return ([f'The {pl[0]} is north of the {pl[1]}.', f'The {pl[2]} is west of the {pl[0]}.'],
                f'What is north of the {pl[1]}? ', pl[0])
    if task == 'qa5':
        g = rng.sample(GIVERS, 2)
        return ([f'{g[0]} took the {obj} there.', f'{g[0]} gave the {obj} to {g[1]}.', move(g[1], pl[0])],
                f'Who gave the {obj}? ', g[0])
    if task in ('qa6', 'qa9'):
        ans = rng.choice(['yes', 'no'])
        where = pl[1] if ans == 'yes' else pl[2]
        if task == 'qa6':
            return [move(p[0], pl[0]), move(p[0], pl[1])], f'Is {p[0]} in the {where}? ', ans
        fact = f'{p[0]} is in the {pl[1]}.' if ans == 'yes' else f'{p[0]} is not in the {pl[2]}.'
        return [move(p[1], pl[0]), fact], f'Is {p[0]} in the {where}? ', ans
    if task in ('qa7', 'qa8'):
        k = rng.randint(0, 2)
        objs = sorted(rng.sample(OBJECTS, k))
        facts = [move(p[0], pl[0])] + [f'{p[0]} took the {o} there.' for o in objs]
        if task == 'qa7':
            return facts, f'How many objects is {p[0]} carrying? ', NUMBERS[k]
        return facts, f'What is {p[0]} carrying? ', ','.join(objs) if objs else 'nothing'
    if task == 'qa10':
        ans = rng.choice(['yes', 'no', 'maybe'])
        if ans == 'maybe':
            return [f'{p[0]} is either in the {pl[0]} or the {pl[1]}.'], f'Is {p[0]} in the {pl[0]}? ', ans
        return [move(p[0], pl[0])], f'Is {p[0]} in the {pl[0] if ans == "yes" else pl[1]}? ', ans
    raise ValueError(f'demo data covers qa1-qa10, not {task!r}')


def _sentence(rng: random.Random) -> str:
    return (f'The {rng.choice(_ADJ)} {rng.choice(_NOUN)} {rng.choice(_VERB)} the {rng.choice(_ADJ)} '
            f'{rng.choice(_NOUN)} {rng.choice(_ADV)}.')


BABI_NAMES = {1: 'single-supporting-fact', 2: 'two-supporting-facts', 3: 'three-supporting-facts',
              4: 'two-arg-relations', 5: 'three-arg-relations', 6: 'yes-no-questions', 7: 'counting',
              8: 'lists-sets', 9: 'simple-negation', 10: 'indefinite-knowledge'}


def write_babi(out_dir: str, tasks=tuple(f'qa{i}' for i in range(1, 11)), stories: int = 20,
               seed: int = 0) -> List[str]:
    """bAbI-format test files (``qaN_<name>_test.txt``) of made-up stories, two questions per story."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for task in tasks:
        n = int(task[2:])
        lines = []
        for s in range(stories):
            lineno = 0
            for q in range(2):
                facts, question, target = _story(task, random.Random(f'babi|{task}|{seed}|{s}|{q}'))
                for fact in facts:
                    lineno += 1
                    lines.append(f'{lineno} {fact}')
                lineno += 1
                lines.append(f'{lineno} {question}\t{target}\t{lineno - 1}')
        path = os.path.join(out_dir, f'qa{n}_{BABI_NAMES[n]}_test.txt')
        atomic_write_text(path, '\n'.join(lines) + '\n')
        paths.append(path)
    return paths


def write_books(out_dir: str, books: int = 3, sentences: int = 4000, seed: int = 0) -> List[str]:
    """Plain-text "books" of made-up sentences, in paragraphs, as a stand-in for PG19."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for b in range(books):
        rng = random.Random(f'book|{seed}|{b}')
        paras = [' '.join(_sentence(rng) for _ in range(8)) for _ in range(sentences // 8)]
        path = os.path.join(out_dir, f'book_{b:02d}.txt')
        atomic_write_text(path, f'THE BOOK OF {b}\n\n' + '\n\n'.join(paras) + '\n')
        paths.append(path)
    return paths


def write(out_dir: str, tiers=('0k', '1k', '2k'), tasks=tuple(f'qa{i}' for i in range(1, 11)),
          samples: int = 5, seed: int = 0) -> List[str]:
    """BABILong-format files made by the project's BABILong generator from made-up inputs (bAbI-style
    stories and books of made-up sentences, written under ``out_dir/inputs``)."""
    from opencompass_longctx.babilong.data import file_name
    from opencompass_longctx.babilong.generator import Generator
    from opencompass_longctx.babilong.generator import write as generate
    from opencompass_longctx.tiers import parse_tier
    inputs = os.path.join(out_dir, 'inputs')
    babi, books = os.path.join(inputs, 'babi'), os.path.join(inputs, 'books')
    write_babi(babi, tasks=tasks, stories=max(20, samples), seed=seed)
    if not os.path.isdir(books):
        write_books(books, books=3, sentences=6000, seed=seed)
    generate(Generator(babi, books, seed=seed), out_dir, tiers, tasks, samples, progress=False)
    return [os.path.join(out_dir, 'data', t, file_name(parse_tier(tier))) for t in tasks for tier in tiers]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out_dir')
    ap.add_argument('--tiers', nargs='+', default=['0k', '1k', '2k'])
    ap.add_argument('--tasks', nargs='+', default=[f'qa{i}' for i in range(1, 11)])
    ap.add_argument('--samples', type=int, default=5)
    ap.add_argument('--seed', type=int, default=0)
    args = ap.parse_args(argv)
    for p in write(args.out_dir, args.tiers, args.tasks, args.samples, args.seed):
        print(p)
    return 0


if __name__ == '__main__':
    sys.exit(main())
