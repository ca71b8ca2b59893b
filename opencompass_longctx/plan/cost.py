"""The cost model of a plan: GPU-hours of a task from its prompt tokens, its engine and the GPU's peak figures
(``opencompass_longctx/tables/cost_model.py``; override with ``LongCtxPartitioner(cost_model=...)``)."""
import math
from typing import Dict, Optional, Sequence

from opencompass_longctx.tables.cost_model import COST_MODEL, GPUS
from opencompass_longctx.models import geometry
from opencompass_longctx.models.engine_plan import EnginePlan
from opencompass_longctx.plan.bands import PlanError
def cost_model(overrides: Optional[Dict] = None) -> Dict:
    cm = dict(COST_MODEL, **(overrides or {}))
    unknown = set(overrides or {}) - set(COST_MODEL) - {'gpus'}
    if unknown:
        raise PlanError(f'unknown cost-model entries {sorted(unknown)}; known: {sorted(COST_MODEL)}')
    gpus = dict(GPUS, **(cm.pop('gpus', None) or {}))
    if cm['gpu'] not in gpus:
        raise PlanError(f"unknown gpu {cm['gpu']!r}; known: {sorted(gpus)} (or add one: cost_model=dict(gpus=...))")
    cm['gpu_spec'] = dict(gpus[cm['gpu']], name=cm['gpu'])
    return cm


def task_seconds(loads: Sequence, engine: Optional[EnginePlan], cm: Dict) -> Dict[str, float]:
    """Prefill, decode and start seconds of one task (wall time of its GPUs); ``loads``: its datasets' loads
    (:class:`~opencompass_longctx.plan.loads.DatasetLoad`)."""
    start = cm['subprocess_import_s'] + (cm['engine_start_s'] if engine else 0.0)
    if not engine or not engine.layers or not engine.weights:
        return {'start': start, 'prefill': 0.0, 'decode': 0.0, 'costed': False}
    gpu, tp = cm['gpu_spec'], engine.tp
    flops_per_s = tp * gpu['bf16_tflops'] * 1e12 * cm['prefill_mfu']
    # the layer types' compute model (models.geometry): active params, attention over full layers only
    prof = engine.compute or geometry.dense_profile(engine.weights / 2.0, engine.layers, engine.hidden or 0,
                                                    engine.kv_bytes_per_token)
    total = prof.get('total_params') or engine.weights / 2.0
    bw = tp * gpu['hbm_tbps'] * 1e12 * cm['decode_bw_efficiency']
    prefill = decode = plain = 0.0
    batch = max(1, engine.max_batch_size)
    # with prefix caching on, a prompt computes only the tokens after its cached prefix (a share ld.reuse of them),
    # attending to the whole prefix: FLOPs(L) - FLOPs(cached part)
    cached = engine.prefix_cached
    for ld in loads:
        L = ld.tokens_per_row * (ld.ratio or 1.0)      # in the model's tokens
        full = ld.rows * geometry.prefill_flops(prof, L) / flops_per_s
        plain += full
        reused = getattr(ld, 'reuse', 0.0) if cached else 0.0
        prefill += full - (ld.rows * geometry.prefill_flops(prof, L * reused) / flops_per_s if reused else 0.0)
        out = ld.max_out_len * cm['output_fraction']
        batches = math.ceil(ld.rows / batch)
        b = min(batch, ld.rows) or 1
        decode += batches * out * geometry.decode_bytes(prof, engine.weights, total, b, L + out / 2) / bw
    return {'start': start, 'prefill': prefill, 'decode': decode, 'costed': True, 'prefill_without_reuse': plain}
