"""NoLiMa-format stand-in data written by the project itself, for the demo, the tests and the benchmark.

It is *not* NoLiMa (that data is under a non-commercial licence and downloaded by the user): the needles,
questions, names and books below are made up here, in the real schema and directory layout::

    <root>/needlesets/needle_set.json, needle_set_hard.json, needle_set_w_CoT.json, needle_set_MC.json,
                      needle_set_ONLYDirect.json, needle_set_w_Distractor.json
    <root>/haystack/rand_shuffle/rand_book_{1..5}.txt
    <root>/haystack/rand_shuffle_long/rand_book_{1..5}.txt     (only with long_book_tokens)

The main set has the released shape: 5 keyword groups, each in default and inverted order, one-hop and
two-hop questions, 58 question-needle pairs; the hard set has 10. The books look like the released shuffled
haystacks: paragraphs of 1000+ characters ending with ``" \\n"``, no blank lines, a few ``"... "`` redaction
marks, and no character name or question keyword in them. Deterministic: the same arguments give
byte-identical files.

    python -m opencompass_longctx.demo.nolima_data OUT_DIR [--book-tokens 6000] [--long-book-tokens 0]
"""
import argparse
import json
import os
import random
import re
import sys
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.tokenizer.counting import get_tokenizer
from opencompass_longctx.nolima.needles import VARIANT_FILES, VARIANTS
CHARACTERS = ['Yara', 'Torvin', 'Lisette', 'Emrys', 'Noemi', 'Casimir', 'Ottilie', 'Bastien', 'Ingrid', 'Florin']
MC_OTHERS = ['Pavel', 'Rosalind', 'Teodor']
SYSTEM_PROMPT_FIELD = 'You are a helpful assistant.'  # present in the schema, ignored by the runner

# The project's own keyword groups (W_n -> W_q by world knowledge or commonsense).
GROUPS = [
    dict(gid='0101', reasoning='world_knowledge',
         needle='Actually, {CHAR} has a flat right beside {1}.',
         needle_inv='Actually, {1} stands right beside the flat of {CHAR}.',
         questions={'onehop': 'Which character has been to {2}?', 'twohop': 'Which character has been to {3}?'},
         direct='Which character has a flat right beside {1}?',
         tests=[['the Atomium', 'Brussels', 'Belgium'], ['the Charles Bridge', 'Prague', 'Czechia'],
                ['the Little Mermaid statue', 'Copenhagen', 'Denmark'], ['the Blue Mosque', 'Istanbul', 'Turkey']]),
    dict(gid='0102', reasoning='world_knowledge',
         needle='In 2016, after a long queue, {CHAR} finally stood in front of the original {1}.',
         needle_inv='In 2016, the original {1} was finally seen up close by {CHAR}, after a long queue.',
         questions={'onehop': 'Which character has been to {2}?', 'twohop': 'Which character has been to {3}?'},
         direct='Which character has seen the original {1}?',
         tests=[['Birth of Venus', 'Florence', 'Italy'], ['Kiss by Klimt', 'Vienna', 'Austria'],
                ['Scream by Munch', 'Oslo', 'Norway']]),
    dict(gid='0103', reasoning='world_knowledge',
         needle='{CHAR} worked as a baker in {1} for many years.',
         needle_inv='There was a baker working in {1}, named {CHAR}.',
         questions={'onehop': 'Which character has lived in {2}?'},
         direct='Which character has worked in {1}?',
         tests=[['Valparaiso', 'Chile'], ['Tromso', 'Norway'], ['Arequipa', 'Peru'], ['Fremantle', 'Australia']]),
    dict(gid='0104', reasoning='commonsense',
         needle='Then {CHAR} mentioned having been {1} for years.',
         needle_inv='Being {1} for years was what {CHAR} mentioned then.',
         questions={'onehop': 'Which character cannot eat {2}?'},
         direct='Which character has been {1} for years?',
         tests=[['vegan', 'fish-based meals'], ['vegetarian', 'a beef stew'],
                ['allergic to peanuts', 'satay sauce']]),
    dict(gid='0105', reasoning='commonsense',
         needle='A short note from {CHAR} read: "I am {1}," and that was all.',
         needle_inv='"I am {1}," read the short note from {CHAR}, and that was all.',
         questions={'onehop': 'Which character should avoid {2}?', 'twohop': 'Which character should avoid {3}?'},
         direct='Which character is {1}?',
         tests=[['lactose intolerant', 'milk', 'a cappuccino'], ['coeliac', 'wheat bread', 'a croissant'],
                ['allergic to shellfish', 'shrimp', 'a prawn cocktail'],
                ['diabetic', 'sugary sweets', 'caramel fudge']]),
]
# NoLiMa-Hard stand-in: 10 pairs (entry id -> (question types, number of tests)).
HARD = {'0101Inv': (['twohop'], 4), '0102Inv': (['twohop'], 3), '0105Inv': (['twohop'], 3)}
COT_TEMPLATE = (
    'You will answer a question based on the following book snippet:\n\n{haystack}\n\n'
    'Use the information provided in the book snippet to answer the question. Think it through in at most '
    'three short sentences, based on explicitly stated facts or strong, logical inferences.\n\n'
    'Question: {question}\n\nGive your brief reasoning first, then write only the final answer on the last line.')
DISTRACTOR = 'A faded postcard of {%d} was pinned above the stove in the hall.'

# Book vocabulary (no names, no question keywords: words that occur in the needle sets are dropped).
_ADJ = ['old', 'quiet', 'narrow', 'distant', 'pale', 'heavy', 'bright', 'silent', 'crooked', 'gentle', 'cold',
        'dusty', 'broken', 'hollow', 'patient', 'restless', 'tired', 'careful', 'strange', 'warm', 'grey',
        'wooden', 'empty', 'familiar', 'sudden', 'faint', 'stubborn', 'honest', 'nervous', 'ordinary']
_NOUN = ['miller', 'river', 'carriage', 'lantern', 'orchard', 'captain', 'window', 'village', 'stranger',
         'letter', 'harbour', 'meadow', 'clock', 'sailor', 'doctor', 'teacher', 'garden', 'ladder', 'engine',
         'door', 'staircase', 'signal', 'machine', 'kettle', 'blanket', 'compass', 'journal', 'courtyard',
         'factory', 'road', 'hill', 'storm', 'shadow', 'corridor', 'lamp', 'table', 'fence', 'tower', 'well',
         'cart', 'bell', 'rope', 'field', 'forest', 'neighbour', 'guard', 'clerk', 'farmer', 'painter', 'boat']
_VERB = ['watched', 'passed', 'remembered', 'followed', 'crossed', 'described', 'ignored', 'admired',
         'repaired', 'opened', 'closed', 'carried', 'noticed', 'measured', 'cleaned', 'checked', 'studied',
         'answered', 'forgot', 'counted', 'painted', 'locked', 'moved', 'lifted', 'searched']
_ADV = ['slowly', 'at dawn', 'without a word', 'once more', 'in the rain', 'before supper', 'for a while',
        'with great care', 'after the storm', 'in silence', 'twice', 'by the gate', 'late at night']
_PRON = ['He', 'She', 'They', 'We', 'I', 'Nobody', 'Everyone']
_SAY = ['It is late', 'We should wait', 'Nothing has changed', 'That will do', 'Look at the sky',
        'Not again', 'Keep going', 'I know the way']


def _needle_words() -> set:
    words = set()
    for g in GROUPS:
        texts = [g['needle'], g['needle_inv'], g['direct'], *g['questions'].values(), DISTRACTOR]
        texts += [a for t in g['tests'] for a in t]
        for t in texts:
            words.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]*", t))
    return words


_FORBIDDEN = _needle_words()
_ADJ, _NOUN, _VERB = ([w for w in ws if w not in _FORBIDDEN] for ws in (_ADJ, _NOUN, _VERB))
_ADV = [a for a in _ADV if not set(a.split()) & (_FORBIDDEN - {'a', 'the', 'at', 'in', 'for', 'by', 'with'})]


def _sentence(rng: random.Random) -> str:
    a, n, v, d = rng.choice, rng.choice, rng.choice, rng.choice
    k = rng.randrange(5)
    if k == 0:
        return f'The {a(_ADJ)} {n(_NOUN)} {v(_VERB)} the {n(_NOUN)} {d(_ADV)}.'
    if k == 1:
        return f'{rng.choice(_PRON)} {v(_VERB)} the {a(_ADJ)} {n(_NOUN)} and {v(_VERB)} the {n(_NOUN)}.'
    if k == 2:
        return f'For a while nobody {v(_VERB)} the {n(_NOUN)}, and the {n(_NOUN)} stayed {a(_ADJ)}.'
    if k == 3:
        return f'It was {a(_ADJ)} and {a(_ADJ)} {d(_ADV)} when the {n(_NOUN)} {v(_VERB)} the {n(_NOUN)}.'
    return f'"{rng.choice(_SAY)}," said the {n(_NOUN)}, {d(_ADV)}.'


def _paragraph(rng: random.Random) -> str:
    target = rng.randint(1000, 1600)  # like the released snippets: >= 1000 characters
    parts, size = [], 0
    while size < target:
        s = _sentence(rng)
        if rng.random() < 0.02:  # a redaction mark, as left by the authors' literal-distractor removal
            words = s.split(' ')
            i = rng.randrange(1, len(words))
            s = ' '.join(words[:i] + ['...'] + words[i + 1:])
        parts.append(s)
        size += len(s) + 1
    return ' '.join(parts) + ' \n'


def book_text(index: int, tokens: int, tier: str = 'rand_shuffle', tokenizer=None) -> str:
    """A book of at least ``tokens`` tokens of ``tokenizer`` (default: the offline default tokenizer)."""
    tok = tokenizer or get_tokenizer(None)
    rng = random.Random(f'opencompass_longctx.nolima.sample/{tier}/{index}')
    lines, count = [], 0
    while count < tokens:
        chunk = [_paragraph(rng) for _ in range(16)]
        counts = [len(ids) for ids in tok.encode_batch(chunk)]
        for line, c in zip(chunk, counts):
            lines.append(line)
            count += c
            if count >= tokens:
                break
    return ''.join(lines)


def _entries(variant: str) -> List[Dict]:
    entries = []
    for g in GROUPS:
        for inv in (False, True):
            eid = g['gid'] + ('Inv' if inv else '')
            tests = {f'T{j + 1:02d}_C{int(g["gid"][2:]):02d}': {'input_args': list(args)}
                     for j, args in enumerate(g['tests'])}
            questions = dict(g['questions'])
            e = {'id': eid, 'reasoning_type': g['reasoning'],
                 'needle': g['needle_inv'] if inv else g['needle'],
                 'questions': questions, 'tests': tests, 'character_set': list(CHARACTERS),
                 'system_prompt': SYSTEM_PROMPT_FIELD}
            if variant == 'cot':
                e['task_template'] = COT_TEMPLATE
            elif variant == 'mc':
                k = int(g['gid'][2:]) % 4
                names = list(MC_OTHERS)
                names.insert(k, '{CHAR}')
                opts = f'{", ".join(names[:3])} or {names[3]}'
                e['questions'] = {q: t[:-1] + f': {opts}?' for q, t in questions.items()}
            elif variant == 'direct':
                e['questions'] = {'direct': g['direct']}
            elif variant == 'distractor':
                e['distractors'] = {q: DISTRACTOR % int(re.search(r'\{(\d+)\}', t).group(1))
                                    for q, t in questions.items()}
            elif variant == 'hard':
                if eid not in HARD:
                    continue
                qtypes, ntests = HARD[eid]
                e['questions'] = {q: questions[q] for q in qtypes}
                e['tests'] = dict(list(tests.items())[:ntests])
            entries.append(e)
    return entries


def write(root: str, book_tokens: int = 6000, long_book_tokens: Optional[int] = None,
          variants: Sequence[str] = VARIANTS, books: int = 5, write_manifest: bool = False) -> str:
    """Write the stand-in needle sets and books under ``root`` (real layout). Returns ``root``."""
    os.makedirs(os.path.join(root, 'needlesets'), exist_ok=True)
    for v in variants:
        with open(os.path.join(root, 'needlesets', VARIANT_FILES[v]), 'w', encoding='utf-8') as f:
            f.write(json.dumps(_entries(v), indent=1, ensure_ascii=False) + '\n')
    tiers = [('rand_shuffle', book_tokens)] + ([('rand_shuffle_long', long_book_tokens)] if long_book_tokens else [])
    for tier, n in tiers:
        d = os.path.join(root, 'haystack', tier)
        os.makedirs(d, exist_ok=True)
        for i in range(books):
            with open(os.path.join(d, f'rand_book_{i + 1}.txt'), 'w', encoding='utf-8', newline='') as f:
                f.write(book_text(i, n, tier))
    with open(os.path.join(root, 'README.md'), 'w', encoding='utf-8') as f:
        f.write('Stand-in data written by opencompass_longctx.demo.nolima_data in the layout of the NoLiMa '
                'dataset (amodaresi/NoLiMa).\nIt is NOT NoLiMa: the needles, names and books are made up by '
                'the project. Scores on it say nothing about a model.\n')
    if write_manifest:
        from opencompass_longctx.data_files import write_manifest as _wm
        _wm(root)
    return root


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out_dir')
    ap.add_argument('--book-tokens', type=int, default=6000)
    ap.add_argument('--long-book-tokens', type=int, default=0)
    ap.add_argument('--manifest', action='store_true', help='also write longctx_manifest.json (sha256)')
    args = ap.parse_args(argv)
    print(write(args.out_dir, args.book_tokens, args.long_book_tokens or None, write_manifest=args.manifest))
    return 0


if __name__ == '__main__':
    sys.exit(main())
