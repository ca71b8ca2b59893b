"""BABILong generator for lengths the published data lacks (192k, 384k, 2m, ...).

The authors' algorithm (babilong_utils.py TaskDataset / SentenceSampler / NoiseInjectionDataset, and
data/create_tasks.py), reimplemented to be reproducible and fast:

* Stories: bAbI v1.2 en-10k *test* files (``qaN_<name>_test.txt``). A story with several questions gives one
  sample per question holding every statement of the story up to that question. ``max_n_facts =
  (tier - 300) // 8`` drops longer stories (0k: facts only). The authors' ``__len__`` drops the last sample
  of each task; ``fix_len_off_by_one=False`` (the default) keeps that for parity with the released counts.
* Background: sentences from PG19 test books (any directory of ``.txt`` files): a random book, a random
  character offset, ``10 x budget`` characters, split into sentences, first and last (partial) sentence
  dropped, each sentence tokenized with a leading space, sentences under 10 tokens skipped; sentences are
  added until the budget is reached and the last one is cut at the token level, so the tokens add up exactly.
* Placement: facts (tokenized with a leading space) go into gaps drawn uniformly with replacement from the
  ``len(background) + 1`` gaps between sentences, sorted, so the story keeps its order; a fact goes before the
  background sentence of its gap. The question is not in the haystack.
* Length: ``tier - 300`` tokens of the named tokenizer (default GPT-2, the authors' accounting; the 300 are
  the prompt allowance), facts plus background, counted piece by piece as the authors do.

Differences, by design: every sample has its own seeded RNG (seed, task, tier, index), so any sample can be
made alone, byte-identically, on any machine (the authors' sampler is unseeded and carries unused sentences
over to the next sample); sentences are split by a regular expression instead of nltk's untrained Punkt
(no nltk dependency); each chunk of book text is tokenized in one batch call instead of sentence by sentence.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from opencompass_longctx import __version__, parallel
from opencompass_longctx.tiers import Tier, parse_tier
from opencompass_longctx.tokenizer.counting import GPT2_TOKENIZER, Tokenizer, get_tokenizer
from opencompass_longctx.util import atomic_write_text, sha256_file
from opencompass_longctx.babilong.data import MANIFEST_NAME, BabilongDataError, file_name, task_number
PROMPT_ALLOWANCE = 300
MIN_SENTENCE_TOKENS = 10
# A sentence ends at . ! or ? plus up to three closing quotes or brackets (kept with the sentence), followed
# by white space (which becomes one space between sentences).
_SENTENCE_END = re.compile(rb'([.!?](?:["\')\]]|\xe2\x80[\x99\x9d]){0,3})[ \t\n\r\x0b\x0c]+')


class GeneratorInputError(BabilongDataError):
    pass


@dataclass
class Story:
    facts: List[str]
    question: str
    answer: str
    story: int      # 0-based story number in the file
    line: int       # 1-based line number of the question in the file


def babi_file(babi_dir: str, task: str) -> str:
    n = task_number(task)
    hits = sorted(glob.glob(os.path.join(babi_dir, '**', f'qa{n}_*_test.txt'), recursive=True))
    if not hits:
        raise GeneratorInputError(
            f'no bAbI test file for {task} (qa{n}_*_test.txt) under {babi_dir}. Get bAbI v1.2 (tasks_1-20_v1-2.tar.gz '
            'from the bAbI project page) and point babi_dir at its en-10k directory.')
    return hits[0]


def parse_babi(path: str) -> List[Story]:
    """One Story per question; facts are the story's statements up to that question."""
    stories: List[Story] = []
    facts: List[str] = []
    story = -1
    with open(path, encoding='utf-8') as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip('\n')
            if not line.strip():
                continue
            num, _, text = line.partition(' ')
            if not num.isdigit():
                raise GeneratorInputError(f'{path}:{lineno}: not a bAbI line: {line[:80]!r}')
            if num == '1':
                facts, story = [], story + 1
            if '\t' in text:
                parts = text.split('\t')
                if len(parts) < 2:
                    raise GeneratorInputError(f'{path}:{lineno}: question line without an answer')
                stories.append(Story(list(facts), parts[0], parts[1], story, lineno))
            else:
                facts.append(text.strip())
    if not stories:
        raise GeneratorInputError(f'{path}: no questions found (not a bAbI file?)')
    return stories


def load_books(background_dir: str) -> Dict[str, str]:
    paths = sorted(glob.glob(os.path.join(background_dir, '**', '*.txt'), recursive=True))
    if not paths:
        raise GeneratorInputError(
            f'no background books (*.txt) under {background_dir}. Use the PG19 test split (100 books) or any '
            'directory of plain-text files.')
    books = {}
    for p in paths:
        with open(p, encoding='utf-8', errors='replace') as f:
            books[os.path.relpath(p, background_dir)] = f.read()
    return books


def sample_size(tier: Tier) -> int:
    return tier.tokens(1000) - PROMPT_ALLOWANCE


def eligible(stories: List[Story], tier: Tier, fix_len_off_by_one: bool = False) -> List[int]:
    """Indices of the stories the authors' TaskDataset would offer at this tier."""
    size = sample_size(tier)
    max_facts = size // 8 if size > 0 else None
    idx = [i for i, s in enumerate(stories) if max_facts is None or len(s.facts) <= max_facts]
    return idx if fix_len_off_by_one else idx[:-1]


def _rng(*key) -> np.random.Generator:
    digest = hashlib.sha256('|'.join(map(str, key)).encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], 'little')))


def split_sentences(window: bytes, drop_first: bool):
    """``(raw, byte_starts)``: the complete sentences of ``window`` (UTF-8), each with a leading space, joined
    (the authors' ``' ' + sentence`` pieces, concatenated), and the byte offset where each piece starts.

    The last piece (after the last sentence end) is always dropped as partial, the first one when
    ``drop_first``. One ``re.split`` call; no Python-level scan of the text."""
    parts = _SENTENCE_END.split(window)
    texts, ends = parts[0::2], parts[1::2]  # sentence k = texts[k] + ends[k]; texts[-1] is the partial tail
    first, n = (1 if drop_first else 0), len(ends)
    if n <= first:
        return b'', np.zeros(0, dtype=np.int64)
    texts, ends = texts[first:n], ends[first:n]
    sizes = (np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
             + np.fromiter(map(len, ends), dtype=np.int64, count=len(ends)) + 1)
    return b' ' + b' '.join(map(b''.join, zip(texts, ends))), np.concatenate(([0], np.cumsum(sizes)[:-1]))


class BackgroundSampler:
    """Draws background sentences from the books with a given RNG.

    Returns one token stream (numpy) and the token length of each sentence in it."""

    def __init__(self, books: Dict[str, str], tokenizer):
        self.names = sorted(books)
        self.books = books
        self.tok = tokenizer

    def sample(self, budget: int, rng: np.random.Generator, provenance: list):
        """``(text, byte_lengths, token_lengths)`` of ``budget`` tokens of background sentences."""
        texts: List[bytes] = []
        byte_lens: List[np.ndarray] = []
        tok_lens: List[np.ndarray] = []
        total, draws = 0, 0
        while total < budget:
            draws += 1
            if draws > 1000 and total == 0:
                raise GeneratorInputError('the background books yield no sentences of at least '
                                          f'{MIN_SENTENCE_TOKENS} tokens')
            name = self.names[int(rng.integers(len(self.names)))]
            book = self.books[name]
            start = int(rng.integers(0, max(1, len(book))))
            chunk = book[start:start + 10 * budget].encode('utf-8')
            provenance.append([name, start, start + 10 * budget])
            pos = 0
            while total < budget and pos < len(chunk):
                # tokenize about as much text as the remaining budget needs (~4 bytes/token, 10% margin; a
                # short window is followed by a small one), ending the window at a sentence end
                end = min(len(chunk), pos + int((budget - total) * 4.4) + 200)
                if end < len(chunk):
                    m = _SENTENCE_END.search(chunk, end)
                    end = m.end() if m else len(chunk)
                raw, starts = split_sentences(chunk[pos:end], drop_first=pos == 0)
                pos = end
                if not len(starts):
                    continue
                ids, bounds = self.tok.encode_split(raw.decode('utf-8', errors='replace'), starts)
                lens = np.diff(bounds)
                piece_ends = np.append(starts[1:], len(raw))
                kept = np.flatnonzero(lens >= MIN_SENTENCE_TOKENS)
                klen = lens[kept]
                cum = np.cumsum(klen)
                n = int(np.searchsorted(cum, budget - total))  # first sentence that reaches the budget
                tail = None
                if n < len(kept):  # that sentence is cut at the token level, as the authors do
                    take = budget - total - (int(cum[n]) - int(klen[n]))
                    tail = self.tok.decode_bytes(ids[bounds[kept[n]]:bounds[kept[n]] + take].tolist())
                    kept, klen = kept[:n], klen[:n]
                # the kept sentences' own bytes, gathered without a Python loop over sentences
                blen = piece_ends[kept] - starts[kept]
                if len(kept) and kept[-1] == len(kept) - 1:  # no short sentence skipped: one slice
                    texts.append(raw[:int(piece_ends[kept[-1]])])
                else:
                    keep = np.zeros(len(starts), dtype=bool)
                    keep[kept] = True
                    mask = np.repeat(keep, piece_ends - starts)
                    texts.append(np.frombuffer(raw, dtype=np.uint8)[mask].tobytes())
                byte_lens.append(blen)
                tok_lens.append(klen)
                total += int(klen.sum())
                if tail is not None:
                    texts.append(tail)
                    byte_lens.append(np.array([len(tail)]))
                    tok_lens.append(np.array([take]))
                    total += take
        return b''.join(texts), np.concatenate(byte_lens), np.concatenate(tok_lens)


class Generator:
    """Makes BABILong samples for any tier from bAbI stories and background books.

    Its methods take a :class:`~opencompass_longctx.tiers.Tier` (the loader and :func:`write` parse a tier once and
    pass it inward)."""

    def __init__(self, babi_dir: str, background_dir: str, tokenizer: str = GPT2_TOKENIZER, seed: int = 0,
                 fix_len_off_by_one: bool = False):
        if not babi_dir or not os.path.isdir(babi_dir):
            raise GeneratorInputError(f'babi_dir {babi_dir!r} is not a directory (bAbI v1.2 en-10k test files)')
        if not background_dir or not os.path.isdir(background_dir):
            raise GeneratorInputError(f'background_dir {background_dir!r} is not a directory (PG19 test books)')
        self.babi_dir, self.background_dir = babi_dir, background_dir
        self.tok = tokenizer if isinstance(tokenizer, Tokenizer) else get_tokenizer(tokenizer)
        self.seed = seed
        self.fix_len_off_by_one = fix_len_off_by_one
        self._stories: Dict[str, List[Story]] = {}
        self._sampler: Optional[BackgroundSampler] = None

    def __reduce__(self):
        """Sent to a build worker by its inputs: the worker loads the tokenizer again by name (checked by
        fingerprint) and reads the stories and books itself."""
        return _generator_in_worker, (self.babi_dir, self.background_dir, self.tok, self.tok.fingerprint,
                                      self.seed, self.fix_len_off_by_one)

    def input_files(self, tasks: Sequence[str]) -> List[str]:
        books = sorted(glob.glob(os.path.join(self.background_dir, '**', '*.txt'), recursive=True))
        return [babi_file(self.babi_dir, t) for t in tasks] + books

    def stories(self, task: str) -> List[Story]:
        if task not in self._stories:
            self._stories[task] = parse_babi(babi_file(self.babi_dir, task))
        return self._stories[task]

    @property
    def sampler(self) -> BackgroundSampler:
        if self._sampler is None:
            self._sampler = BackgroundSampler(load_books(self.background_dir), self.tok)
        return self._sampler

    def questions(self, task: str, tier: Tier, samples: int) -> List[int]:
        """The story indices of samples 0..samples-1 (a seeded shuffle of the eligible ones)."""
        pool = eligible(self.stories(task), tier, self.fix_len_off_by_one)
        if not pool:
            raise GeneratorInputError(f'no {task} story fits {tier.name} (max_n_facts = {sample_size(tier) // 8})')
        order = _rng('questions', self.seed, task, tier.name).permutation(len(pool))
        return [pool[int(k)] for k in order[:samples]]

    def make(self, task: str, tier: Tier, index: int, story_index: int) -> Dict:
        story = self.stories(task)[story_index]
        size = sample_size(tier)
        facts = [(' ' + f).encode('utf-8') for f in story.facts]
        fact_tokens = [len(x) for x in self.tok.encode_batch([' ' + f for f in story.facts])]
        provenance: list = []
        bg_budget = size - sum(fact_tokens)
        rng = _rng('sample', self.seed, task, tier.name, index)
        bg, bg_bytes, bg_tokens = b'', np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if bg_budget > 0:
            bg, bg_bytes, bg_tokens = self.sampler.sample(bg_budget, rng, provenance)
        # fact k goes into gap gaps[k] (before background sentence gaps[k]); sorted, so the story keeps its order
        gaps = np.sort(rng.integers(0, len(bg_bytes) + 1, size=len(facts)))
        cut = np.concatenate(([0], np.cumsum(bg_bytes)))[gaps]  # byte offset of each gap in the background
        pieces: List[bytes] = []
        prev = 0
        for fact, at in zip(facts, cut.tolist()):
            pieces += [bg[prev:at], fact]
            prev = at
        pieces.append(bg[prev:])
        n_tokens = int(bg_tokens.sum()) + sum(fact_tokens)
        return {
            'input': b''.join(pieces).decode('utf-8', errors='replace').strip(), 'question': story.question,
            'target': story.answer,
            'generation': {'index': index, 'story': story.story, 'question_line': story.line,
                           'tokens': n_tokens, 'budget': max(size, 0), 'fact_gaps': gaps.tolist(),
                           'background': provenance},
        }

    def fingerprint(self) -> Dict:
        return {'tokenizer': self.tok.name, 'tokenizer_fingerprint': self.tok.fingerprint, 'seed': self.seed,
                'fix_len_off_by_one': self.fix_len_off_by_one, 'algorithm': 'babilong-v1'}


def _generator_in_worker(babi_dir, background_dir, tokenizer, fingerprint, seed, fix_len_off_by_one) -> Generator:
    return Generator(babi_dir, background_dir, parallel.same_tokenizer(tokenizer, fingerprint), seed,
                     fix_len_off_by_one)


def _write_chunk(gen: Generator, chunk) -> List[tuple]:
    """(task, tier, JSON record, generation provenance) of each (task, tier, index, story) of a chunk."""
    out = []
    for task, tier, i, story in chunk:
        s = gen.make(task, tier, i, story)
        prov = s.pop('generation')
        out.append((task, tier, json.dumps(s), prov))
    return out


def _identity(x):
    return x


def write(generator: Generator, out_dir: str, tiers: Sequence, tasks: Sequence[str], samples: int,
          progress: bool = True, num_proc: Optional[int] = None) -> str:
    """Write ``out_dir/data/qaN/<LEN>.json`` (the layout the loader reads) and a manifest.

    Samples are made by ``num_proc`` processes (default: the cores available) and written in order: the files
    are byte-identical for any ``num_proc``."""
    tiers = [parse_tier(t) for t in tiers]
    workers_wanted = parallel.check_num_proc(num_proc)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise GeneratorInputError(f'samples must be a positive integer, got {samples!r}')
    files = generator.input_files(tasks)
    manifest = {'generator': generator.fingerprint(), 'package_version': __version__,
                'inputs': {os.path.basename(p): sha256_file(p) for p in files}, 'outputs': {}}
    items = [(task, tier, i, story) for task in tasks for tier in tiers
             for i, story in enumerate(generator.questions(task, tier, samples))]
    cost = sum(max(t.tokens(1000), 1000) for _, t, _, _ in items) / max(len(items), 1)
    current = None   # (task, tier, final path, open file, provenance records)

    def finish():
        task, tier, path, f, records = current
        f.write('\n]\n')
        f.close()
        os.replace(f.name, path)
        manifest['outputs'][os.path.relpath(path, out_dir)] = {'sha256': sha256_file(path), 'samples': records}

    try:
        for done in parallel.map_chunks(_write_chunk, items, _identity, (generator,), workers_wanted, cost,
                                        parallel.startup_factor(generator.tok), 'BABILong generation',
                                        enabled=progress):
            for task, tier, record, prov in done:
                if current is None or current[:2] != (task, tier):
                    if current is not None:
                        finish()
                    path = os.path.join(out_dir, 'data', task, file_name(tier))
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    current = (task, tier, path, open(f'{path}.tmp-{os.getpid()}', 'w', encoding='utf-8'), [])
                    current[3].write('[')
                current[3].write((',\n' if current[4] else '\n') + record)
                current[4].append(prov)
        if current is not None:
            finish()
            current = None
    finally:
        if current is not None:   # failed midway: remove the partial file
            current[3].close()
            os.unlink(current[3].name)
    out = os.path.join(out_dir, MANIFEST_NAME)
    if os.path.isfile(out):  # more tiers/tasks made by the same generator: keep the earlier entries
        with open(out, encoding='utf-8') as f:
            old = json.load(f)
        if old.get('generator') == manifest['generator']:
            manifest['inputs'] = {**old.get('inputs', {}), **manifest['inputs']}
            manifest['outputs'] = {**old.get('outputs', {}), **manifest['outputs']}
    atomic_write_text(out, json.dumps(manifest, indent=1, sort_keys=True))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description='Generate BABILong data for any tier (bAbI facts in PG19 text).')
    ap.add_argument('out_dir')
    ap.add_argument('--babi-dir', required=True, help='bAbI v1.2 en-10k directory (qaN_*_test.txt)')
    ap.add_argument('--background-dir', required=True, help='PG19 test books (*.txt) or any plain-text corpus')
    ap.add_argument('--tiers', nargs='+', required=True)
    ap.add_argument('--tasks', nargs='+', default=[f'qa{i}' for i in range(1, 6)])
    ap.add_argument('--samples', type=int, default=100)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--tokenizer', default=GPT2_TOKENIZER)
    ap.add_argument('--fix-len-off-by-one', action='store_true')
    ap.add_argument('--num-proc', type=int, default=None,
                    help='processes (default: the cores available; the files are the same for any value)')
    args = ap.parse_args(argv)
    gen = Generator(args.babi_dir, args.background_dir, args.tokenizer, args.seed, args.fix_len_off_by_one)
    print(write(gen, args.out_dir, args.tiers, args.tasks, args.samples, num_proc=args.num_proc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
