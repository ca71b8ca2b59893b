"""Benchmark: building one NoLiMa tier (58 pairs x 26 depths x 5 books) from local files, first build vs
cached rebuild, num_proc=1 vs 2, peak memory, and the per-sample cost against the number of tests sharing a book.

    python bench/bench_nolima.py [--dir bench/results/nolima_data] [--tier 32k] [--book-tokens 100000]
                                 [--tokenizer qwen] [--num-proc 1,2] [--pairs N]

Writes the project's stand-in NoLiMa data (the licensed data is not needed): the 58-pair main set and five
books of ``--book-tokens`` tokens. Lengths are counted in ``--tokenizer``: ``qwen`` (default) is a Qwen2.5
Hugging Face tokenizer directory written offline by ``opencompass_longctx.tokenizer.qwen_dir`` (read through
its exact tiktoken twin), or give ``default`` (tiktoken:cl100k_base) or any tokenizer name. Then, each in a
fresh process as OpenCompass does (a new process starts with empty in-memory caches):
  1. first build of the tier, with empty caches: tokenise the 5 books (once each), place 7,540 needles,
     write the dataset cache;
  2. second build (served by the dataset cache);
  3. the same through OpenCompass's dataset class (what each infer/eval subprocess pays);
  4. per-sample cost with the books already tokenised (book cache warm, dataset cache cold), for 1 pair
     (130 samples) and for all pairs, with each --num-proc: wall time, CPU time of the process and of its
     workers, peak memory of the process and of its largest worker, and the time expected on 16 cores; and
     each num_proc > 1 once more with a pool forced (parallel.plan keeps a build in one process when starting
     workers would cost more than they save: the row is a slice of a tokenised book, and the cache writer in
     the parent process does most of the work).
Peak memory is the process's peak RSS during the build minus its RSS after imports.
"""
import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_and_reload, build_rows, disk_mb, measure, report  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/nolima_data')
    ap.add_argument('--tier', default='32k')
    ap.add_argument('--book-tokens', type=int, default=100000)
    ap.add_argument('--tokenizer', default='qwen',
                    help="'qwen' (a Qwen2.5 HF directory written offline; default), 'default' or a tokenizer name")
    ap.add_argument('--num-proc', default='1,2', help='num_proc values of the per-sample builds (default 1,2)')
    ap.add_argument('--pairs', type=int, default=None, help='pairs of the main set (default: all 58)')
    ap.add_argument('--no-force-pool', action='store_true',
                    help='skip the build with a pool forced even where parallel.plan keeps it in one process')
    args = ap.parse_args(argv)

    from opencompass_longctx.demo import nolima_data
    from opencompass_longctx.tokenizer.counting import get_tokenizer
    data_dir = os.path.abspath(args.dir)
    if args.tokenizer == 'qwen':
        from opencompass_longctx.tokenizer.qwen_dir import build
        tokenizer = os.path.join(data_dir, 'qwen2.5-tokenizer')
        if not os.path.isfile(os.path.join(tokenizer, 'tokenizer.json')):
            build(tokenizer)
    else:
        tokenizer = None if args.tokenizer == 'default' else args.tokenizer
    tok = get_tokenizer(tokenizer)
    books = [os.path.join(data_dir, 'haystack', 'rand_shuffle', f'rand_book_{i}.txt') for i in range(1, 6)]
    gen_s = None
    if not all(os.path.isfile(b) for b in books) or \
            min(tok.count(open(b, encoding='utf-8').read()) for b in books) < args.book_tokens:
        for sub in ('haystack', 'needlesets'):
            shutil.rmtree(os.path.join(data_dir, sub), ignore_errors=True)
        t = time.perf_counter()
        nolima_data.write(data_dir, book_tokens=args.book_tokens)
        gen_s = time.perf_counter() - t
    book_tokens = [tok.count(open(b, encoding='utf-8').read()) for b in books]

    cache = os.path.join(data_dir, '_cache')
    setup = ('import warnings; warnings.simplefilter("ignore"); import sys, io; '
             'from opencompass_longctx.nolima.dataset import load_nolima, NoLiMaDataset')
    base = f'tier={args.tier!r}, path={data_dir!r}, tokenizer={tokenizer!r}'
    call = base + (f', pairs={args.pairs}' if args.pairs else '')
    quiet = 'sys.stderr = io.StringIO(); '
    first, second, oc, env = build_and_reload(
        setup, f'load_nolima({call})',
        f"NoLiMaDataset(reader_cfg=dict(input_columns=['prompt'], output_column='answer'), abbr='n', {call})", cache,
        first=f'load_nolima({call}, num_proc=1)', prefix=quiet)
    size_mb = disk_mb(os.path.join(cache, 'nolima'))
    rows = [
        ('data', f'{os.path.relpath(data_dir)}: 58-pair main set, 5 books of {min(book_tokens):,}-'
                 f'{max(book_tokens):,} tokens ({tok.name}, engine {tok.engine})'),
        ('generate data (sample_data)', f'{gen_s:.1f} s' if gen_s is not None else 'reused'),
        (f'first build {args.tier} (tokenise books + {first["result"]:,} samples + cache write), num_proc=1',
         f'{first["seconds"]:.2f} s'),
        ('second build (cache)', f'{second["seconds"]:.3f} s = {100 * second["seconds"] / first["seconds"]:.1f}% '
                                 f'of the first, {100 * second["seconds"] / 60:.1f}% of the 60 s budget'),
        ('second build via OpenCompass NoLiMaDataset (idx/subdivision columns)', f'{oc["seconds"]:.3f} s'),
        ('cache entry size', f'{size_mb:,.0f} MB'),
        ('peak memory, first build (RSS over baseline)',
         f'{first["peak_rss_mib"] - first["rss_before_mib"]:.0f} MiB (baseline after imports '
         f'{first["rss_before_mib"]:.0f} MiB; peak RSS {first["peak_rss_mib"]:.0f} MiB)'),
        ('peak memory, cached reload (RSS over baseline)',
         f'{second["peak_rss_mib"] - second["rss_before_mib"]:.0f} MiB'),
    ]
    # per-sample cost with the books already tokenised (different pair selections = different cache keys)
    one = measure(setup, quiet + f'RESULT = len(load_nolima({base}, pairs=1, num_proc=1))', env)
    rows.append(('per sample, books cached: 1 pair', f'{1000 * one["seconds"] / one["result"]:.2f} ms '
                                                    f'({one["result"]} samples in {one["seconds"]:.2f} s)'))
    # what a worker does before its first row: imports, the tokenizer, the books from the book cache
    startup = measure('', 'from opencompass_longctx.nolima import haystack as hs\n'
                          'from opencompass_longctx.tokenizer.counting import get_tokenizer\n'
                          f'tok = get_tokenizer({tokenizer!r}); tok.count("load the engine")\n'
                          f'[hs.load_book(b, tok) for b in {books!r}]', env)['cpu_s']
    rows.append(('build worker start-up (imports, tokenizer, books)', f'{startup:.2f} CPU-s'))
    runs = {}
    procs = [(int(x), False) for x in args.num_proc.split(',')]
    procs += [] if args.no_force_pool else [(p, True) for p, _ in procs if p > 1]
    for num_proc, force in procs:
        shutil.rmtree(os.path.join(cache, 'nolima'), ignore_errors=True)
        forced = 'import opencompass_longctx.nolima.build as B; B.MIN_PARALLEL_TOKENS = 0; ' if force else ''
        r = measure(setup, quiet + forced + f'RESULT = len(load_nolima({call}, num_proc={num_proc}))', env)
        if not force:
            runs[num_proc] = r
        what = f'{args.tier} tier, books cached, num_proc={num_proc}' + (' (pool forced)' if force else '')
        rows.append((f'{what}: wall time', f'{r["seconds"]:.2f} s = {1000 * r["seconds"] / r["result"]:.2f} ms '
                                           f'per sample ({r["result"]:,} samples)'))
        rows += build_rows(what, r, num_proc, runs.get(1), startup_s=startup)
    shutil.rmtree(cache, ignore_errors=True)
    report(f'NoLiMa {args.tier}: build and reload', rows,
           os.path.join('bench', 'results', f'nolima_{args.tier}.json'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
