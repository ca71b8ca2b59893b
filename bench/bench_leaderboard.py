"""Benchmark: `longctx-report` on a leaderboard-sized run, with every comparison the ranks rest on and every rank
interval (issue 40: at most 60 s on 2 cores for 50 models x 6 tiers x the three benchmarks).

    python bench/bench_leaderboard.py [--models 50] [--dir bench/results/leaderboard] [--plots] [--html]

Writes one synthetic finished run (opencompass_longctx.demo.synthetic_run: BABILong qa1-qa5 x 100 stories, NoLiMa
main copied per model x 58 needle entries x 26 prompts, LongBioBench standard/calculation/idk x 100 seeds, each at
6 tiers; models spread from 95% down to 5%, falling with length), then times the real command in a subprocess
(its imports included) and prints the sizes it handled.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

TIERS = {'babilong': ['0k', '1k', '2k', '4k', '8k', '16k'], 'nolima': ['250', '500', '1k', '2k', '4k', '8k'],
         'longbio': ['0k', '1k', '2k', '4k', '8k', '16k']}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--models', type=int, default=50)
    ap.add_argument('--dir', default='bench/results/leaderboard')
    ap.add_argument('--plots', action='store_true')
    ap.add_argument('--html', action='store_true')
    args = ap.parse_args(argv)
    from opencompass_longctx.demo.synthetic_run import write_run
    root = os.path.abspath(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    models = [f'model-{i:02d}' for i in range(args.models)]

    def ability(m, bench, tier):
        i = models.index(m)
        return max(0.02, 0.95 - 0.9 * i / max(len(models) - 1, 1) - 0.02 * TIERS[bench].index(tier))

    start = time.perf_counter()
    run = write_run(os.path.join(root, 'run', '20261204_000000'), models, ability, TIERS)
    written = time.perf_counter() - start
    out = os.path.join(root, 'report')
    cmd = [os.path.join(os.path.dirname(sys.executable), 'longctx-report'), run, '-o', out]
    cmd += [] if args.plots else ['--no-plots']
    cmd += [] if args.html else ['--no-html']
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f'longctx-report failed ({proc.returncode}):\n{proc.stderr[-3000:]}')
    data = json.load(open(os.path.join(out, 'longctx_compare.json')))
    board = data['leaderboard']
    print(f'{args.models} models x 6 tiers x 3 benchmarks: run written in {written:.1f} s; '
          f'`{" ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))}`: {took:.1f} s; '
          f'{len(data["paired"])} comparisons in the table, {len(board)} leaderboard entries, '
          f'{sum(len(e["tier_ranks"]) for e in board)} per-tier rank intervals')
    for bench in TIERS:
        mine = [e for e in board if e['bench'] == bench]
        print(f'  {bench}: {len({e["rank"] for e in mine})} distinct ranks among {len(mine)} models; first '
              f'{mine[0]["model"]} ({mine[0]["rank_text"]}), last {mine[-1]["model"]} ({mine[-1]["rank_text"]})')


if __name__ == '__main__':
    main()
