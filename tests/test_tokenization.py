import pytest

from opencompass_longctx.tokenization import (DEFAULT_TOKENIZER, GPT2_TOKENIZER, TokenizerError,
                                              get_tokenizer)


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
    get_tokenizer.cache_clear()
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
