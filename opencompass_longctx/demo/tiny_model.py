"""Build a tiny chat model offline, in seconds: random weights, a locally trained tokenizer.

It proves the pipeline (tokenization, chat template, generation, evaluation), not a model: its answers are
noise. Used by the tests and the demo config.

    python -m opencompass_longctx.demo.tiny_model OUT_DIR      (or: longctx-tiny-model OUT_DIR)
"""
import argparse
import os
import sys

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
_CORPUS = [
    'The most recent location of Mary is the kitchen. Where is John? Answer: bedroom.',
    'I will give you context with the facts about positions of different persons hidden in some random text.',
    'Daniel picked up the football there. Sandra journeyed to the garden. The office is north of the hallway.',
    'It was a quiet evening in the old town, and the river ran slowly past the mill.',
    'yes no maybe none one two three apple milk football nothing bathroom hallway office',
    '<context> </context> <example> </example> Question: Answer:',
]


def build(out_dir: str, vocab_size: int = 600, max_positions: int = 16384, seed: int = 0) -> str:
    """Write a tiny Llama chat model to ``out_dir`` and return the path."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    os.makedirs(out_dir, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token='<|im_end|>', pad_token='<|endoftext|>',
                                   bos_token=None, model_input_names=['input_ids', 'attention_mask'],
                                   model_max_length=max_positions)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)

    torch.manual_seed(seed)
    eos, pad = fast.convert_tokens_to_ids('<|im_end|>'), fast.convert_tokens_to_ids('<|endoftext|>')
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
                      eos_token_id=eos, pad_token_id=pad, bos_token_id=None, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(out_dir, safe_serialization=True)
    GenerationConfig(eos_token_id=eos, pad_token_id=pad, do_sample=False).save_pretrained(out_dir)
    return out_dir


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out_dir')
    ap.add_argument('--max-positions', type=int, default=16384)
    args = ap.parse_args(argv)
    print(build(args.out_dir, max_positions=args.max_positions))
    return 0


if __name__ == '__main__':
    sys.exit(main())
