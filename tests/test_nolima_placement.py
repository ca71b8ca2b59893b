"""NoLiMa placement (the authors' algorithm, docs/benchmarks.md#nolima): the authors' algorithm on books the project writes, with a tiktoken and a
Hugging Face tokenizer. Every expectation is computed here from the tokenizer itself (per-token decode and
the tokenizer's own decode of slices), not from the implementation's cached arrays."""
import math

import numpy as np
import pytest

from opencompass_longctx.nolima import haystack as hs
from opencompass_longctx.demo import nolima_data
from opencompass_longctx.tokenizer.counting import get_tokenizer
NEEDLE = 'Actually, Yara has a flat right beside the Atomium.'
DEPTHS = np.linspace(0, 1, 26)
UNICODE_LINES = [
    'Café “déjà vu” — naïve façade, crème brûlée and smørrebrød were served at noon in the hall. ' * 12,
    'Ünïcödé lines: 東京の古い家, ünd 🚲 bicycles 🚲 leaned on the fence while the rain fell. ' * 12,
    'The last paragraph is plain ASCII again, with a few words that end the story quietly. ' * 14,
]


@pytest.fixture(scope='module')
def books_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp('nolima_books')
    nolima_data.write(str(root), book_tokens=5000, variants=['main'])
    # a book with multi-byte characters (slices then cut UTF-8 sequences inside tokens)
    text = ''.join(UNICODE_LINES[i % 3].strip() + ' \n' for i in range(30))
    (root / 'unicode_book.txt').write_text(text, encoding='utf-8')
    return root


@pytest.fixture(scope='module')
def hf_tokenizer(tmp_path_factory):
    from opencompass_longctx.demo.tiny_model import build
    return build(str(tmp_path_factory.mktemp('hf') / 'tiny'))


def _tokenizers(hf_dir):
    """tiktoken; a Hugging Face tokenizer counted by its exact tiktoken twin; the same one without the twin."""
    return {'tiktoken': get_tokenizer(None), 'twin': get_tokenizer(hf_dir), 'hf': get_tokenizer(hf_dir, twin=False)}


def _books(books_dir):
    return [str(books_dir / 'haystack' / 'rand_shuffle' / 'rand_book_1.txt'), str(books_dir / 'unicode_book.txt')]


def independent_line_breaks(tok, tokens):
    lb = [i for i, t in enumerate(tokens) if '\n' in tok.decode([int(t)])]
    return sorted(set([0] + lb))


@pytest.mark.parametrize('kind', ['tiktoken', 'twin', 'hf'])
def test_line_break_tokens_are_the_tokens_that_decode_to_a_newline(books_dir, hf_tokenizer, kind):
    tok = _tokenizers(hf_tokenizer)[kind]
    hs._MEMO.clear()  # the twin and HF share a fingerprint (same ids): build the books with this engine
    for path in _books(books_dir):
        book = hs.load_book(path, tok)
        assert (book.offsets is None) == (kind == 'hf')  # HF decodes token slices; the others slice bytes
        expected = tok.encode(open(path, encoding='utf-8').read())
        assert book.tokens.tolist() == expected
        assert book.line_breaks.tolist() == independent_line_breaks(tok, expected)
        # the byte-offset slicing (tiktoken) / the generic path (HF) decode exactly like the tokenizer
        rng = np.random.RandomState(0)
        for _ in range(40):
            a, b = sorted(rng.randint(0, len(book), size=2))
            assert book.decode(a, b) == tok.decode(expected[a:b])
        # the distractor anchor (the last characters before a line end) read from a suffix of the slice only
        lbs = book.line_breaks.tolist()
        for p in lbs[1::3]:
            for s in (0, max(0, p - 300), max(0, p - 40)):
                pre = tok.decode(expected[s:p + 1])
                pre = pre[:pre.rfind('\n')] if '\n' in pre else ''
                assert book.pre_tail(s, p, 49) == pre[-49:] and book.pre_tail(s, p, 24) == pre[-24:]
    assert tok.engine == {'twin': 'tiktoken-twin'}.get(kind, kind)


@pytest.mark.parametrize('kind', ['tiktoken', 'twin', 'hf'])
@pytest.mark.parametrize('L', [250, 500, 1000, 2000])
def test_standard_placement_follows_the_authors_algorithm(books_dir, hf_tokenizer, kind, L):
    tok = _tokenizers(hf_tokenizer)[kind]
    for path in _books(books_dir):
        tokens = tok.encode(open(path, encoding='utf-8').read())
        lbs = independent_line_breaks(tok, tokens)
        book = hs.load_book(path, tok)
        for d in DEPTHS:
            pl = hs.place(book, NEEDLE, L, float(d))
            s, p = pl.start, pl.line_break
            # p: the smallest line-break token at or after d*(L+1); the needle exactly round(L*d) tokens in
            assert p in lbs and p >= d * (L + 1)
            assert not [q for q in lbs if d * (L + 1) <= q < p]
            assert p - s == round(L * d) == pl.needle_depth
            # the window lies within the book and is L tokens long
            assert 0 <= s and s + L <= len(tokens) and pl.end - pl.start == L
            pre = tok.decode(tokens[s:p + 1])
            pre = pre[:pre.rfind('\n')] if '\n' in pre else ''
            post = tok.decode(tokens[p + 1:s + L])
            assert pl.text == pre + ' ' + NEEDLE + '\n' + post
            assert pl.text.count(NEEDLE) == 1
            if tok.decode([tokens[p]]).endswith('\n') and p > 0:
                # taking the needle out gives back the book's L-token window exactly (at d = 1 the line-break
                # token p = s + L itself, which *pre* includes, ends the text)
                assert pl.text.replace(' ' + NEEDLE + '\n', '\n', 1) == tok.decode(tokens[s:max(s + L, p + 1)])
            if 0 < d and pre:
                assert pl.text[len(pre) - 1:len(pre) + 1 + len(NEEDLE)] == '  ' + NEEDLE  # lines end with " \n"


@pytest.mark.parametrize('kind', ['tiktoken', 'twin', 'hf'])
def test_text_ends_as_the_spec_says_at_depth_0_and_1(books_dir, hf_tokenizer, kind):
    tok = _tokenizers(hf_tokenizer)[kind]
    for path in _books(books_dir):
        tokens = tok.encode(open(path, encoding='utf-8').read())
        book = hs.load_book(path, tok)
        for L in (250, 1000):
            first = hs.place(book, NEEDLE, L, 0.0)
            assert first.start == 0 and first.line_break == 0
            assert first.text == ' ' + NEEDLE + '\n' + tok.decode(tokens[1:L])  # book token 0 is dropped
            last = hs.place(book, NEEDLE, L, 1.0)
            assert last.text.endswith(' ' + NEEDLE + '\n')  # post is empty
            assert last.needle_depth == L and last.end == last.line_break


def test_windows_are_book_prefixes_so_longer_lengths_contain_shorter_ones(books_dir):
    tok = get_tokenizer(None)
    book = hs.load_book(_books(books_dir)[0], tok)
    longest_line = int(np.max(np.diff(book.line_breaks)))
    for L in (250, 500, 1000, 2000):
        for d in DEPTHS:
            assert hs.place(book, NEEDLE, L, float(d)).start <= longest_line
    short, long = hs.place(book, NEEDLE, 500, 0.0), hs.place(book, NEEDLE, 1000, 0.0)
    assert long.text.startswith(short.text)


def test_a_book_too_short_for_the_tier_says_by_how_much(books_dir):
    tok = get_tokenizer(None)
    book = hs.load_book(_books(books_dir)[0], tok)
    n = len(book)
    hs.place(book, NEEDLE, n // 2, 1.0)  # fits
    with pytest.raises(hs.HaystackTooShortError) as e:
        hs.place(book, NEEDLE, n, 1.0)
    msg = str(e.value)
    assert f'L={n}' in msg and f'holds {n} tokens' in msg and 'more)' in msg and 'rand_shuffle_long' in msg
    with pytest.raises(hs.HaystackTooShortError):
        hs.place(book, NEEDLE, n - 10, 0.5)


def test_static_placement_keeps_the_text_after_the_needle_across_lengths(books_dir):
    """The "last-2K aligned" analysis: with a fixed line end, depth 1 - k/L leaves the same k tokens after the
    needle at every L, while the text before it grows."""
    tok = get_tokenizer(None)
    book = hs.load_book(_books(books_dir)[0], tok)
    n = len(book)
    p = book.nearest_line_break(0.5 * n)
    for k_index in range(0, 26, 5):
        tails, heads = [], []
        for L in (1000, 2000):
            d = float(hs.aligned_depths(26, L, 800)[k_index])
            pl = hs.place_static(book, NEEDLE, L, d, 0.5)
            assert pl.line_break == p and pl.start == p - round(L * d) and pl.end <= n
            head, tail = pl.text.split(' ' + NEEDLE + '\n')
            tails.append(tail)
            heads.append(head)
        assert tails[0] == tails[1]
        assert heads[1].endswith(heads[0]) and len(heads[1]) > len(heads[0])
    with pytest.raises(hs.HaystackTooShortError):
        hs.place_static(book, NEEDLE, n // 2 + 50, 0.5, 0.5)


def test_distractor_depth_draws_respect_the_free_zone_and_the_short_length_rule():
    rng = np.random.RandomState(7)
    for d in DEPTHS:
        for _ in range(200):
            dd = hs.draw_distractor_depth(rng, float(d), 1000)
            assert 0.2 - 1e-12 <= dd <= 0.8 + 1e-12
            assert dd <= d - 0.2 + 1e-12 or dd >= d + 0.2 - 1e-12
    for d, want in ((0.0, 0.7), (0.56, 0.7), (0.6, 0.5), (0.72, 0.5), (0.76, 0.6), (1.0, 0.6)):
        r = np.random.RandomState(1)
        assert hs.draw_distractor_depth(r, d, 250) == want
        # the uniform draw is made anyway (the authors' RNG call order): the generator moved on
        assert r.uniform() != np.random.RandomState(1).uniform()


def test_distractor_is_inserted_after_its_anchor_leaving_a_blank_line(books_dir):
    tok = get_tokenizer(None)
    book = hs.load_book(_books(books_dir)[0], tok)
    distractor = 'A faded postcard of Brussels was pinned above the stove in the hall.'
    anchored = 0
    for d in DEPTHS:
        pl = hs.place(book, NEEDLE, 2000, float(d))
        for dd in (0.25, 0.5, 0.75):
            if abs(dd - d) < 0.2:
                continue
            ins = hs.insert_distractor(book, pl, NEEDLE, distractor, dd)
            assert ins.text.count(distractor) == 1 and ins.text.count(NEEDLE) == 1
            assert ins.text.replace(' ' + distractor + '\n', '', 1) == pl.text
            alone = hs.place(book, distractor, 2000, dd)
            if ins.anchored:
                anchored += 1
                anchor = alone.text[:alone.text.index(' ' + distractor)][-49:]
                i = ins.text.index(' ' + distractor)
                assert ins.text[i - 49:i] == anchor
                assert ins.text[i:].startswith(' ' + distractor + '\n\n')  # the line's own newline follows
    assert anchored > 0


def test_each_book_is_tokenised_once_per_tokenizer_and_reloaded_from_disk(books_dir, monkeypatch):
    tok = get_tokenizer(None)
    path = _books(books_dir)[0]
    hs._MEMO.clear()
    calls = []
    real = hs.preprocess
    monkeypatch.setattr(hs, 'preprocess', lambda p, t: calls.append(p) or real(p, t))
    first = hs.load_book(path, tok)
    assert hs.load_book(path, tok) is first and len(calls) == 1
    hs._MEMO.clear()  # a new process: the arrays come from the disk cache, no tokenisation
    again = hs.load_book(path, tok)
    assert len(calls) == 1 and again is not first
    assert again.tokens.tolist() == first.tokens.tolist() and again.line_breaks.tolist() == first.line_breaks.tolist()
    assert hs.place(again, NEEDLE, 1000, 0.4).text == hs.place(first, NEEDLE, 1000, 0.4).text


@pytest.mark.parametrize('kind', ['tiktoken', 'twin', 'hf'])
def test_crlf_books_are_read_as_the_authors_text_mode_read_them(books_dir, hf_tokenizer, kind, tmp_path):
    """The authors open books in text mode (universal newlines): \\r\\n and a lone \\r are \\n. A book with
    such line ends gives the tokens, line breaks and samples of the same book with \\n, and no \\r anywhere;
    byte offsets index the translated bytes."""
    tok = _tokenizers(hf_tokenizer)[kind]
    lf = _books(books_dir)[1]  # the multi-byte one
    text = open(lf, encoding='utf-8').read()
    lines = text.split('\n')
    odd = tmp_path / 'crlf_book.txt'
    odd.write_bytes(''.join(line + ('\r' if i % 5 == 4 else '\r\n') for i, line in enumerate(lines[:-1]))
                    .encode('utf-8') + lines[-1].encode('utf-8'))
    assert b'\r\n' in odd.read_bytes() and open(odd, encoding='utf-8').read() == text  # Python's text mode
    hs._MEMO.clear()
    a, b = hs.load_book(lf, tok), hs.load_book(str(odd), tok)
    assert b.tokens.tolist() == a.tokens.tolist() == tok.encode(text)
    assert b.line_breaks.tolist() == a.line_breaks.tolist()
    assert (b.offsets is None) == (kind == 'hf')
    rng = np.random.RandomState(1)
    for _ in range(20):
        x, y = sorted(rng.randint(0, len(b), size=2))
        assert b.decode(x, y) == tok.decode(b.tokens[x:y].tolist())
    for d in DEPTHS[::5]:
        pl = hs.place(b, NEEDLE, 250, float(d))
        assert pl.text == hs.place(a, NEEDLE, 250, float(d)).text and '\r' not in pl.text
    hs._MEMO.clear()  # and from the disk cache
    again = hs.load_book(str(odd), tok)
    assert again.tokens.tolist() == a.tokens.tolist() and hs.place(again, NEEDLE, 250, 0.5).text == \
        hs.place(a, NEEDLE, 250, 0.5).text


def test_depth_grids():
    assert np.allclose(hs.depth_grid(26), np.arange(26) * 0.04)
    assert np.allclose(hs.depth_grid(11), np.arange(11) * 0.1)
    d = hs.aligned_depths(26, 8000)
    assert d[0] == 1.0 and math.isclose(d[-1], 1 - 2000 / 8000) and len(d) == 26
    assert hs.aligned_depths(26, 500)[-1] == 0.0  # k is capped at L
