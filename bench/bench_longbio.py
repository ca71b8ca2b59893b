"""Benchmark: LongBioBench generation speed, cached reload and peak memory (default offline tokenizer).

    python bench/bench_longbio.py [--dir bench/results/longbio_cache] [--samples 50] [--cells standard,pronoun]

Each measurement runs in a fresh process (as OpenCompass builds every dataset in a fresh process):
  1. per-sample generation time at 128k and 1m (median over several samples after a warm-up sample), next to
     the time of one encode of the same sample's final text (system + user + assistant prefix) with the same
     tokenizer, measured in the same process;
  2. the first build of one cell at 1m with --samples samples through the dataset loader (generation +
     cache write), its peak memory, and the reload of the same cached tier in a new process.
Targets (issue 3): 128k <= 0.5 s and 1m <= 4 s per sample (median); generation <= 1.5x one encode; a cached
tier reloads in <= 10% of its generation time; 50 samples of one cell at 1m under 3 GiB peak memory.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, report  # noqa: E402

PER_SAMPLE = r'''
import statistics, time
gen = Generator(make_spec(TIER, cell=CELL, mode=MODE))
tok = gen.spec.tokenizer
gen.rows(0)                       # warm-up: pools, templates, word counts
g, e, toks = [], [], []
for i in range(1, K + 1):
    t = time.perf_counter(); rows = gen.rows(i); g.append(time.perf_counter() - t)
    r = rows[0]
    t = time.perf_counter()
    n = len(tok.encode(r['system'])) + len(tok.encode(r['user'])) + len(tok.encode(r['prefix']))
    e.append(time.perf_counter() - t)
    assert n == r['prompt_tokens'], (n, r['prompt_tokens'])
    toks.append(n)
RESULT = dict(gen=statistics.median(g), enc=statistics.median(e), gen_max=max(g),
              ratio_max=max(a / b for a, b in zip(g, e)), tokens=min(toks), k=K)
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/longbio_cache')
    ap.add_argument('--samples', type=int, default=50, help='samples of the 1m tier build (default 50)')
    ap.add_argument('--cells', default='standard,pronoun,citation_2,idk',
                    help='cells timed per sample (compat and strict)')
    ap.add_argument('--build-cell', default='standard')
    args = ap.parse_args(argv)

    setup = 'from opencompass_longctx.longbio.generator import Generator, make_spec'
    rows, checks = [], []
    for tier, k in (('128k', 7), ('1m', 5)):
        for cell in args.cells.split(','):
            for mode in ('compat', 'strict'):
                body = f'TIER, CELL, MODE, K = {tier!r}, {cell!r}, {mode!r}, {k}\n' + PER_SAMPLE
                r = measure(setup, body, {'LONGCTX_PROGRESS': '0'})['result']
                limit = 0.5 if tier == '128k' else 4.0
                checks += [r['gen'] <= limit, r['gen'] <= 1.5 * r['enc']]
                rows.append((f'{tier} {cell} {mode}: one sample ({r["tokens"]:,}+ tokens), median of {r["k"]}',
                             f'{r["gen"]:.3f} s (max {r["gen_max"]:.3f}); one encode of its text {r["enc"]:.3f} s; '
                             f'ratio {r["gen"] / r["enc"]:.2f} (worst sample {r["ratio_max"]:.2f})'))

    cache = os.path.abspath(os.path.join(args.dir, '_cache'))
    shutil.rmtree(cache, ignore_errors=True)
    env = {'LONGCTX_CACHE_DIR': cache, 'LONGCTX_PROGRESS': '0'}
    setup = 'from opencompass_longctx.longbio.dataset import load_longbio, LongBioDataset'
    call = f"'1m', cell={args.build_cell!r}, num_samples={args.samples}"
    first = measure(setup, f'RESULT = len(load_longbio({call}))', env)
    second = measure(setup, f'RESULT = len(load_longbio({call}))', env)
    oc = measure(setup, "RESULT = len(LongBioDataset(reader_cfg=dict(input_columns=['system', 'user', 'prefix'], "
                        f"output_column='answer'), abbr='b', tier={call}).test)", env)
    size_mb = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(cache) for f in fs) / 1e6
    checks += [second['seconds'] <= 0.1 * first['seconds'], first['peak_rss_mib'] < 3 * 1024]
    rows += [
        (f'1m {args.build_cell}: first build of {first["result"]} samples (generate + cache write)',
         f'{first["seconds"]:.2f} s = {first["seconds"] / first["result"]:.3f} s per sample ({size_mb:.0f} MB cached)'),
        ('1m: reload of the cached tier in a new process',
         f'{second["seconds"]:.3f} s = {100 * second["seconds"] / first["seconds"]:.1f}% of the build'),
        ('1m: reload via OpenCompass LongBioDataset (incl. its map)', f'{oc["seconds"]:.3f} s'),
        ('1m: peak memory of the build (whole process)',
         f'{first["peak_rss_mib"]:.0f} MiB (after imports {first["rss_before_mib"]:.0f} MiB; '
         f'build adds {first["peak_rss_mib"] - first["rss_before_mib"]:.0f} MiB)'),
        ('1m: peak memory of the cached reload (whole process)', f'{second["peak_rss_mib"]:.0f} MiB'),
        ('all targets met', 'yes' if all(checks) else f'NO ({checks.count(False)} missed)'),
    ]
    report('LongBioBench: generation, cached reload and memory (default tokenizer)', rows,
           os.path.join('bench', 'results', 'longbio.json'))
    return 0 if all(checks) else 1


if __name__ == '__main__':
    sys.exit(main())
