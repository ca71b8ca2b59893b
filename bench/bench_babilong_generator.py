"""Benchmark: BABILong generator speed (vs one encode of the same text) and peak memory.

    python bench/bench_babilong_generator.py [--dir bench/results/generator_inputs] [--books 20]

Inputs are written by the project (bAbI-format stories, plain-text books of made-up sentences; 20 books of
~2.3 MB each, the size of the PG19 test split). In one process: per sample, the time of ``Generator.make``
and, right after, the time of one encode of the sample's final text with the same tokenizer layer
(``Tokenizer.count``); medians over 5 samples at 128k and 5 at 1m. In a fresh process: 20 samples at 1m
written to disk, peak RSS.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, report  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/generator_inputs')
    ap.add_argument('--books', type=int, default=20)
    ap.add_argument('--samples', type=int, default=5)
    args = ap.parse_args(argv)

    from opencompass_longctx import demo_data
    from opencompass_longctx.babilong.generator import Generator
    babi, books = os.path.join(args.dir, 'babi'), os.path.join(args.dir, 'books')
    if not os.path.isdir(books):
        demo_data.write_babi(babi, tasks=['qa1', 'qa2'], stories=200)
        demo_data.write_books(books, books=args.books, sentences=40000)
    t = time.perf_counter()
    gen = Generator(babi, books)
    gen.make('qa1', '1k', 0, 0)  # loads the books and the tokenizer
    load_s = time.perf_counter() - t

    rows = [('inputs', f'{args.books} books, {sum(os.path.getsize(os.path.join(books, f)) for f in os.listdir(books)) / 1e6:.0f} MB; '
                       f'setup (books + tokenizer) {load_s:.2f} s')]
    for tier in ('128k', '1m'):
        gen_s, enc_s = [], []
        for i, story in enumerate(gen.questions('qa2', tier, args.samples)):
            t = time.perf_counter()
            s = gen.make('qa2', tier, i, story)
            gen_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            n = gen.tok.count(s['input'])
            enc_s.append(time.perf_counter() - t)
        ratios = [g / e for g, e in zip(gen_s, enc_s)]
        rows += [(f'{tier}: generate one sample (median of {args.samples})', f'{statistics.median(gen_s):.3f} s'),
                 (f'{tier}: one encode of its final text (median)', f'{statistics.median(enc_s):.3f} s ({n} tokens)'),
                 (f'{tier}: ratio generate/encode (median; per sample)',
                  f'{statistics.median(ratios):.2f}x; ' + ', '.join(f'{r:.2f}' for r in ratios))]
    out = tempfile.mkdtemp(prefix='babilong_gen_')
    big = measure(
        'from opencompass_longctx.babilong.generator import Generator, write\n'
        f'gen = Generator({babi!r}, {books!r}); gen.make("qa1", "1k", 0, 0)',
        f'RESULT = write(gen, {out!r}, ["1m"], ["qa1"], 20, progress=False)', {'LONGCTX_PROGRESS': '0'})
    rows += [('20 samples at 1m written to disk', f'{big["seconds"]:.1f} s'),
             ('peak RSS for that process', f'{big["peak_rss_mib"]:.0f} MiB total '
                                            f'({big["peak_rss_mib"] - big["rss_before_mib"]:.0f} MiB over the '
                                            'state after loading books and tokenizer)')]
    report('BABILong generator', rows, os.path.join('bench', 'results', 'babilong_generator.json'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
