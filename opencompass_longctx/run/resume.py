"""What a resumed run (``opencompass ... -r``) has already done and what is left, per model and tier band.

A run that was preempted, killed at its time limit or stopped by hand is resumed with ``-r`` (the latest work
directory, or ``-r <timestamp>``). OpenCompass then skips every (model, dataset) whose predictions file exists,
and the inferencer of a dataset that was interrupted continues from the batches it saved after each batch
(``predictions/<model>/tmp_<dataset>.jsonl``, one line per sample; a file with an unreadable line is moved aside
as ``.bak`` and the dataset starts over). :func:`progress` reads the same files, so the plan of a resumed run
(``-r`` and ``--dry-run -r``) says what is done and what is left: datasets and samples finished (saved batches
included), and the prompt tokens and GPU-hours that remain (a partly saved dataset's by the share of its samples
left).
"""
import dataclasses
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx import plan as P
from opencompass_longctx.plan.render import count_text, fmt_tokens
def tmp_path(prediction_path: str) -> str:
    """OpenCompass's file of saved batches beside a predictions file (``tmp_<name>.jsonl``)."""
    folder, name = os.path.split(prediction_path)
    return os.path.join(folder, 'tmp_' + os.path.splitext(name)[0] + '.jsonl')


def saved_samples(path: str) -> Tuple[int, str]:
    """Samples OpenCompass will restore from a ``tmp_*.jsonl`` file, and a note when it will not restore them."""
    if not os.path.exists(path):
        return 0, ''
    seen = set()
    try:
        with open(path, encoding='utf-8') as f:
            for line in f:
                if line.strip():
                    seen.add(json.loads(line)['idx'])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return 0, (f'{os.path.basename(path)} cannot be read ({type(e).__name__}): OpenCompass moves it aside '
                   '(.bak) and runs the dataset from its first sample')
    return len(seen), ''


@dataclasses.dataclass
class DatasetProgress:
    model: str
    dataset: str
    band: str
    state: str                # 'done' (predictions file), 'partial' (saved batches), 'todo' or 'restart' (saved
                              # predictions that do not match the dataset: set aside, the dataset redone)
    rows: int
    saved: int                # samples predicted: all of a done dataset, the saved batches of a partial one
    prompt_tokens_left: int
    exact: bool               # rows and tokens from the dataset's build record (else tier arithmetic)
    seconds_saved: float = 0.0   # GPU seconds of the saved samples (LMDeploy models with a known geometry)
    tmp: str = ''
    note: str = ''


def _band(ld, edges) -> str:
    return P.band_name(P.band_of(ld.tier, edges), edges)


def progress(combinations: Sequence[Dict], plan: Dict, out_dir: str, bands: Optional[Sequence[str]] = None,
             headroom: float = P.SIZE_HEADROOM, stale: Sequence = ()) -> List[DatasetProgress]:
    """One entry per (model, dataset) of the run. ``out_dir``: the predictions directory; ``plan``: the run's plan
    (:func:`~opencompass_longctx.plan.make_plan` on the same combinations); ``stale``: the saved predictions that do
    not match their dataset (:func:`opencompass_longctx.run.resume_check.stale_predictions`): those datasets restart."""
    from opencompass.utils import get_infer_output_path, model_abbr_from_cfg
    edges = P.band_edges(bands)
    task_of = {(t.model, a): t for t in plan['tasks'] for a in t.datasets}
    restart = {(s.model, s.dataset): s for s in stale}
    out: List[DatasetProgress] = []
    for comb in combinations:
        for model in comb['models']:
            abbr = model_abbr_from_cfg(model)
            tok = []                                          # the model's tokenizer, loaded once when needed
            for d in comb['datasets']:
                final = get_infer_output_path(model, d, out_dir)
                redo = restart.get((abbr, d.get('abbr')))
                if redo is not None:
                    ld = P.dataset_load(d, model.get('max_out_len'))
                    out.append(DatasetProgress(abbr, ld.abbr, _band(ld, edges), 'restart', ld.rows, 0,
                                               ld.prompt_tokens, ld.exact, tmp=os.path.relpath(redo.path, out_dir),
                                               note=redo.reason))
                    continue
                if os.path.exists(final):
                    try:
                        ld = P.dataset_load(d, model.get('max_out_len'))
                    except P.PlanError:                   # not a dataset of this package: done all the same
                        out.append(DatasetProgress(abbr, d.get('abbr', ''), '-', 'done', 0, 0, 0, False))
                        continue
                    out.append(DatasetProgress(abbr, ld.abbr, _band(ld, edges), 'done', ld.rows, ld.rows, 0,
                                               ld.exact))
                    continue
                tmp = tmp_path(final)
                saved, note = saved_samples(tmp)
                if not saved:
                    ld = P.dataset_load(d, model.get('max_out_len'))
                    out.append(DatasetProgress(abbr, ld.abbr, _band(ld, edges), 'todo', ld.rows, 0, ld.prompt_tokens,
                                               ld.exact, note=note))
                    continue
                if not tok:
                    tok.append(P.model_tokenizer(model) if P.is_lmdeploy(model) else None)
                ld = P.dataset_load(d, model.get('max_out_len'), tok[0])
                ld.min_headroom = float(headroom)
                saved = min(saved, ld.rows)
                left = dataclasses.replace(ld, rows=ld.rows - saved, exact=False,
                                           prompt_tokens=round(ld.prompt_tokens * (ld.rows - saved) / max(ld.rows, 1)))
                task = task_of.get((abbr, ld.abbr))
                seconds = 0.0
                if task is not None and task.seconds.get('costed'):
                    full, rest = (P.task_seconds([x], task.engine, plan['cost_model']) for x in (ld, left))
                    seconds = max(task.gpus, 1) * sum(full[k] - rest[k] for k in ('prefill', 'decode'))
                out.append(DatasetProgress(abbr, ld.abbr, _band(ld, edges), 'partial', ld.rows, saved,
                                           left.prompt_tokens, False, seconds, os.path.relpath(tmp, out_dir)))
    return out


def summarize(entries: Sequence[DatasetProgress], plan: Dict, stale: Sequence = ()) -> Dict:
    """Per (model, band): tasks left, datasets and samples done, and what is left (tokens, GPU-hours); ``stale``: the
    datasets that restart from zero and why (:func:`opencompass_longctx.run.resume_check.stale_predictions`)."""
    rows: Dict[Tuple[str, str], Dict] = {}
    for e in entries:
        r = rows.setdefault((e.model, e.band), {
            'model': e.model, 'band': e.band, 'tasks_left': 0, 'datasets_done': 0, 'samples_done': 0,
            'saved_samples': 0, 'datasets_left': 0, 'datasets_partial': 0, 'samples_left': 0,
            'prompt_tokens_left': 0, 'exact': True, 'gpu_hours_left': None})
        r['samples_done'] += e.saved
        r['exact'] = r['exact'] and e.exact
        if e.state == 'done':
            r['datasets_done'] += 1
            continue
        r['datasets_left'] += 1
        r['samples_left'] += e.rows - e.saved
        r['prompt_tokens_left'] += e.prompt_tokens_left
        if e.state == 'partial':
            r['datasets_partial'] += 1
            r['saved_samples'] += e.saved
    saved_seconds: Dict[Tuple[str, str], float] = {}
    for e in entries:
        saved_seconds[(e.model, e.band)] = saved_seconds.get((e.model, e.band), 0.0) + e.seconds_saved
    for t in plan['tasks']:
        r = rows[(t.model, t.band)]
        r['tasks_left'] += 1
        if t.seconds.get('costed'):
            r['gpu_hours_left'] = (r['gpu_hours_left'] or 0.0) + t.gpu_hours
    for key, r in rows.items():
        if r['gpu_hours_left'] is not None:
            r['gpu_hours_left'] = max(r['gpu_hours_left'] - saved_seconds.get(key, 0.0) / 3600, 0.0)
    table = list(rows.values())
    total = {k: sum(r[k] for r in table) for k in ('tasks_left', 'datasets_done', 'samples_done', 'saved_samples',
                                                  'datasets_left', 'datasets_partial', 'samples_left',
                                                  'prompt_tokens_left')}
    costed = [r['gpu_hours_left'] for r in table if r['gpu_hours_left'] is not None]
    total['gpu_hours_left'] = sum(costed) if costed else None
    return {'resumed': any(e.saved for e in entries) or bool(stale), 'bands': table, 'total': total,
            'restarted': [{'model': s.model, 'dataset': s.dataset, 'file': s.path, 'reason': s.reason,
                           'set_aside_as': s.moved_to} for s in stale],
            'partial': [{'model': e.model, 'dataset': e.dataset, 'saved': e.saved, 'rows': e.rows, 'tmp': e.tmp}
                        for e in entries if e.state == 'partial'],
            'notes': [f'{e.model}/{e.dataset}: {e.note}' for e in entries if e.note and e.state != 'restart']}


def to_markdown(summary: Dict) -> str:
    """The plan's "Resumed run" section ('' when nothing was done before)."""
    if not summary['resumed'] and not summary['notes']:
        return ''
    t = summary['total']
    lines = ['', '## Resumed run: done and left', '',
             f"{count_text(t['datasets_done'], 'model x dataset pair')} already predicted (not run again), "
             f"{t['datasets_partial']} continuing from saved batches ({count_text(t['saved_samples'], 'sample')}), "
             f"{t['datasets_left']} left in {count_text(t['tasks_left'], 'inference task')}.", '',
             '| model | band | tasks left | datasets done | samples done (saved batches) | datasets left (partial) '
             '| samples left | prompt tokens left | GPU-hours left |',
             '|---|---|---|---|---|---|---|---|---|']

    def row(name, band, r, exact):
        gpu = '-' if r['gpu_hours_left'] is None else f"{r['gpu_hours_left']:.2f}"
        est = '' if exact else ' (est.)'
        return (f"| {name} | {band} | {r['tasks_left']} | {r['datasets_done']} | {r['samples_done']:,} "
                f"({r['saved_samples']:,}) | {r['datasets_left']} ({r['datasets_partial']}) | {r['samples_left']:,} | "
                f"{fmt_tokens(r['prompt_tokens_left'])}{est} | {gpu} |")
    lines += [row(r['model'], r['band'], r, r['exact']) for r in summary['bands']]
    lines.append(row('**all**', '', t, all(r['exact'] for r in summary['bands'])))
    if summary['partial']:
        lines += ['', 'Saved batches (each dataset continues after its last saved sample):']
        lines += [f"- {p['model']}/{p['dataset']}: {p['saved']} of {p['rows']} samples saved ({p['tmp']})"
                  for p in summary['partial']]
    lines += [f'- {n}' for n in summary['notes']]
    if summary.get('restarted'):
        lines += ['', 'Restarting from zero (saved predictions that do not match the current dataset; the file is kept, '
                      'renamed, never reused):']
        lines += [f"- {r['model']}/{r['dataset']}: {r['reason']}; {r['file']} "
                  + (f"set aside as {r['set_aside_as']}" if r['set_aside_as'] else 'will be set aside (.set-aside-<time>)')
                  for r in summary.get('restarted', [])]
    lines.append('Samples done count each predicted dataset\'s rows; prompt tokens and GPU-hours left of a partly '
                 'saved dataset are its share of samples left (est.).')
    return '\n'.join(lines) + '\n'
