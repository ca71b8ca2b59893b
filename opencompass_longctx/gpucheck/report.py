"""The GPU check's report, written as it goes: ``gpu_check.json`` and ``gpu_check.md`` are rewritten (atomically)
after every measurement and every stage, and each record is also appended to ``gpu_check.jsonl``, so a stage cut at
its time limit, or a process killed from outside, leaves everything measured until then. The markdown ends with one
line, the verdict (:func:`verdict`), which says what works.

Stages run under a time limit each (:class:`Report.stage`); a stage's function gets a :class:`Recorder` as its
first argument and saves each measurement with ``rec.add(key, item)`` when it is made.
"""
import contextlib
import json
import os
import signal
import time
import traceback
from typing import Dict, List, Optional
from opencompass_longctx.errors import LongCtxError

# seconds per stage kind at most (--limits changes them); the device recipe (bench/gpu_check.sh) sets its own
LIMITS = dict(python=10, stack=60, model=900, data=600, opencompass=3600, bench=1800, prefix=600, tp=1800)
# what a stage still to come needs at least when the run has a deadline (--call-seconds)
RESERVE = dict(python=1, stack=5, model=30, data=10, opencompass=200, bench=100, prefix=30, tp=5)
REHEARSAL_MARK = 'LONGCTX REHEARSAL: first CUDA call reached, stopping here'
NO_DRIVER = 'Found no NVIDIA driver'   # torch's own error where a CUDA call bypasses torch.cuda's lazy init
ENGINE_NAMES = {'turbomind': 'TurboMind', 'pytorch': 'PyTorch engine'}
BENCH_NAMES = {'babilong': 'BABILong', 'longbio': 'LongBioBench', 'nolima': 'NoLiMa'}


def kind(stage: str) -> str:
    """'opencompass-turbomind' -> 'opencompass'."""
    return stage.split('-', 1)[0]


def engine_of(stage: str) -> str:
    return stage.split('-', 1)[1] if '-' in stage else ''


def stage_limit(name: str, later=(), deadline: Optional[float] = None, limits: Optional[Dict] = None) -> int:
    """``name``'s limit: its kind's own, cut to the run's time left less what the stages still to run need."""
    limits = LIMITS if limits is None else limits
    limit = limits[kind(name)]
    if deadline is not None:
        left = deadline - time.time() - sum(min(RESERVE[kind(n)], limits[kind(n)]) for n in later)
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


class RehearsalStop(LongCtxError, RuntimeError):
    pass


class Recorder:
    """One stage's handle: ``add`` appends a measurement and saves the report at once; ``set`` saves fields."""

    def __init__(self, report: 'Report', name: str):
        self.report, self.name = report, name
        self.entry = report.data['stages'][name]
        self.limit = self.entry.get('limit_s')     # the stage's time limit (a subprocess keeps inside it)

    def add(self, key: str, item) -> None:
        self.entry.setdefault(key, []).append(item)
        self.report.write({'stage': self.name, key: item})

    def set(self, **fields) -> None:
        self.entry.update(fields)
        self.report.write({'stage': self.name, **fields})


class Report:
    """The results so far (module doc). ``deadline``: time.time() by which the last stage must have ended."""

    def __init__(self, out: str, command: str, rehearse: bool = False, deadline: Optional[float] = None,
                 limits: Optional[Dict] = None):
        self.out, self.deadline, self.limits = out, deadline, dict(LIMITS if limits is None else limits)
        self.data = {'rehearse': rehearse, 'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
                     'command': command, 'stages': {}}
        os.makedirs(out, exist_ok=True)
        self.paths = {k: os.path.join(out, f'gpu_check.{k}') for k in ('json', 'md', 'jsonl')}
        open(self.paths['jsonl'], 'w').close()

    def stage(self, name: str, fn, *args, later=()):
        """Run one stage under its time limit: ``fn(recorder, *args)``; its result dict (or its error) goes into
        the report, which is rewritten. A result may set its own ``status`` (``failed``, ``rehearsal stop``) with an
        ``error``/``where`` note; what the stage recorded before an error or its time limit stays."""
        start = time.time()
        entry = self.data['stages'].setdefault(name, {})
        limit = stage_limit(name, later, self.deadline, self.limits)
        entry.update(limit_s=limit, status='running')
        if limit < 5 and kind(name) != 'python':
            entry.update(status='skipped', where='no time left in this run', seconds=0)
            print(f'[gpu_check] stage {name}: skipped (no time left)', flush=True)
            self.write({'stage': name, 'status': 'skipped'})
            return entry
        self.write({'stage': name, 'status': 'running'})
        try:
            with time_limit(max(limit, 1)):
                result = fn(Recorder(self, name), *args) or {}
            entry.update(result)
            entry['status'] = result.get('status', 'ok')
        except RehearsalStop as e:
            entry.update(status='rehearsal stop', where=str(e))
        except (Exception, SystemExit) as e:  # noqa: BLE001 - recorded (LMDeploy exits on a failed check)
            tb = traceback.format_exc()
            stop = self.data['rehearse'] and (REHEARSAL_MARK in tb or NO_DRIVER in tb)
            entry.update(status='rehearsal stop' if stop else 'failed', error=f'{type(e).__name__}: {e}'[:2000],
                         traceback=tb[-4000:])
        entry['seconds'] = round(time.time() - start, 1)
        print(f"[gpu_check] stage {name}: {entry['status']} ({entry['seconds']} s)"
              + (f" - {entry.get('error') or entry.get('where')}" if entry['status'] != 'ok' else ''), flush=True)
        self.write({'stage': name, 'status': entry['status'], 'seconds': entry['seconds']})
        return entry

    def finish(self) -> str:
        self.data['verdict'] = verdict(self.data)
        self.write({'verdict': self.data['verdict']})
        return self.data['verdict']

    def write(self, record: Optional[Dict] = None) -> None:
        """Save the report now: the JSON and markdown replaced whole (never half-written), ``record`` appended."""
        if record is not None:
            with open(self.paths['jsonl'], 'a', encoding='utf-8') as f:
                f.write(json.dumps(dict(record, t=round(time.time(), 2)), sort_keys=True, default=str) + '\n')
        for key, text in (('json', json.dumps(self.data, indent=1, sort_keys=True, default=str)),
                          ('md', to_markdown(self.data))):
            tmp = self.paths[key] + '.tmp'
            with open(tmp, 'w', encoding='utf-8') as f:
                f.write(text)
            os.replace(tmp, self.paths[key])


# ---------------------------------------------------------------------------------------------- the verdict
def _first_line(text: Optional[str], n: int = 200) -> str:
    return ((text or '').strip().splitlines() or [''])[0][:n]


def _tokens(n: int) -> str:
    return str(n) if n < 1024 else f'{round(n / 1024)}k'


def _message(error: Optional[str]) -> str:
    """A stage's error without the exception type of the check's own RuntimeError, problems one per clause."""
    text = (error or '').strip()
    return (text[len('RuntimeError: '):] if text.startswith('RuntimeError: ') else text)[:1200]


def _served(stage: Dict) -> str:
    """'BABILong 16 (6/6 datasets), LongBioBench 10 (5/5), NoLiMa 8 (4/4) predictions' from a run's bands."""
    tot = {}
    for b in stage.get('bands', []):
        for bench, c in (b.get('by_benchmark') or {}).items():
            t = tot.setdefault(bench, {'predictions': 0, 'datasets': 0, 'datasets_written': 0})
            for k in t:
                t[k] += c.get(k, 0)
    if not tot:
        return 'no predictions'
    differ = sum(b.get('token_counts_differ') or 0 for b in stage.get('bands', []))
    counted = sum(b.get('engine_prompts') or 0 for b in stage.get('bands', []))
    tokens = (f', {differ} prompt(s) counted differently by the engine than by the over-length check' if differ
              else f", the engine's token counts of {counted} prompts as the check's" if counted else '')
    return 'predictions ' + ', '.join(
        f"{BENCH_NAMES.get(k, k)} {t['predictions']} ({t['datasets_written']}/{t['datasets']} datasets)"
        for k, t in sorted(tot.items())) + tokens


def verdict(data: Dict) -> str:
    """One line: what works, what fails (with the first reason) and what did not run."""
    stages = data['stages']
    works, fails, not_run = [], [], []
    for name in ('python', 'stack'):
        s = stages.get(name, {})
        if s.get('status') == 'failed':
            py = stages.get('python', {})
            ok = f"Python {py['python']} is fine; " if name == 'stack' and py.get('python') else ''
            return f"VERDICT: {ok}nothing checked: {_message(s.get('error'))}"
    if stages.get('python', {}).get('status') == 'ok' and stages.get('stack', {}).get('status') != 'ok':
        works.append(f"Python {stages['python'].get('python')}")
    if stages.get('stack', {}).get('status') == 'ok':
        info = stages['stack']
        works.append(f"Python {info.get('python')}, LMDeploy {info.get('lmdeploy')}, torch {info.get('torch')} "
                     f"(CUDA {info.get('torch_cuda')})" + (f" on {info['gpu']}" if info.get('gpu') else ''))
    for name, s in stages.items():
        k, eng = kind(name), ENGINE_NAMES.get(engine_of(name), engine_of(name))
        status = s.get('status')
        if k in ('python', 'stack'):
            continue
        label = {'model': 'model directory', 'data': 'datasets'}.get(k) or {
            'opencompass': f'{eng} through OpenCompass', 'bench': f'{eng} throughput',
            'prefix': f'{eng} prefix cache', 'tp': f"{eng} at tp={s['tp']}" if s.get('tp') else f'{eng} at tp > 1'}[k]
        if status == 'skipped':
            not_run.append(f"{label} ({s.get('where') or 'no time left'})")
        elif k == 'data' and status == 'ok' and s.get('rows_checked'):
            works.append(f"{label} ({s.get('rows', 0)} rows, every prompt + answer within its band's engine)")
        elif k == 'prefix' and status in ('ok', 'rehearsal stop'):
            measured = prefix_text(s)
            works.append(f'{label}: {measured}' if measured else
                         f"{label}: predicted {s.get('predicted_share', 0):.2f} for {s.get('prompts')} NoLiMa prompts, "
                         'hit rate not measured (rehearsal: stopped at the first CUDA call)')
        elif status == 'rehearsal stop':
            works.append(f'{label} up to its first CUDA call (rehearsal)')
        elif k == 'opencompass':
            if status == 'ok':
                works.append(f'{label}: {_served(s)}, engines as planned')
            else:
                failed = s.get('failed_tasks') or []
                why = (f"opencompass exited with {s.get('rc')}: {_first_line(s['opencompass_error'], 300)}"
                       if s.get('opencompass_error') else
                       f"{len(failed)} failed task(s), first {failed[0]['dataset']}: {_first_line(failed[0]['reason'])}"
                       if failed else _first_line(s.get('error')))
                fails.append(f'{label} ({why}; {_served(s)})')
        elif k in ('bench', 'tp'):
            done = [p for p in s.get('prefill', [])]
            lengths = ', '.join(_tokens(p['tokens']) for p in done)
            if status == 'ok':
                works.append(f"{label} at {lengths} (prefill MFU "
                             + '/'.join('?' if p.get('mfu') is None else f"{p['mfu']:.2f}" for p in done) + ')')
            else:
                fails.append(f"{label} ({_first_line(s.get('error'))}"
                             + (f'; measured before it: prefill at {lengths}' if done else '') + ')')
        elif status == 'ok':
            works.append(label)
        else:
            fails.append(f'{label} ({_first_line(s.get("error") or s.get("where"))})')
    warnings = stages.get('stack', {}).get('warnings') or []
    parts = [f"works: {'; '.join(works) or 'nothing'}"]
    if fails:
        parts.append(f"FAILS: {'; '.join(fails)}")
    if not_run:
        parts.append(f"not run: {'; '.join(not_run)}")
    if warnings:
        parts.append(f"warning: {'; '.join(w[:300] for w in warnings)}")
    return 'VERDICT: ' + ' | '.join(parts)


# ---------------------------------------------------------------------------------------------- markdown
def _fmt(v, spec='.3f'):
    return '-' if v is None else format(v, spec) if isinstance(v, float) else str(v)


def cell(v, spec='.3f') -> str:
    """A value as one Markdown table cell: ``|`` escaped and line breaks made spaces (a verdict or an exception
    holds both), so that the row keeps its columns."""
    return _fmt(v, spec).replace('\\', '\\\\').replace('|', '\\|').replace('\r', ' ').replace('\n', ' ')


def row(*values) -> str:
    return '| ' + ' | '.join(cell(v) for v in values) + ' |'


def to_markdown(data: Dict) -> str:
    lines = [f"# GPU check ({'rehearsal, no GPU' if data['rehearse'] else 'device run'}), {data['date']}", '',
             f"Command: `{data['command']}`", '', '| stage | status | seconds | note |', '|---|---|---|---|']
    for name, s in data['stages'].items():
        note = _first_line(s.get('error') or s.get('where'), 160) if s.get('status') != 'ok' else s.get('note', '')
        lines.append(row(name, s.get('status'), str(s.get('seconds', '')), note))
    stack = data['stages'].get('stack', {})
    if stack.get('status') == 'ok':
        lines += ['', 'Environment: ' + ', '.join(f'{k} {stack[k]}' for k in (
            'python', 'lmdeploy', 'torch', 'torch_cuda', 'opencompass', 'transformers', 'gpu', 'gpu_memory_gib',
            'gpu_free_gib', 'turbomind', 'engines', 'c_compiler', 'python_h') if stack.get(k) is not None)]
        lines += [f'- warning: {w}' for w in stack.get('warnings') or []]
        lines += [f'- the PyTorch engine cannot run here: {w}' for w in stack.get('pytorch_engine_blocked') or []]
    lines += _data_markdown(data['stages'].get('data', {}))
    for name, s in data['stages'].items():
        if kind(name) == 'opencompass':
            lines += _run_markdown(name, s)
        elif kind(name) in ('bench', 'tp'):
            lines += _bench_markdown(name, s)
        elif kind(name) == 'prefix':
            lines += _prefix_markdown(name, s)
    if data.get('cost_model_lines'):
        lines += ['', f"## For tables/cost_model.py", '', '```python', *data['cost_model_lines'], '```']
    if data.get('verdict'):
        lines += ['', data['verdict']]
    return '\n'.join(lines) + '\n'


def _data_markdown(stage: Dict) -> List[str]:
    rows = [d for d in stage.get('datasets', []) if 'session_len' in d]
    if not rows:
        return []
    out = ['', '## data: every row sendable (prompt as the inferencer measures it + max_out_len)', '',
           '| dataset | band | rows | longest prompt | max_out_len | engine session_len | window | over the engine '
           '| over the window | sendable |', '|---|---|---|---|---|---|---|---|---|---|']
    out += [row(d['abbr'], d['band'], d['rows'], d['longest_prompt'], d['max_out_len'], d['session_len'], d['window'],
                d['over_engine'], d['over_window'], 'yes' if d['fits'] else 'NO') for d in rows]
    if stage.get('left_out'):
        out += ['', 'Left out for the model (opencompass_longctx.combinations): '
                + '; '.join(f"{x['dataset']}: {x['reason']}" for x in stage['left_out'])]
    return out


def _run_markdown(name: str, oc: Dict) -> List[str]:
    out = []
    if oc.get('bands'):
        out += ['', f'## {name}: plan vs LMDeploy', '',
                '| band | backend plan / engine | session_len plan / handed / engine | max_batch_size plan / handed / '
                'engine | KV blocks preflight / LMDeploy | predictions / samples | not sent (over-length / engine '
                'too small) | tokens: plan (data tokenizer) / engine | longest prompt + new tokens / session_len | '
                'counted differently by the engine | wall s plan / measured |',
                '|---|---|---|---|---|---|---|---|---|---|---|']
        for b in oc['bands']:
            out.append(row(
                b['band'], f"{b.get('backend_plan')} / {b.get('backend_engine')}",
                f"{b['session_len_plan']} / {_fmt(b.get('session_len_input'))} / {_fmt(b.get('session_len_engine'))}",
                f"{b['max_batch_size_plan']} / {_fmt(b.get('max_batch_size_input'))} / "
                f"{_fmt(b.get('max_batch_size_engine'))}",
                f"{_fmt(b.get('kv_blocks_preflight'))} / {_fmt(b.get('kv_blocks_lmdeploy'))}",
                f"{b.get('predictions')} / {b.get('rows_plan')}",
                f"{b.get('over_length', 0)} / {b.get('engine_too_small', 0)}",
                f"{_fmt(b.get('prompt_tokens_plan'))} / {_fmt(b.get('engine_input_tokens'))}",
                f"{_fmt(b.get('engine_longest_need'))} / {b['session_len_plan']}", b.get('token_counts_differ'),
                f"{b.get('seconds_plan')} / {_fmt(b.get('seconds_measured'))}"))
        out += ['', f"Engine starts: plan {oc.get('engine_starts_plan')}, handed to LMDeploy "
                f"{oc.get('engine_inputs')}, built {oc.get('engine_starts')}."
                + (f" Stopped at the first CUDA call: {', '.join(oc['rehearsal_stops'])}."
                   if oc.get('rehearsal_stops') else '')]
    if oc.get('failed_tasks'):
        out += ['', f"## {name}: failed tasks (OpenCompass exited {oc.get('rc')}; the tail of each task's log)", '']
        groups: Dict[tuple, List[str]] = {}
        for f in oc['failed_tasks']:
            groups.setdefault((f['stage'], f['reason'], f.get('log')), []).append(f"{f['model']}/{f['dataset']}")
        for (stage, reason, log), names in groups.items():
            out.append(f"- {stage} failed for {len(names)} dataset(s) ({', '.join(names)}): {reason}"
                       + (f'; log `{log}`' if log else ''))
        for log, text in (oc.get('log_tails') or {}).items():
            out += ['', f'`{log}` (last {len(text.splitlines())} lines):', '', '```text', text.rstrip('\n'), '```']
    return out


def _bench_markdown(name: str, bench: Dict) -> List[str]:
    if not bench.get('prefill') and not bench.get('decode'):
        return []
    tp = bench.get('tp') or (bench.get('engine') or {}).get('tp') or 1
    out = ['', f"## {name}: throughput (the leaderboard wrapper's engine, tp={tp}, prefix caching "
           f"{bench.get('prefix_caching', '?')}; each pass timed on its own)", '',
           '| what | tokens (context) | batch | cached tokens | timed | seconds | tokens/s | MFU (no embedding, no '
           'lm_head) / HBM efficiency |', '|---|---|---|---|---|---|---|---|']
    for p in bench.get('prefill', []):
        out.append(row('prefill', p['tokens'], 1, p.get('cached_tokens'), 'its own pass, 1 new token', p['seconds'],
                       f"{p['tokens_per_s']:.0f}", p.get('mfu')))
    for d in bench.get('decode', []):
        timed = (f"first to last streamed token ({d.get('window_tokens')} tokens)" if d.get('streamed')
                 else 'not timed apart (left out of the cost model)')
        out.append(row('decode', d['context'], d['batch'], 0 if d.get('streamed') else '-', timed, d['seconds'],
                       f"{d['tokens_per_s']:.0f}", d.get('bw_efficiency')))
    return out


def _prefix_markdown(name: str, s: Dict) -> List[str]:
    if s.get('predicted_share') is None:
        return []
    out = ['', f'## {name}: prefix cache on a NoLiMa batch', '',
           '| dataset | prompts | batch | prompt tokens | cached tokens | hit rate measured | share predicted (plan) '
           '| share predicted (block trie) | share declared (spec) | s uncached / cached / saved |',
           '|---|---|---|---|---|---|---|---|---|---|']
    out.append(row(s.get('dataset'), s.get('prompts'), s.get('batch_size'), s.get('prompt_tokens'),
                   s.get('cached_tokens'), s.get('hit_rate'), s.get('predicted_share'), s.get('predicted_share_trie'),
                   s.get('declared_share'),
                   f"{_fmt(s.get('seconds_uncached'))} / {_fmt(s.get('seconds_cached'))} / "
                   f"{_fmt(s.get('seconds_saved'))}"))
    return out


def prefix_text(s: Dict) -> Optional[str]:
    """'hit rate 0.61 measured vs 0.64 predicted by the plan (declared 0.65), 3.2 s saved of 9.1' (None: not
    measured)."""
    if s.get('hit_rate') is None:
        return None
    return (f"hit rate {s['hit_rate']:.2f} measured vs {s['predicted_share']:.2f} predicted by the plan (trie "
            f"{s['predicted_share_trie']:.2f}, declared {s['declared_share']:.2f}), {s['seconds_saved']:.1f} s saved "
            f"of {s['seconds_uncached']:.1f}")
