"""The GPU check: the leaderboard's engine path served for real on one GPU, in about 8 minutes.

Run by ``bench/gpu_check.sh`` (which installs the carried wheelhouse first); stages, each with its own time limit,
the report rewritten after each one (``$OUT/gpu_check.json`` and ``$OUT/gpu_check.md``):

1. ``env``: versions, the GPU.
2. ``model``: a model directory with the real Qwen2.5 tokenizer and chat template
   (:func:`opencompass_longctx.qwen_tokenizer_dir.build`, as ``longctx-qwen-tokenizer-dir``) and random bf16
   weights at Qwen2.5-7B's geometry (``tests/data/model_configs/qwen2.5-7b-instruct.json``), made on the GPU.
   The answers are noise; the compute, the memory and the engine path are the real ones.
3. ``data``: the datasets of ``examples/eval_longctx_cpu.py`` (BABILong stand-in files, generated LongBioBench,
   NoLiMa stand-in needles and books: all offline) at the short tiers and one 128k tier, built once.
4. ``opencompass``: the real ``opencompass`` command through ``LongCtxPartitioner`` and ``LongCtxInferTask``, the
   leaderboard's qwen2.5-7b-instruct row with ``backend='pytorch'`` (LMDeploy's PyTorch engine); then the plan
   against what LMDeploy logged (``LMDEPLOY_LOG_LEVEL=INFO``): engines started, each engine's ``session_len`` and
   ``max_batch_size``, the KV blocks allocated vs the preflight's budget, predictions complete and none over
   length, each task's wall time vs the plan's estimate.
5. ``bench``: LMDeploy's pipeline directly: prefill tokens/s and MFU at 4k/32k/128k, decode tokens/s at batch 1
   and at the short band's batch size; the measured constants as lines for ``tables/cost_model.py``.

``--rehearse`` (a machine without a GPU): the same stages, with the first CUDA call stopping each process with
one line (``REHEARSAL_MARK``) instead of running (LMDeploy's own CUDA environment check is turned off and the device
queries answer as an H200, so each engine is built up to its first CUDA stream, past the imports and config
parsing that the check would hide); weights are not written (the plan then estimates them from
config.json, as for a model not yet downloaded) and the model row plans for a 139 GiB GPU (``gpu_memory_gib``).
"""
import argparse
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from typing import Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_ABBR = 'qwen2.5-7b-instruct'
MODEL_CONFIG = os.path.join(ROOT, 'tests', 'data', 'model_configs', 'qwen2.5-7b-instruct.json')
GPU = 'H200-141GB'
REHEARSAL_MARK = 'LONGCTX REHEARSAL: first CUDA call reached, stopping here'
NO_DRIVER = 'Found no NVIDIA driver'   # torch's own error where a CUDA call bypasses torch.cuda's lazy init
# Seconds per stage at most (--limits changes them). One device call runs 600 s at most, the install (~10-20 s)
# included: each stage's limit is also cut to what the call has left (from $LONGCTX_GPU_T0, set by gpu_check.sh
# before the install, and --call-seconds) less what the stages still to come need (RESERVE), so the report of the
# stages done is always written before the call is killed. The opencompass stage gets the time the others leave:
# the plan puts its two tasks at ~275 s of GPU time (two engine starts of 100 s assumed); OpenCompass's own task
# launches and the eval tasks come on top.
LIMITS = dict(env=20, model=90, data=40, opencompass=380, bench=110)
RESERVE = dict(env=5, model=30, data=10, opencompass=200, bench=100)
CALL_MARGIN = 10          # seconds kept for writing the report and returning $OUT
CURRENT = {'limit': None}   # the running stage's effective limit (the opencompass stage's subprocess uses it)
GIB = 1024 ** 3
# LMDeploy 0.18's INFO lines (lmdeploy/serve/core/async_engine.py:168, pytorch/engine/executor/base.py:439)
RE_BACKEND = re.compile(r'updated backend_config=PytorchEngineConfig\((.*?)\)\s*$', re.M)
# what the package handed LMDeploy (async_engine.py:133): logged before the engine is built, so a rehearsal has it
RE_INPUT = re.compile(r'input backend=pytorch, backend_config=PytorchEngineConfig\((.*?)\)\s*$', re.M)
RE_COUNTS_DIFFER = re.compile(r'longctx: token counts differ between the engine and the over-length check for (\d+) of')
RE_CACHE = re.compile(r'Building CacheEngine with config: \s*CacheConfig\((.*?)\)\.', re.S)


# ---------------------------------------------------------------------------------------------- report
class Report:
    """The results so far, written after every stage (a run cut short still leaves what it measured)."""

    def __init__(self, out: str, rehearse: bool, deadline: Optional[float] = None):
        self.deadline = deadline        # time.time() by which the last stage must have ended
        self.out, self.data = out, {'rehearse': rehearse, 'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
                                    'command': 'bash bench/gpu_check.sh' + (' --rehearse' if rehearse else ''),
                                    'stages': {}}
        os.makedirs(out, exist_ok=True)

    def stage(self, name: str, fn, *args, later=()):
        """Run one stage under its time limit; its result (or error) goes into the report, which is rewritten.
        A result may set its own ``status`` (``failed``, ``rehearsal stop``) with an ``error``/``where`` note."""
        start = time.time()
        entry = self.data['stages'].setdefault(name, {})
        limit = stage_limit(name, later, self.deadline)
        entry['limit_s'] = limit
        if limit < 5:
            entry.update(status='skipped', where='no time left in this device call', seconds=0)
            print(f'[gpu_check] stage {name}: skipped (no time left in this call)', flush=True)
            self.write()
            return entry
        CURRENT['limit'] = limit
        try:
            with time_limit(limit):
                result = fn(*args) or {}
            entry.update(result)
            entry['status'] = result.get('status', 'ok')
        except RehearsalStop as e:
            entry.update(status='rehearsal stop', where=str(e))
        except (Exception, SystemExit) as e:  # noqa: BLE001 - recorded (LMDeploy exits on a failed check)
            tb = traceback.format_exc()
            stop = self.data['rehearse'] and (REHEARSAL_MARK in tb or NO_DRIVER in tb)
            entry.update(status='rehearsal stop' if stop else 'failed', error=f'{type(e).__name__}: {e}'[:2000],
                         traceback=traceback.format_exc()[-4000:])
        entry['seconds'] = round(time.time() - start, 1)
        print(f"[gpu_check] stage {name}: {entry['status']} ({entry['seconds']} s)"
              + (f" - {entry.get('error') or entry.get('where')}" if entry['status'] != 'ok' else ''), flush=True)
        self.write()
        return entry

    def write(self):
        with open(os.path.join(self.out, 'gpu_check.json'), 'w', encoding='utf-8') as f:
            json.dump(self.data, f, indent=1, sort_keys=True, default=str)
        with open(os.path.join(self.out, 'gpu_check.md'), 'w', encoding='utf-8') as f:
            f.write(to_markdown(self.data))


class RehearsalStop(RuntimeError):
    pass


def stage_limit(name: str, later=(), deadline: Optional[float] = None) -> int:
    """``name``'s limit: its own, cut to the call's time left less what the stages still to run need."""
    limit = LIMITS[name]
    if deadline is not None:
        left = deadline - time.time() - sum(min(RESERVE[n], LIMITS[n]) for n in later)
        limit = min(limit, int(left))
    return max(limit, 0)


@contextlib.contextmanager
def time_limit(seconds: int):
    def expire(*_):
        raise TimeoutError(f'stage time limit of {seconds} s reached')
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def to_markdown(data: Dict) -> str:
    lines = [f"# GPU check ({'rehearsal, no GPU' if data['rehearse'] else 'device run'}), {data['date']}", '',
             f"Command: `{data['command']}`", '', '| stage | status | seconds | note |', '|---|---|---|---|']
    for name, s in data['stages'].items():
        note = ((s.get('error') or s.get('where') or '').splitlines() or [''])[0][:160] if s.get('status') != 'ok' else ''
        lines.append(f"| {name} | {s.get('status')} | {s.get('seconds')} | {note} |")
    oc = data['stages'].get('opencompass', {})
    if oc.get('bands'):
        lines += ['', '## Engines: plan vs LMDeploy', '',
                  '| band | session_len plan / handed to LMDeploy / engine | max_batch_size plan / handed / engine '
                  '| KV blocks preflight / LMDeploy | predictions / samples | over-length | wall s plan / measured '
                  '| prompts counted differently by the engine |', '|---|---|---|---|---|---|---|---|']
        for b in oc['bands']:
            lines.append(f"| {b['band']} | {b['session_len_plan']} / {b.get('session_len_input')} / "
                         f"{b.get('session_len_engine')} | {b['max_batch_size_plan']} / "
                         f"{b.get('max_batch_size_input')} / {b.get('max_batch_size_engine')} | "
                         f"{b.get('kv_blocks_preflight')} / {b.get('kv_blocks_lmdeploy')} | "
                         f"{b.get('predictions')} / {b.get('rows_plan')} | {b.get('over_length')} | "
                         f"{b.get('seconds_plan')} / {b.get('seconds_measured')} | {b.get('token_counts_differ')} |")
        lines += ['', f"Engine starts: plan {oc.get('engine_starts_plan')}, handed to LMDeploy "
                  f"{oc.get('engine_inputs')}, built {oc.get('engine_starts')}."
                  + (f" Stopped at the first CUDA call: {', '.join(oc['rehearsal_stops'])}."
                     if oc.get('rehearsal_stops') else '')]
        for b in oc['bands']:
            lines.append(f"- {b['band']}: plan {b.get('seconds_plan_parts')} s; hf_overrides handed to LMDeploy: "
                         f"{b.get('hf_overrides_input')}")
    bench = data['stages'].get('bench', {})
    if bench.get('prefill'):
        lines += ['', '## Throughput (LMDeploy pipeline, PyTorch engine)', '', '| what | tokens | batch | seconds | '
                  'tokens/s | MFU / HBM efficiency |', '|---|---|---|---|---|---|']
        for p in bench['prefill']:
            lines.append(f"| prefill | {p['tokens']} | 1 | {p['seconds']:.3f} | {p['tokens_per_s']:.0f} | "
                         f"{p['mfu']:.3f} |")
        for d in bench.get('decode', []):
            lines.append(f"| decode | {d['context']} | {d['batch']} | {d['seconds']:.3f} | {d['tokens_per_s']:.0f} | "
                         f"{d['bw_efficiency']:.3f} |")
    if data.get('cost_model_lines'):
        lines += ['', '## For tables/cost_model.py', '', '```python', *data['cost_model_lines'], '```']
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------------------------- rehearsal
SITECUSTOMIZE = f'''# written by bench/gpu_check.py --rehearse: no GPU here, so the first CUDA call stops the process
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


# ---------------------------------------------------------------------------------------------- stages
def stage_env(rehearse: bool) -> Dict:
    import lmdeploy
    import opencompass
    import torch
    import transformers
    import triton
    out = {'python': sys.version.split()[0], 'torch': torch.__version__, 'transformers': transformers.__version__,
           'triton': triton.__version__, 'lmdeploy': lmdeploy.__version__, 'opencompass': opencompass.__version__}
    if not rehearse:
        p = torch.cuda.get_device_properties(0)
        out.update(gpu=p.name, gpu_memory_gib=round(p.total_memory / GIB, 1), sm=p.multi_processor_count)
    return out


def weight_shapes(config_path: str) -> Dict[str, tuple]:
    """Names and shapes of the checkpoint transformers' own Qwen2 class has for this config.json (meta device)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.from_pretrained(os.path.dirname(config_path))
    with torch.device('meta'):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def stage_model(model_dir: str, rehearse: bool) -> Dict:
    from opencompass_longctx.qwen_tokenizer_dir import build
    os.makedirs(model_dir, exist_ok=True)
    build(model_dir)
    with open(MODEL_CONFIG, encoding='utf-8') as f:
        config = json.load(f)
    # as published (Qwen2.5-7B-Instruct's config.json): without it transformers 5 warns of a Mistral tokenizer regex
    config.setdefault('transformers_version', '4.43.1')
    with open(os.path.join(model_dir, 'config.json'), 'w', encoding='utf-8') as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(model_dir, 'generation_config.json'), 'w', encoding='utf-8') as f:
        json.dump({'bos_token_id': 151643, 'eos_token_id': [151645, 151643], 'pad_token_id': 151643,
                   'do_sample': False}, f)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    chat = tok.apply_chat_template([{'role': 'user', 'content': 'hi'}], tokenize=False, add_generation_prompt=True)
    shapes = weight_shapes(os.path.join(model_dir, 'config.json'))
    params = sum(_numel(s) for s in shapes.values())
    out = {'path': model_dir, 'tensors': len(shapes), 'params': params, 'tokenizer_vocab': len(tok),
           'chat_template_ok': chat.endswith('<|im_start|>assistant\n')}
    if rehearse:
        import torch
        torch.empty(1, device='cuda')      # the device run's first CUDA call: stops here in a rehearsal
    out.update(existing_weights(model_dir, shapes) or write_random_weights(model_dir, shapes))
    return out


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
                rehearse: bool) -> str:
    """The opencompass config: the CPU example's datasets, the leaderboard's Qwen2.5-7B row on the PyTorch engine."""
    extra = ", gpu_memory_gib=139" if rehearse else ''
    return f'''# written by bench/gpu_check.py: examples/eval_longctx_cpu.py's datasets, the leaderboard's
# {MODEL_ABBR} row (random weights at its geometry) on LMDeploy's PyTorch engine, through LongCtxPartitioner
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.datasets import DemoBabilongDataset, DemoNoLiMaDataset
from opencompass_longctx.partitioner import LongCtxPartitioner
from opencompass_longctx.tasks import LongCtxEvalTask, LongCtxInferTask

with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    from opencompass_longctx.configs.summarizers.longctx import summarizer

DATA = {data_dir!r}
MODEL_DIR = {model_dir!r}
SHORT, LONG, SAMPLES = {short_tiers!r}, {long_tier!r}, {samples}
models = [dict(m, path=MODEL_DIR, backend='pytorch'{extra}) for m in lmdeploy_longctx_models
          if m['abbr'] == {MODEL_ABBR!r}]
# the short tiers as the CPU example; at the long tier one dataset of each benchmark (each prompt is 128k tokens)
datasets = [dict(d, type=DemoBabilongDataset, tier=t, abbr=f"{{d['abbr']}}_{{t}}", path=DATA + '/babilong',
                 num_samples=SAMPLES) for t in SHORT for d in BABILONG_BASE[:5]]
datasets += [dict(BABILONG_BASE[0], type=DemoBabilongDataset, tier=LONG, abbr=f"{{BABILONG_BASE[0]['abbr']}}_{{LONG}}",
                  path=DATA + '/babilong', num_samples=1)]
datasets += [dict(d, tier=t, abbr=f"{{d['abbr']}}_{{t}}", num_samples=SAMPLES) for t in SHORT for d in LONGBIO_BASE
             if d['cell'] in ('standard', 'rank_2', 'idk')]
datasets += [dict(d, tier=LONG, abbr=f"{{d['abbr']}}_{{LONG}}", num_samples=1) for d in LONGBIO_BASE
             if d['cell'] == 'standard']
datasets += [dict(d, type=DemoNoLiMaDataset, tier=t, abbr=f"{{d['abbr']}}_{{t}}", path=DATA + '/nolima',
                  sample_book_tokens=140000, tokenizer=MODEL_DIR, pairs=1, haystacks=[0],
                  depth_indices=[5] if t == LONG else [0, 5, 10])
             for t in [{{'0k': '250'}}.get(t, t) for t in SHORT] + [LONG] for d in NOLIMA_BASE]

infer = dict(partitioner=dict(type=LongCtxPartitioner, cost_model=dict(gpu={GPU!r})),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=4, task=dict(type=LongCtxEvalTask)))
work_dir = {os.path.join(os.path.dirname(data_dir), 'runs')!r}
'''


def stage_data(config_path: str) -> Dict:
    """Build every dataset of the config once (offline); the tasks then read them from the cache."""
    from mmengine.config import Config
    from opencompass.utils import build_dataset_from_cfg
    cfg = Config.fromfile(config_path)
    built = {}
    for d in cfg['datasets']:
        t = time.time()
        ds = build_dataset_from_cfg(d)
        rows = len(ds.test) if hasattr(ds, 'test') else len(ds)
        built[d['abbr']] = {'rows': rows, 'seconds': round(time.time() - t, 2)}
    return {'datasets': built, 'rows': sum(b['rows'] for b in built.values())}


def stage_opencompass(config_path: str, work: str, env: Dict, rehearse: bool = False) -> Dict:
    log = os.path.join(work, 'opencompass.log')
    cmd = [sys.executable, '-m', 'opencompass.cli.main', config_path, '--max-num-workers', '1']   # = `opencompass`
    start = time.time()
    with open(log, 'w', encoding='utf-8') as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True)
        try:
            rc = p.wait(timeout=max((CURRENT['limit'] or LIMITS['opencompass']) - 15, 1))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = 'killed at the stage limit'
    out = {'rc': rc, 'seconds_total': round(time.time() - start, 1), 'log': log}
    runs = sorted(glob.glob(os.path.join(work, 'runs', '*')))
    if not runs:
        raise RuntimeError(f'opencompass wrote no run directory (rc {rc}); see {log}: ' + _tail(log))
    out.update(compare_run(runs[-1]))
    out.update(judge_run(out, rehearse))
    if out['status'] == 'failed' and rc != 0:
        out['error'] = f"opencompass exited with {rc}; {out['error']}; see {log}: " + _tail(log)
    return out


def judge_run(out: Dict, rehearse: bool) -> Dict:
    """The stage's status: OpenCompass exits 0 when its tasks fail, so the bands say. A rehearsal must have stopped
    every band at LMDeploy's first CUDA call, with the plan's engine handed to LMDeploy; a device run must have built
    every band's engine and written every dataset's predictions."""
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
    if bands and not bad:
        return {'status': 'ok'}
    return {'status': 'failed', 'error': f'bands without an engine as planned or with predictions missing: '
            f'{bad or "no bands"}'}


def _tail(path: str, n: int = 1500) -> str:
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read()[-n:]


def parse_engine_log(text: str) -> List[Dict]:
    """Each engine LMDeploy built, from its INFO lines: session_len, max_batch_size, blocks and block size."""
    engines = []
    for m in RE_BACKEND.finditer(text):
        fields = dict(re.findall(r'(\w+)=([^,()]+)', m.group(1)))
        engines.append({'session_len': _int(fields.get('session_len')),
                        'max_batch_size': _int(fields.get('max_batch_size'))})
    caches = [dict(re.findall(r'(\w+)=([^,()]+)', m.group(1))) for m in RE_CACHE.finditer(text)]
    for e, c in zip(engines, caches):
        e.update(num_gpu_blocks=_int(c.get('num_gpu_blocks')), block_size=_int(c.get('block_size')),
                 max_batches=_int(c.get('max_batches')))
    return engines


def parse_engine_inputs(text: str) -> List[Dict]:
    """Each engine config the package handed LMDeploy (logged before the engine is built)."""
    out = []
    for m in RE_INPUT.finditer(text):
        fields = dict(re.findall(r'(\w+)=([^,()]+)', m.group(1)))
        hf = re.search(r'hf_overrides=(None|\{.*?\}\})', m.group(1))
        out.append({'session_len': _int(fields.get('session_len')),
                    'max_batch_size': _int(fields.get('max_batch_size')),
                    'hf_overrides': hf.group(1) if hf else None})
    return out


def _int(v) -> Optional[int]:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def compare_run(run_dir: str) -> Dict:
    """The plan of ``run_dir`` against what its tasks did (LMDeploy's log lines, predictions, wall times)."""
    with open(os.path.join(run_dir, 'plan', 'longctx_plan.json'), encoding='utf-8') as f:
        plan = json.load(f)
    tasks = [t for t in plan['task_list'] if t.get('engine')]
    bands, starts, handed, stops = [], 0, 0, []
    for t in tasks:
        eng = t['engine']
        logs = sorted(glob.glob(os.path.join(run_dir, 'logs', 'infer', t['model'], '*.out')))
        text = ''.join(open(p, encoding='utf-8', errors='replace').read() for p in logs
                       if _band_log(p, t))
        built = parse_engine_log(text)
        inputs = parse_engine_inputs(text)
        starts += len(built)
        handed += len(inputs)
        if REHEARSAL_MARK in text or NO_DRIVER in text:
            stops.append(t['band'])
        b = {'band': t['band'], 'session_len_plan': eng['session_len'], 'max_batch_size_plan': eng['max_batch_size'],
             'rows_plan': t['rows'],
             'seconds_plan': round(sum(t['seconds'][k] for k in ('start', 'prefill', 'decode')), 1),
             'seconds_plan_parts': {k: round(t['seconds'][k], 1) for k in ('start', 'prefill', 'decode')},
             'prompt_tokens_plan': t.get('prompt_tokens'), 'engines_built': len(built)}
        if inputs:
            b.update(session_len_input=inputs[0]['session_len'], max_batch_size_input=inputs[0]['max_batch_size'],
                     hf_overrides_input=inputs[0]['hf_overrides'])
        if eng.get('kv_budget_gib_per_gpu') and eng.get('kv_bytes_per_token'):
            b['kv_blocks_preflight'] = int(eng['kv_budget_gib_per_gpu'] * GIB // (eng['kv_bytes_per_token'] * 64))
        if built:
            e = built[0]
            b.update(session_len_engine=e['session_len'], max_batch_size_engine=e['max_batch_size'],
                     kv_blocks_lmdeploy=e['num_gpu_blocks'], block_size=e['block_size'])
            if e['block_size'] and e['block_size'] != 64 and b.get('kv_blocks_preflight'):
                b['kv_blocks_preflight'] = b['kv_blocks_preflight'] * 64 // e['block_size']
            b['engine_matches_plan'] = (e['session_len'] == eng['session_len']
                                        and e['max_batch_size'] == eng['max_batch_size'])
        m = re.search(r'time elapsed: ([\d.]+)s', text)
        b['seconds_measured'] = float(m.group(1)) if m else None
        # prompts the engine counted differently from the over-length check (opencompass_longctx/models/responses.py)
        b['token_counts_differ'] = sum(int(n) for n in RE_COUNTS_DIFFER.findall(text))
        b.update(count_predictions(run_dir, t))
        bands.append(b)
    return {'run_dir': run_dir, 'engine_starts_plan': len(tasks),
            'engine_starts': starts, 'engine_inputs': handed, 'bands': bands, 'rehearsal_stops': stops,
            'plan_gpu_hours': round(sum(t['gpu_hours'] for t in tasks), 4)}


def _band_log(path: str, task: Dict) -> bool:
    """Whether an infer log is ``task``'s: OpenCompass names it after the task's first dataset
    (``logs/infer/<model>/<dataset>.out``)."""
    return os.path.basename(path)[:-len('.out')] == task['datasets'][0]


def count_predictions(run_dir: str, task: Dict) -> Dict:
    """Predictions written for the task's datasets, and how many are each of the package's markers."""
    from opencompass_longctx.overlength import ENGINE_ERROR, ENGINE_TOO_SMALL, OVER_LENGTH
    names = {OVER_LENGTH: 'over_length', ENGINE_TOO_SMALL: 'engine_too_small', ENGINE_ERROR: 'engine_error'}
    out = dict(predictions=0, datasets_missing=[], **{v: 0 for v in names.values()})
    for d in task['datasets']:
        p = os.path.join(run_dir, 'predictions', task['model'], f'{d}.json')
        if not os.path.isfile(p):
            out['datasets_missing'].append(d)
            continue
        with open(p, encoding='utf-8') as f:
            preds = json.load(f)
        for v in preds.values():
            out['predictions'] += 1
            text = v.get('prediction') if isinstance(v, dict) else v
            if text in names:
                out[names[text]] += 1
    return out


def stage_bench(model_dir: str, batch: int, rehearse: bool) -> Dict:
    """Prefill and decode timings on one PyTorch engine (the row's 128k recipe)."""
    import lmdeploy
    from lmdeploy import GenerationConfig, PytorchEngineConfig
    from opencompass_longctx.tables.cost_model import GPUS
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    row = next(r for r in LONGCTX_LMDEPLOY_MODELS if r['abbr'] == MODEL_ABBR)
    with open(os.path.join(model_dir, 'config.json'), encoding='utf-8') as f:
        cfg = json.load(f)
    lengths = [4096, 32768, 131072 - 512]
    engine = dict((row.get('long_context') or {}).get('hf_overrides') and
                  {'hf_overrides': row['long_context']['hf_overrides']} or {},
                  session_len=131072, max_batch_size=max(batch, 1), cache_max_entry_count=0.8)
    t0 = time.time()
    pipe = lmdeploy.pipeline(model_dir, backend_config=PytorchEngineConfig(**engine), log_level='WARNING')
    start_s = time.time() - t0
    peak = GPUS[GPU]['bf16_tflops'] * 1e12
    params = sum(_numel(s) for s in weight_shapes(os.path.join(model_dir, 'config.json')).values())
    layers, hidden = cfg['num_hidden_layers'], cfg['hidden_size']
    kvpt = 2 * layers * cfg['num_key_value_heads'] * (hidden // cfg['num_attention_heads']) * 2

    def run(prompts, new):
        gen = GenerationConfig(max_new_tokens=new, min_new_tokens=new, ignore_eos=True, do_sample=False)
        t = time.time()
        res = pipe(prompts, gen_config=gen, do_preprocess=False)
        secs = time.time() - t
        bad = [r for r in res if r.finish_reason == 'error' or getattr(r, 'error_code', None)]
        if bad:     # an error response is an empty answer with no compute: its timing would be meaningless
            raise RuntimeError(f'LMDeploy answered {len(bad)} of {len(res)} prompts with an error: {bad[0]!r}'[:1000])
        return secs, res

    def prompt(n, i=0):
        return f'{i}:' + ' the' * (n - 2)
    run([prompt(512)], 4)                       # warm-up (Triton kernels, CUDA graphs)
    prefill = []
    for L in lengths:
        s, res = run([prompt(L)], 1)
        n = res[0].input_token_len
        prefill.append({'tokens': n, 'seconds': s, 'tokens_per_s': n / s,
                        'mfu': (2 * params * n + 2 * layers * hidden * n * n) / s / peak})
    decode, new = [], 129
    for b in sorted({1, max(batch, 1)}):
        s1, _ = run([prompt(4096, i) for i in range(b)], 1)
        s, res = run([prompt(4096, i) for i in range(b)], new)
        steps = new - 1
        secs = max(s - s1, 1e-9)
        step_bytes = 2 * params + b * kvpt * (4096 + new / 2)
        decode.append({'context': 4096, 'batch': b, 'seconds': secs, 'tokens_per_s': b * steps / secs,
                       'bw_efficiency': step_bytes * steps / secs / (GPUS[GPU]['hbm_tbps'] * 1e12),
                       'generated': [r.generate_token_len for r in res]})
    pipe.close()
    return {'engine': engine, 'engine_start_s': round(start_s, 1), 'prefill': prefill, 'decode': decode}


def cost_model_lines(data: Dict) -> List[str]:
    """Measured H200 constants, as lines for tables/cost_model.py (nothing when nothing was measured)."""
    bench, oc = data['stages'].get('bench', {}), data['stages'].get('opencompass', {})
    if bench.get('status') != 'ok':
        return []
    mfu = {p['tokens']: p['mfu'] for p in bench['prefill']}
    eff = [d['bw_efficiency'] for d in bench['decode']]
    head = f"# measured on one H200 ({data['date']}, `{data['command']}`, random weights at Qwen2.5-7B's geometry)"
    lines = [head,
             f"H200_MEASURED = dict(prefill_mfu={max(mfu.values()):.3f},   # per prompt length: "
             + ', '.join(f'{k}: {v:.3f}' for k, v in sorted(mfu.items())),
             f"                     decode_bw_efficiency={min(eff):.3f},   # batch 1 and the band's batch: "
             + ', '.join(f"b{d['batch']}: {d['bw_efficiency']:.3f}" for d in bench['decode']),
             f"                     engine_start_s={bench['engine_start_s']:.0f})   # PyTorch engine, 7.6B bf16"]
    if oc.get('bands'):
        lines.append('# task wall time plan -> measured: ' + ', '.join(
            f"{b['band']}: {b['seconds_plan']} -> {b['seconds_measured']} s" for b in oc['bands']))
    return lines


# ---------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=os.environ.get('OUT') or os.path.join(ROOT, 'outputs', 'gpu_check'),
                    help='where gpu_check.json and gpu_check.md go ($OUT on the device)')
    ap.add_argument('--work', default=os.path.join(ROOT, 'outputs', 'gpu_check_work'),
                    help='model directory, data, OpenCompass runs (not returned)')
    ap.add_argument('--rehearse', action='store_true', help='no GPU: stop each process at its first CUDA call')
    ap.add_argument('--tiers', default='0k,4k,32k', help='the short band\'s tiers (comma-separated)')
    ap.add_argument('--long-tier', default='128k')
    ap.add_argument('--samples', type=int, default=1, help='samples per dataset at the short tiers')
    ap.add_argument('--stages', default='env,model,data,opencompass,bench')
    ap.add_argument('--limits', default='', help='stage limits in seconds, e.g. opencompass=300,bench=90 (defaults: '
                    + ','.join(f'{k}={v}' for k, v in LIMITS.items()) + ')')
    ap.add_argument('--call-seconds', type=float, default=float(os.environ.get('LONGCTX_GPU_CALL_S') or 600),
                    help='the device call\'s limit, counted from $LONGCTX_GPU_T0 (set by gpu_check.sh before the '
                    'install; else from now): no stage runs past it (0: no call limit)')
    ap.add_argument('--bench-batch', type=int, default=None,
                    help="the bench stage's decode batch (default: the short band's max_batch_size in the "
                    "opencompass stage's plan, else 8)")
    args = ap.parse_args(argv)
    stages = args.stages.split(',')
    unknown = sorted(set(stages) - set(LIMITS))
    if unknown:
        ap.error(f'unknown stage(s) {unknown}; known: {sorted(LIMITS)}')
    for item in filter(None, args.limits.split(',')):
        k, _, v = item.partition('=')
        if k not in LIMITS or not v.isdigit():
            ap.error(f'--limits: {item!r} is not STAGE=SECONDS with a stage of {sorted(LIMITS)}')
        LIMITS[k] = int(v)
    t0 = float(os.environ.get('LONGCTX_GPU_T0') or time.time())
    deadline = t0 + args.call_seconds - CALL_MARGIN if args.call_seconds > 0 else None
    work = os.path.abspath(args.work)
    model_dir, data_dir = os.path.join(work, 'model'), os.path.join(work, 'data')
    os.makedirs(data_dir, exist_ok=True)
    if os.path.isdir(os.path.join(work, 'runs')):
        shutil.rmtree(os.path.join(work, 'runs'))
    env = dict(os.environ, LMDEPLOY_LOG_LEVEL='INFO', PYTHONUNBUFFERED='1')
    if args.rehearse:
        os.environ['LMDEPLOY_ENABLE_CHECK_ENV'] = env['LMDEPLOY_ENABLE_CHECK_ENV'] = '0'   # see SITECUSTOMIZE
        site = rehearsal_site(work)
        env['PYTHONPATH'] = site + os.pathsep + env.get('PYTHONPATH', '')
        sys.path.insert(0, site)
        import sitecustomize  # noqa: F401  (this process too: the rehearsal's CUDA stop)
        if REHEARSAL_MARK not in open(sitecustomize.__file__, encoding='utf-8').read():
            from importlib import reload
            reload(sitecustomize)
    config = os.path.join(work, 'eval_gpu_check.py')
    with open(config, 'w', encoding='utf-8') as f:
        f.write(eval_config(model_dir, data_dir, args.tiers.split(','), args.long_tier, args.samples, args.rehearse))
    report = Report(args.out, args.rehearse, deadline)
    report.data['limits'] = dict(LIMITS, call_seconds=args.call_seconds)
    shutil.copy(config, os.path.join(args.out, 'eval_gpu_check.py'))
    run = {'env': (stage_env, args.rehearse), 'model': (stage_model, model_dir, args.rehearse),
           'data': (stage_data, config), 'opencompass': (stage_opencompass, config, work, env, args.rehearse)}
    for i, name in enumerate(stages):
        later = stages[i + 1:]
        if name == 'bench':
            oc = report.data['stages'].get('opencompass', {})
            short = next((b for b in oc.get('bands', []) if b['session_len_plan'] <= 40000), {})
            batch = args.bench_batch or int(short.get('max_batch_size_plan') or 8)
            report.stage('bench', stage_bench, model_dir, batch, args.rehearse, later=later)
        else:
            report.stage(name, *run[name], later=later)
    report.data['cost_model_lines'] = cost_model_lines(report.data)
    report.write()
    print(to_markdown(report.data))
    failed = [n for n, s in report.data['stages'].items() if s['status'] == 'failed']
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
