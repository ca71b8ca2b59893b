"""One way to count, encode and decode tokens.

A tokenizer is named by a string:

* ``None`` / ``'default'``: the offline default, ``tiktoken:cl100k_base`` (the GPT-4 vocabulary).
* ``'tiktoken:<encoding>'``: ``cl100k_base``, ``o200k_base``, ``p50k_base`` or ``gpt2`` (= ``r50k_base``,
  the GPT-2 vocabulary BABILong's lengths are counted in). The vocabulary files are read from the
  ``litellm`` package, which ships them (so no network is needed); ``$TIKTOKEN_CACHE_DIR`` is also searched.
* a path to a ``.tiktoken`` file (cl100k-style pattern).
* a local Hugging Face tokenizer directory, or a hub id (resolved from the local HF cache; downloaded only
  when the hub is reachable and ``HF_HUB_OFFLINE`` is not set).

Every tokenizer has a stable :attr:`fingerprint` (sha256 over its vocabulary files and kind) used in cache keys.
"""
import base64
import functools
import hashlib
import importlib.util
import os
from typing import List, Optional, Sequence

from .util import sha256_file

DEFAULT_TOKENIZER = 'tiktoken:cl100k_base'
GPT2_TOKENIZER = 'tiktoken:gpt2'

# sha1(url) file names used by tiktoken's cache (and by litellm's bundled copy), and the sha256 of the
# file contents that tiktoken itself expects for them.
_TIKTOKEN_FILES = {
    'p50k_base': ('ec7223a39ce59f226a68acc30dc1af2788490e15',
                  '94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069'),
    'cl100k_base': ('9b5ad71b2ce5302211f9c61530b329a4922fc6a4',
                    '223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7'),
    'o200k_base': ('fb374d419588a4632f3f557e76b4b70aebbca790',
                   '446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d'),
}
ENDOFTEXT = '<|endoftext|>'


class TokenizerError(RuntimeError):
    """The named tokenizer cannot be found or loaded."""


def _tiktoken_search_dirs() -> List[str]:
    dirs = []
    if os.environ.get('TIKTOKEN_CACHE_DIR'):
        dirs.append(os.environ['TIKTOKEN_CACHE_DIR'])
    spec = importlib.util.find_spec('litellm')
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            dirs.append(os.path.join(loc, 'litellm_core_utils', 'tokenizers'))
    return dirs


def _find_tiktoken_file(base: str) -> str:
    fname, _ = _TIKTOKEN_FILES[base]
    for d in _tiktoken_search_dirs():
        p = os.path.join(d, fname)
        if os.path.isfile(p):
            return p
    raise TokenizerError(
        f'the {base} vocabulary file ({fname}) was not found in {_tiktoken_search_dirs() or "any directory"}. '
        "Install the package's dependencies (`pip install -e .` installs `litellm`, which ships it) or put "
        'the file in $TIKTOKEN_CACHE_DIR.')


def _read_ranks(path: str, expected_sha256: Optional[str]) -> dict:
    with open(path, 'rb') as f:
        data = f.read()
    if expected_sha256 and hashlib.sha256(data).hexdigest() != expected_sha256:
        raise TokenizerError(f'vocabulary file {path} is corrupt (sha256 mismatch)')
    ranks = {}
    for line in data.splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    return ranks


class Tokenizer:
    """Uniform count/encode/decode over tiktoken and Hugging Face tokenizers."""

    def __init__(self, name: str, kind: str, impl, fingerprint: str):
        self.name, self.kind, self._impl, self.fingerprint = name, kind, impl, fingerprint

    def encode(self, text: str) -> List[int]:
        if self.kind == 'tiktoken':
            return self._impl.encode_ordinary(text)
        return self._impl(text, add_special_tokens=False)['input_ids']

    def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
        if self.kind == 'tiktoken':  # a plain loop: tiktoken's threaded batch costs more than it saves here
            return [self._impl.encode_ordinary(t) for t in texts]
        return self._impl(list(texts), add_special_tokens=False)['input_ids']

    def encode_split(self, text: str, byte_starts):
        """Encode ``text`` once and split the ids at the given UTF-8 byte offsets (sorted, the first 0):
        returns ``(ids, bounds)`` with ``len(byte_starts) + 1`` bounds.

        tiktoken: a token that straddles an offset goes to the piece it starts in, so ``ids`` is exactly the
        encoding of ``text``. Hugging Face tokenizers encode the pieces as a batch."""
        import numpy as np
        byte_starts = np.asarray(byte_starts, dtype=np.int64)
        if self.kind != 'tiktoken':
            raw = text.encode('utf-8')
            ends = list(byte_starts[1:]) + [len(raw)]
            pieces = [raw[a:b].decode('utf-8', errors='replace') for a, b in zip(byte_starts, ends)]
            lists = self.encode_batch(pieces) if pieces else []
            bounds = np.cumsum([0] + [len(x) for x in lists])
            ids = np.fromiter((t for x in lists for t in x), dtype=np.int64, count=int(bounds[-1]))
            return ids, bounds
        ids = self._impl.encode_to_numpy(text).astype(np.int64)
        tok_bytes = self._token_bytes()[ids]
        tok_starts = np.cumsum(tok_bytes) - tok_bytes
        bounds = np.concatenate((np.searchsorted(tok_starts, byte_starts, side='left'), [len(ids)]))
        return ids, bounds.astype(np.int64)

    def _token_bytes(self):
        """Byte length of every token id (tiktoken), built once per tokenizer."""
        if getattr(self, '_tb', None) is None:
            import numpy as np
            enc = self._impl
            lengths = np.zeros(enc.max_token_value + 1, dtype=np.int64)
            for i in range(enc.max_token_value + 1):
                try:
                    lengths[i] = len(enc.decode_single_token_bytes(i))
                except KeyError:  # unused id (e.g. cl100k_base has gaps before its special tokens)
                    pass
            self._tb = lengths
        return self._tb

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        if self.kind == 'tiktoken':
            return self._impl.decode(list(ids))
        return self._impl.decode(list(ids), skip_special_tokens=False)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        if self.kind == 'tiktoken':
            return self._impl.decode_bytes(list(ids))
        return self.decode(ids).encode('utf-8')

    def __repr__(self):
        return f'Tokenizer({self.name!r}, fingerprint={self.fingerprint[:12]})'


def _load_tiktoken(name: str) -> Tokenizer:
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    enc_name = name.split(':', 1)[1]
    if enc_name in ('gpt2', 'r50k_base'):
        # GPT-2 (= r50k_base) is p50k_base without the 24 whitespace-run tokens appended after rank 50255.
        path = _find_tiktoken_file('p50k_base')
        ranks = {t: r for t, r in _read_ranks(path, _TIKTOKEN_FILES['p50k_base'][1]).items() if r < 50256}
        enc = tiktoken.Encoding(name='longctx_gpt2', pat_str=openai_public.r50k_pat_str, mergeable_ranks=ranks,
                                special_tokens={ENDOFTEXT: 50256})
        enc_name = 'gpt2'
    elif enc_name in _TIKTOKEN_FILES:
        path = _find_tiktoken_file(enc_name)
        # The directory is laid out as a tiktoken cache: let tiktoken itself build the encoding from it
        # (it checks the file's sha256).
        old = os.environ.get('TIKTOKEN_CACHE_DIR')
        os.environ['TIKTOKEN_CACHE_DIR'] = os.path.dirname(path)
        try:
            enc = tiktoken.get_encoding(enc_name)
        finally:
            if old is None:
                os.environ.pop('TIKTOKEN_CACHE_DIR')
            else:
                os.environ['TIKTOKEN_CACHE_DIR'] = old
    else:
        raise TokenizerError(f'unknown tiktoken encoding {enc_name!r}; known: gpt2, r50k_base, '
                             f'{", ".join(_TIKTOKEN_FILES)}')
    fp = hashlib.sha256(f'tiktoken:{enc_name}:{sha256_file(path)}'.encode()).hexdigest()
    return Tokenizer(f'tiktoken:{enc_name}', 'tiktoken', enc, fp)


def _load_tiktoken_file(path: str) -> Tokenizer:
    import tiktoken
    ranks = _read_ranks(path, None)
    pat_str = get_tokenizer('tiktoken:cl100k_base')._impl._pat_str  # cl100k-style split pattern
    enc = tiktoken.Encoding(name='longctx_file', pat_str=pat_str, mergeable_ranks=ranks,
                            special_tokens={ENDOFTEXT: len(ranks)})
    return Tokenizer(os.path.abspath(path), 'tiktoken', enc,
                     hashlib.sha256(f'tiktoken-file:{sha256_file(path)}'.encode()).hexdigest())


_HF_FILES = ('tokenizer.json', 'tokenizer.model', 'vocab.json', 'merges.txt', 'tokenizer_config.json',
             'special_tokens_map.json', 'added_tokens.json', 'vocab.txt', 'tiktoken.model')


def _load_hf(name: str) -> Tokenizer:
    from transformers import AutoTokenizer
    try:
        tok = AutoTokenizer.from_pretrained(name, trust_remote_code=True)
    except Exception as e:  # noqa: BLE001 - re-raised with a clear message
        where = 'directory' if os.path.isdir(name) else 'Hugging Face id'
        raise TokenizerError(
            f'cannot load tokenizer {name!r} ({where}): {type(e).__name__}: {e}. Give a local tokenizer '
            f"directory, a 'tiktoken:<encoding>' name, or None for the offline default "
            f'({DEFAULT_TOKENIZER}).') from e
    h = hashlib.sha256(b'hf:')
    src = name if os.path.isdir(name) else os.path.dirname(getattr(tok, 'vocab_file', '') or '')
    files = [os.path.join(src, f) for f in _HF_FILES if src and os.path.isfile(os.path.join(src, f))]
    if files:
        for f in files:
            h.update(os.path.basename(f).encode() + sha256_file(f).encode())
    else:  # hub tokenizer without files we can see: fingerprint its vocabulary
        h.update(repr(sorted(tok.get_vocab().items())).encode())
    name = os.path.abspath(name) if os.path.isdir(name) else name
    return Tokenizer(name, 'hf', tok, h.hexdigest())


@functools.lru_cache(maxsize=16)
def get_tokenizer(name: Optional[str] = None) -> Tokenizer:
    """Load a tokenizer by name (see module docstring). Cached per process."""
    if name in (None, '', 'default'):
        name = DEFAULT_TOKENIZER
    if not isinstance(name, str):
        raise TokenizerError(f'tokenizer must be a string, got {name!r}')
    if name.startswith('tiktoken:'):
        return _load_tiktoken(name)
    if name.endswith('.tiktoken') and os.path.isfile(name):
        return _load_tiktoken_file(name)
    if (os.path.sep in name or name.startswith('.')) and not os.path.exists(name):
        raise TokenizerError(f'tokenizer path {name!r} does not exist')
    return _load_hf(name)
