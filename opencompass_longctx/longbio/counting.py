"""Token counts of LongBioBench prompt pieces, without re-tokenizing a growing context.

:class:`Counter` counts a bio as the sum of memoised word counts (' ' + word), exact for regex-pretokenized
BPE tokenizers; a per-tokenizer self-test (:func:`_word_additive`) decides whether that holds, and a tokenizer
that fails it has each bio encoded whole. What changes here: how pieces are counted for a tokenizer (see the
"Length" paragraph of :mod:`.generator`), not what the samples hold.
"""
import random
from typing import Dict

from opencompass_longctx.longbio.people import PersonStream, bio_text, cite_body, render_sentences, template_set
from opencompass_longctx.longbio.pools import ATTRIBUTES, load_pools
class Counter:
    """Token counts of prompt pieces.

    ``__call__`` encodes a piece (memoised per text). ``bio`` counts a bio piece (' ' + bio without its
    trailing space) as the sum of the memoised counts of its words (' ' + word): exact for tokenizers whose
    pre-tokenizer never joins a space to the preceding word (regex BPE: tiktoken, GPT-2/Qwen/Llama-3-style
    byte-level BPE). ``word_additive`` is established per tokenizer by a self-test on rendered bios of every
    style; tokenizers that fail it have every bio encoded whole."""

    def __init__(self, tokenizer):
        self.tokenizer, self.count_text, self.memo = tokenizer, tokenizer.count, {}
        self.word_additive = _word_additive(tokenizer)
        self.words = _pool_word_counts(tokenizer) if self.word_additive else {}

    def __call__(self, text: str) -> int:
        c = self.memo.get(text)
        if c is None:
            c = self.memo[text] = self.count_text(text)
        return c

    def bio(self, text: str) -> int:
        """Tokens of ' ' + text[:-1] for a bio text ending with a space."""
        if not self.word_additive:
            return self(' ' + text[:-1])
        words = text[:-1].split(' ')
        memo = self.words
        try:
            return sum(map(memo.__getitem__, words))
        except KeyError:
            for w in words:
                if w not in memo:
                    memo[w] = self._word(w)
            return sum(map(memo.__getitem__, words))

    def _word(self, w: str) -> int:
        """' ' + w; a final period or comma after a letter or digit is its own pre-token (checked by the
        self-test), so 'Tokyo.' costs ' Tokyo' + '.'."""
        if len(w) > 1 and w[-1] in '.,' and w[-2].isalnum():
            base = self.words.get(w[:-1])
            if base is None:
                base = self.words[w[:-1]] = self.count_text(' ' + w[:-1])
            return base + self(w[-1])
        return self.count_text(' ' + w)


_ADDITIVE: Dict[str, bool] = {}
_POOL_WORDS: Dict[str, Dict[str, int]] = {}


def _pool_word_counts(tokenizer) -> Dict[str, int]:
    """Counts of ' ' + word for every word of the pools and templates, once per process and tokenizer
    (about 40k short encodes): a bio's count is then a sum of dictionary look-ups. The dict is shared by
    the generators of this process and grows with the words of rendered bios (names with a period...)."""
    key = tokenizer.fingerprint
    if key not in _POOL_WORDS:
        pools = load_pools()
        words = set()
        for vals in pools.values.values():
            for v in vals:
                words.update(v.split(' '))
        for t in pools.standard.values():
            words.update(t.split(' '))
        for rows in pools.paraphrase.values():
            for row in rows:
                for t in row:
                    words.update(t.split(' '))
        count = tokenizer.count
        _POOL_WORDS[key] = {w: count(' ' + w) for w in sorted(words) if w}
    return _POOL_WORDS[key]


def _word_additive(tokenizer) -> bool:
    """Self-test: does ``Counter.bio`` (a sum of word counts) equal the count of the whole bio piece, on
    rendered bios of every style (standard, paraphrase, first person; ages; citation bodies)?"""
    key = tokenizer.fingerprint
    if key not in _ADDITIVE:
        probe = Counter.__new__(Counter)
        probe.tokenizer, probe.count_text, probe.memo, probe.words, probe.word_additive = (
            tokenizer, tokenizer.count, {}, {}, True)
        pools = load_pools()
        stream = PersonStream('word-additivity-probe', pools)
        rng = random.Random('word-additivity-probe')
        ok = True
        for i in range(300):
            p = stream[i]
            style = ('standard', 'paraphrase', 'first_person')[i % 3]
            tset = template_set(style, ('compat', 'strict')[(i // 3) % 2])
            attrs = tuple('age' if (a == 'birthdate' and i % 5 == 0) else a for a in ATTRIBUTES)
            choices = None if style == 'standard' else [rng.randrange(len(tset.paraphrase[a])) if a != 'age' else 0
                                                        for a in attrs]
            sent = render_sentences(p, attrs, tset, choices)
            text = cite_body(p, sent) if i % 7 == 0 else bio_text(p, sent, tset.first_person)
            if probe.bio(text) != tokenizer.count(' ' + text[:-1]):
                ok = False
                break
        _ADDITIVE[key] = ok
    return _ADDITIVE[key]
