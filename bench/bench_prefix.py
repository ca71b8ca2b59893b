"""Benchmark: tokens left to prefill with LMDeploy's prefix cache, dataset order vs reuse order, per benchmark.

    python bench/bench_prefix.py [--dir bench/results/prefix_data] [--tiers 1k,2k,4k,8k,16k,32k]
                                 [--batch-size 16] [--haystacks 0] [--tokenizer qwen] [--json OUT]

Builds the project's stand-in NoLiMa data (the 58-pair main set and its books), renders each tier's prompts as the
dataset does (system prompt and prompt), counts them in ``--tokenizer`` (``qwen``: the Qwen2.5 tokenizer directory written
offline by ``opencompass_longctx.tokenizer.qwen_dir``), and simulates the engine with
:func:`opencompass_longctx.prefix_reuse.prefilled_tokens`: 64-token blocks, an unbounded cache, ``--batch-size``
prompts submitted together, the blocks of a prompt matchable by the next one of its batch (the PyTorch engine).
It reports the prompt tokens, the tokens prefilled in dataset order and in the inferencer's issue order (sorted
prompt texts, :func:`opencompass_longctx.run.inferencer.issue_order`'s key), and the ratio. The chat template is
left out (it adds the same text to every prompt, which would only add shared blocks).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tokenizer(data_dir, name):
    from opencompass_longctx.tokenizer.counting import get_tokenizer
    if name == 'qwen':
        from opencompass_longctx.tokenizer.qwen_dir import build
        path = os.path.join(data_dir, 'qwen2.5-tokenizer')
        if not os.path.isfile(os.path.join(path, 'tokenizer.json')):
            build(path)
        return path, get_tokenizer(path)
    return (None, get_tokenizer(None)) if name == 'default' else (name, get_tokenizer(name))


def measure(texts, tok, batch_size, capacity=None):
    """Prompt tokens, tokens prefilled in dataset order and in reuse order (a cache of ``capacity`` blocks)."""
    from opencompass_longctx.prefix_reuse import prefilled_tokens, reuse_order
    ids = tok.encode_batch(list(texts))
    order = reuse_order(list(texts))
    return dict(prompts=len(ids), prompt_tokens=sum(map(len, ids)), cache_blocks=capacity,
                dataset_order=prefilled_tokens(ids, batch_size=batch_size, capacity=capacity),
                reuse_order=prefilled_tokens(ids, order, batch_size=batch_size, capacity=capacity))


def nolima_splits(data_dir, tokenizer_path, tok, tiers, haystacks):
    from opencompass_longctx.demo import nolima_data
    from opencompass_longctx.nolima.dataset import load_nolima
    from opencompass_longctx.nolima.prompts import SYSTEM_PROMPT
    need = max(int(t.rstrip('k')) * (1000 if t.endswith('k') else 1) for t in tiers) + 2000
    books = [os.path.join(data_dir, 'haystack', 'rand_shuffle', f'rand_book_{i}.txt') for i in range(1, 6)]
    if not all(os.path.isfile(b) for b in books) or min(tok.count(open(b).read()) for b in books) < need:
        nolima_data.write(data_dir, book_tokens=need)
    for tier in tiers:
        ds = load_nolima(tier, path=data_dir, tokenizer=tokenizer_path, haystacks=haystacks)
        yield f'NoLiMa {tier}', [SYSTEM_PROMPT + '\n' + p for p in ds['prompt']]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/prefix_data')
    ap.add_argument('--tiers', default='1k,2k,4k,8k,16k,32k')
    ap.add_argument('--batch-size', type=int, default=16)
    ap.add_argument('--haystacks', default='0', help='NoLiMa books (0-4), comma-separated (default 0)')
    ap.add_argument('--tokenizer', default='qwen')
    ap.add_argument('--cache-blocks', default='none,8192',
                    help="cache sizes in 64-token blocks, 'none' unbounded (default none,8192: 8,192 blocks are "
                         "524k tokens, about 30 GB of KV for a 7B model with GQA)")
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)
    data_dir = os.path.abspath(args.dir)
    os.makedirs(data_dir, exist_ok=True)
    tiers = args.tiers.split(',')
    tokenizer_path, tok = _tokenizer(data_dir, args.tokenizer)
    haystacks = [int(h) for h in args.haystacks.split(',')]
    splits = list(nolima_splits(data_dir, tokenizer_path, tok, tiers, haystacks))
    rows = []
    caches = [None if c == 'none' else int(c) for c in args.cache_blocks.split(',')]
    print('| split | cache (blocks) | prompts | prompt tokens | prefilled, dataset order | prefilled, reuse order | '
          'ratio (prompt tokens / reuse order) |')
    print('|---|---|---|---|---|---|---|')
    for name, texts in splits:
        for capacity in caches:
            t = time.perf_counter()
            m = measure(texts, tok, args.batch_size, capacity)
            m.update(split=name, ratio=m['prompt_tokens'] / m['reuse_order'],
                     ratio_dataset_order=m['prompt_tokens'] / m['dataset_order'],
                     seconds=round(time.perf_counter() - t, 1))
            rows.append(m)
            print(f"| {name} | {capacity or 'unbounded'} | {m['prompts']:,} | {m['prompt_tokens']:,} | "
                  f"{m['dataset_order']:,} ({m['ratio_dataset_order']:.2f}x) | {m['reuse_order']:,} | "
                  f"{m['ratio']:.2f}x |", flush=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(dict(batch_size=args.batch_size, tokenizer=args.tokenizer, rows=rows), f, indent=1)


if __name__ == '__main__':
    main()
