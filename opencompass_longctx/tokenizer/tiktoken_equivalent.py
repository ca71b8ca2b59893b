"""Exact fast twins: a tiktoken encoding that gives the same ids as a Hugging Face byte-level BPE tokenizer.

:func:`twin_encoding` reads a fast tokenizer's ``tokenizer.json`` (vocabulary and merge order, split regexes,
normaliser, added tokens) and builds the tiktoken encoding, or raises :class:`TwinUnsupported` for a form
tiktoken cannot express; :func:`check_on_probe` compares it with the Hugging Face tokenizer on a probe text.
What changes here: the tokenizer forms a twin can reproduce. :mod:`.counting` decides when a twin is
used (and says so); this module knows nothing of names, caches or fingerprints.
"""
import json
import re
from typing import Dict, List, NamedTuple, Optional, Tuple
from opencompass_longctx.errors import LongCtxError

BYTELEVEL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class TwinUnsupported(LongCtxError, ValueError):
    """The Hugging Face tokenizer has a form a tiktoken twin cannot reproduce."""


def bytes_decoder() -> Dict[str, int]:
    """Hugging Face ByteLevel's character -> byte table (GPT-2's bytes_to_unicode, inverted)."""
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def _split_patterns(pre) -> List[str]:
    """The regexes of a pre-tokenizer that tiktoken can apply: Split(Isolated) and ByteLevel steps."""
    if pre is None:
        raise TwinUnsupported('no pre-tokenizer (not byte-level)')
    steps = pre['pretokenizers'] if pre.get('type') == 'Sequence' else [pre]
    pats, byte_level = [], False
    for st in steps:
        t = st.get('type')
        if t == 'Split' and not byte_level:
            if st.get('behavior') != 'Isolated' or st.get('invert'):
                raise TwinUnsupported(f"Split with behavior {st.get('behavior')} invert={st.get('invert')}")
            pat = st.get('pattern', {})
            pats.append(pat['Regex'] if 'Regex' in pat else re.escape(pat.get('String', '')))
        elif t == 'ByteLevel' and not byte_level:
            if st.get('add_prefix_space'):
                raise TwinUnsupported('ByteLevel with add_prefix_space')
            if st.get('use_regex', True):
                pats.append(BYTELEVEL_PATTERN)
            byte_level = True
        else:
            raise TwinUnsupported(f'pre-tokenizer step {t}')
    if not byte_level or not pats:
        raise TwinUnsupported('no ByteLevel pre-tokenizer with a split pattern')
    if len(pats) > 1:
        raise TwinUnsupported(f'{len(pats)} split patterns in a row')
    return pats


def _normalizer_is_nfc(norm) -> bool:
    if norm is None:
        return False
    steps = norm['normalizers'] if norm.get('type') == 'Sequence' else [norm]
    if [s.get('type') for s in steps] == ['NFC']:
        return True
    if not steps:
        return False
    raise TwinUnsupported(f"normaliser {'+'.join(str(s.get('type')) for s in steps)}")


def twin_parts(spec: Dict):
    """From a tokenizer.json dict: (split pattern, mergeable ranks, rank->id list or None, NFC?, added tokens).

    Ranks follow the merge order (a token's rank is the index of the first merge that makes it; single bytes
    come first), so tiktoken merges in Hugging Face's order. When the vocabulary's ids already follow that
    order the ids are the ranks."""
    model = spec.get('model') or {}
    if model.get('type') != 'BPE':
        raise TwinUnsupported(f"model {model.get('type')}")
    for k in ('continuing_subword_prefix', 'end_of_word_suffix'):
        if model.get(k):
            raise TwinUnsupported(f'BPE {k}')
    if model.get('dropout') or model.get('byte_fallback'):
        raise TwinUnsupported('BPE dropout or byte_fallback')
    nfc = _normalizer_is_nfc(spec.get('normalizer'))
    pattern = _split_patterns(spec.get('pre_tokenizer'))[0]
    if (spec.get('decoder') or {}).get('type') != 'ByteLevel':
        raise TwinUnsupported(f"decoder {(spec.get('decoder') or {}).get('type')}")
    added = {}
    for a in spec.get('added_tokens') or []:
        if a.get('lstrip') or a.get('rstrip') or a.get('single_word'):
            raise TwinUnsupported(f"added token {a['content']!r} with strip/single-word rules")
        if a.get('normalized') and nfc:
            raise TwinUnsupported(f"normalised added token {a['content']!r}")
        added[a['content']] = int(a['id'])
    table = bytes_decoder()
    to_latin1 = {ord(c): b for c, b in table.items()}
    vocab = model['vocab']
    added_ids = set(added.values())

    def to_bytes(s: str) -> bytes:
        try:
            return s.translate(to_latin1).encode('latin-1')
        except UnicodeEncodeError as e:
            raise TwinUnsupported(f'vocabulary entry {s!r} is not byte-level') from e

    order: List[Tuple[bytes, int]] = []
    seen = set()
    for c, b in table.items():
        if c not in vocab:
            raise TwinUnsupported(f'byte {b} is not in the vocabulary')
        order.append((bytes([b]), vocab[c]))
        seen.add(c)
    for m in model.get('merges') or []:
        a, b = m.split(' ', 1) if isinstance(m, str) else m
        t = a + b
        if t in seen:
            continue
        if t not in vocab:
            raise TwinUnsupported(f'merge result {t!r} is not in the vocabulary')
        seen.add(t)
        order.append((to_bytes(t), vocab[t]))
    if model.get('ignore_merges'):  # whole-word look-up: tiktoken does it too; unreachable words rank last
        order += [(to_bytes(t), i) for t, i in sorted(vocab.items(), key=lambda x: x[1])
                  if t not in seen and i not in added_ids]
    ids = [i for _, i in order]
    merged_ids = ids[256:]
    if all(x < y for x, y in zip(merged_ids, merged_ids[1:])) and len(set(ids)) == len(ids):
        return pattern, {b: i for b, i in order}, None, nfc, added
    return pattern, {b: r for r, (b, _) in enumerate(order)}, ids, nfc, added


# A probe that the twin must encode exactly as the Hugging Face tokenizer does: prose, code, several scripts,
# digits, whitespace runs, line ends, combining characters, added-token text; plus vocabulary samples.
PROBE_TEXT = (
    "The quick brown fox jumps over the lazy dog. It's 3:45pm; we'll see 12,345.678 items (x2) -- "
    "DON'T PANIC! She'S here, they'RE there, I'M done, YOU'LL see, he'D go, we'VE won.\n\n"
    "def f(x):\n    return x**2  # comment\n\tindented\t\ttabs   \n   \n\n\n  trailing   \r\n"
    "Windows\r\nline\rends\r\n\r\n"
    "中文测试：我爱北京天安门，今天天气很好。日本語のテキスト、カタカナとひらがな。한국어 문장입니다. "
    "Привет, мир! Ελληνικά κείμενα. مرحبا بالعالم. नमस्ते दुनिया। שלום עולם. ภาษาไทย "
    "Emoji 😀👍🏽👨‍👩‍👧 ✓ → ∑ ∞ ≠ ½ ² ³ ① Ⅻ ٣ ߀ ０１２３ 1234567890 000 007 3.14159\n"
    "café cafe\u0301 Å A\u030a ﬁ ｶ ⅷ e\u0301\u0323 \u00a0nbsp\u2003em\u3000ideo\u200bzwsp "
    "\u2028 \u0085 x\u000bv\u000cf\n"
    "<|endoftext|>between<|im_start|>user\nhi<|im_end|>\n<tool_call>{\"a\": 1}</tool_call>"
    "$$ \\frac{a}{b} $$ http://example.com/a?b=c&d=e #tag @user ... !!! ??? ---- ==== **** ____ ''' \"\"\" "
    "   leading spaces and trailing spaces   ")


def _probe(ranks: Dict[bytes, int]) -> str:
    """PROBE_TEXT plus a fixed sample of up to 3,000 vocabulary entries, glued and space-separated."""
    tokens = sorted(ranks, key=ranks.__getitem__)
    sample = tokens[::max(1, len(tokens) // 3000)][:3000]
    glued = b''.join(sample).decode('utf-8', errors='replace')
    spaced = b' '.join(sample).decode('utf-8', errors='replace')
    return PROBE_TEXT + glued + '\n' + spaced + '\n' + PROBE_TEXT


class TwinEncoding(NamedTuple):
    enc: object                  # the tiktoken.Encoding
    nfc: bool                    # apply NFC before encoding
    added: Dict[str, int]        # added-token text -> id
    rank_to_id: Optional[object]  # numpy array rank -> id, or None when the ids are the ranks
    decode_is_bytes: bool        # decoding is the plain concatenation of the tokens' bytes
    probe: str                   # the text the twin must encode exactly as the Hugging Face tokenizer


def twin_encoding(hf_tok, fingerprint: str) -> TwinEncoding:
    """The tiktoken twin's parts for a Hugging Face tokenizer; :class:`TwinUnsupported` when there is none."""
    if not getattr(hf_tok, 'is_fast', False):
        raise TwinUnsupported('not a fast (tokenizers) tokenizer')
    pattern, ranks, ids, nfc, added = twin_parts(json.loads(hf_tok.backend_tokenizer.to_str()))
    import numpy as np
    import tiktoken
    try:
        enc = tiktoken.Encoding(name=f'longctx_twin_{fingerprint[:12]}', pat_str=pattern, mergeable_ranks=ranks,
                                special_tokens={})
    except ValueError as e:  # e.g. a split regex tiktoken's regex engine does not accept
        raise TwinUnsupported(f'tiktoken refuses it: {e}') from e
    return TwinEncoding(enc, nfc, added, None if ids is None else np.asarray(ids, dtype=np.int64),
                        not getattr(hf_tok, 'clean_up_tokenization_spaces', False) and all(t.isascii() for t in added),
                        _probe(ranks))


def check_on_probe(encode, hf_tok, probe: str) -> None:
    """:class:`TwinUnsupported` unless ``encode`` gives the Hugging Face tokenizer's ids on ``probe``."""
    want = hf_tok(probe, add_special_tokens=False)['input_ids']
    got = encode(probe)
    if got != want:
        k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise TwinUnsupported(f'it differs from the Hugging Face tokenizer on the probe text at token {k} '
                              f'({hf_tok.decode(want[max(0, k - 2):k + 3])!r})')
