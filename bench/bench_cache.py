"""Benchmark: dataset-cache entry size and reload time on realistic entries, per compression codec.

    python bench/bench_cache.py [--dir bench/results/cache_data] [--nolima-tier 8k] [--book-tokens 40000]
                                [--longbio-tier 32k] [--longbio-cells standard,rank_5,citation_2,idk]
                                [--longbio-samples 40]
                                [--codecs zstd,lz4,none] [--num-proc N] [--json bench/results/cache.json]

Entries are built by the real loaders: NoLiMa's ``load_nolima`` on the project's stand-in data (58 pairs x 26
depths x 5 books, written here; the licensed data is not needed) and LongBioBench's ``load_longbio`` (one entry
per cell). For each codec (``LONGCTX_CACHE_COMPRESSION``), each step in a fresh process as OpenCompass does:

1. first build (empty cache: books tokenised, samples generated, entry written);
2. reload (the same loader call, served by the cache; in OpenCompass every infer/eval process pays this);
3. the integrity check alone (xxh3-128 over the entry's data.arrow; part of 2).

Reported: entry size / the prompts' UTF-8 bytes, reload / first build, check / reload, peak RSS over the
process's baseline. Targets (issue 11): size <= 35 %, reload <= 10 % of the first build. Ratios are measured
within one run; absolute times on a shared machine are noisy.
"""
import argparse
import glob
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, report  # noqa: E402

SETUP = ('import warnings; warnings.simplefilter("ignore"); import sys, os, glob; '
         'from opencompass_longctx.nolima.dataset import load_nolima; '
         'from opencompass_longctx.longbio.dataset import load_longbio; '
         'from opencompass_longctx.cache import checksum')
PROMPT_COLUMNS = {'nolima': ['prompt'], 'longbio': ['system', 'user', 'prefix']}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/cache_data')
    ap.add_argument('--nolima-tier', default='8k')
    ap.add_argument('--book-tokens', type=int, default=40000)
    ap.add_argument('--longbio-tier', default='32k')
    ap.add_argument('--longbio-cells', default='standard,rank_5,citation_2,idk')
    ap.add_argument('--longbio-samples', type=int, default=40)
    ap.add_argument('--codecs', default='zstd,lz4,none')
    ap.add_argument('--num-proc', type=int, default=None, help='build processes (default: the loaders\' default)')
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)

    from opencompass_longctx.demo import nolima_data
    data_dir = os.path.abspath(args.dir)
    books = os.path.join(data_dir, 'nolima')
    marker = os.path.join(books, f'.book_tokens_{args.book_tokens}')
    if not os.path.isfile(marker):
        shutil.rmtree(books, ignore_errors=True)
        nolima_data.write(books, book_tokens=args.book_tokens)
        open(marker, 'w').close()
    np_arg = '' if args.num_proc is None else f', num_proc={args.num_proc}'
    calls = {
        'nolima': [f'load_nolima({args.nolima_tier!r}, path={books!r}{np_arg})'],
        'longbio': [f'load_longbio({args.longbio_tier!r}, cell={c!r}, num_samples={args.longbio_samples}{np_arg})'
                    for c in args.longbio_cells.split(',') if c],
    }
    rows, out = [], {}
    for bench, loads in calls.items():
        if not loads:
            continue
        cols = PROMPT_COLUMNS[bench]
        text_bytes = None
        for codec in args.codecs.split(','):
            root = os.path.join(data_dir, f'cache_{bench}_{codec}')
            shutil.rmtree(root, ignore_errors=True)
            env = {'LONGCTX_CACHE_DIR': root, 'LONGCTX_CACHE_COMPRESSION': codec, 'LONGCTX_PROGRESS': '0'}
            body = 'RESULT = ' + ' + '.join(f'len({call})' for call in loads)
            first = measure(SETUP, body, env)
            again = measure(SETUP, body, env)
            entries = sorted(glob.glob(os.path.join(root, bench, '*', 'data.arrow')))
            check = measure(SETUP, f'RESULT = [checksum(p) for p in {entries!r}]', env)
            if text_bytes is None:  # the prompts' UTF-8 bytes (the same rows for every codec)
                text_bytes = measure(SETUP, 'RESULT = sum(sum(len(s.encode()) for c in ' + repr(cols) +
                                     ' for s in ds[c]) for ds in [' + ', '.join(loads) + '])', env)['result']
            size = sum(os.path.getsize(p) for p in entries)
            r = {'rows': first['result'], 'prompt_bytes': text_bytes, 'entry_bytes': size,
                 'size_ratio': size / text_bytes, 'build_s': first['seconds'], 'reload_s': again['seconds'],
                 'reload_ratio': again['seconds'] / first['seconds'], 'check_s': check['seconds'],
                 'check_ratio': check['seconds'] / again['seconds'],
                 'reload_peak_mib': again['peak_rss_mib'] - again['rss_before_mib'],
                 'build_peak_mib': first['peak_rss_mib'] - first['rss_before_mib']}
            out[f'{bench}/{codec}'] = r
            rows.append((f'{bench} {codec}', f'{r["rows"]:,} rows; entry {size / 1e6:,.1f} MB = '
                         f'{100 * r["size_ratio"]:.1f}% of {text_bytes / 1e6:,.1f} MB prompts; build '
                         f'{r["build_s"]:.2f} s, reload {r["reload_s"]:.3f} s = {100 * r["reload_ratio"]:.1f}%; '
                         f'check {r["check_s"] * 1e3:.1f} ms = {100 * r["check_ratio"]:.1f}% of reload; '
                         f'reload peak +{r["reload_peak_mib"]:.0f} MiB'))
    rows.insert(0, ('entries', f'NoLiMa {args.nolima_tier} (stand-in books of {args.book_tokens:,} tokens); '
                               f'LongBioBench {args.longbio_tier} cells {args.longbio_cells} x '
                               f'{args.longbio_samples} samples; loaders\' default tokenizers'))
    report('Dataset cache: entry size and reload time per codec', rows, args.json)
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump({'args': vars(args), 'results': out}, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
