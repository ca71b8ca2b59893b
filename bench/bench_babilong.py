"""Benchmark: BABILong tier build from local files, first build vs cached rebuild, and peak memory.

    python bench/bench_babilong.py [--dir bench/results/babilong_data] [--tier 1m] [--samples 30]

Writes BABILong-format files with the project's demo generator (the licensed data is not needed), then,
each in a fresh process as OpenCompass does:
  1. first build of the tier (stream the JSON, format prompts, count GPT-2 tokens, write the cache);
  2. second build of the same tier (served by the cache);
  3. the same through OpenCompass's dataset class (what each infer/eval subprocess pays).
Peak memory is the process's peak RSS during the build minus its RSS after imports.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_and_reload, report  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/babilong_data')
    ap.add_argument('--tier', default='1m')
    ap.add_argument('--task', default='qa1')
    ap.add_argument('--samples', type=int, default=30)
    args = ap.parse_args(argv)

    from opencompass_longctx.demo import babilong_data
    from opencompass_longctx.babilong.data import file_name
    from opencompass_longctx.tiers import parse_tier
    data_dir = os.path.abspath(args.dir)
    path = os.path.join(data_dir, 'data', args.task, file_name(parse_tier(args.tier)))
    t = time.perf_counter()
    if not os.path.isfile(path):
        babilong_data.write(data_dir, tiers=[args.tier], tasks=[args.task], samples=args.samples)
    gen_s = time.perf_counter() - t
    size_mb = os.path.getsize(path) / 1e6

    cache = os.path.join(data_dir, '_cache')
    setup = 'from opencompass_longctx.babilong.dataset import load_babilong, BabilongDataset'
    call = f'tier={args.tier!r}, task={args.task!r}, path={data_dir!r}'
    first, second, oc, env = build_and_reload(
        setup, f'load_babilong({call})',
        f"BabilongDataset(reader_cfg=dict(input_columns=['prompt'], output_column='target'), abbr='b', {call})", cache)
    rows = [
        ('file', f'{os.path.relpath(path)} ({size_mb:.0f} MB, {first["result"]} samples)'),
        ('generate file (demo generator)', f'{gen_s:.1f} s' if gen_s > 0.1 else 'reused'),
        ('first build (parse + prompts + GPT-2 counts + cache write)', f'{first["seconds"]:.2f} s'),
        ('second build (cache)', f'{second["seconds"]:.3f} s  = {100 * second["seconds"] / first["seconds"]:.1f}% '
                                 'of the first'),
        ('second build via OpenCompass BabilongDataset (incl. its map)', f'{oc["seconds"]:.3f} s'),
        ('peak memory, first build (RSS over baseline)',
         f'{first["peak_rss_mib"] - first["rss_before_mib"]:.0f} MiB (file is {size_mb:.0f} MB; '
         f'baseline after imports {first["rss_before_mib"]:.0f} MiB)'),
        ('peak memory, cached reload (RSS over baseline)', f'{second["peak_rss_mib"] - second["rss_before_mib"]:.0f} MiB'),
    ]
    report(f'BABILong {args.task} {args.tier}: build and reload', rows,
           os.path.join('bench', 'results', f'babilong_{args.task}_{args.tier}.json'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
