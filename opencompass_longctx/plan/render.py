"""The plan as a printed table (markdown) and as JSON, written next to the run (``<work_dir>/plan/``): both read
the typed summary (:class:`~opencompass_longctx.plan.summary.PlanSummary`); the JSON is its serialisation."""
import json
import os
from dataclasses import asdict
from typing import Dict, List, Optional

from opencompass_longctx.models.recipe import CAVEAT_MARK
from opencompass_longctx.combinations import left_out_lines
from opencompass_longctx.plan.summary import PlanSummary
def count_text(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def fmt_tokens(n: int) -> str:
    return f'{n / 1e9:.2f}B' if n >= 1e9 else f'{n / 1e6:.1f}M' if n >= 1e6 else f'{n / 1e3:.1f}k' if n >= 1e3 else str(n)


def to_markdown(summary: PlanSummary) -> str:
    costed = summary.any_lmdeploy and summary.costed
    cost = (f"Estimated {summary.gpu_hours:.1f} GPU-hours on {summary.cost_model['gpu']} for the LMDeploy "
            f"models, of which harness overhead (engine starts and subprocess imports) "
            f"{summary.overhead_gpu_hours:.2f} GPU-hours = {100 * summary.overhead_share:.2f}%."
            + _reuse_text(summary)
            if costed and summary.overhead_share is not None else
            'GPU cost not estimated: no LMDeploy model with a known geometry in this run (other models are only '
            'grouped by band).')
    lines = ['# Run plan', '',
             f"{count_text(summary.tasks, 'inference task')}, {count_text(summary.engine_starts, 'model load')} "
             f"(engine starts). " + cost, '',
             '| model | band | tiers | tasks | engine starts | GPUs/task | datasets | samples | prompt tokens '
             '| session_len | max_batch_size | preflight | GPU-hours |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for model, m in summary.models.items():
        for band, b in m.bands.items():
            tok = fmt_tokens(b.prompt_tokens) + ('' if b.exact else ' (est.)')
            cost = f"{b.gpu_hours:.2f}" if m.lmdeploy else '-'
            marked = [t + (CAVEAT_MARK if t in b.caveats else '') for t in b.tiers]
            lines.append(f"| {model} | {band} | {', '.join(marked)} | {b.tasks} | {b.engine_starts} | "
                         f"{b.gpus_per_task} | {b.datasets} | {b.samples:,} | {tok} | "
                         f"{b.session_len or '-'} | {b.max_batch_size or '-'} | {b.verdict or '-'} | {cost} |")
        total = f"**{m.gpu_hours:.2f}**" if m.lmdeploy else '-'
        lines.append(f"| **{model}** | all | | {m.tasks} | {m.engine_starts} | | | | | | | | {total} |")
    cm = summary.cost_model
    gpu = cm['gpu_spec']
    lines += ['', f"Cost model (opencompass_longctx/tables/cost_model.py, override with "
                  f"LongCtxPartitioner(cost_model=...)): {gpu['name']} {gpu['bf16_tflops']} TFLOPS BF16, "
                  f"{gpu['hbm_tbps']} TB/s ({gpu['source']}); prefill at {cm['prefill_mfu']:.0%} of peak, decode at "
                  f"{cm['decode_bw_efficiency']:.0%} of HBM bandwidth, {cm['output_fraction']:.0%} of max_out_len "
                  f"generated; engine start {cm['engine_start_s']} s; subprocess import {cm['subprocess_import_s']} s "
                  f"({_calibration(cm)}). "
                  'Prompt tokens are exact where the dataset was built before (its build record), else "(est.)" from '
                  'the tier arithmetic; they are counted in each benchmark\'s data tokenizer.']
    if summary.skipped_already_predicted:
        lines.append(f"{summary.skipped_already_predicted} model x dataset pairs already have predictions "
                     'and are not planned again.')
    lines += _engine_lines(summary)
    reasons = [(model, band, b.reason) for model, m in summary.models.items() for band, b in m.bands.items()
               if b.reason]
    if reasons:
        lines += ['', 'Engine sizing notes:'] + [f'- {m} {band}: {r}' for m, band, r in reasons]
    left = [x for x in summary.left_out or [] if not x.get('kept')]
    fitted = [x for x in summary.left_out or [] if x.get('kept')]
    if fitted:
        lines += ['', f"Built to fit the model's window ({len(fitted)} model x dataset pairs, "
                      'opencompass_longctx.models.window):'] + left_out_lines(fitted)
    if left:
        lines += ['', f"Left out ({len(left)} model x dataset pairs of the config, "
                      'opencompass_longctx.combinations):'] + left_out_lines(left)
    lines += ['', f"Problems found without a GPU ({len(summary.problems)}):"]
    lines += [_problem_line(p) for p in summary.problems] or ['- none']
    return '\n'.join(lines) + '\n'


def _engine_lines(summary: PlanSummary) -> List[str]:
    """Per LMDeploy model: the engine that runs it and why, the RoPE scaling of each band, and the caveat marks."""
    from opencompass_longctx.models.recipe import rope_text
    lines = []
    for model, m in summary.models.items():
        if m.backend:
            ropes = '; '.join(f"{band}: {rope_text(b.rope)}" for band, b in m.bands.items() if b.rope)
            layers, kv = m.layer_types or (None, None)
            sized = f"; sized as {layers}, KV {kv:,.0f} bytes/token as LMDeploy allocates it" if layers else ''
            cached = f"; prefix caching {m.prefix_caching}" if m.prefix_caching else ''
            cp = ''.join(f"; context parallelism {band}: {b.cp[1]}" for band, b in m.bands.items() if b.cp)
            lines.append(f"- {model}: {m.backend[0]} ({m.backend[1]}); RoPE scaling {ropes}{sized}{cached}{cp}")
    marks = {(model, r) for model, m in summary.models.items() for b in m.bands.values()
             for rs in b.caveats.values() for r in rs}
    if lines:
        lines = ['', 'Engines (LMDeploy backend, and the RoPE scaling each band\'s engine applies):'] + lines
    if marks:
        lines += [''] + [f'{CAVEAT_MARK} {model}: {r}' for model, r in sorted(marks)]
    return lines


def _problem_line(p: Dict) -> str:
    where = p['where']
    names = ', '.join(where) if len(where) <= 4 else f"{', '.join(where[:3])}, ... {where[-1]}"
    text = p['problem'].strip().replace('\n', '\n  ')
    return f"- [{len(where)} {'item' if len(where) == 1 else 'items'}: {names}] {text}"


def to_json(summary: PlanSummary, plan: Dict) -> str:
    """The plan file: the summary (:meth:`~opencompass_longctx.plan.summary.PlanSummary.to_dict`) and every task."""
    data = summary.to_dict()
    data['task_list'] = [{k: v for k, v in asdict(t).items() if k not in ('model_cfg', 'dataset_cfgs')}
                         | {'engine': t.engine.as_dict() if t.engine else None, 'gpu_hours': t.gpu_hours}
                         for t in plan['tasks']]
    return json.dumps(data, indent=1, sort_keys=True, default=str)


def write(summary: PlanSummary, plan: Dict, directory: str, markdown: Optional[str] = None) -> Dict[str, str]:
    os.makedirs(directory, exist_ok=True)
    paths = {'md': os.path.join(directory, 'longctx_plan.md'), 'json': os.path.join(directory, 'longctx_plan.json')}
    with open(paths['md'], 'w', encoding='utf-8') as f:
        f.write(to_markdown(summary) if markdown is None else markdown)
    with open(paths['json'], 'w', encoding='utf-8') as f:
        f.write(to_json(summary, plan))
    return paths


def _calibration(cm: Dict) -> str:
    """Where the cost model's constants come from: the GPU-check run that calibrated them, else assumptions."""
    return f"calibrated by {cm['calibrated_by']}" if cm.get('calibrated_by') else 'assumptions, not yet calibrated on a GPU'


def _reuse_text(summary: PlanSummary) -> str:
    """The GPU-hours without prefix reuse, where prefix caching lowers the estimate."""
    plain, total = summary.gpu_hours_without_reuse, summary.gpu_hours
    if not plain or plain <= total:
        return ''
    return (f' Without prefix reuse (prefix caching off, or prompts in dataset order): {plain:.1f} GPU-hours; '
            f'reuse saves {100 * (1 - total / plain):.0f}%.')
