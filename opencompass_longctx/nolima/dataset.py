"""NoLiMa as an OpenCompass dataset: one (needle-set variant, tier) split per dataset config.

``load_nolima`` builds one row per test (pair x haystack x depth) and caches the result on disk (key: every
parameter, the tokenizer fingerprint, the sha256 of the needle set and of every book, the package version),
so OpenCompass's main, inference and evaluation processes build it once.

Protocol (spec §2.4, §4, §7), all defaults the authors':

* tier -> haystack length ``L`` in tokens, 1k = 1000 (``'250'``, ``'500'``, ``'1k'`` ... ``'32k'``, ``'64k'``,
  ``'128k'``); counted with ``tokenizer`` (the evaluated model's own tokenizer directory: canonical) or, when
  none is given, the offline default ``tiktoken:cl100k_base`` (rows are then marked ``canonical_length=False``);
* depths ``linspace(0, 1, 26)`` up to 32K and ``linspace(0, 1, 11)`` above (``depth_intervals`` overrides);
* the 5 books in sorted order (``rand_book_1`` -> haystack 0); ``haystack_tier='auto'`` uses
  ``rand_shuffle`` and switches to ``rand_shuffle_long`` only when the short books cannot hold ``L``;
* per (pair, haystack): ``RandomState(42 + int(id[:4]) + haystack_index)`` (the legacy NumPy generator the
  authors seed globally), one name drawn per depth in ascending order (and, in the distractor variant, the
  distractor depth drawn right after it);
* prompt: the entry's ``task_template`` (CoT set) or the default template, sent after one system message.

Placements: ``'standard'`` (the authors' default), ``'static'`` (needle line fixed at ``static_depth`` of the
book) and ``'last2k'`` (static, with depths 1 - k/L for k in [0, 2000]: the paper's "last-2K aligned"
analysis).
"""
import hashlib
import json
import os
import re
import shutil
import sys
import warnings
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np

from .. import parallel
from ..cache import DatasetCache, make_key
from ..parallel import load_tokenizer
from ..tiers import parse_tier
from ..tokenization import DEFAULT_TOKENIZER, get_tokenizer
from . import data as ndata
from . import haystack as hs
from .needles import (CHAR, VARIANT_FILES, NoLiMaError, Pair, load_pairs, resolve_variant, select_pairs)
from .prompts import MAX_NEW_TOKENS, SYSTEM_PROMPT, TASK_TEMPLATE, build_prompt

PLACEMENTS = ('standard', 'static', 'last2k')
BUILD_VERSION = 1
CHAT_MARGIN = 64  # tokens allowed for the chat template and system message in the max_seq_len check
# Parallel builds (parallel.plan), in haystack tokens: a row is a slice of a tokenised book (~100M tokens/s),
# so a split under MIN_PARALLEL_TOKENS in all is built in one process; a chunk holds at most CHUNK_TOKENS.
MIN_PARALLEL_TOKENS = 200_000_000
CHUNK_TOKENS = 4_000_000


def default_depth_intervals(L: int) -> int:
    return 26 if L <= 32000 else 11


def _check_int_list(name, value, upper):
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value or \
            not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < upper for v in value):
        raise NoLiMaError(f'{name} must be a non-empty list of indices in [0, {upper}), got {value!r}')
    return sorted(set(value))


def _fits(books, L, depths, placement, static_depth, shift):
    """None when every window fits every book, else the first HaystackTooShortError."""
    for b in books:
        for d in depths:
            try:
                if placement == 'standard':
                    hs.window(b, L, float(d), shift)
                else:
                    hs.static_window(b, L, float(d), static_depth)
            except hs.HaystackTooShortError as e:
                return e
    return None


def _name_collisions(books, pairs) -> Dict[str, List[str]]:
    names = sorted({n for p in pairs for n in p.character_set})
    if not names:
        return {}
    rx = re.compile(r'\b(' + '|'.join(re.escape(n) for n in names) + r')\b')
    hits = {}
    for b in books:
        text = b.raw.decode('utf-8', 'replace') if b.raw is not None else open(b.path, encoding='utf-8').read()
        found = sorted(set(rx.findall(text)))
        if found:
            hits[b.name] = found
    return hits


@dataclass
class SplitPlan:
    """Everything one NoLiMa split is made of, validated by :func:`load_nolima`. Picklable: a build worker
    gets the books as paths (tokenised once, in the book cache) and the tokenizer by name."""
    pairs: List[Pair]
    book_paths: List[str]
    book_indices: List[int]
    L: int
    tier: str
    depths: List[float]
    depth_indices: Optional[List[int]]
    placement: str
    static_depth: Optional[float]
    shift: int
    base_seed: int
    variant: str
    needle_file: str
    haystack_tier: str
    tokenizer: str
    fingerprint: str
    canonical: bool

    @property
    def blocks(self) -> int:
        """(pair, haystack) blocks, in row order: every depth of one pair in one book."""
        return len(self.pairs) * len(self.book_paths)


class _Blocks:
    """The rows of a plan's (pair, haystack) blocks, in one process."""

    def __init__(self, plan: SplitPlan):
        self.plan = plan
        self.tok = load_tokenizer(plan.tokenizer, plan.fingerprint)
        self.books = [hs.load_book(p, self.tok) for p in plan.book_paths]
        self.memo: Dict[str, int] = {}

    def count(self, text: str) -> int:
        if text not in self.memo:
            self.memo[text] = len(self.tok.encode(text))
        return self.memo[text]

    def rows(self, block: int) -> Iterator[Dict]:
        P, count = self.plan, self.count
        pair = P.pairs[block // len(self.books)]
        h, book = P.book_indices[block % len(self.books)], self.books[block % len(self.books)]
        L = P.L
        wanted_depths = None if P.depth_indices is None else set(P.depth_indices)
        template = pair.task_template or TASK_TEMPLATE
        seed = P.base_seed + pair.group + h
        rng = np.random.RandomState(seed)  # = np.random.seed(seed) + the global legacy generator
        for di, d in enumerate(P.depths):
            d = float(d)
            name = str(rng.choice(pair.character_set)) if pair.has_char else ''
            needle = pair.needle.replace(CHAR, name) if pair.has_char else pair.needle
            question = pair.question.replace(CHAR, name) if pair.has_char else pair.question
            dd = -1.0
            if pair.distractor is not None:
                dd = hs.draw_distractor_depth(rng, d, L)  # drawn even when the depth is not emitted
            if wanted_depths is not None and di not in wanted_depths:
                continue
            if P.placement == 'standard':
                pl = hs.place(book, needle, L, d, P.shift)
            else:
                pl = hs.place_static(book, needle, L, d, P.static_depth)
            text, anchored = pl.text, True
            if pair.distractor is not None:
                ins = hs.insert_distractor(book, pl, needle, pair.distractor, dd, P.shift)
                text, anchored = ins.text, ins.anchored
            prompt = build_prompt(text, question, pair.task_template)
            gold = [name] if pair.has_char else list(pair.gold_answers)
            approx = (L + count(template.format(haystack='', question=question)) + count(' ' + needle + '\n')
                      + (count(' ' + pair.distractor + '\n') if pair.distractor is not None else 0))
            yield {
                'prompt': prompt, 'answer': gold[0], 'gold_answers': json.dumps(gold, ensure_ascii=False),
                'question': question, 'needle': needle, 'character': name,
                'pair': pair.name, 'entry_id': pair.entry_id, 'group': pair.group, 'test_id': pair.test_id,
                'question_type': pair.question_type, 'order': pair.order,
                'reasoning_type': pair.reasoning_type, 'variant': P.variant, 'needle_set': P.needle_file,
                'haystack': book.name, 'haystack_index': h, 'haystack_tier': P.haystack_tier,
                'context_length': L, 'tier': P.tier, 'depth': d, 'depth_index': di,
                'needle_token_depth': pl.needle_depth, 'window_start': pl.start, 'line_break': pl.line_break,
                'placement': P.placement, 'distractor': pair.distractor or '', 'distractor_depth': dd,
                'distractor_anchored': anchored,
                'seed': seed, 'length_tokenizer': P.tokenizer, 'canonical_length': P.canonical,
                'prompt_tokens_approx': approx,
            }


def _rows_of_blocks(blocks: _Blocks, span: Tuple[int, int]) -> List[Dict]:
    return [row for b in range(*span) for row in blocks.rows(b)]


def build_rows(plan: SplitPlan, num_proc: int = 1) -> Iterator[Dict]:
    """The split's rows in (pair, haystack, depth) order, made by up to ``num_proc`` processes (the same rows
    for any ``num_proc``)."""
    rows_per_block = len(plan.depths) if plan.depth_indices is None else len(plan.depth_indices)
    workers, size = parallel.plan(plan.blocks, num_proc, rows_per_block * plan.L, MIN_PARALLEL_TOKENS,
                                  CHUNK_TOKENS)
    spans = [(a, min(a + size, plan.blocks)) for a in range(0, plan.blocks, size)]
    bar = parallel.progress(plan.blocks * rows_per_block,
                            f'NoLiMa {plan.tier} ({workers} process{"es" * (workers > 1)})')
    try:
        for rows in parallel.ordered_map(_rows_of_blocks, spans, _Blocks, (plan,), workers,
                                         size=lambda span: (span[1] - span[0]) * rows_per_block, bar=bar):
            yield from rows
    finally:
        bar.close()


def _ensure_sample_data(path: Optional[str], book_tokens: int) -> None:
    if not path:
        raise NoLiMaError('sample_data=True needs path= (where to write the stand-in data)')
    if os.path.isfile(os.path.join(path, 'needlesets', VARIANT_FILES['main'])):
        return
    from . import sample_data
    if os.path.isdir(path) and os.listdir(path):
        sample_data.write(path, book_tokens=book_tokens)
        return
    tmp = f'{path.rstrip(os.sep)}.tmp-{os.getpid()}'
    sample_data.write(tmp, book_tokens=book_tokens)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if os.path.isdir(path):
            os.rmdir(path)
        os.rename(tmp, path)
    except OSError:  # written by another process meanwhile
        shutil.rmtree(tmp, ignore_errors=True)


def load_nolima(tier, needle_set: str = 'main', path: Optional[str] = None, tokenizer: Optional[str] = None,
                haystack_tier: str = 'auto', depth_intervals: Optional[int] = None, placement: str = 'standard',
                static_depth: Optional[float] = None, aligned_tokens: int = 2000, base_seed: int = 42,
                shift: int = 0, question_types=None, exclude_direct: Optional[bool] = None,
                expected_pairs='auto', pairs=None, haystacks=None, depth_indices=None,
                max_seq_len: Optional[int] = None, download: Optional[bool] = None,
                revision: Optional[str] = None, sample_data: bool = False, sample_book_tokens: int = 6000,
                num_proc: Optional[int] = None):
    """Build (or reload from the cache) one NoLiMa split as a ``datasets.Dataset``.

    ``needle_set``: a variant ('main', 'hard', 'cot', 'mc', 'direct', 'distractor'), its file name, or a path
    to a custom needle-set JSON file. ``pairs`` (a count or pair names), ``haystacks`` (book indices 0-4) and
    ``depth_indices`` (indices into the depth grid) select a subset without changing any sample (seeds and
    name draws are those of the full grid). ``max_seq_len``: refuse a tier whose prompts (plus 192 new tokens
    and a chat-template margin) would not fit the model, instead of letting OpenCompass cut the needle out.
    ``sample_data=True`` (demo and tests only): write the project's stand-in data under ``path`` if missing.
    ``num_proc``: processes for a build (default: the cores available; the same rows for any value).
    """
    t = parse_tier(tier)
    L, tier = t.tokens(1000), t.name
    if L < 1:
        raise NoLiMaError(f'NoLiMa tier {tier!r} has no haystack tokens; use 250, 500, 1k ... 128k')
    custom = isinstance(needle_set, str) and needle_set.endswith('.json') and os.path.isfile(needle_set)
    variant = 'custom' if custom else resolve_variant(needle_set)
    if placement not in PLACEMENTS:
        raise NoLiMaError(f'unknown placement {placement!r}; choose one of {PLACEMENTS}')
    if haystack_tier not in ('auto',) + ndata.HAYSTACK_TIERS:
        raise NoLiMaError(f"unknown haystack_tier {haystack_tier!r}; choose 'auto' or one of {ndata.HAYSTACK_TIERS}")
    if placement == 'last2k' and static_depth is None:
        static_depth = 0.5
    if placement != 'standard':
        if static_depth is None or isinstance(static_depth, bool) or not isinstance(static_depth, (int, float)):
            raise NoLiMaError(f"placement={placement!r} needs static_depth, a number in [0, 1]")
        if shift:
            raise NoLiMaError('shift is not allowed with a static placement (as in the authors\' code)')
    if isinstance(shift, bool) or not isinstance(shift, int) or shift < 0:
        raise NoLiMaError(f'shift must be a non-negative integer, got {shift!r}')
    n_depths = default_depth_intervals(L) if depth_intervals is None else depth_intervals
    depths = (hs.aligned_depths(n_depths, L, aligned_tokens) if placement == 'last2k'
              else hs.depth_grid(n_depths))
    depth_indices = _check_int_list('depth_indices', depth_indices, len(depths))
    book_indices = _check_int_list('haystacks', haystacks, ndata.NUM_BOOKS) or list(range(ndata.NUM_BOOKS))
    if max_seq_len is not None and (isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int)):
        raise NoLiMaError(f'max_seq_len must be an integer, got {max_seq_len!r}')
    num_proc = parallel.check_num_proc(num_proc)
    if sample_data:
        _ensure_sample_data(path, sample_book_tokens)

    tok = get_tokenizer(tokenizer)
    canonical = tokenizer not in (None, '', 'default', DEFAULT_TOKENIZER)
    if not canonical:
        print(f'[opencompass_longctx] NoLiMa {tier}: lengths counted with the offline default tokenizer '
              f'{DEFAULT_TOKENIZER}, not the evaluated model\'s: results are non-canonical (set tokenizer= to '
              'the model\'s tokenizer directory)', file=sys.stderr)

    if custom:
        needle_file = os.path.abspath(needle_set)
    else:
        needle_file = ndata.locate([ndata.needle_relpath(variant)], path, download, revision,
                                   what=f'the {variant} needle set')[ndata.needle_relpath(variant)]
    all_pairs = load_pairs(needle_file, variant, question_types, exclude_direct,
                           expected_pairs if not custom or expected_pairs != 'auto' else None)
    chosen = select_pairs(all_pairs, pairs)
    if variant == 'distractor' and placement != 'standard':
        raise NoLiMaError('the distractor variant needs the standard placement (the authors\' code silently '
                          'returns nothing for a distractor with a static depth)')

    tiers = ['rand_shuffle', 'rand_shuffle_long'] if haystack_tier == 'auto' else [haystack_tier]
    books, used_tier, errors = None, None, []
    for t in tiers:
        rels = ndata.book_relpaths(t, book_indices)
        if t == 'rand_shuffle_long' and haystack_tier == 'auto':
            try:
                files = ndata.locate(rels, path, download, revision, what=f'{t} books for L={L}')
            except FileNotFoundError as e:
                raise hs.HaystackTooShortError(f'{errors[0]}\nThe longer tier is not available either: {e}') from e
        else:
            files = ndata.locate(rels, path, download, revision, what=f'{t} books')
        cand = [hs.load_book(files[r], tok) for r in rels]
        err = _fits(cand, L, depths, placement, static_depth, shift)
        if err is None:
            books, used_tier = cand, t
            break
        errors.append(err)
    if books is None:
        if len(errors) == 1:
            raise errors[0]
        raise hs.HaystackTooShortError('no haystack tier holds this length:\n' + '\n'.join(
            f'  {t}: {e}' for t, e in zip(tiers, errors)))
    if used_tier != tiers[0]:
        print(f'[opencompass_longctx] NoLiMa {tier}: the rand_shuffle books are too short for L={L}; using '
              f'{used_tier} (recorded in the haystack_tier column)', file=sys.stderr)

    if max_seq_len is not None:
        worst = max(len(tok.encode(build_prompt('', p.question.replace(CHAR, 'W' * 12), p.task_template)))
                    + len(tok.encode(' ' + p.needle.replace(CHAR, 'W' * 12) + '\n'))
                    + (len(tok.encode(' ' + p.distractor + '\n')) if p.distractor else 0) for p in chosen)
        need = L + worst + len(tok.encode(SYSTEM_PROMPT)) + CHAT_MARGIN + MAX_NEW_TOKENS
        if need > max_seq_len:
            raise NoLiMaError(
                f'NoLiMa {tier} does not fit max_seq_len={max_seq_len}: prompts need about {need - MAX_NEW_TOKENS}'
                f' tokens plus {MAX_NEW_TOKENS} new tokens ({need} > {max_seq_len}). OpenCompass would cut the '
                'start of the prompt (and the needle with it); raise max_seq_len or leave this tier out.')

    params = dict(build=BUILD_VERSION, tier=tier, L=L, variant=variant, needle_file=os.path.basename(needle_file),
                  haystack_tier=used_tier, books=[b.name for b in books], book_indices=book_indices,
                  depths=[float(x) for x in depths], depth_indices=depth_indices, placement=placement,
                  static_depth=static_depth, shift=shift, base_seed=base_seed, question_types=question_types,
                  exclude_direct=exclude_direct, pairs=[p.name for p in chosen], canonical=canonical,
                  template_sha256=hashlib.sha256(TASK_TEMPLATE.encode()).hexdigest())
    cache = DatasetCache()
    key = make_key('nolima', params, tok.fingerprint, [needle_file] + [b.path for b in books], cache.root)

    def rows():
        collisions = _name_collisions(books, chosen)
        if collisions:
            warnings.warn(f'NoLiMa: character names occur as whole words in the haystack: {collisions}; '
                          'the answer may then be found without the needle')
        plan = SplitPlan(chosen, [b.path for b in books], book_indices, L, tier, [float(x) for x in depths],
                         depth_indices, placement, static_depth, shift, base_seed, variant,
                         os.path.basename(needle_file), used_tier, tok.name, tok.fingerprint, canonical)
        return build_rows(plan, num_proc)
    return cache.get_or_build('nolima', key, rows, params=params)


try:
    from opencompass.datasets.base import BaseDataset
except ImportError:  # stand-alone use of the loader without OpenCompass
    BaseDataset = object


class NoLiMaDataset(BaseDataset):
    """``type=NoLiMaDataset`` in configs; every extra config key goes to :func:`load_nolima`.

    Same result as OpenCompass's ``BaseDataset.__init__`` (columns ``subdivision`` = abbr and ``idx``, the set
    repeated ``n`` times), but the two columns are appended to the Arrow table instead of written by
    ``Dataset.map``, which would copy every prompt (over 1 GB at 32K) in each OpenCompass process.
    """

    def __init__(self, reader_cfg: Optional[Dict] = None, k=1, n: int = 1, **kwargs):
        from datasets import concatenate_datasets
        abbr = kwargs.pop('abbr', 'dataset')
        dataset = self.load(**kwargs)
        assert (max(k) if isinstance(k, list) else k) <= n, 'Maximum value of `k` must less than or equal to `n`'
        dataset = dataset.add_column('subdivision', [abbr] * len(dataset))
        dataset = dataset.add_column('idx', list(range(len(dataset))))
        self.dataset = concatenate_datasets([dataset] * n) if n > 1 else dataset
        self._init_reader(**(reader_cfg or {}))

    @staticmethod
    def load(**kwargs):
        return load_nolima(**kwargs)
