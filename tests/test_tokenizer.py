import os

import pytest

from opencompass_longctx.tokenizer.counting import (DEFAULT_TOKENIZER, GPT2_TOKENIZER, TokenizerError,
                                              forget_tokenizers, get_tokenizer)


def test_offline_default_is_cl100k_and_round_trips():
    tok = get_tokenizer(None)
    assert tok.name == DEFAULT_TOKENIZER == 'tiktoken:cl100k_base'
    text = 'Hello world, the <|endoftext|> end.\n\n  spaces'
    ids = tok.encode(text)
    assert ids[:2] == [9906, 1917]  # 'Hello', ' world' in cl100k_base
    assert tok.decode(ids) == text  # special-token text is treated as plain text
    assert tok.count(text) == len(ids)


def test_gpt2_ids_are_gpt2():
    tok = get_tokenizer(GPT2_TOKENIZER)
    assert tok.encode('Hello world') == [15496, 995]
    assert tok.encode(' the') == [262]
    # GPT-2 has no whitespace-run tokens (p50k_base does): four spaces are four tokens
    assert len(tok.encode('a    b')) > len(get_tokenizer('tiktoken:p50k_base').encode('a    b'))
    assert tok.encode_batch(['Hello world', ' the']) == [[15496, 995], [262]]


def test_fingerprints_are_stable_and_distinct():
    a, b = get_tokenizer('tiktoken:cl100k_base'), get_tokenizer('tiktoken:gpt2')
    assert a.fingerprint != b.fingerprint
    forget_tokenizers()
    assert get_tokenizer('tiktoken:cl100k_base').fingerprint == a.fingerprint


def test_hf_tokenizer_directory(tiny_model_dir):
    tok = get_tokenizer(tiny_model_dir)
    assert tok.kind == 'hf'
    text = 'Mary went to the kitchen.'
    assert tok.decode(tok.encode(text)) == text
    assert tok.count(text) == len(tok.encode(text)) > 0
    assert len(tok.fingerprint) == 64


@pytest.mark.parametrize('name', ['./no/such/tokenizer', 'tiktoken:nonsense', 'no-such-org/no-such-tokenizer'])
def test_missing_tokenizer_is_a_clear_error(name):
    with pytest.raises(TokenizerError):
        get_tokenizer(name)


# ---------------------------------------------------------------------------------------------- Qwen2
MULTILINGUAL = (
    'Mary went to the kitchen at 7:45, then walked 12,345 steps (3.5 km) to the office.\n\n'
    '我们在北京大学学习了三年，2019年毕业。数字：1234567890。\n'
    '東京都は日本の首都です。カタカナ、ひらがな、漢字を使います。\n'
    '서울은 대한민국의 수도이며 인구는 약 9,400,000명입니다.\n'
    'Москва — столица России; население 13 млн человек.\n'
    'Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.  العربية لغة جميلة. हिन्दी भाषा। ภาษาไทยง่าย\n'
    '    indented    with    runs\t\tof\t\twhitespace   \n\n\n\r\nWindows line\r\nend\r\n'
    "She'S sure they'LL come; it's 'quoted' and DON'T. Café vs cafe\u0301 (NFC!), Å vs A\u030a, ﬁ.\n"
    'Emoji 😀👍🏽 and math ∑∞≠½ and full-width ０１２ and e\u0301\u0323\n')


def _real_text():
    """Text from the installed OpenCompass package: prompts in several languages (MGSM: bn, de, es, fr, ja, ru,
    sw, te, th, zh; C-Eval, CMMLU: Chinese), code and English (GSM8K, HumanEval)."""
    import glob
    import opencompass
    root = os.path.join(os.path.dirname(opencompass.__file__), 'configs', 'datasets')
    parts = [MULTILINGUAL]
    for sub in ('mgsm', 'ceval', 'cmmlu', 'flores', 'gsm8k', 'humaneval'):
        for f in sorted(glob.glob(os.path.join(root, sub, '*.py'))):
            with open(f, encoding='utf-8') as fh:
                parts.append(fh.read())
    text = '\n'.join(parts)
    assert '<|' not in text  # no special-token text: named tiktoken tokenizers read it as plain text
    assert sum(ord(c) > 0x2e80 for c in text) > 5000  # CJK and other scripts, really there
    return text


@pytest.fixture(scope='module')
def qwen_dir(tmp_path_factory):
    from opencompass_longctx.tokenizer.qwen_dir import build
    return build(str(tmp_path_factory.mktemp('tok') / 'qwen2.5'))


def test_qwen2_named_tokenizer_is_offline_and_pinned():
    from opencompass_longctx.tokenizer.counting import QWEN2_TOKENIZER, QWEN_VOCAB, qwen_vocab_file
    from opencompass_longctx.util import sha256_file
    assert sha256_file(qwen_vocab_file()) == QWEN_VOCAB[2]
    tok = get_tokenizer(QWEN2_TOKENIZER)
    assert (tok.name, tok.kind, tok.engine) == ('tiktoken:qwen2', 'tiktoken', 'tiktoken')
    # ids of Qwen2's vocabulary ('Hello' 9707, ' world' 1879); special-token text is plain text
    assert tok.encode('Hello world') == [9707, 1879]
    assert tok.decode(tok.encode('a <|im_end|> b')) == 'a <|im_end|> b'
    assert tok.decode([151645]) == '<|im_end|>'
    # Qwen2 splits digits one by one (cl100k groups up to three)
    assert len(tok.encode('1234567')) == 7
    # the NFC normaliser: a decomposed accent is counted as the composed character
    assert tok.encode('cafe\u0301') == tok.encode('café')
    assert tok.fingerprint != get_tokenizer(None).fingerprint


def test_qwen2_ids_equal_hf_tokenizers_built_from_the_same_vocabulary(qwen_dir):
    """tiktoken:qwen2 == our Qwen2.5-style HF directory == transformers' own .tiktoken conversion, on real text."""
    from tokenizers import normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from opencompass_longctx.tokenizer.counting import QWEN2_ADDED_TOKENS, QWEN2_PATTERN, qwen_vocab_file
    text = _real_text()
    named = get_tokenizer('tiktoken:qwen2').encode(text)
    hf_dir = get_tokenizer(qwen_dir, twin=False)
    assert hf_dir.engine == 'hf'
    assert hf_dir.encode(text) == named
    conv = TikTokenConverter(vocab_file=qwen_vocab_file(), pattern=QWEN2_PATTERN,
                             additional_special_tokens=[t for _, t, _ in QWEN2_ADDED_TOKENS]).converted()
    conv.normalizer = normalizers.NFC()
    fast = PreTrainedTokenizerFast(tokenizer_object=conv)
    assert fast(text, add_special_tokens=False)['input_ids'] == named
    # the directory is a working chat tokenizer: Qwen2.5's chat template and special tokens
    from transformers import AutoTokenizer
    at = AutoTokenizer.from_pretrained(qwen_dir)
    chat = at.apply_chat_template([{'role': 'user', 'content': 'Hi'}], tokenize=False, add_generation_prompt=True)
    assert chat == ('<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.'
                    '<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n')
    assert at.eos_token == '<|im_end|>' and at.convert_tokens_to_ids('<|im_end|>') == 151645 and len(at) == 151665


# ---------------------------------------------------------------------------------------------- twins
def _save_hf(tok, out, **kw):
    """A tokenizers.Tokenizer saved as a Hugging Face tokenizer directory."""
    from transformers import PreTrainedTokenizerFast
    PreTrainedTokenizerFast(tokenizer_object=tok, **kw).save_pretrained(str(out))
    return str(out)


def _byte_level_bpe(merges, vocab_extra=(), normalizer=None, pre_tokenizer=None, permute_ids=False):
    """A byte-level BPE (GPT-2 byte alphabet) with the given merges; ids permuted on request."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokens = alphabet + [a + b for a, b in merges] + list(vocab_extra)
    ids = list(range(len(tokens)))
    if permute_ids:
        ids = ids[::-1]  # merges no longer in id order: the twin maps its ranks to these ids
    tok = Tokenizer(models.BPE(vocab=dict(zip(tokens, ids)), merges=list(merges)))
    tok.pre_tokenizer = pre_tokenizer or pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if normalizer is not None:
        tok.normalizer = normalizer
    return tok


WORD_MERGES = [('t', 'h'), ('Ġ', 'th'), ('e', 'r'), ('Ġth', 'e'), ('i', 'n'), ('Ġ', 'w'), ('o', 'n'), ('a', 'n')]


@pytest.mark.parametrize('which', ['qwen', 'tiny', 'permuted'])
def test_twin_is_exact_and_records_its_engine(which, qwen_dir, tiny_model_dir, tmp_path):
    import pickle
    import numpy as np
    path = {'qwen': qwen_dir, 'tiny': tiny_model_dir,
            'permuted': None}[which] or _save_hf(_byte_level_bpe(WORD_MERGES, permute_ids=True), tmp_path / 'p')
    twin, hf = get_tokenizer(path), get_tokenizer(path, twin=False)
    assert (twin.engine, hf.engine, twin.kind) == ('tiktoken-twin', 'hf', 'hf')
    assert twin.fingerprint == hf.fingerprint  # same ids, same data: the same cache keys
    if which == 'permuted':
        assert twin._rank_to_id is not None
    text = _real_text() if which == 'qwen' else MULTILINGUAL * 3
    text += ' <|im_start|>user\nthe <|endoftext|><|im_end|>x<|im_end|>'
    ids = hf.encode(text)
    assert twin.encode(text) == ids and twin.count(text) == len(ids)
    assert twin.encode_batch([text, 'the weather']) == hf.encode_batch([text, 'the weather'])
    assert twin.decode(ids) == hf.decode(ids)
    # encode_split: the twin's byte-offset split gives the ids of the whole text
    plain = MULTILINGUAL.replace('cafe\u0301', 'cafe').replace('A\u030a', 'A').replace('e\u0301\u0323', 'e')
    raw = plain.encode()
    starts = [0] + [i + 1 for i in range(len(raw)) if raw[i:i + 1] == b'\n'][:-1]
    got, bounds = twin.encode_split(plain, starts)
    assert got.tolist() == hf.encode(plain) and len(bounds) == len(starts) + 1 and bounds[-1] == len(got)
    if twin.token_byte_lengths() is not None:
        lengths = twin.token_byte_lengths()[np.asarray(got)]
        assert int(lengths.sum()) == len(raw)
        assert b''.join(twin.token_bytes(int(i)) for i in got) == raw
    # pickles as its name: one load per process, the same object back here
    assert pickle.loads(pickle.dumps(twin)) is twin


@pytest.mark.e2e
def test_twin_in_a_fresh_process_has_the_same_fingerprint(tiny_model_dir):
    import pickle
    import subprocess
    import sys
    twin = get_tokenizer(tiny_model_dir)
    code = ('import pickle, sys; t = pickle.loads(sys.stdin.buffer.read()); '
            'print(t.engine, t.fingerprint, t.encode("Mary went to the kitchen."))')
    out = subprocess.run([sys.executable, '-c', code], input=pickle.dumps(twin), capture_output=True, check=True)
    assert out.stdout.decode().split(' ', 2)[:2] == [twin.engine, twin.fingerprint]
    assert out.stdout.decode().split(' ', 2)[2].strip() == str(twin.encode('Mary went to the kitchen.'))
    # a cached dataset needs only the fingerprint: a directory is hashed, not loaded (transformers not imported)
    code = ('import sys; from opencompass_longctx.tokenizer.counting import get_tokenizer; '
            f't = get_tokenizer({tiny_model_dir!r}); print(t.fingerprint, "transformers" in sys.modules)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, check=True, text=True)
    assert out.stdout.split() == [twin.fingerprint, 'False']


def test_a_directory_without_tokenizer_files_is_a_clear_error(tmp_path):
    with pytest.raises(TokenizerError, match='not a tokenizer directory'):
        get_tokenizer(str(tmp_path))


def test_twin_falls_back_to_hf_when_its_merges_differ(tmp_path, capsys):
    """Merges th, he, t+he: Hugging Face never merges th+e (not a merge), tiktoken's rank rule would ('the' has
    a rank). The probe sees the difference: Hugging Face is used, with one line saying why."""
    merges = [('t', 'h'), ('h', 'e'), ('t', 'he')]
    path = _save_hf(_byte_level_bpe(merges), tmp_path / 'odd')
    tok = get_tokenizer(path)
    assert tok.engine == 'hf'  # the tokenizer is loaded (and its twin checked) on first use
    err = capsys.readouterr().err
    assert 'no exact tiktoken twin' in err and 'probe' in err and len(err.strip().splitlines()) == 1
    assert len(tok.encode('the')) == 2  # Hugging Face's answer (th, e)


@pytest.mark.parametrize('what', ['normalizer', 'metaspace'])
def test_no_twin_for_forms_tiktoken_cannot_express(what, tmp_path, capsys):
    from tokenizers import normalizers, pre_tokenizers
    if what == 'normalizer':
        tok = _byte_level_bpe(WORD_MERGES, normalizer=normalizers.Lowercase())
    else:
        tok = _byte_level_bpe(WORD_MERGES, pre_tokenizer=pre_tokenizers.Metaspace())
    t = get_tokenizer(_save_hf(tok, tmp_path / what))
    assert t.engine == 'hf'
    err = capsys.readouterr().err
    assert {'normalizer': 'normaliser Lowercase', 'metaspace': 'pre-tokenizer step Metaspace'}[what] in err
    assert t.encode('The weather') == t._hf('The weather', add_special_tokens=False)['input_ids']


def test_twin_can_be_switched_off(tiny_model_dir, monkeypatch):
    monkeypatch.setenv('LONGCTX_TOKENIZER_TWIN', '0')
    assert get_tokenizer(tiny_model_dir).engine == 'hf'
    monkeypatch.delenv('LONGCTX_TOKENIZER_TWIN')
    assert get_tokenizer(tiny_model_dir).engine == 'tiktoken-twin'


def test_named_tokenizers_build_their_encoding_on_first_use():
    """A cache hit needs the fingerprint only: the vocabulary is hashed, the encoding built when first used."""
    forget_tokenizers()
    tok = get_tokenizer('tiktoken:qwen2')
    fp = tok.fingerprint
    assert '_enc' not in vars(tok) and 'not loaded yet' in repr(tok)
    assert tok.count('Hello world') == 2 and '_enc' in vars(tok) and tok.fingerprint == fp
    assert tok.engine == 'tiktoken' and 'engine=tiktoken' in repr(tok)
