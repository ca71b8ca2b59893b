"""A gpt-oss model directory for CPU tests, offline: the harmony vocabulary (o200k_base's 199,998 byte-level BPE
ranks, from litellm's bundled copy, plus the special tokens from 199998 up that ``openai_harmony``'s own
HARMONY_GPT_OSS encoding names), the published config.json of openai/gpt-oss-20b
(tests/data/model_configs/gpt-oss-20b.json), its generation_config.json stop ids, and a short harmony chat
template (system, user, then ``<|start|>assistant``; not the published one, which adds tools and reasoning-effort
text). No weights: LMDeploy's engine is the test double's.

``openai_harmony`` (a dependency of LMDeploy) reads ``o200k_base.tiktoken`` from ``$TIKTOKEN_ENCODINGS_BASE``:
:func:`harmony_env` gives a directory holding it.
"""
import json
import os
import shutil

from opencompass_longctx.tokenizer.qwen_dir import recover_merges
from opencompass_longctx.tokenizer.counting import TIKTOKEN_FILES, find_tiktoken_file, read_ranks
from opencompass_longctx.tokenizer.tiktoken_equivalent import bytes_decoder
HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, 'data', 'model_configs', 'gpt-oss-20b.json')
STOP_IDS = [200002, 199999, 200012]     # <|return|>, <|endoftext|>, <|call|>: generation_config.json's eos ids
FIRST_SPECIAL = 199998
TEMPLATE = ("{%- for m in messages %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>{%- endfor %}"
            "{%- if add_generation_prompt %}<|start|>assistant{%- endif %}")


def _restore(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def harmony_env(directory: str) -> str:
    """A ``TIKTOKEN_ENCODINGS_BASE`` directory holding o200k_base.tiktoken (openai_harmony's vocabulary file)."""
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, 'o200k_base.tiktoken')
    if not os.path.isfile(target):
        shutil.copyfile(find_tiktoken_file('o200k_base'), target)
    return directory


def build(out_dir: str, encodings_base: str) -> str:
    """Write the gpt-oss tokenizer and config files to ``out_dir`` (``encodings_base``: see :func:`harmony_env`)."""
    import tiktoken
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    old = os.environ.get('TIKTOKEN_ENCODINGS_BASE')
    os.environ['TIKTOKEN_ENCODINGS_BASE'] = encodings_base
    try:
        harmony = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        _restore('TIKTOKEN_ENCODINGS_BASE', old)
    path = find_tiktoken_file('o200k_base')
    ranks = read_ranks(path, TIKTOKEN_FILES['o200k_base'][1])
    old = os.environ.get('TIKTOKEN_CACHE_DIR')
    os.environ['TIKTOKEN_CACHE_DIR'] = os.path.dirname(path)
    try:
        pattern = tiktoken.get_encoding('o200k_base')._pat_str
    finally:
        _restore('TIKTOKEN_CACHE_DIR', old)
    with open(CONFIG, encoding='utf-8') as f:
        config = json.load(f)
    config.setdefault('transformers_version', '4.55.0.dev0')   # as published (transformers warns without it)
    specials = [(i, harmony.decode([i])) for i in range(FIRST_SPECIAL, int(config['vocab_size']))]
    to_char = {b: c for c, b in bytes_decoder().items()}

    def s(b: bytes) -> str:
        return ''.join(to_char[x] for x in b)

    byte_level = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': False}
    added = [{'id': i, 'content': t, 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False,
              'special': True} for i, t in specials]
    tokenizer_json = {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added, 'normalizer': None,
        'pre_tokenizer': {'type': 'Sequence', 'pretokenizers': [
            {'type': 'Split', 'pattern': {'Regex': pattern}, 'behavior': 'Isolated', 'invert': False}, byte_level]},
        'post_processor': None, 'decoder': byte_level,
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': '',
                  'end_of_word_suffix': '', 'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': False,
                  'vocab': {s(t): r for t, r in sorted(ranks.items(), key=lambda x: x[1])},
                  'merges': [[s(a), s(b)] for a, b in recover_merges(ranks)]}}
    tokenizer_config = {
        'added_tokens_decoder': {str(a['id']): {k: v for k, v in a.items() if k != 'id'} for a in added},
        'bos_token': '<|startoftext|>', 'eos_token': '<|return|>', 'pad_token': '<|endoftext|>',
        'chat_template': TEMPLATE, 'clean_up_tokenization_spaces': False, 'model_max_length': 131072,
        'tokenizer_class': 'PreTrainedTokenizerFast'}
    os.makedirs(out_dir, exist_ok=True)
    files = {'tokenizer.json': tokenizer_json, 'tokenizer_config.json': tokenizer_config, 'config.json': config,
             'generation_config.json': {'bos_token_id': 199998, 'eos_token_id': STOP_IDS, 'pad_token_id': 199999}}
    for name, content in files.items():
        with open(os.path.join(out_dir, name), 'w', encoding='utf-8') as f:
            json.dump(content, f, ensure_ascii=False)
    return out_dir
