"""Prefill and decode throughput on the leaderboard's own wrapper (``LongCtxTurboMindModel``, built from the model
config the OpenCompass stage ran), the MFU arithmetic, and the measured constants as lines for
``tables/cost_model.py``.

MFU counts the FLOPs a prompt really costs: 2 x the matmul parameters per token (attention projections and MLP of
every layer) plus causal attention (2 x width x L^2 per full layer, :func:`opencompass_longctx.models.geometry
.prefill_flops`). The embedding is a table lookup, not a matmul, and LMDeploy's prefill computes the logits (lm_head)
of the last token only: neither is a per-token FLOP. (Counting them puts Qwen2.5-7B's MFU about 15% high at 4k.)
Decode is memory-bound: one step reads the weights but the embedding table (only the batch's rows of it) and each
sequence's KV cache over its context.
"""
import time
from typing import Dict, List, Optional

from opencompass_longctx.models import geometry
from opencompass_longctx.tables.cost_model import GPUS
LENGTHS = (4096, 32768, 131072 - 512)    # prompt tokens; the longest leaves room in a 128k engine
DECODE_CONTEXT = 4096
DECODE_NEW = 129


def matmul_params(cfg: Dict) -> float:
    """Parameters a token goes through in matmuls, without the embedding and lm_head (dense attention and MLP:
    q, k, v, o and gate, up, down per layer; a row's ``active_params`` less its embeddings for an MoE model)."""
    c = geometry.text_config(cfg)
    h, layers = int(c['hidden_size']), int(c['num_hidden_layers'])
    if cfg.get('active_params') or c.get('active_params'):
        return float(cfg.get('active_params') or c['active_params']) - embedding_params(cfg)
    heads = int(c['num_attention_heads'])
    kv_heads, head_dim = geometry.kv_heads_and_dim(c)
    inter = int(c.get('intermediate_size') or 4 * h)
    q = heads * head_dim
    per_layer = h * q + 2 * h * kv_heads * head_dim + q * h + 3 * h * inter
    return float(layers * per_layer)


def embedding_params(cfg: Dict) -> float:
    """The embedding table and lm_head (one matrix when tied)."""
    c = geometry.text_config(cfg)
    return float(int(c['vocab_size']) * int(c['hidden_size']) * (1 if c.get('tie_word_embeddings') else 2))


def prefill_flops(cfg: Dict, tokens: float) -> float:
    """FLOPs of one prompt of ``tokens`` tokens (module doc: no embedding, no lm_head)."""
    prof = dict(geometry.compute_profile(dict(cfg, active_params=None), matmul_params(cfg)),
                active_params=matmul_params(cfg))
    return geometry.prefill_flops(prof, tokens)


def planner_prefill_flops(cfg: Dict, tokens: float, weights: float) -> float:
    """What the planner (plan/cost.py) counts for the same prompt: 2 x all parameters (weights / 2) per token."""
    prof = dict(geometry.compute_profile(dict(cfg, active_params=None), weights / 2), active_params=weights / 2)
    return geometry.prefill_flops(prof, tokens)


def mfu(flops: float, seconds: float, peak_tflops: Optional[float]) -> Optional[float]:
    return flops / seconds / (peak_tflops * 1e12) if peak_tflops and seconds > 0 else None


def decode_step_bytes(cfg: Dict, weights: float, batch: int, context: float) -> float:
    """HBM bytes of one decode step: the weights less the embedding table (bf16) and each sequence's KV cache."""
    c = geometry.text_config(cfg)
    table = 2.0 * int(c['vocab_size']) * int(c['hidden_size'])
    return weights - table + batch * geometry.kv_bytes_per_token(cfg) * context


def gpu_key(name: str) -> Optional[str]:
    """The ``tables/cost_model.py`` GPUS key of a CUDA device name (None: not in the table)."""
    n = (name or '').upper()
    for key in GPUS:
        model = key.split('-')[0]
        if model in n and (model != 'A100' or '80GB' in n or 'SXM4-80' in n or '80G' in n):
            return key
    return None


def bench_engine(cfg: Dict, weights: float, free_bytes: float, batch: int, backend: str,
                 cache_max_entry_count: float = 0.8) -> Dict:
    """The bench engine: ``session_len`` the longest of :data:`LENGTHS` (+512) whose KV cache fits this GPU for one
    sequence, ``max_batch_size`` the largest batch up to ``batch`` whose decode sequences (DECODE_CONTEXT +
    DECODE_NEW tokens each) fit it too (the package's own preflight arithmetic, with the engine's reserve). Both
    engines take their KV blocks from one pool as sequences need them, so one engine serves the 128k prompt alone
    and the decode batch of short ones; the wrapper's own preflight, which asks for session_len x max_batch_size,
    is turned off for it (``preflight=False``)."""
    from opencompass_longctx.models.lmdeploy import engine_reserve_bytes, kv_plan
    def fits(session, b):
        reserve = engine_reserve_bytes(backend, cfg, {'max_batch_size': b})
        return kv_plan(cfg, weights, session, b, 1, cache_max_entry_count, 0, free_bytes, reserve)['fits']
    for length in sorted(LENGTHS, reverse=True):
        session = length + 512
        if fits(session, 1):
            decode = DECODE_CONTEXT + DECODE_NEW + 64
            b = next((b for b in range(max(batch, 1), 0, -1) if fits(decode, b)), 1)
            return {'session_len': session, 'max_batch_size': b, 'lengths': [n for n in LENGTHS if n <= length]}
    raise RuntimeError(f'not even a {LENGTHS[0] + 512}-token engine at batch 1 fits the {free_bytes / 2 ** 30:.1f} '
                       'GiB free on this GPU')


def run_bench(rec, model_cfg: Dict, backend: str, batch: int, peak_tflops: Optional[float],
              hbm_tbps: Optional[float], free_bytes: Optional[float] = None) -> Dict:
    """Build the wrapper (``backend``) as :func:`bench_engine` sizes it, then save each measurement when made:
    prefill at each length of :data:`LENGTHS` that fits, decode at batch 1 and at ``batch`` (or what fits)."""
    import json
    import os

    from lmdeploy import GenerationConfig
    from opencompass.utils import build_model_from_cfg

    from opencompass_longctx.models.lmdeploy import weight_bytes
    path = model_cfg['path']
    with open(os.path.join(path, 'config.json'), encoding='utf-8') as f:
        cfg = json.load(f)
    weights = weight_bytes(path, cfg)
    if free_bytes is None:
        import torch
        free_bytes = float(torch.cuda.mem_get_info(0)[0])
    plan = bench_engine(cfg, weights, free_bytes, batch, backend,
                        model_cfg.get('engine_config', {}).get('cache_max_entry_count', 0.8))
    rec.set(engine=dict(plan, backend=backend), matmul_params=matmul_params(cfg), weights_gib=weights / 2 ** 30)
    engine_config = dict(model_cfg.get('engine_config') or {}, session_len=plan['session_len'],
                         max_batch_size=plan['max_batch_size'])
    t0 = time.time()
    from opencompass_longctx.combinations import without_run_options       # as the infer task builds it (max_tier, thinks removed)
    model = build_model_from_cfg(without_run_options(dict(model_cfg, backend=backend, engine_config=engine_config,
                                                          max_seq_len=plan['session_len'], preflight=False)))
    rec.set(engine_start_s=round(time.time() - t0, 1), backend_reason=getattr(model, 'backend_reason', None))
    pipe = model.pipe

    def run(prompts, new):
        gen = GenerationConfig(max_new_tokens=new, min_new_tokens=new, ignore_eos=True, do_sample=False)
        t = time.time()
        res = pipe(prompts, gen_config=gen, do_preprocess=False)
        secs = time.time() - t
        res = res if isinstance(res, list) else [res]
        bad = [r for r in res if r.finish_reason in ('error', 'abort') or getattr(r, 'error_code', None)]
        if bad:     # an error response is an empty answer with no compute: its timing would be meaningless
            raise RuntimeError(f'LMDeploy answered {len(bad)} of {len(res)} prompts with an error: {bad[0]!r}'[:1000])
        return secs, res

    def prompt(n, i=0):
        return f'{i}:' + ' the' * (n - 2)
    run([prompt(512)], 4)                       # warm-up (kernels, CUDA graphs)
    for length in plan['lengths']:
        s, res = run([prompt(length)], 1)
        n = res[0].input_token_len
        rec.add('prefill', {'tokens': n, 'seconds': s, 'tokens_per_s': n / s,
                            'flops': prefill_flops(cfg, n), 'mfu': mfu(prefill_flops(cfg, n), s, peak_tflops),
                            'planner_mfu': mfu(planner_prefill_flops(cfg, n, weights), s, peak_tflops)})
    for b in sorted({1, plan['max_batch_size']}):
        prompts = [prompt(DECODE_CONTEXT, i) for i in range(b)]
        s1, _ = run(prompts, 1)
        s, res = run(prompts, DECODE_NEW)
        steps, secs = DECODE_NEW - 1, max(s - s1, 1e-9)
        step = decode_step_bytes(cfg, weights, b, DECODE_CONTEXT + DECODE_NEW / 2)
        rec.add('decode', {'context': DECODE_CONTEXT, 'batch': b, 'seconds': secs, 'tokens_per_s': b * steps / secs,
                           'bw_efficiency': step * steps / secs / (hbm_tbps * 1e12) if hbm_tbps else None,
                           'generated': [r.generate_token_len for r in res]})
    close = getattr(getattr(pipe, 'pipe', pipe), 'close', None)
    if close:
        close()
    del model, pipe       # the next engine's bench sizes from what is free then
    import gc
    gc.collect()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass
    return {}


def cost_model_lines(data: Dict) -> List[str]:
    """Measured constants of this GPU as lines for tables/cost_model.py, per engine (none when nothing measured)."""
    stack = data['stages'].get('stack', {})
    key = data.get('gpu_key')
    lines = []
    for name, s in data['stages'].items():
        if not name.startswith('bench-') or not s.get('prefill'):
            continue
        engine = name.split('-', 1)[1]
        pre = [p for p in s['prefill'] if p.get('mfu') is not None]
        dec = [d for d in s.get('decode', []) if d.get('bw_efficiency') is not None]
        head = (f"# measured on one {stack.get('gpu', 'GPU')} ({key or 'not in GPUS'}), {data['date']}, "
                f"`{data['command']}`, {engine}, stage {s.get('status')}")
        lines.append(head)
        if not pre:
            lines.append('# no MFU: this GPU is not in tables/cost_model.py GPUS (give --peak-tflops and --hbm-tbps)')
            lines += [f"#   prefill {p['tokens']} tokens: {p['tokens_per_s']:.0f} tokens/s" for p in s['prefill']]
            continue
        mean = sum(p['mfu'] for p in pre) / len(pre)
        lines.append('# prefill MFU (2 x matmul params, no embedding/lm_head, + causal attention) per prompt length: '
                     + ', '.join(f"{p['tokens']}: {p['mfu']:.3f}" for p in pre))
        lines.append('# the planner (plan/cost.py) counts 2 x all params per token: the value reproducing these times '
                     'under its formula would be ' + ', '.join(f"{p['planner_mfu']:.3f}" for p in pre))
        var = f"{(key or 'GPU').replace('-', '_')}_{engine.upper()}_MEASURED"
        lines.append(f'{var} = dict(prefill_mfu={mean:.3f},   # mean over the lengths above')
        if dec:
            lines.append(f"    decode_bw_efficiency={min(d['bw_efficiency'] for d in dec):.3f},   # min of "
                         + ', '.join(f"b{d['batch']}: {d['bw_efficiency']:.3f}" for d in dec))
        if s.get('engine_start_s') is not None:
            lines.append(f"    engine_start_s={s['engine_start_s']:.0f},   # wrapper built, weights read, KV allocated")
        lines.append(')')
    for name, s in data['stages'].items():
        if name.startswith('opencompass-') and s.get('bands'):
            lines.append(f'# {name} task wall time plan -> measured: ' + ', '.join(
                f"{b['band']}: {b['seconds_plan']} -> {b['seconds_measured']} s" for b in s['bands']))
    return lines
