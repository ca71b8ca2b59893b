"""``longctx-gpu-check``: the leaderboard's engine path served for real on one GPU, with a report that says what
works (see the package doc, :mod:`opencompass_longctx.gpucheck`)."""
import argparse
import os
import shutil
import sys
import time
from typing import Dict, List, Optional

from opencompass_longctx.gpucheck import environment
from opencompass_longctx.gpucheck.report import LIMITS, Report
STAGES = ('model', 'data', 'opencompass', 'bench', 'prefix', 'tp')   # the Python and the stack are always checked first
PER_ENGINE = ('opencompass', 'bench', 'prefix', 'tp')                  # stages run once per engine
REHEARSAL_GPU = 'H200-141GB'


def parse(argv=None):
    ap = argparse.ArgumentParser(prog='longctx-gpu-check', description=(
        'Serve a few real prompts of BABILong, LongBioBench and NoLiMa through the leaderboard\'s LMDeploy path on '
        'this GPU (TurboMind and the PyTorch engine where both load), compare the engines with the plan, measure '
        'prefill and decode throughput, and end with one line that says what works.'))
    ap.add_argument('--out', default=os.environ.get('OUT') or os.path.join('outputs', 'gpu_check'),
                    help='where gpu_check.json, gpu_check.md and gpu_check.jsonl go (default: $OUT or '
                    'outputs/gpu_check)')
    ap.add_argument('--work', default=os.path.join('outputs', 'gpu_check_work'),
                    help='model directory (about 15 GB of random weights), data, OpenCompass runs')
    ap.add_argument('--model-dir', default=None,
                    help='serve this downloaded Qwen2.5-7B-Instruct directory instead of random weights at its '
                    'geometry (real answers; scores are still not the point)')
    ap.add_argument('--engines', default='auto', help="'auto' (both where TurboMind loads, else the PyTorch "
                    "engine), or a comma list of turbomind,pytorch")
    ap.add_argument('--stages', default=','.join(STAGES), help=f"a subset of {','.join(STAGES)}")
    ap.add_argument('--tiers', default='0k,4k,32k', help="the short band's tiers (comma-separated)")
    ap.add_argument('--long-tier', default='128k')
    ap.add_argument('--samples', type=int, default=1, help='samples per dataset at the short tiers')
    ap.add_argument('--prefix-tier', default='4k', help="the prefix-cache stage's NoLiMa tier (one of the short tiers)")
    ap.add_argument('--rehearse-gpus', type=int, default=2,
                    help='GPUs a rehearsal pretends to see (2: the tp > 1 stage is rehearsed too)')
    ap.add_argument('--limits', default='', help='seconds per stage kind, e.g. opencompass=300,bench=90 (defaults: '
                    + ','.join(f'{k}={v}' for k, v in LIMITS.items()) + ')')
    ap.add_argument('--call-seconds', type=float, default=float(os.environ.get('LONGCTX_GPU_CALL_S') or 0),
                    help='a limit for the whole check, counted from $LONGCTX_GPU_T0 (else from now): no stage runs '
                    'past it (0: none)')
    ap.add_argument('--bench-batch', type=int, default=None,
                    help="the decode batch (default: the short band's planned max_batch_size, else 8)")
    ap.add_argument('--gpu', default=None, help='the tables/cost_model.py GPUS key to plan and measure for '
                    '(default: from the device name)')
    ap.add_argument('--peak-tflops', type=float, default=None, help='dense BF16 peak of a GPU not in GPUS')
    ap.add_argument('--hbm-tbps', type=float, default=None, help='HBM bandwidth (TB/s) of a GPU not in GPUS')
    ap.add_argument('--python', default=None, help='require exactly this Python (e.g. 3.12: a cp312 wheelhouse)')
    ap.add_argument('--python-only', action='store_true', help='check the Python version, write the report, stop')
    ap.add_argument('--rehearse', action='store_true', help='no GPU: stop each process at its first CUDA call')
    args = ap.parse_args(argv)
    stages = [s for s in args.stages.split(',') if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        ap.error(f'unknown stage(s) {unknown}; known: {list(STAGES)}')
    limits = dict(LIMITS)
    for item in filter(None, args.limits.split(',')):
        k, _, v = item.partition('=')
        if k not in LIMITS or not v.isdigit():
            ap.error(f'--limits: {item!r} is not KIND=SECONDS with a kind of {sorted(LIMITS)}')
        limits[k] = int(v)
    if args.gpu:
        from opencompass_longctx.tables.cost_model import GPUS
        if args.gpu not in GPUS:
            ap.error(f'--gpu: {args.gpu!r} is not in tables/cost_model.py GPUS ({", ".join(GPUS)}); for another GPU '
                     'leave --gpu out and give --peak-tflops and --hbm-tbps')
    for e in args.engines.split(','):
        if args.engines != 'auto' and e not in ('turbomind', 'pytorch'):
            ap.error(f"--engines: {e!r} is not turbomind or pytorch (or give 'auto')")
    return args, stages, limits


def _stack(rec, rehearse: bool, requested: str) -> Dict:
    info, problems = environment.check_stack(rehearse)
    rec.set(**info)
    if problems:
        raise RuntimeError(' | '.join(problems))
    if rehearse and requested == 'auto':
        engines, why = ['pytorch'], 'a rehearsal: the PyTorch engine (TurboMind is a compiled library)'
    else:
        engines, why = environment.engines(info, requested)
    return {'engines': engines, 'engines_why': why}


def _gpu(args, info: Dict) -> Dict:
    """The cost model's GPU: (key, extra GPUS entry or None, peak TFLOPS, HBM TB/s)."""
    from opencompass_longctx.tables.cost_model import GPUS
    from opencompass_longctx.gpucheck.throughput import gpu_key
    key = args.gpu or (REHEARSAL_GPU if args.rehearse else gpu_key(info.get('gpu', '')))
    if key in GPUS:
        g = GPUS[key]
        return dict(key=key, gpus=None, peak=args.peak_tflops or g['bf16_tflops'], hbm=args.hbm_tbps or g['hbm_tbps'])
    total = info.get('gpu_memory_gib') or 0
    # not in the table: plan for what CUDA reports; peak figures only where given (else no MFU is computed)
    entry = dict(memory_gib=round(total), visible_memory_gib=total, bf16_tflops=args.peak_tflops or 1.0,
                 hbm_tbps=args.hbm_tbps or 1.0, source=f"{info.get('gpu')}: total memory as CUDA reports it; "
                 + ('peak figures as given' if args.peak_tflops and args.hbm_tbps else
                    'placeholder peak figures (1 TFLOPS, 1 TB/s): the plan\'s times mean nothing; give --peak-tflops '
                    'and --hbm-tbps'))
    return dict(key='this-gpu', gpus={'this-gpu': entry}, peak=args.peak_tflops, hbm=args.hbm_tbps)


def main(argv=None) -> int:
    args, stages, limits = parse(argv)
    t0 = float(os.environ.get('LONGCTX_GPU_T0') or time.time())
    deadline = t0 + args.call_seconds - 10 if args.call_seconds > 0 else None
    command = 'longctx-gpu-check' + (' ' + ' '.join(argv if argv is not None else sys.argv[1:])).rstrip()
    report = Report(args.out, command, args.rehearse, deadline, limits)
    report.data['limits'] = dict(limits, call_seconds=args.call_seconds)

    def done(rc: int) -> int:
        from opencompass_longctx.gpucheck.throughput import cost_model_lines
        report.data['cost_model_lines'] = cost_model_lines(report.data)
        line = report.finish()
        if report.data['cost_model_lines']:
            print('\n'.join(['[gpu_check] for tables/cost_model.py:', *report.data['cost_model_lines']]), flush=True)
        print(f"[gpu_check] report: {report.paths['md']} and {report.paths['json']}", flush=True)
        print(line, flush=True)
        return rc

    # 1. the Python version, before anything is imported
    def python(rec):
        problems = environment.check_python(exact=args.python)
        rec.set(python='.'.join(map(str, environment.python_version())), executable=sys.executable)
        if problems:
            raise RuntimeError(problems[0])
    if report.stage('python', python)['status'] != 'ok':
        return done(2)
    if args.python_only:
        return done(0)
    work = os.path.abspath(args.work)
    env = dict(os.environ, LMDEPLOY_LOG_LEVEL='INFO', PYTHONUNBUFFERED='1')
    if args.rehearse:
        _rehearsal(work, env)
    # 2. LMDeploy, torch, CUDA, the GPU, TurboMind
    stack = report.stage('stack', _stack, args.rehearse, args.engines, later=stages)
    if stack['status'] != 'ok':
        return done(2)
    gpu = _gpu(args, stack)
    report.data['gpu_key'] = gpu['key']
    engines: List[str] = stack['engines']
    model_dir = os.path.abspath(args.model_dir) if args.model_dir else os.path.join(work, 'model')
    data_dir = os.path.join(work, 'data')
    os.makedirs(data_dir, exist_ok=True)
    configs = {}
    for e in engines:
        run_dir = os.path.join(work, f'runs-{e}')
        if 'opencompass' in stages and os.path.isdir(run_dir):
            shutil.rmtree(run_dir)
        configs[e] = os.path.join(work, f'eval_gpu_check_{e}.py')
        from opencompass_longctx.gpucheck.stages import eval_config
        with open(configs[e], 'w', encoding='utf-8') as f:
            f.write(eval_config(model_dir, data_dir, args.tiers.split(','), args.long_tier, args.samples, e, run_dir,
                                gpu['key'], gpu['gpus'], 139 if args.rehearse else None))
        shutil.copy(configs[e], os.path.join(args.out, os.path.basename(configs[e])))
    order = []
    for s in stages:
        order += [f'{s}-{e}' for e in engines] if s in PER_ENGINE else [s]
    order = _engine_major(order, engines)
    from opencompass_longctx.gpucheck import stages as S
    blocked = stack.get('pytorch_engine_blocked') or []
    gpus = args.rehearse_gpus if args.rehearse else int(stack.get('gpus') or 1)
    kept: Dict[str, Dict] = {}            # the bench engine of each kind, kept open for its prefix-cache stage
    for i, name in enumerate(order):
        later = order[i + 1:]
        e = name.split('-', 1)[1] if '-' in name else ''
        if e == 'pytorch' and blocked:      # Triton cannot build the engine's kernels: said, not run
            report.stage(name, _blocked, blocked, later=later)
        elif name == 'model':
            if args.model_dir:
                report.stage('model', S.stage_real_model, model_dir, later=later)
            else:
                report.stage('model', S.stage_model, model_dir, args.rehearse, later=later)
        elif name == 'data':
            report.stage('data', S.stage_data, configs[engines[0]], later=later)
        elif name.startswith('opencompass-'):
            report.stage(name, S.stage_opencompass, configs[e], os.path.join(work, f'runs-{e}'), env,
                         args.rehearse, later=later)
        elif name.startswith('bench-'):
            keep = kept.setdefault(e, {}) if f'prefix-{e}' in later else None
            report.stage(name, _bench, configs[e], e, _batch(report.data, e, args.bench_batch), gpu,
                         args.rehearse, keep, later=later)
            from opencompass_longctx.gpucheck.throughput import cost_model_lines
            report.data['cost_model_lines'] = cost_model_lines(report.data)     # saved now, not only at the end
            report.write()
        elif name.startswith('prefix-'):
            try:
                report.stage(name, _prefix, configs[e], e, _batch(report.data, e, args.bench_batch),
                             args.prefix_tier, args.rehearse, kept.get(e, {}), later=later)
            finally:
                _close(kept.pop(e, {}))
        else:
            report.stage(name, _tp, configs[e], e, gpus, gpu, args.rehearse, later=later)
    failed = [n for n, s in report.data['stages'].items() if s['status'] == 'failed']
    return done(1 if failed else 0)


def _batch(data: Dict, engine: str, given: Optional[int]) -> int:
    oc = data['stages'].get(f'opencompass-{engine}', {})
    short = next((b for b in oc.get('bands', []) if b['session_len_plan'] <= 40000), {})
    return given or int(short.get('max_batch_size_plan') or 8)


def _engine_major(order: List[str], engines: List[str]) -> List[str]:
    """The stages in order, each engine's bench and prefix-cache stages next to each other (one engine serves both)
    and its tp > 1 stage after them (the GPUs free again)."""
    for e in engines:
        if f'bench-{e}' in order and f'prefix-{e}' in order:
            order.remove(f'prefix-{e}')
            order.insert(order.index(f'bench-{e}') + 1, f'prefix-{e}')
    return order


def _blocked(rec, problems: List[str]) -> Dict:
    return {'status': 'failed', 'error': 'the PyTorch engine cannot build its kernels here: ' + '; '.join(problems)}


def _model_cfg(config: str) -> Dict:
    from mmengine.config import Config
    return dict(Config.fromfile(config)['models'][0])


def _free_bytes(rehearse: bool) -> Optional[float]:
    """GPU memory the bench engines are sized from: what CUDA reports free (None: asked when the engine is built); a
    rehearsal's pretend H200."""
    return 139 * 1024 ** 3 if rehearse else None


def _bench(rec, config: str, engine: str, batch: int, gpu: Dict, rehearse: bool, keep: Optional[Dict] = None) -> Dict:
    from opencompass_longctx.gpucheck.throughput import run_bench
    return run_bench(rec, _model_cfg(config), engine, batch, gpu['peak'], gpu['hbm'], _free_bytes(rehearse),
                     keep=keep)


def _prefix(rec, config: str, engine: str, batch: int, tier: str, rehearse: bool, kept: Dict) -> Dict:
    """The prefix-cache stage on the bench stage's engine (else one built here, and closed by the caller)."""
    from opencompass_longctx.gpucheck.prefix import run_prefix
    from opencompass_longctx.gpucheck.throughput import open_engine

    def engine_now():
        if not kept.get('engine'):
            kept['engine'] = open_engine(rec, _model_cfg(config), engine, batch, _free_bytes(rehearse))
        return kept['engine']
    return run_prefix(rec, engine_now, config, tier)


def _close(kept: Dict) -> None:
    if kept.get('engine'):
        kept['engine'].close()


def _tp(rec, config: str, engine: str, gpus: int, gpu: Dict, rehearse: bool) -> Dict:
    from opencompass_longctx.gpucheck.throughput import run_tp
    return run_tp(rec, _model_cfg(config), engine, gpus, gpu['peak'], gpu['hbm'], _free_bytes(rehearse), rehearse)


def _rehearsal(work: str, env: Dict) -> None:
    """No GPU: this process and OpenCompass's tasks stop at their first CUDA call (stages.SITECUSTOMIZE)."""
    from opencompass_longctx.gpucheck.report import REHEARSAL_MARK
    from opencompass_longctx.gpucheck.stages import rehearsal_site
    os.environ['LMDEPLOY_ENABLE_CHECK_ENV'] = env['LMDEPLOY_ENABLE_CHECK_ENV'] = '0'
    site = rehearsal_site(work)
    env['PYTHONPATH'] = site + os.pathsep + env.get('PYTHONPATH', '')
    sys.path.insert(0, site)
    import sitecustomize  # noqa: F401  (this process too: the rehearsal's CUDA stop)
    if REHEARSAL_MARK not in open(sitecustomize.__file__, encoding='utf-8').read():
        from importlib import reload
        reload(sitecustomize)


if __name__ == '__main__':
    sys.exit(main())
