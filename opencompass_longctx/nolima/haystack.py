"""NoLiMa haystacks: each book tokenised once per tokenizer (cached on disk), and the authors' needle placement.

No OpenCompass import: usable stand-alone.

Reading: the book's line ends are translated as the authors' text-mode ``open()`` does (universal newlines:
``\r\n`` and a lone ``\r`` become ``\n``); nothing else is changed.

Preprocessing (the authors' code; docs/benchmarks.md#nolima), once per (book sha256, tokenizer fingerprint), stored under
``<cache root>/nolima_books/<key>/`` (a checked, atomic cache entry, see ``cache.write_entry``):

* the book's tokens (no special tokens);
* the *line-break tokens*: indices of tokens whose individually decoded string contains ``"\\n"``, plus 0;
* for byte-exact tokenizers (tiktoken, and the exact tiktoken twin of a byte-level BPE Hugging Face tokenizer
  whose decode is its tokens' bytes), the byte offset of every token. Their ``decode(ids)`` is the concatenation
  of the tokens' bytes decoded as UTF-8 with ``errors='replace'``, and encoding is lossless, so
  ``decode(tokens[a:b])`` equals ``book_bytes[off[a]:off[b]].decode('utf-8', 'replace')``: a sample is a slice
  of the book, never a re-tokenisation. Other tokenizers use their own default ``decode`` on the token
  slice (as the authors do), which is exact but slower.

Standard placement (the authors' code), for haystack length ``L`` (tokens) and depth ``d``:

1. ``p`` = the smallest line-break index with ``p >= shift + d*(L+1)``;
2. ``D = round(L*d)``; the window is tokens ``[s, s+L)`` with ``s = p - D`` (the needle sits D tokens in);
3. ``pre`` = decode(tokens[s..p]) cut just before its last ``"\\n"`` (empty if none);
   ``post`` = decode(tokens[p+1 .. s+L));
4. text = ``pre + " " + needle + "\\n" + post``.

Also: the static-depth placement (a fixed book position, used for the "last-2K aligned" analysis) and the
distractor insertion of the distractor variant (the authors' code), with the authors' quirks.
"""
import bisect
import hashlib
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

from opencompass_longctx.cache import CachePermissionError, EntryDamaged, cache_root, drop_entry, file_digest, read_entry, write_entry
from opencompass_longctx.nolima.needles import NoLiMaError
PREPROCESS_VERSION = 2  # 2: line ends translated as in text mode
PARTS_CACHE_SIZE = 64  # decoded windows kept per book (26 depths of a tier, and then some)


class HaystackTooShortError(NoLiMaError):
    """The book does not hold the window a placement needs."""


class PlacementError(NoLiMaError):
    """A placement that cannot be made (e.g. the distractor anchor is not unique)."""


class BookTokens:
    """A book's tokens, line-break token indices and (tiktoken) byte offsets."""

    def __init__(self, path: str, tokenizer, tokens: np.ndarray, line_breaks: np.ndarray,
                 offsets: Optional[np.ndarray], raw: Optional[bytes], digest: str):
        self.path, self.tokenizer, self.digest = path, tokenizer, digest
        self.tokens, self.line_breaks, self.offsets, self.raw = tokens, line_breaks, offsets, raw
        self._lb_list = line_breaks.tolist()
        self._parts: 'OrderedDict[Tuple[int, int, int], Tuple[str, str]]' = OrderedDict()
        self._tails: Dict[Tuple[int, int, int], str] = {}

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def name(self) -> str:
        return os.path.splitext(os.path.basename(self.path))[0]

    def decode(self, a: int, b: int) -> str:
        """decode(tokens[a:b]) with the tokenizer's default decode."""
        if b <= a:
            return ''
        if self.offsets is not None:
            return self.raw[int(self.offsets[a]):int(self.offsets[b])].decode('utf-8', errors='replace')
        return self.tokenizer.decode(self.tokens[a:b].tolist())

    def window_parts(self, s: int, p: int, L: int) -> Tuple[str, str]:
        """(pre, post) of the window [s, s+L) split after line-break token p (the authors' placement).

        The window depends on the book, L and the depth only, not on the needle, so every pair (and every
        variant) at the same (L, depth) shares it: it is decoded once and reused.
        """
        key = (s, p, L)
        hit = self._parts.get(key)
        if hit is not None:
            self._parts.move_to_end(key)
            return hit
        pre = self.decode(s, p + 1)
        cut = pre.rfind('\n')
        pre = pre[:cut] if cut >= 0 else ''
        parts = (pre, self.decode(p + 1, s + L))
        self._parts[key] = parts
        if len(self._parts) > PARTS_CACHE_SIZE:
            self._parts.popitem(last=False)
        return parts

    def pre_tail(self, s: int, p: int, n: int) -> str:
        """The last n characters of *pre* = decode(tokens[s..p]) cut before its last newline.

        Decodes only a suffix of the slice (enough to hold n characters and a margin, so effects of where a
        decode starts, such as a dropped leading space, cannot reach the tail); falls back to the whole slice.
        """
        key = (s, p, n)
        if key in self._tails:
            return self._tails[key]
        for span in (64, 512, None):
            a = s if span is None else max(s, p - span)
            txt = self.decode(a, p + 1)
            cut = txt.rfind('\n')
            pre = txt[:cut] if cut >= 0 else ''
            if a == s or len(pre) >= n + 16:
                break
        tail = pre[-n:] if n else ''
        if len(self._tails) > 4096:
            self._tails.clear()
        self._tails[key] = tail
        return tail

    def first_line_break_at_or_after(self, target: float) -> Optional[int]:
        i = bisect.bisect_left(self._lb_list, target)
        return self._lb_list[i] if i < len(self._lb_list) else None

    def nearest_line_break(self, position: float) -> int:
        i = bisect.bisect_left(self._lb_list, position)
        cands = [self._lb_list[j] for j in (i - 1, i) if 0 <= j < len(self._lb_list)]
        return min(cands, key=lambda x: (abs(x - position), x))


def _line_break_table(tokenizer, ids: np.ndarray, byte_exact: bool) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """For the unique ids: whether each decodes (alone) to a string with a newline, and (byte-exact tokenizers)
    its byte length."""
    if byte_exact:
        pieces = [tokenizer.token_bytes(int(t)) for t in ids]
        # A lone b'\n' byte is never swallowed by the UTF-8 'replace' handler, so testing the bytes is the
        # same as testing decode([t]).
        return (np.array([b'\n' in p for p in pieces], dtype=bool),
                np.array([len(p) for p in pieces], dtype=np.int64))
    return np.array(['\n' in tokenizer.decode([int(t)]) for t in ids], dtype=bool), None


def read_book(path: str) -> bytes:
    """The book's UTF-8 bytes with line ends translated as the authors' text-mode read does (universal
    newlines: ``\r\n`` and a lone ``\r`` become ``\n``). Token offsets index these bytes."""
    with open(path, 'rb') as f:
        raw = f.read()
    if b'\r' in raw:
        raw = raw.replace(b'\r\n', b'\n').replace(b'\r', b'\n')
    return raw


def preprocess(path: str, tokenizer) -> Dict[str, np.ndarray]:
    raw = read_book(path)
    text = raw.decode('utf-8')  # no other normalisation (the tokenizer's own normaliser aside)
    tokens = np.asarray(tokenizer.encode(text), dtype=np.int64)
    if tokens.size == 0:
        raise NoLiMaError(f'{path}: the book is empty')
    uniq, inverse = np.unique(tokens, return_inverse=True)
    is_lb, nbytes = _line_break_table(tokenizer, uniq, tokenizer.byte_exact(text))
    line_breaks = np.flatnonzero(is_lb[inverse])
    if line_breaks.size == 0 or line_breaks[0] != 0:
        line_breaks = np.concatenate([[0], line_breaks])  # index 0 is always a line-break token
    out = {'tokens': tokens.astype(np.int32 if tokens.max() < 2 ** 31 else np.int64),
           'line_breaks': line_breaks.astype(np.int64)}
    if nbytes is not None:
        offsets = np.zeros(tokens.size + 1, dtype=np.int64)
        np.cumsum(nbytes[inverse], out=offsets[1:])
        if offsets[-1] == len(raw):  # byte-exact tokens are slices of the book; otherwise decode()
            out['offsets'] = offsets
    return out


_MEMO: Dict[Tuple[str, str], BookTokens] = {}


def book_cache_dir(digest: str, tokenizer) -> str:
    key = hashlib.sha256(f'{digest}|{tokenizer.fingerprint}|v{PREPROCESS_VERSION}'.encode()).hexdigest()
    return os.path.join(cache_root(), 'nolima_books', key)


def load_book(path: str, tokenizer) -> BookTokens:
    """The book tokenised by ``tokenizer``: from memory, else from the disk cache (an entry of the dataset
    cache's kind: checked, atomic), else built and cached."""
    digest = file_digest(path)
    memo_key = (digest, tokenizer.fingerprint)
    if memo_key in _MEMO:
        return _MEMO[memo_key]
    d = book_cache_dir(digest, tokenizer)
    arrays = None
    if os.path.isdir(d):
        try:
            meta = read_entry(d)
            arrays = {k: np.load(os.path.join(d, f'{k}.npy'), mmap_mode='r') for k in meta['arrays']}
            if int(arrays['tokens'].shape[0]) != meta['tokens']:
                raise EntryDamaged('token count mismatch')
        except (PermissionError, MemoryError, ImportError):  # this user or the machine, not the entry
            raise
        except Exception as e:  # noqa: BLE001 - damaged entry: rebuild
            drop_entry(d, f'{type(e).__name__}: {e}')
            arrays = None
    if arrays is None:
        arrays = preprocess(path, tokenizer)

        def fill(tmp: str) -> Dict:
            for k, v in arrays.items():
                np.save(os.path.join(tmp, f'{k}.npy'), v)
            return {'book': os.path.basename(path), 'sha256': digest, 'tokenizer': tokenizer.name,
                    'fingerprint': tokenizer.fingerprint, 'tokens': int(arrays['tokens'].shape[0]),
                    'line_breaks': int(arrays['line_breaks'].shape[0]), 'arrays': sorted(arrays)}
        try:
            write_entry(d, fill, f'the NoLiMa book cache entry for {path}')
        except CachePermissionError as e:  # the book is tokenised (in memory); only the cache is not written
            print(f'[opencompass_longctx] {e}', file=sys.stderr)
    raw = read_book(path) if 'offsets' in arrays else None
    book = BookTokens(path, tokenizer, arrays['tokens'], np.asarray(arrays['line_breaks']),
                      arrays.get('offsets'), raw, digest)
    _MEMO[memo_key] = book
    return book


@dataclass
class Placement:
    text: str
    start: int          # s: first book token of the window
    line_break: int     # p: the line-break token the needle follows
    needle_depth: int   # D = round(L*d): tokens between the window start and p
    length: int         # L

    @property
    def end(self) -> int:
        return self.start + self.length


def _too_short(book: BookTokens, L: int, need: int, what: str) -> HaystackTooShortError:
    return HaystackTooShortError(
        f'haystack too short for L={L}: {book.path} holds {len(book)} tokens ({book.tokenizer.name}), '
        f'{what} needs {need} ({need - len(book)} more). Use the longer haystack tier '
        "(haystack_tier='rand_shuffle_long', or 'auto' where the dataset has it) or a shorter tier.")


def _compose(book: BookTokens, needle: str, s: int, p: int, L: int) -> str:
    pre, post = book.window_parts(s, p, L)
    return pre + ' ' + needle + '\n' + post


def window(book: BookTokens, L: int, depth: float, shift: int = 0) -> Tuple[int, int, int]:
    """(s, p, D) of the standard placement, or HaystackTooShortError."""
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:
        raise NoLiMaError(f'haystack length must be a positive number of tokens, got {L!r}')
    if not 0.0 <= depth <= 1.0:
        raise NoLiMaError(f'depth must be in [0, 1], got {depth}')
    target = shift + depth * (L + 1)
    p = book.first_line_break_at_or_after(target)
    D = int(round(L * depth))
    if p is None:
        raise _too_short(book, L, int(np.ceil(target)) + 1,
                         f'depth {depth:.2f} (a line end at or after token {target:.1f})')
    s = p - D
    if s < 0 or s + L > len(book):
        raise _too_short(book, L, s + L, f'depth {depth:.2f} (window [{s}, {s + L}))')
    return s, p, D


def place(book: BookTokens, needle: str, L: int, depth: float, shift: int = 0) -> Placement:
    """The authors' standard placement (static_depth = -1)."""
    s, p, D = window(book, L, depth, shift)
    return Placement(_compose(book, needle, s, p, L), s, p, D, L)


def static_window(book: BookTokens, L: int, depth: float, static_depth: float) -> Tuple[int, int, int]:
    if not 0.0 <= static_depth <= 1.0:
        raise NoLiMaError(f'static_depth must be in [0, 1], got {static_depth}')
    if not 0.0 <= depth <= 1.0:
        raise NoLiMaError(f'depth must be in [0, 1], got {depth}')
    p = book.nearest_line_break(static_depth * len(book))
    D = int(round(L * depth))
    if p - L < 0 or p + L > len(book):  # the authors' check
        raise _too_short(book, L, max(p + L, 2 * L), f'static_depth {static_depth} (line end at token {p}, '
                         f'which needs {L} tokens on each side)')
    return p - D, p, D


def place_static(book: BookTokens, needle: str, L: int, depth: float, static_depth: float) -> Placement:
    """Static placement: the needle's line end is fixed at the line break nearest to static_depth*|book|."""
    s, p, D = static_window(book, L, depth, static_depth)
    return Placement(_compose(book, needle, s, p, L), s, p, D, L)


def draw_distractor_depth(rng: np.random.RandomState, depth: float, L: int) -> float:
    """The distractor's depth: one uniform draw over [0.2, d-0.2] U [d+0.2, 0.8] (made even for L < 500,
    where the value is then overridden, to keep the authors' RNG call order)."""
    left = max(0.0, (depth - 0.2) - 0.2)
    right = max(0.0, 0.8 - (depth + 0.2))
    u = rng.uniform(0.0, left + right)
    dd = 0.2 + u if u < left else depth + 0.2 + (u - left)
    if L < 500:
        dd = 0.7 if depth < 0.6 else 0.6 if depth > 0.75 else 0.5
    return float(dd)


@dataclass
class DistractorInsertion:
    text: str
    line_break: int     # the distractor's line-break token (in its own placement)
    anchored: bool      # True: the authors' anchor matched exactly once; False: the position fallback was used


def _newline_pos(book: BookTokens, pl: 'Placement', needle: str, q: int) -> Optional[int]:
    """Character index, in a placement's text, of the newline that line-break token q ends its line with."""
    if q < pl.line_break:
        i = book.decode(pl.start, q + 1).rfind('\n')
        return i if i >= 0 else None
    if q > pl.line_break:
        head = book.decode(pl.start, pl.line_break + 1)
        cut = head.rfind('\n')
        base = (cut if cut >= 0 else 0) + 1 + len(needle) + 1
        i = book.decode(pl.line_break + 1, q + 1).rfind('\n')
        return base + i if i >= 0 else None
    head = book.decode(pl.start, q + 1)  # q is the needle's own line end: its newline made way for the needle
    cut = head.rfind('\n')
    return cut if cut >= 0 else 0


def insert_distractor(book: BookTokens, needle_pl: 'Placement', needle: str, distractor: str,
                      distractor_depth: float, shift: int = 0) -> DistractorInsertion:
    """Insert the distractor into a needle placement the authors' way: place the distractor alone, take the
    49 characters before it (24 for L < 500) as an anchor, and insert ``" " + distractor + "\\n"`` right after
    the anchor's occurrence in the needle placement (1 character earlier for L < 500). The anchor sits at the
    end of the distractor's line, so this leaves a blank line after the distractor.

    Where the authors' code fails (the anchor occurs twice, or not at all because the distractor's line end
    lies outside the needle's window), the same insertion is made at the newline of the line-break token in
    the needle's window nearest to the distractor's (``anchored=False``).
    """
    L = needle_pl.length
    text = needle_pl.text
    s_d, p_d, _ = window(book, L, distractor_depth, shift)  # the distractor's own placement
    n = 24 if L < 500 else 49
    anchor = book.pre_tail(s_d, p_d, n)  # = its placement text's n characters before " " + distractor
    back = 1 if L < 500 else 0
    if anchor and text.count(anchor) == 1:
        pos = text.index(anchor) + len(anchor) - back
        return DistractorInsertion(text[:pos] + ' ' + distractor + '\n' + text[pos:], p_d, True)
    lb = book.line_breaks
    lo, hi = np.searchsorted(lb, needle_pl.start, 'right'), np.searchsorted(lb, needle_pl.end, 'left')
    cands = sorted({int(q) for q in lb[lo:hi]} | {needle_pl.line_break},
                   key=lambda q: (abs(q - p_d), q))
    for q in cands:
        nl = _newline_pos(book, needle_pl, needle, q)
        if nl is not None:
            pos = max(0, nl - back)
            return DistractorInsertion(text[:pos] + ' ' + distractor + '\n' + text[pos:], p_d, False)
    raise PlacementError(f'no line end in the needle\'s window (L={L}) to put the distractor at '
                         f'(depth {distractor_depth:.3f})')


def default_depth_intervals(L: int) -> int:
    """The authors' number of depths for a haystack of ``L`` tokens: 26 up to 32K, 11 above."""
    return 26 if L <= 32000 else 11


def depth_grid(n: int) -> np.ndarray:
    """The authors' depths: linspace(0, 1, n) (n = 26 up to 32K, 11 in the 64K/128K appendix)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise NoLiMaError(f'depth_intervals must be a positive integer, got {n!r}')
    return np.linspace(0.0, 1.0, n) if n > 1 else np.array([0.0])


def aligned_depths(n: int, L: int, aligned_tokens: int = 2000) -> np.ndarray:
    """"Last-2K aligned" depths d = 1 - k/L, k = linspace(0, min(aligned_tokens, L), n): the needle sits k
    tokens before the window end, so with a static placement the text after it is the same at every L."""
    k = np.linspace(0.0, float(min(aligned_tokens, L)), n) if n > 1 else np.array([0.0])
    return 1.0 - k / L
