"""Benchmark: tokens left to prefill with LMDeploy's prefix cache, dataset order vs reuse order, per benchmark.

    python bench/bench_prefix.py [--dir bench/results/prefix_data] [--tiers 1k,2k,4k,8k,16k,32k]
                                 [--other-tiers 4k,32k] [--benchmarks nolima,babilong,longbio]
                                 [--babilong-samples 5] [--longbio-samples 20]
                                 [--batch-size 16] [--haystacks 0] [--tokenizer qwen] [--json OUT]

Builds the project's stand-in NoLiMa data (the 58-pair main set and its books) at ``--tiers``, and at
``--other-tiers`` the stand-in BABILong-format files (qa1-qa5, ``--babilong-samples`` per task) and LongBioBench's
cells of the shipped tier config (``--longbio-samples`` per cell: the 800 of a shipped cell take minutes to
generate per tier), renders each prompt as the dataset does (NoLiMa: system prompt and prompt; BABILong: the
prompt; LongBioBench: system, user and the answer prefix), counts them in ``--tokenizer`` (``qwen``: the Qwen2.5 tokenizer directory written
offline by ``opencompass_longctx.tokenizer.qwen_dir``), and simulates the engine with
:func:`opencompass_longctx.prefix_reuse.prefilled_tokens`: 64-token blocks, an unbounded cache, ``--batch-size``
prompts submitted together, the blocks of a prompt matchable by the next one of its batch (the PyTorch engine).
It reports the prompt tokens, the tokens prefilled in dataset order and in the inferencer's issue order (sorted
prompt texts within each dataset, :func:`opencompass_longctx.run.inferencer.issue_order`'s key; the datasets of
a split one after another, as one inference task runs them on one engine), and the ratio. The chat template is
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


def measure(datasets, tok, batch_size, capacity=None):
    """Prompt tokens, tokens prefilled in dataset order and in reuse order (a cache of ``capacity`` blocks);
    ``datasets``: the prompt texts of each dataset of the split, issued one dataset after another."""
    from opencompass_longctx.prefix_reuse import prefilled_tokens, reuse_order
    texts = [t for d in datasets for t in d]
    ids = tok.encode_batch(texts)
    order, start = [], 0
    for d in datasets:
        order += [start + i for i in reuse_order(list(d))]
        start += len(d)
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
        yield f'NoLiMa {tier}', [[SYSTEM_PROMPT + '\n' + p for p in ds['prompt']]]


def babilong_splits(data_dir, tiers, samples):
    from opencompass_longctx.babilong.dataset import load_babilong
    from opencompass_longctx.demo import babilong_data
    tasks = ['qa1', 'qa2', 'qa3', 'qa4', 'qa5']
    root = os.path.join(data_dir, 'babilong')
    babilong_data.write(root, tiers=tiers, tasks=tasks, samples=samples)
    for tier in tiers:
        yield (f'BABILong {tier} (stand-in, qa1-qa5)',
               [list(load_babilong(tier, task=t, path=root, num_samples=samples)['prompt']) for t in tasks])


def longbio_splits(tiers, samples):
    import importlib
    from opencompass_longctx.longbio.dataset import load_longbio
    for tier in tiers:
        cfgs = importlib.import_module(f'opencompass_longctx.configs.datasets.longbio.longbio_{tier}_gen')
        cells = []
        for d in cfgs.longbio_datasets:
            kw = {k: v for k, v in d.items() if k not in ('type', 'abbr', 'reader_cfg', 'infer_cfg', 'eval_cfg', 'tier')}
            ds = load_longbio(tier, **dict(kw, num_samples=samples))
            cells.append([f'{s}\n{u}\n{p}' for s, u, p in zip(ds['system'], ds['user'], ds['prefix'])])
        yield f'LongBioBench {tier} ({len(cells)} cells, {samples} samples each)', cells


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/prefix_data')
    ap.add_argument('--tiers', default='1k,2k,4k,8k,16k,32k', help="NoLiMa's tiers")
    ap.add_argument('--other-tiers', default='4k,32k', help="BABILong's and LongBioBench's tiers")
    ap.add_argument('--benchmarks', default='nolima,babilong,longbio')
    ap.add_argument('--babilong-samples', type=int, default=5)
    ap.add_argument('--longbio-samples', type=int, default=20)
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
    benchmarks = args.benchmarks.split(',')
    others = args.other_tiers.split(',')
    os.environ.setdefault('LONGCTX_CACHE_DIR', os.path.join(data_dir, 'cache'))
    splits = []
    if 'nolima' in benchmarks:
        splits += nolima_splits(data_dir, tokenizer_path, tok, tiers, haystacks)
    if 'babilong' in benchmarks:
        splits += babilong_splits(data_dir, others, args.babilong_samples)
    if 'longbio' in benchmarks:
        splits += longbio_splits(others, args.longbio_samples)
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
