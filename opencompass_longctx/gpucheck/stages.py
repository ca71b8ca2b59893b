"""The GPU check's stages: the model directory, the datasets, the real ``opencompass`` run per engine, and the
rehearsal (no GPU: every process stops at its first CUDA call).

The model: a directory with the real Qwen2.5 tokenizer and chat template (:func:`opencompass_longctx.tokenizer.qwen_dir
.build`) and random bf16 weights at Qwen2.5-7B's geometry (the leaderboard row's ``arch``), made on the GPU; the
answers are noise, the compute, the memory and the engine path are the real ones. ``--model-dir`` serves a real
Qwen2.5-7B-Instruct directory instead. The data: the CPU example's datasets (BABILong stand-in files, generated
LongBioBench with the leaderboard example's ``reserve_tokens``, NoLiMa stand-in needles and books: all offline) at
the short tiers and one 128k tier, each row checked to be sendable (:mod:`.sendable`). The run: the
real ``opencompass`` command through ``LongCtxPartitioner`` and ``LongCtxInferTask`` with the leaderboard's
qwen2.5-7b-instruct row, one run per engine (``backend='turbomind'`` / ``'pytorch'``), LMDeploy at INFO level so
that its log says what it was handed and what it built.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional

from opencompass_longctx.gpucheck.report import REHEARSAL_MARK
from opencompass_longctx.gpucheck.runlog import compare_run, failed_tasks, tail
MODEL_ABBR = 'qwen2.5-7b-instruct'
POLL_S = 30                                   # seconds between progress saves while opencompass runs
RUN_NAME = re.compile(r'^\d{8}_\d{6}$')      # OpenCompass's run directory (its start time)
GIB = 1024 ** 3
# Qwen2.5-7B-Instruct's published config.json beyond the geometry the leaderboard row carries (``arch``)
QWEN25_PUBLISHED = dict(hidden_act='silu', max_position_embeddings=32768, max_window_layers=28, model_type='qwen2',
                        rms_norm_eps=1e-06, rope_theta=1000000.0, sliding_window=131072, tie_word_embeddings=False,
                        torch_dtype='bfloat16', use_sliding_window=False, bos_token_id=151643, eos_token_id=151645,
                        # as published: without it transformers 5 warns of a Mistral tokenizer regex
                        transformers_version='4.43.1')


def model_row() -> Dict:
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    return next(r for r in LONGCTX_LMDEPLOY_MODELS if r['abbr'] == MODEL_ABBR)


def model_config() -> Dict:
    """config.json of the check's model: the row's geometry (``arch``, less its parameter count) and the rest of
    Qwen2.5-7B-Instruct's published config."""
    arch = {k: v for k, v in model_row()['arch'].items() if k != 'params'}
    return dict(arch, **QWEN25_PUBLISHED)


# ---------------------------------------------------------------------------------------------- rehearsal
SITECUSTOMIZE = f'''# written by longctx-gpu-check --rehearse: no GPU here, so the first CUDA call stops the process
# (LMDeploy's environment check, which only runs CUDA calls, is off: LMDEPLOY_ENABLE_CHECK_ENV=0; the device queries
# LMDeploy makes before its engine's first stream answer as an H200 would, so the engine is built up to it)
def _longctx_rehearsal():
    import traceback
    import types
    import torch
    def stop(*args, **kwargs):
        where = ''.join(traceback.format_stack(limit=12)[:-1])
        raise RuntimeError({REHEARSAL_MARK!r} + ' (torch.cuda lazy init) at:\\n' + where)
    class Stream:
        def __new__(cls, *args, **kwargs):
            stop()
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
        name='NVIDIA H200 (rehearsal)', major=9, minor=0, total_memory=139 * 1024 ** 3, multi_processor_count=132)
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    torch.cuda.Stream = Stream
    torch.cuda._lazy_init = stop
try:
    _longctx_rehearsal()
except ImportError:
    pass
'''


def rehearsal_site(work: str) -> str:
    site = os.path.join(work, 'rehearse_site')
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, 'sitecustomize.py'), 'w', encoding='utf-8') as f:
        f.write(SITECUSTOMIZE)
    return site



# ---------------------------------------------------------------------------------------------- model
def weight_shapes(config_path: str) -> Dict[str, tuple]:
    """Names and shapes of the checkpoint transformers' own Qwen2 class has for this config.json (meta device)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.from_pretrained(os.path.dirname(config_path))
    with torch.device('meta'):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def stage_model(rec, model_dir: str, rehearse: bool) -> Dict:
    from opencompass_longctx.tokenizer.qwen_dir import build
    os.makedirs(model_dir, exist_ok=True)
    build(model_dir)
    with open(os.path.join(model_dir, 'config.json'), 'w', encoding='utf-8') as f:
        json.dump(model_config(), f, indent=2)
    with open(os.path.join(model_dir, 'generation_config.json'), 'w', encoding='utf-8') as f:
        json.dump({'bos_token_id': 151643, 'eos_token_id': [151645, 151643], 'pad_token_id': 151643,
                   'do_sample': False}, f)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    chat = tok.apply_chat_template([{'role': 'user', 'content': 'hi'}], tokenize=False, add_generation_prompt=True)
    shapes = weight_shapes(os.path.join(model_dir, 'config.json'))
    params = sum(_numel(s) for s in shapes.values())
    rec.set(path=model_dir, tensors=len(shapes), params=params, tokenizer_vocab=len(tok),
            chat_template_ok=chat.endswith('<|im_start|>assistant\n'))
    if rehearse:
        import torch
        torch.empty(1, device='cuda')      # the device run's first CUDA call: stops here in a rehearsal
    from opencompass_longctx.gpucheck.environment import in_child      # the weights are made on the GPU in a child: no CUDA context kept here
    return existing_weights(model_dir, shapes) or in_child(write_random_weights, model_dir, shapes)


def stage_real_model(rec, model_dir: str) -> Dict:
    """``--model-dir``: a downloaded model directory, served as it is (its config.json and tokenizer read)."""
    with open(os.path.join(model_dir, 'config.json'), encoding='utf-8') as f:
        cfg = json.load(f)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    return {'path': model_dir, 'architectures': cfg.get('architectures'), 'tokenizer_vocab': len(tok),
            'weights_gib': round(sum(os.path.getsize(p) for p in glob.glob(os.path.join(model_dir, '*.safetensors')))
                                 / GIB, 2), 'note': 'a real model directory (--model-dir)'}


def existing_weights(model_dir: str, shapes: Dict[str, tuple]) -> Optional[Dict]:
    """The weights a previous call on the same (warm) machine wrote, when complete: ~15 GB not written again."""
    index = os.path.join(model_dir, 'model.safetensors.index.json')
    if not os.path.isfile(index):
        return None
    with open(index, encoding='utf-8') as f:
        weight_map = json.load(f).get('weight_map', {})
    files = sorted(set(weight_map.values()))
    if set(weight_map) != set(shapes) or not all(os.path.isfile(os.path.join(model_dir, n)) for n in files):
        return None
    total = sum(_numel(s) * 2 for s in shapes.values())
    return {'weight_files': len(files), 'weights_gib': round(total / GIB, 2), 'weights_reused': True}


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def write_random_weights(model_dir: str, shapes: Dict[str, tuple], shard_bytes: int = 4 * GIB) -> Dict:
    """bf16 weights made on the GPU (N(0, 0.02); norms 1, biases 0), saved as safetensors shards with an index."""
    import torch
    from safetensors.torch import save_file
    g = torch.Generator(device='cuda').manual_seed(0)
    shard, size, files, weight_map, total = {}, 0, [], {}, 0

    def flush():
        nonlocal shard, size
        name = f'model-{len(files) + 1:05d}.safetensors'
        save_file(shard, os.path.join(model_dir, name), metadata={'format': 'pt'})
        files.append(name)
        weight_map.update({k: name for k in shard})
        shard, size = {}, 0
    for k, shape in shapes.items():
        if k.endswith('norm.weight'):
            t = torch.ones(shape, dtype=torch.bfloat16, device='cuda')
        elif k.endswith('.bias'):
            t = torch.zeros(shape, dtype=torch.bfloat16, device='cuda')
        else:
            t = (torch.randn(shape, generator=g, device='cuda', dtype=torch.float32) * 0.02).to(torch.bfloat16)
        shard[k] = t.cpu()
        size += t.numel() * 2
        total += t.numel() * 2
        if size >= shard_bytes:
            flush()
    if shard:
        flush()
    with open(os.path.join(model_dir, 'model.safetensors.index.json'), 'w', encoding='utf-8') as f:
        json.dump({'metadata': {'total_size': total}, 'weight_map': weight_map}, f)
    return {'weight_files': len(files), 'weights_gib': round(total / GIB, 2)}


def eval_config(model_dir: str, data_dir: str, short_tiers: List[str], long_tier: str, samples: int,
                backend: str, work_dir: str, gpu: str, gpus: Optional[Dict] = None,
                gpu_memory_gib: Optional[float] = None) -> str:
    """The opencompass config of one engine's run: the CPU example's datasets, the leaderboard's Qwen2.5-7B row on
    ``backend``, planned for ``gpu`` (a GPUS key of tables/cost_model.py, or one of ``gpus``)."""
    extra = f", gpu_memory_gib={gpu_memory_gib}" if gpu_memory_gib else ''
    cost = dict(gpu=gpu, **({'gpus': gpus} if gpus else {}))
    return f'''# written by longctx-gpu-check: examples/eval_longctx_cpu.py's datasets, the leaderboard's
# {MODEL_ABBR} row ({model_dir}) on LMDeploy's {backend} engine, through LongCtxPartitioner
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.datasets import DemoBabilongDataset, DemoNoLiMaDataset
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE, LONGBIO_RESERVE_TOKENS
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
DATA = {data_dir!r}
MODEL_DIR = {model_dir!r}
SHORT, LONG, SAMPLES = {short_tiers!r}, {long_tier!r}, {samples}
models = [dict(m, path=MODEL_DIR, backend={backend!r}{extra}) for m in lmdeploy_longctx_models
          if m['abbr'] == {MODEL_ABBR!r}]
# the short tiers as the CPU example; at the long tier one dataset of each benchmark (each prompt is 128k tokens)
datasets = [dict(d, type=DemoBabilongDataset, tier=t, abbr=f"{{d['abbr']}}_{{t}}", path=DATA + '/babilong',
                 num_samples=SAMPLES) for t in SHORT for d in BABILONG_BASE[:5]]
datasets += [dict(BABILONG_BASE[0], type=DemoBabilongDataset, tier=LONG, abbr=f"{{BABILONG_BASE[0]['abbr']}}_{{LONG}}",
                  path=DATA + '/babilong', num_samples=1)]
# LongBioBench fills the prompt to the tier: the leaderboard example's reserve_tokens keeps room for the answer
datasets += [dict(d, tier=t, abbr=f"{{d['abbr']}}_{{t}}", num_samples=SAMPLES,
                  reserve_tokens=LONGBIO_RESERVE_TOKENS)
             for t in SHORT for d in LONGBIO_BASE if d['cell'] in ('standard', 'rank_2', 'idk')]
datasets += [dict(d, tier=LONG, abbr=f"{{d['abbr']}}_{{LONG}}", num_samples=1,
                  reserve_tokens=LONGBIO_RESERVE_TOKENS) for d in LONGBIO_BASE if d['cell'] == 'standard']
datasets += [dict(d, type=DemoNoLiMaDataset, tier=t, abbr=f"{{d['abbr']}}_{{t}}", path=DATA + '/nolima',
                  sample_book_tokens=140000, tokenizer=MODEL_DIR, pairs=1, haystacks=[0],
                  depth_indices=[5] if t == LONG else [0, 5, 10])
             for t in [{{'0k': '250'}}.get(t, t) for t in SHORT] + [LONG] for d in NOLIMA_BASE]

infer = dict(partitioner=dict(type=LongCtxPartitioner, cost_model={cost!r}),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=4, task=dict(type=LongCtxEvalTask)))
work_dir = {work_dir!r}
'''


def stage_data(rec, config_path: str) -> Dict:
    """Build every dataset of the config once (offline), as the run gives them to its model; the tasks then read them
    from the cache. Each row is measured as the inferencer measures it and checked against its band's engine and the
    model's window (:mod:`.sendable`): a row that would not be sent fails the stage, before any GPU time."""
    from mmengine.config import Config
    from opencompass.utils import build_dataset_from_cfg

    from opencompass_longctx.combinations import combinations_of, expand
    from opencompass_longctx.gpucheck.sendable import measure, plan_engines, rows_fit, tokenizer_model
    cfg = Config.fromfile(config_path)
    combos, left = expand(combinations_of(cfg))
    if left:
        rec.set(left_out=[dict(x) for x in left])
    engines = plan_engines(cfg)
    model = tokenizer_model(cfg['models'][0])
    rows, problems = 0, []
    for d in combos[0]['datasets']:
        t = time.time()
        ds = build_dataset_from_cfg(d)
        n = len(ds.test) if hasattr(ds, 'test') else len(ds)
        rows += n
        built = round(time.time() - t, 2)
        fit = rows_fit(d['abbr'], engines[d['abbr']], measure(model, d, ds))
        rec.add('datasets', {'abbr': d['abbr'], 'rows': n, 'seconds': built, **fit.as_dict()})
        if not fit.fits:
            problems.append(fit.problem())
    out = {'rows': rows, 'rows_checked': 'every prompt + max_out_len against its band engine and the window'}
    if problems:
        out.update(status='failed', error=f'{len(problems)} dataset(s) have prompts that would not be sent: '
                   + '; '.join(problems))
    return out


def stage_opencompass(rec, config_path: str, work_dir: str, env: Dict, rehearse: bool = False) -> Dict:
    """The real ``opencompass`` command on ``config_path`` (its run goes to ``work_dir``), then the plan against
    what LMDeploy logged, and every failed task with the tail of its log (OpenCompass exits 0 when tasks fail)."""
    os.makedirs(work_dir, exist_ok=True)
    log = os.path.join(work_dir, 'opencompass.log')
    cmd = [sys.executable, '-m', 'opencompass.cli.main', config_path, '--max-num-workers', '1']   # = `opencompass`
    start = time.time()
    with open(log, 'w', encoding='utf-8') as f:
        # OpenCompass writes its task configs to ./tmp: in the parent, not among the runs
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=os.path.dirname(work_dir),
                             start_new_session=True)
        stop = start + max((rec.limit or 3600) - 15, 1)      # leaves time to read the run
        try:
            rc = None
            while rc is None:
                try:
                    rc = p.wait(timeout=max(min(POLL_S, stop - time.time()), 0.1))
                except subprocess.TimeoutExpired:
                    if time.time() >= stop:
                        os.killpg(p.pid, signal.SIGKILL)
                        p.wait()
                        rc = 'killed at the stage limit'
                    else:       # how far it got, saved as it goes (a run killed from outside still says)
                        rec.set(running_s=round(time.time() - start), predictions_written=len(glob.glob(
                            os.path.join(work_dir, '*', 'predictions', '*', '*.json'))))
        except BaseException:        # the stage's own time limit (SIGALRM) or ^C: no task left running
            os.killpg(p.pid, signal.SIGKILL)
            raise
    rec.set(rc=rc, seconds_total=round(time.time() - start, 1), log=log)
    runs = sorted(d for d in glob.glob(os.path.join(work_dir, '*')) if RUN_NAME.match(os.path.basename(d)))
    if not runs:
        raise RuntimeError(f'opencompass wrote no run directory (rc {rc}); the tail of {log}:\n' + tail(log, 40))
    run = runs[-1]
    if not os.path.isfile(os.path.join(run, 'plan', 'longctx_plan.json')):
        raise RuntimeError(f'opencompass wrote no plan in {run} (rc {rc}): the tail of {log}:\n' + tail(log, 40))
    out = compare_run(run)
    rec.set(**out)
    fails = failed_tasks(run)
    rec.set(**fails)
    out.update(fails)
    out.update(judge_run(out, rehearse))
    if out['status'] == 'failed' and rc != 0:
        from opencompass_longctx.leaderboard.failures import last_exception
        exc = last_exception(tail(log, 400, 64000))
        if exc:         # OpenCompass itself stopped (e.g. the plan's problems): that, not the tasks it never ran
            out['opencompass_error'] = exc
        out['error'] = (f"opencompass exited with {rc}" + (f': {exc}' if exc else '') + f"; {out['error']}; the tail "
                        f"of {log}:\n" + tail(log, 40))
    return out


def judge_run(out: Dict, rehearse: bool) -> Dict:
    """The stage's status: OpenCompass exits 0 when its tasks fail, so the bands say. A rehearsal must have stopped
    every band at LMDeploy's first CUDA call, with the plan's engine handed to LMDeploy; a device run must have built
    every band's engine as planned and written every dataset's predictions and results."""
    bands = out.get('bands', [])
    if rehearse:
        bad = [b['band'] for b in bands if b['band'] not in out.get('rehearsal_stops', [])
               or b.get('session_len_input') != b['session_len_plan']
               or b.get('max_batch_size_input') != b['max_batch_size_plan']]
        if bands and not bad:
            return {'status': 'rehearsal stop', 'where': "first CUDA call (LMDeploy's engine) in every band's task ("
                    + ', '.join(b['band'] for b in bands) + "), each handed the plan's session_len/max_batch_size"}
        return {'status': 'failed', 'error': f'bands not stopped at the first CUDA call with the plan\'s engine: '
                f'{bad or "no bands"}'}
    bad = [b['band'] for b in bands if not b.get('engines_built') or b.get('datasets_missing')
           or not b.get('engine_matches_plan')]
    over = [f"{b['band']}: {b['engine_longest_need']} > {b['session_len_plan']}" for b in bands
            if b.get('fits_session_len') is False]
    held = [f"{b['band']}: {b.get('over_length', 0)} over-length, {b.get('engine_too_small', 0)} engine-too-small"
            for b in bands if b.get('over_length') or b.get('engine_too_small')]
    failed = out.get('failed_tasks') or []
    if bands and not bad and not failed and not over and not held:
        return {'status': 'ok'}
    why = [f'bands without an engine as planned or with predictions missing: {bad or "no bands"}'] if bad or not bands \
        else []
    if over:
        why.append('the engine counted a prompt and its answer longer than the plan\'s session_len (' + '; '.join(over)
                   + ')')
    if held:
        why.append('prompts held back, never answered (' + '; '.join(held) + ')')
    if failed:
        why.append(f"{len(failed)} dataset(s) failed, first {failed[0]['dataset']} ({failed[0]['stage']}): "
                   f"{failed[0]['reason']}")
    return {'status': 'failed', 'error': '; '.join(why)}
