"""Benchmark: building one NoLiMa tier (58 pairs x 26 depths x 5 books) from local files, first build vs
cached rebuild, peak memory, and the per-sample cost against the number of tests sharing a book.

    python bench/bench_nolima.py [--dir bench/results/nolima_data] [--tier 32k] [--book-tokens 100000]
                                 [--hf-tokenizer DIR]

Writes the project's stand-in NoLiMa data (the licensed data is not needed): the 58-pair main set and five
books of ``--book-tokens`` tokens (offline default tokenizer, tiktoken cl100k_base). Then, each in a fresh
process as OpenCompass does (a new process starts with empty in-memory caches):
  1. first build of the tier, with empty caches: tokenise the 5 books (once each), place 7,540 needles,
     write the dataset cache;
  2. second build (served by the dataset cache);
  3. the same through OpenCompass's dataset class (what each infer/eval subprocess pays);
  4. per-sample cost with the books already tokenised (book cache warm, dataset cache cold), for 1 pair
     (130 samples) and for all 58 pairs (7,540 samples);
  5. optionally the first build with a Hugging Face tokenizer (``--hf-tokenizer``; lengths in its tokens).
Peak memory is the process's peak RSS during the build minus its RSS after imports.
"""
import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, report  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/nolima_data')
    ap.add_argument('--tier', default='32k')
    ap.add_argument('--book-tokens', type=int, default=100000)
    ap.add_argument('--hf-tokenizer', default=None, help='also time a first build with this HF tokenizer dir')
    args = ap.parse_args(argv)

    from opencompass_longctx.nolima import sample_data
    from opencompass_longctx.tokenization import get_tokenizer
    data_dir = os.path.abspath(args.dir)
    books = [os.path.join(data_dir, 'haystack', 'rand_shuffle', f'rand_book_{i}.txt') for i in range(1, 6)]
    tok = get_tokenizer(None)
    gen_s = None
    if not all(os.path.isfile(b) for b in books) or \
            min(len(tok.encode(open(b, encoding='utf-8').read())) for b in books) < args.book_tokens:
        shutil.rmtree(data_dir, ignore_errors=True)
        t = time.perf_counter()
        sample_data.write(data_dir, book_tokens=args.book_tokens)
        gen_s = time.perf_counter() - t
    book_tokens = [len(tok.encode(open(b, encoding='utf-8').read())) for b in books]

    cache = os.path.join(data_dir, '_cache')
    shutil.rmtree(cache, ignore_errors=True)
    env = {'LONGCTX_CACHE_DIR': cache, 'LONGCTX_PROGRESS': '0'}
    setup = ('import warnings; warnings.simplefilter("ignore"); import sys, io; '
             'from opencompass_longctx.nolima.dataset import load_nolima, NoLiMaDataset')
    call = f'tier={args.tier!r}, path={data_dir!r}'
    quiet = 'sys.stderr = io.StringIO(); '
    first = measure(setup, quiet + f'RESULT = len(load_nolima({call}))', env)
    second = measure(setup, quiet + f'RESULT = len(load_nolima({call}))', env)
    oc = measure(setup, quiet + f"RESULT = len(NoLiMaDataset(reader_cfg=dict(input_columns=['prompt'], "
                                f"output_column='answer'), abbr='n', {call}).test)", env)
    size_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(cache, 'nolima'))
                  for f in fs) / 1e6
    # per-sample cost with the books already tokenised (different pair selections = different cache keys)
    one = measure(setup, quiet + f'RESULT = len(load_nolima({call}, pairs=1))', env)
    shutil.rmtree(os.path.join(cache, 'nolima'), ignore_errors=True)
    full = measure(setup, quiet + f'RESULT = len(load_nolima({call}))', env)
    rows = [
        ('data', f'{os.path.relpath(data_dir)}: 58-pair main set, 5 books of {min(book_tokens):,}-'
                 f'{max(book_tokens):,} tokens (tiktoken cl100k_base)'),
        ('generate data (sample_data)', f'{gen_s:.1f} s' if gen_s is not None else 'reused'),
        (f'first build {args.tier} (tokenise books + {first["result"]:,} samples + cache write)',
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
        ('per sample, books cached: 1 pair', f'{1000 * one["seconds"] / one["result"]:.2f} ms '
                                             f'({one["result"]} samples in {one["seconds"]:.2f} s)'),
        ('per sample, books cached: 58 pairs', f'{1000 * full["seconds"] / full["result"]:.2f} ms '
                                               f'({full["result"]:,} samples in {full["seconds"]:.2f} s)'),
    ]
    if args.hf_tokenizer:
        hf_cache = os.path.join(data_dir, '_cache_hf')
        shutil.rmtree(hf_cache, ignore_errors=True)
        hf = measure(setup, quiet + f'RESULT = len(load_nolima({call}, tokenizer={args.hf_tokenizer!r}))',
                     {'LONGCTX_CACHE_DIR': hf_cache, 'LONGCTX_PROGRESS': '0'})
        rows.append((f'first build with HF tokenizer {os.path.basename(args.hf_tokenizer.rstrip("/"))}',
                     f'{hf["seconds"]:.2f} s, peak RSS over baseline '
                     f'{hf["peak_rss_mib"] - hf["rss_before_mib"]:.0f} MiB'))
        shutil.rmtree(hf_cache, ignore_errors=True)
    report(f'NoLiMa {args.tier}: build and reload', rows,
           os.path.join('bench', 'results', f'nolima_{args.tier}.json'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
