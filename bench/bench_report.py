"""Benchmark: the long-context summarizer on a finished run: result-file reads and time.

    python bench/bench_report.py [--dir bench/results/report_run] [--models 3] [--samples 500] [--plots]

Writes a synthetic run (LongBioBench 15 cells and NoLiMa main at 6 tiers for each model, ``--samples`` per-sample
details with needle depths in every result file), then runs ``LongCtxSummarizer.summarize`` in this process, as
``opencompass`` does after evaluation, and counts how often a result file is opened (OpenCompass's own summary,
the tier table and the plots together) and how long it takes. Works on any version of the package (it counts
``open`` calls), so the same command on an older checkout (``PYTHONPATH=<old tree>``) gives the ratio.
"""
import argparse
import builtins
import json
import os
import shutil
import time

TIERS = ('0k', '1k', '2k', '4k', '8k', '16k')
CELLS = ('standard', 'multi_standard_2', 'multi_standard_5', 'multi_standard_10', 'paraphrase', 'pronoun',
         'calculation', 'rank_2', 'rank_5', 'multihop_2', 'multihop_5', 'twodiff', 'citation_1', 'citation_2', 'idk')


def write_run(root: str, models: int, samples: int):
    shutil.rmtree(root, ignore_errors=True)
    import opencompass_longctx
    abbrs = [f'longbio_{c}_{t}' for t in TIERS for c in CELLS] + [f'nolima_main_{t}' for t in TIERS if t != '0k']
    for m in range(models):
        d = os.path.join(root, 'results', f'model-{m}')
        os.makedirs(d)
        for abbr in abbrs:
            details = [{'correct': [i % 3 == 0], 'depth': [(i % 26) / 25], 'pair': [f'p{i % 8}'],
                        'haystack': ['h0'], 'context_length': [1000], 'question_type': ['onehop'],
                        'over_length': [False]} for i in range(samples)]
            with open(os.path.join(d, f'{abbr}.json'), 'w') as f:
                json.dump({'accuracy': 33.3, 'counts': {'n': samples, 'over_length': 0},
                           'package_version': [opencompass_longctx.__version__], 'details': details}, f)
    infer = dict(retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer'))
    return dict(models=[dict(abbr=f'model-{m}', max_seq_len=32768) for m in range(models)],
                datasets=[dict(abbr=a, infer_cfg=infer) for a in abbrs], work_dir=root), len(abbrs) * models


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--dir', default='bench/results/report_run')
    ap.add_argument('--models', type=int, default=3)
    ap.add_argument('--samples', type=int, default=500)
    ap.add_argument('--plots', action='store_true')
    args = ap.parse_args(argv)
    from mmengine.config import ConfigDict

    from opencompass_longctx.summarizers.longctx import LongCtxSummarizer
    cfg, files = write_run(os.path.abspath(args.dir), args.models, args.samples)
    opens = []
    real_open = builtins.open

    def counting_open(file, *a, **kw):
        if isinstance(file, str) and os.sep + 'results' + os.sep in file and file.endswith('.json'):
            opens.append(file)
        return real_open(file, *a, **kw)

    builtins.open = counting_open
    try:
        start = time.perf_counter()
        LongCtxSummarizer(ConfigDict(cfg), plots=args.plots).summarize(time_str='bench')
        seconds = time.perf_counter() - start
    finally:
        builtins.open = real_open
    print(f'\nresult files: {files}; opened {len(opens)} times ({len(opens) / files:.2f} per file); '
          f'summarize: {seconds:.2f} s (plots {"on" if args.plots else "off"})')


if __name__ == '__main__':
    main()
