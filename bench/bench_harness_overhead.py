"""Benchmark: the harness's own overhead on the real-model CPU run (examples/eval_longctx_cpu.py).

    python bench/bench_harness_overhead.py [--tiers 0k,1k,2k] [--samples 1] [--dir bench/results/harness]

1. Runs `opencompass examples/eval_longctx_cpu.py` (SmolLM2-135M-Instruct and the rule reader, through
   LongCtxPartitioner) and takes its wall time.
2. Replays, in one process, every prompt the run sent to SmolLM2 (the parsed prompts of its predictions files)
   through the same model wrapper with the same max_out_len and batch size, timing only the wrapper's
   ``generate()``: the model's own time on exactly the run's work.
3. Reports the ratio run wall time / generate time (the physical floor is 1.0: everything above is the harness:
   subprocess imports, model loads, dataset builds, evaluation, the summary). The predictions of the replay are
   compared with the run's (greedy decoding: they must be equal).
Needs the converted model (`longctx-smollm2`, or $LONGCTX_SMOLLM2_DIR).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = 'smollm2-135m-instruct'


def replay(run_dir: str) -> dict:
    from mmengine.config import Config
    from opencompass.utils import build_model_from_cfg
    from opencompass.utils.prompt import PromptList

    from opencompass_longctx.overlength import OVER_LENGTH
    cfg = Config.fromfile(sorted(glob.glob(os.path.join(run_dir, 'configs', '*.py')))[-1])
    model_cfg = next(m for m in cfg['models'] if m['abbr'] == MODEL)
    out_len = {d['abbr']: d['infer_cfg']['inferencer'].get('max_out_len') or model_cfg['max_out_len']
               for d in cfg['datasets']}
    batch = model_cfg.get('batch_size', 1)
    t = time.perf_counter()
    model = build_model_from_cfg(model_cfg)
    load = time.perf_counter() - t
    gen, prompts, same, total = 0.0, 0, 0, 0
    for path in sorted(glob.glob(os.path.join(run_dir, 'predictions', MODEL, '*.json'))):
        abbr = os.path.basename(path)[:-5]
        preds = [p for p in json.load(open(path)).values() if p['prediction'] != OVER_LENGTH]
        for i in range(0, len(preds), batch):
            chunk = preds[i:i + batch]
            inputs = [PromptList(p['origin_prompt']) if isinstance(p['origin_prompt'], list) else p['origin_prompt']
                      for p in chunk]
            t = time.perf_counter()
            outs = model.generate(inputs, max_out_len=out_len[abbr])
            gen += time.perf_counter() - t
            prompts += len(chunk)
            same += sum(o == p['prediction'] for o, p in zip(outs, chunk))
            total += len(chunk)
    return {'generate_s': gen, 'load_s': load, 'prompts': prompts, 'same_predictions': same, 'compared': total}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--tiers', default='0k,1k,2k,4k,8k,16k')
    ap.add_argument('--samples', type=int, default=2)
    ap.add_argument('--dir', default='bench/results/harness')
    args = ap.parse_args(argv)
    work = os.path.abspath(args.dir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, LONGCTX_CPU_TIERS=args.tiers, LONGCTX_CPU_SAMPLES=str(args.samples),
               LONGCTX_CACHE_DIR=os.path.join(work, 'cache'), LONGCTX_PROGRESS='0')
    exe = os.path.join(os.path.dirname(sys.executable), 'opencompass')
    t = time.perf_counter()
    proc = subprocess.run([exe, os.path.join(REPO, 'examples', 'eval_longctx_cpu.py'), '-w', 'out'], cwd=work,
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        return 1
    (run,) = glob.glob(os.path.join(work, 'out', '*'))
    r = replay(run)
    ratio = wall / r['generate_s']
    report('Harness overhead of the real-model CPU run (examples/eval_longctx_cpu.py)', [
        ('tiers, samples', f'{args.tiers}, {args.samples}'),
        ('run wall time (opencompass, both models, inference + evaluation + summary)', f'{wall:.1f} s'),
        (f'{MODEL}: prompts sent to the model', str(r['prompts'])),
        (f"{MODEL}: the model's own generate() time on the same prompts", f"{r['generate_s']:.1f} s"),
        (f'{MODEL}: one model load (for reference)', f"{r['load_s']:.1f} s"),
        ('ratio run wall time / generate time (floor 1.0)', f'{ratio:.2f}'),
        ('replayed predictions equal to the run (greedy)', f"{r['same_predictions']} of {r['compared']}"),
    ], os.path.join(REPO, 'bench', 'results', 'harness.json'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
