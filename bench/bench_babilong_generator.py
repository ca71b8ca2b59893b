"""Benchmark: BABILong generator speed (vs one encode of the same text), num_proc=1 vs 2, and peak memory.

    python bench/bench_babilong_generator.py [--dir bench/results/generator_inputs] [--books 20]
                                             [--write-tier 1m] [--write-samples 20] [--num-proc 1,2]

Inputs are written by the project (bAbI-format stories, plain-text books of made-up sentences; 20 books of
~2.3 MB each, the size of the PG19 test split). In one process: per sample, the time of ``Generator.make``
and, right after, the time of one encode of the sample's final text with the same tokenizer layer
(``Tokenizer.count``); medians over 5 samples at 128k and 5 at 1m. In a fresh process per --num-proc:
--write-samples samples at --write-tier written to disk by ``generator.write`` (the CLI), with wall time,
CPU time of the process and of its workers, peak RSS of the process and of its largest worker, and the time
expected on 16 cores; the files are checked to be byte-identical across --num-proc.
"""
import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_rows, measure, report  # noqa: E402


def disk_digest(root: str) -> str:
    h = hashlib.sha256()
    for d, _, fs in sorted(os.walk(root)):
        for f in sorted(fs):
            h.update(f.encode())
            with open(os.path.join(d, f), 'rb') as fh:
                h.update(fh.read())
    return h.hexdigest()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/generator_inputs')
    ap.add_argument('--books', type=int, default=20)
    ap.add_argument('--samples', type=int, default=5)
    ap.add_argument('--write-tier', default='1m')
    ap.add_argument('--write-samples', type=int, default=20)
    ap.add_argument('--num-proc', default='1,2')
    args = ap.parse_args(argv)

    from opencompass_longctx.demo import babilong_data
    from opencompass_longctx.tiers import parse_tier
    from opencompass_longctx.babilong.generator import Generator
    babi, books = os.path.join(args.dir, 'babi'), os.path.join(args.dir, 'books')
    if not os.path.isdir(books):
        babilong_data.write_babi(babi, tasks=['qa1', 'qa2'], stories=200)
        babilong_data.write_books(books, books=args.books, sentences=40000)
    t = time.perf_counter()
    gen = Generator(babi, books)
    gen.make('qa1', parse_tier('1k'), 0, 0)  # loads the books and the tokenizer
    load_s = time.perf_counter() - t

    rows = [('inputs', f'{args.books} books, {sum(os.path.getsize(os.path.join(books, f)) for f in os.listdir(books)) / 1e6:.0f} MB; '
                       f'setup (books + tokenizer) {load_s:.2f} s')]
    for tier in (parse_tier('128k'), parse_tier('1m')):
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
    # what a worker does before its first sample: imports, the tokenizer, reading the books
    startup = measure('', 'from opencompass_longctx.babilong.generator import Generator\n'
                          'from opencompass_longctx.tiers import parse_tier\n'
                          f'Generator({babi!r}, {books!r}).make("qa1", parse_tier("1k"), 0, 0)')['cpu_s']
    rows.append(('build worker start-up (imports, tokenizer, books)', f'{startup:.2f} CPU-s'))
    digests, runs = set(), {}
    for num_proc in [int(x) for x in args.num_proc.split(',')]:
        out = tempfile.mkdtemp(prefix='babilong_gen_')
        r = runs[num_proc] = measure(
            'from opencompass_longctx.babilong.generator import Generator, write\n'
            'from opencompass_longctx.tiers import parse_tier\n'
            f'gen = Generator({babi!r}, {books!r}); gen.make("qa1", parse_tier("1k"), 0, 0)',
            f'RESULT = write(gen, {out!r}, [{args.write_tier!r}], ["qa1"], {args.write_samples}, progress=False, '
            f'num_proc={num_proc})', {'LONGCTX_PROGRESS': '0'})
        digests.add(disk_digest(os.path.join(out, 'data')))
        shutil.rmtree(out, ignore_errors=True)
        what = f'{args.write_samples} samples at {args.write_tier} written to disk, num_proc={num_proc}'
        rows.append((f'{what}: wall time', f'{r["seconds"]:.1f} s'))
        rows += build_rows(what, r, num_proc, runs.get(1), startup_s=startup)
    rows.append(('files byte-identical across num_proc', 'yes' if len(digests) == 1 else 'NO'))
    report('BABILong generator', rows, os.path.join('bench', 'results', 'babilong_generator.json'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
