"""What an OpenCompass run of the GPU check did, read from its work directory: the plan
(``plan/longctx_plan.json``) against LMDeploy's own INFO lines in the infer logs (the backend and engine config it
was handed and built, the KV blocks, each request's ``input_tokens``), the predictions, and every failed task with
the tail of its log (OpenCompass exits 0 when a task fails: the logs are the only place that says why)."""
import glob
import json
import os
import re
from typing import Dict, List, Optional

from opencompass_longctx.gpucheck.report import NO_DRIVER, REHEARSAL_MARK
GIB = 1024 ** 3
# LMDeploy 0.18's INFO lines (lmdeploy/serve/core/async_engine.py:133, 168, 578; pytorch/engine/executor/base.py:439)
RE_BACKEND = re.compile(r'updated backend_config=(Pytorch|Turbomind)EngineConfig\((.*?)\)\s*$', re.M)
RE_INPUT = re.compile(r'input backend=(\w+), backend_config=(?:Pytorch|Turbomind)EngineConfig\((.*?)\)\s*$', re.M)
RE_REQUEST = re.compile(r'session=\d+, input_tokens=(\d+), max_new_tokens=(\d+)')
RE_COUNTS_DIFFER = re.compile(r'longctx: token counts differ between the engine and the over-length check for (\d+) of')
RE_CACHE = re.compile(r'Building CacheEngine with config: \s*CacheConfig\((.*?)\)\.', re.S)
TAIL_LINES = 80
TAIL_CHARS = 8000


def _int(v) -> Optional[int]:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def _fields(text: str) -> Dict[str, str]:
    return dict(re.findall(r'(\w+)=([^,()]+)', text))


def parse_engine_log(text: str) -> List[Dict]:
    """Each engine LMDeploy built, from its INFO lines: backend, session_len, max_batch_size, and (PyTorch engine)
    the KV blocks and block size it allocated."""
    engines = []
    for m in RE_BACKEND.finditer(text):
        fields = _fields(m.group(2))
        engines.append({'backend': m.group(1).lower(), 'session_len': _int(fields.get('session_len')),
                        'max_batch_size': _int(fields.get('max_batch_size'))})
    caches = [_fields(m.group(1)) for m in RE_CACHE.finditer(text)]
    for e, c in zip([e for e in engines if e['backend'] == 'pytorch'], caches):
        e.update(num_gpu_blocks=_int(c.get('num_gpu_blocks')), block_size=_int(c.get('block_size')),
                 max_batches=_int(c.get('max_batches')))
    return engines


def parse_engine_inputs(text: str) -> List[Dict]:
    """Each engine config the package handed LMDeploy (logged before the engine is built)."""
    out = []
    for m in RE_INPUT.finditer(text):
        fields = _fields(m.group(2))
        hf = re.search(r'hf_overrides=(None|\{.*?\}\})', m.group(2))
        out.append({'backend': m.group(1), 'session_len': _int(fields.get('session_len')),
                    'max_batch_size': _int(fields.get('max_batch_size')), 'hf_overrides': hf.group(1) if hf else None})
    return out


def engine_requests(text: str) -> Dict:
    """The prompts LMDeploy tokenized (its own count, ``input_tokens``) and the longest prompt plus its answer."""
    reqs = [(int(a), int(b)) for a, b in RE_REQUEST.findall(text)]
    return {'engine_prompts': len(reqs), 'engine_input_tokens': sum(a for a, _ in reqs) if reqs else None,
            'engine_longest_need': max(a + b for a, b in reqs) if reqs else None}


def benchmark(abbr: str) -> str:
    return abbr.split('_', 1)[0]


def count_predictions(run_dir: str, task: Dict) -> Dict:
    """Predictions written for the task's datasets, per benchmark, and how many are each of the package's markers."""
    from opencompass_longctx.overlength import ENGINE_ERROR, ENGINE_TOO_SMALL, OVER_LENGTH
    names = {OVER_LENGTH: 'over_length', ENGINE_TOO_SMALL: 'engine_too_small', ENGINE_ERROR: 'engine_error'}
    out = dict(predictions=0, datasets_missing=[], by_benchmark={}, **{v: 0 for v in names.values()})
    for d in task['datasets']:
        got = 0
        p = os.path.join(run_dir, 'predictions', task['model'], f'{d}.json')
        if os.path.isfile(p):
            with open(p, encoding='utf-8') as f:
                preds = json.load(f)
            for v in preds.values():
                got += 1
                text = v.get('prediction') if isinstance(v, dict) else v
                if text in names:
                    out[names[text]] += 1
        else:
            out['datasets_missing'].append(d)
        out['predictions'] += got
        mine = out['by_benchmark'].setdefault(benchmark(d), {'predictions': 0, 'datasets': 0, 'datasets_written': 0})
        mine['predictions'] += got
        mine['datasets'] += 1
        mine['datasets_written'] += int(os.path.isfile(p))
    return out


def _band_log(path: str, task: Dict) -> bool:
    """Whether an infer log is ``task``'s: OpenCompass names it after the task's first dataset."""
    return os.path.basename(path)[:-len('.out')] == task['datasets'][0]


def read_plan(run_dir: str) -> Dict:
    with open(os.path.join(run_dir, 'plan', 'longctx_plan.json'), encoding='utf-8') as f:
        return json.load(f)


def compare_run(run_dir: str) -> Dict:
    """The plan of ``run_dir`` against what its tasks did (LMDeploy's log lines, predictions, wall times)."""
    plan = read_plan(run_dir)
    tasks = [t for t in plan['task_list'] if t.get('engine')]
    bands, starts, handed, stops = [], 0, 0, []
    for t in tasks:
        eng = t['engine']
        logs = sorted(glob.glob(os.path.join(run_dir, 'logs', 'infer', t['model'], '*.out')))
        text = ''
        for p in logs:
            if _band_log(p, t):
                with open(p, encoding='utf-8', errors='replace') as f:
                    text += f.read()
        built, inputs = parse_engine_log(text), parse_engine_inputs(text)
        starts += len(built)
        handed += len(inputs)
        if REHEARSAL_MARK in text or NO_DRIVER in text:
            stops.append(t['band'])
        b = {'band': t['band'], 'backend_plan': eng.get('backend'), 'session_len_plan': eng['session_len'],
             'max_batch_size_plan': eng['max_batch_size'], 'rows_plan': t['rows'],
             'seconds_plan': round(sum(t['seconds'][k] for k in ('start', 'prefill', 'decode')), 1),
             'seconds_plan_parts': {k: round(t['seconds'][k], 1) for k in ('start', 'prefill', 'decode')},
             'prompt_tokens_plan': t.get('prompt_tokens'), 'engines_built': len(built)}
        if inputs:
            b.update(session_len_input=inputs[0]['session_len'], max_batch_size_input=inputs[0]['max_batch_size'],
                     hf_overrides_input=inputs[0]['hf_overrides'], backend_input=inputs[0]['backend'])
        if eng.get('kv_budget_gib_per_gpu') and eng.get('kv_bytes_per_token'):
            b['kv_blocks_preflight'] = int(eng['kv_budget_gib_per_gpu'] * GIB // (eng['kv_bytes_per_token'] * 64))
        if built:
            e = built[0]
            b.update(backend_engine=e['backend'], session_len_engine=e['session_len'],
                     max_batch_size_engine=e['max_batch_size'], kv_blocks_lmdeploy=e.get('num_gpu_blocks'),
                     block_size=e.get('block_size'))
            if e.get('block_size') and e['block_size'] != 64 and b.get('kv_blocks_preflight'):
                b['kv_blocks_preflight'] = b['kv_blocks_preflight'] * 64 // e['block_size']
            b['engine_matches_plan'] = (e['session_len'] == eng['session_len']
                                        and e['max_batch_size'] == eng['max_batch_size']
                                        and (not eng.get('backend') or e['backend'] == eng['backend']))
        m = re.search(r'time elapsed: ([\d.]+)s', text)
        b['seconds_measured'] = float(m.group(1)) if m else None
        # prompts the engine counted differently from the over-length check (opencompass_longctx/models/responses.py)
        b['token_counts_differ'] = sum(int(n) for n in RE_COUNTS_DIFFER.findall(text))
        b.update(engine_requests(text))
        b['fits_session_len'] = (None if b['engine_longest_need'] is None
                                 else b['engine_longest_need'] <= eng['session_len'])
        b.update(count_predictions(run_dir, t))
        bands.append(b)
    return {'run_dir': run_dir, 'engine_starts_plan': len(tasks), 'engine_starts': starts, 'engine_inputs': handed,
            'bands': bands, 'rehearsal_stops': stops, 'plan_gpu_hours': round(sum(t['gpu_hours'] for t in tasks), 4)}


def tail(path: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """The last ``lines`` lines of a log (at most ``chars`` characters)."""
    with open(path, 'rb') as f:
        f.seek(max(f.seek(0, os.SEEK_END) - 4 * chars, 0))
        text = f.read().decode('utf-8', 'replace')
    return '\n'.join(text.splitlines()[-lines:])[-chars:]


def _result(run_dir: str, model: str, abbr: str) -> Optional[Dict]:
    p = os.path.join(run_dir, 'results', model, f'{abbr}.json')
    if not os.path.isfile(p):
        return None
    try:
        with open(p, encoding='utf-8') as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {'error': f'{p}: {e}', 'unreadable': True}


def failed_tasks(run_dir: str, expected: Optional[List] = None) -> Dict:
    """Every dataset of the run without a usable result, with the stage that failed, the exception and its task's
    log (:func:`opencompass_longctx.leaderboard.failures.find_failures`), and the tail of each such log; also any
    infer log with a traceback whose datasets all have results (a task that failed after writing them; an eval
    task's failure is a dataset without a result, found above)."""
    from opencompass_longctx.leaderboard.failures import find_failures
    if expected is None:
        expected = [(t['model'], d) for t in read_plan(run_dir)['task_list'] for d in t['datasets']]
    failures = find_failures(run_dir, expected, lambda m, a: _result(run_dir, m, a))
    out = [dict(model=f.model, dataset=f.dataset, stage=f.stage, reason=f.reason, log=f.log) for f in failures]
    logs = [f.log for f in failures if f.log and f.log.endswith('.out') and os.path.isfile(f.log)]
    for p in sorted(glob.glob(os.path.join(run_dir, 'logs', 'infer', '**', '*.out'), recursive=True)):
        if p not in logs and 'Traceback (most recent call last)' in tail(p, 10 ** 6, 10 ** 6):
            logs.append(p)
    return {'failed_tasks': out, 'log_tails': {p: tail(p) for p in dict.fromkeys(logs)}}
