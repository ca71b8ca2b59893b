"""Prefill and decode throughput on the leaderboard's own wrapper (``LongCtxTurboMindModel``, built from the model
config the OpenCompass stage ran), the MFU arithmetic, and the measured constants as lines for
``tables/cost_model.py``.

What is timed, so that the cache never stands in for compute: every request starts with its own key (``p4096:``,
``d8-3:``), so no two prompts share even their first 64-token block and the engine's prefix cache (on, as the
leaderboard runs it) has nothing to serve; each response's ``cached_tokens`` (LMDeploy's ``Response``) is checked to
be 0, and a pass where it is not is an error, never a measurement. Prefill: one pass per prompt length, one new
token, timed on its own. Decode: one streamed pass per batch size with fresh prompts, timed from the moment every
sequence has its first token (its prefill done) to the last token, over the tokens generated in that window. A pass
that takes no time, or generates nothing in its window, is an error, not a clamp. :func:`cost_model_lines` reads
only such passes (``cache_checked`` prefill, ``streamed`` decode) and names the run they come from.

MFU counts the FLOPs a prompt really costs: 2 x the matmul parameters per token (attention projections and MLP of
every layer) plus causal attention (2 x width x L^2 per full layer, :func:`opencompass_longctx.models.geometry
.prefill_flops`). The embedding is a table lookup, not a matmul, and LMDeploy's prefill computes the logits (lm_head)
of the last token only: neither is a per-token FLOP. (Counting them puts Qwen2.5-7B's MFU about 15% high at 4k.)
Decode is memory-bound: one step reads the weights but the embedding table (only the batch's rows of it) and each
sequence's KV cache over its context.
"""
import dataclasses
import itertools
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from opencompass_longctx.errors import LongCtxError
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


@dataclass(frozen=True)
class BenchSize:
    """The bench engine's size (:func:`bench_engine`): its ``session_len``, its decode ``max_batch_size``, and the
    prompt lengths of :data:`LENGTHS` it holds."""
    session_len: int
    max_batch_size: int
    lengths: List[int]


def bench_engine(cfg: Dict, weights: float, free_bytes: float, batch: int, backend: str,
                 cache_max_entry_count: float = 0.8, tp: int = 1) -> BenchSize:
    """The bench engine: ``session_len`` the longest of :data:`LENGTHS` (+512) whose KV cache fits this GPU for one
    sequence, ``max_batch_size`` the largest batch up to ``batch`` whose decode sequences (DECODE_CONTEXT +
    DECODE_NEW tokens each) fit it too (the package's own preflight arithmetic, with the engine's reserve, at
    ``tp``). Both engines take their KV blocks from one pool as sequences need them, so one engine serves the 128k
    prompt alone and the decode batch of short ones; the wrapper's own preflight, which asks for session_len x
    max_batch_size, is turned off for it (``preflight=False``)."""
    from opencompass_longctx.models.engine import engine_reserve_bytes, kv_plan
    geo = geometry.Geometry.of(cfg)

    def fits(session, b):
        reserve = engine_reserve_bytes(backend, geo, {'max_batch_size': b})
        return kv_plan(geo, weights, session, b, tp, cache_max_entry_count, 0, free_bytes, reserve)['fits']
    for length in sorted(LENGTHS, reverse=True):
        session = length + 512
        if fits(session, 1):
            decode = DECODE_CONTEXT + DECODE_NEW + 64
            b = next((b for b in range(max(batch, 1), 0, -1) if fits(decode, b)), 1)
            return BenchSize(session, b, [n for n in LENGTHS if n <= length])
    raise RuntimeError(f'not even a {LENGTHS[0] + 512}-token engine at batch 1 fits the {free_bytes / 2 ** 30:.1f} '
                       'GiB free on this GPU')


class CacheServedError(LongCtxError, RuntimeError):
    """A pass meant to time compute was served (partly) from the prefix cache."""


@dataclass
class BenchEngine:
    """One engine of the throughput and prefix-cache stages: the leaderboard wrapper, LMDeploy's pipeline under it,
    the model directory, its config.json and weight bytes, the engine's size (:class:`BenchSize`) and whether its
    prefix cache is on."""
    model: object
    pipe: object
    path: str
    cfg: Dict
    weights: float
    size: BenchSize
    backend: str
    tp: int
    prefix_caching: bool
    keys: 'itertools.count' = field(default_factory=itertools.count)

    def prompt(self, n: int, tag: str) -> str:
        """``n`` tokens (in the engine's tokenizer) that share no 64-token block with any other prompt of this engine:
        a key of its own first, then ' the' repeated (the engine's count, ``input_token_len``, is what is recorded)."""
        key = f'{tag}-{next(self.keys)}:'
        tokenizer = getattr(getattr(self.pipe, 'async_engine', None), 'tokenizer', None)
        used = len(tokenizer.encode(key, add_bos=False)) if tokenizer is not None else len(key)
        return key + ' the' * max(n - used, 1)

    def close(self) -> None:
        close = getattr(self.pipe, 'close', None)
        if close:
            close()
        self.model = self.pipe = None
        import gc
        gc.collect()
        try:
            import torch
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


def open_engine(rec, model_cfg: Dict, backend: str, batch: int, free_bytes: Optional[float] = None,
                tp: int = 1) -> BenchEngine:
    """Build the wrapper (``backend``, ``tp`` GPUs) as :func:`bench_engine` sizes it, from the model config the
    OpenCompass stage ran (the infer task's run options removed); ``rec`` gets the engine's size and start time."""
    import json
    import os

    from opencompass.utils import build_model_from_cfg

    from opencompass_longctx.combinations import without_run_options
    from opencompass_longctx.models.engine import weight_bytes
    path = model_cfg['path']
    with open(os.path.join(path, 'config.json'), encoding='utf-8') as f:
        cfg = json.load(f)
    weights = weight_bytes(path, cfg)
    if free_bytes is None:
        import torch
        free_bytes = float(torch.cuda.mem_get_info(0)[0])
    size = bench_engine(cfg, weights, free_bytes, batch, backend,
                        model_cfg.get('engine_config', {}).get('cache_max_entry_count', 0.8), tp)
    rec.set(engine=dict(dataclasses.asdict(size), backend=backend, tp=tp), matmul_params=matmul_params(cfg),
            weights_gib=weights / 2 ** 30)
    engine_config = dict(model_cfg.get('engine_config') or {}, session_len=size.session_len,
                         max_batch_size=size.max_batch_size, tp=tp)
    t0 = time.time()
    model = build_model_from_cfg(without_run_options(dict(
        model_cfg, backend=backend, engine_config=engine_config, max_seq_len=size.session_len, preflight=False,
        run_cfg=dict(num_gpus=tp))))
    pipe = getattr(model.pipe, 'pipe', model.pipe)       # LMDeploy's Pipeline, under the wrapper's response pipe
    on = bool(getattr(getattr(pipe, 'backend_config', None), 'enable_prefix_caching', False))
    rec.set(engine_start_s=round(time.time() - t0, 1), backend_reason=getattr(model, 'backend_reason', None),
            prefix_caching='on' if on else 'off')
    return BenchEngine(model, pipe, path, cfg, weights, size, backend, tp, on)


def _gen(new: int):
    from lmdeploy import GenerationConfig
    return GenerationConfig(max_new_tokens=new, min_new_tokens=new, ignore_eos=True, do_sample=False)


def _check_responses(res: List, what: str) -> None:
    bad = [r for r in res if r.finish_reason in ('error', 'abort') or getattr(r, 'error_code', None)]
    if bad:     # an error response is an empty answer with no compute: its timing would be meaningless
        r = bad[0]
        raise RuntimeError(f'{what}: LMDeploy answered {len(bad)} of {len(res)} prompts with an error '
                           f'({r.error_code}: {r.error_message}; input_token_len {r.input_token_len}): {r!r}'[:1000])


def _uncached(res: List, what: str) -> None:
    served = [(r.index, r.cached_tokens) for r in res if getattr(r, 'cached_tokens', 0)]
    if served:
        raise CacheServedError(f'{what}: the prefix cache served {served[0][1]} prompt tokens of request '
                               f'{served[0][0]} ({len(served)} of {len(res)} requests): this pass times the cache, '
                               'not compute, and is not recorded')


def timed_pass(engine: BenchEngine, prompts: List[str], new: int, what: str):
    """(seconds, responses) of one pass of ``prompts`` (``new`` tokens each), timed on its own."""
    t = time.perf_counter()
    res = engine.pipe.infer(prompts, gen_config=_gen(new), do_preprocess=False)
    secs = time.perf_counter() - t
    res = res if isinstance(res, list) else [res]
    _check_responses(res, what)
    if secs <= 0:
        raise RuntimeError(f'{what}: the pass took no measurable time ({secs!r} s): no figure can come from it')
    return secs, res


def decode_window(events: List, batch: int, new: int) -> Dict:
    """The decode part of one streamed pass: ``events`` are (time, request index, tokens generated so far). From
    the moment every request has its first token (all prefills done) to the last token: its seconds and the tokens
    generated in it. Raises when the window is empty (no time, or no token in it)."""
    first, last, done_at_start = {}, {}, {}
    for t, i, n in events:
        if n >= 1 and i not in first:
            first[i] = t
        last[i] = max(last.get(i, t), t)
    if len(first) < batch:
        raise RuntimeError(f'decode pass: {batch - len(first)} of {batch} requests produced no token')
    start = max(first.values())
    for t, i, n in events:
        if t <= start:
            done_at_start[i] = max(done_at_start.get(i, 0), n)
    final = {}
    for t, i, n in events:
        final[i] = max(final.get(i, 0), n)
    tokens = sum(final[i] - done_at_start.get(i, 0) for i in final)
    seconds = max(last.values()) - start
    if seconds <= 0 or tokens <= 0:
        raise RuntimeError(f'decode pass at batch {batch}: {tokens} tokens in {seconds:.6f} s after the last '
                           'prefill: no decode was timed (a pass that takes no time is an error, not a figure)')
    return {'seconds': seconds, 'window_tokens': tokens, 'steps': tokens / batch, 'generated': [final[i] for i in
                                                                                               sorted(final)]}


def streamed_pass(engine: BenchEngine, prompts: List[str], new: int, what: str) -> Dict:
    """One pass of ``prompts`` streamed by LMDeploy's ``Pipeline.stream_infer``: every output's arrival time, then
    :func:`decode_window`; the responses are checked (errors, cached tokens) as the others."""
    events, finals = [], {}
    t0 = time.perf_counter()
    for r in engine.pipe.stream_infer(prompts, gen_config=_gen(new), do_preprocess=False):
        events.append((time.perf_counter() - t0, r.index, r.generate_token_len))
        finals[r.index] = r
    res = [finals[i] for i in sorted(finals)]
    _check_responses(res, what)
    _uncached(res, what)
    return dict(decode_window(events, len(prompts), new), wall_s=time.perf_counter() - t0)


def run_bench(rec, model_cfg: Dict, backend: str, batch: int, peak_tflops: Optional[float],
              hbm_tbps: Optional[float], free_bytes: Optional[float] = None, engine: Optional[BenchEngine] = None,
              keep: Optional[Dict] = None) -> Dict:
    """Prefill at each length of :data:`LENGTHS` that fits and decode at batch 1 and at ``batch`` (or what fits),
    each measurement saved when made (module doc: no pass is served by the cache). ``engine``: one already built
    (else built here); ``keep``: where to leave the engine open for the prefix-cache stage (``keep['engine']``),
    else it is closed at the end."""
    engine = engine or open_engine(rec, model_cfg, backend, batch, free_bytes)
    if keep is not None:
        keep['engine'] = engine
    cfg, weights = engine.cfg, engine.weights
    peak = peak_tflops * engine.tp if peak_tflops else None      # MFU and HBM efficiency over all the engine's GPUs
    hbm = hbm_tbps * engine.tp if hbm_tbps else None
    try:
        secs, res = timed_pass(engine, [engine.prompt(512, 'warm')], 4, 'warm-up')    # kernels, CUDA graphs
        for length in engine.size.lengths:
            what = f'prefill of {length} tokens'
            s, res = timed_pass(engine, [engine.prompt(length, f'p{length}')], 1, what)
            _uncached(res, what)
            n = res[0].input_token_len
            rec.add('prefill', {'tokens': n, 'cached_tokens': res[0].cached_tokens, 'cache_checked': True,
                                'prefix_caching': 'on' if engine.prefix_caching else 'off',
                                'seconds': s, 'tokens_per_s': n / s, 'flops': prefill_flops(cfg, n),
                                'mfu': mfu(prefill_flops(cfg, n), s, peak),
                                'planner_mfu': mfu(planner_prefill_flops(cfg, n, weights), s, peak)})
        for b in sorted({1, engine.size.max_batch_size}):
            w = streamed_pass(engine, [engine.prompt(DECODE_CONTEXT, f'd{b}') for _ in range(b)], DECODE_NEW,
                              f'decode at batch {b}')
            step = decode_step_bytes(cfg, weights, b, DECODE_CONTEXT + DECODE_NEW / 2)
            rec.add('decode', {'context': DECODE_CONTEXT, 'batch': b, 'new_tokens': DECODE_NEW, 'streamed': True,
                               'seconds': w['seconds'], 'window_tokens': w['window_tokens'],
                               'tokens_per_s': w['window_tokens'] / w['seconds'], 'wall_s': w['wall_s'],
                               'bw_efficiency': (step * w['steps'] / w['seconds'] / (hbm * 1e12)
                                                 if hbm else None),
                               'generated': w['generated']})
    finally:
        if keep is None:
            engine.close()
    return {}


def tp_for(cfg: Dict, gpus: int) -> int:
    """The tensor-parallel size the tp > 1 stage runs: the largest power of two up to the GPUs visible (8 at most)
    that divides the model's query and KV heads (LMDeploy splits heads, not head dims); 1 when none above 1 does."""
    c = geometry.text_config(cfg)
    heads = int(c.get('num_attention_heads') or 1)
    kv_heads = geometry.kv_heads_and_dim(c)[0] or heads
    tp = 1
    while tp * 2 <= min(gpus, 8) and heads % (tp * 2) == 0 and kv_heads % (tp * 2) == 0:
        tp *= 2
    return tp


def run_tp(rec, model_cfg: Dict, backend: str, gpus: int, peak_tflops: Optional[float], hbm_tbps: Optional[float],
           free_bytes: Optional[float] = None, rehearse: bool = False) -> Dict:
    """The tp > 1 stage: the same wrapper on ``tp`` GPUs (:func:`tp_for`), prefill and decode measured as the
    bench stage measures them (MFU and HBM efficiency over all ``tp`` GPUs: what the cost model's ``tp x`` peak
    figures assume). One GPU visible: not run, and the report says so; the PyTorch engine without Ray: failed (a
    rehearsal: not run), with the fix."""
    import json
    import os
    with open(os.path.join(model_cfg['path'], 'config.json'), encoding='utf-8') as f:
        tp = tp_for(json.load(f), gpus)
    if gpus < 2 or tp < 2:
        return {'status': 'skipped', 'where': f'{gpus} GPU(s) visible: tp > 1 needs 2 or more (CUDA_VISIBLE_DEVICES)'
                if gpus < 2 else 'no tp > 1 divides the model\'s heads'}
    rec.set(tp=tp, gpus_visible=gpus)
    if backend == 'pytorch':
        try:
            import ray  # noqa: F401  (LMDeploy's PyTorch engine runs tp > 1 under Ray)
        except ImportError as e:
            where = (f'no Ray in this Python ({e}): the PyTorch engine runs tp > 1 under Ray; make gpu-install '
                     'installs it (LMDeploy requires it), the carried wheelhouse of bench/gpu_check.sh has none')
            return {'status': 'skipped' if rehearse else 'failed', 'where': where, 'error': where}
    visible = [d for d in os.environ.get('CUDA_VISIBLE_DEVICES', '').split(',') if d.strip()]
    if len(visible) > tp:       # the wrapper checks tp against the GPUs it is given; LMDeploy takes the first tp
        os.environ['CUDA_VISIBLE_DEVICES'] = ','.join(visible[:tp])
    if rehearse and backend == 'pytorch':
        # no GPU for Ray to place the tp workers on: a rehearsal stops where LMDeploy would start its Ray cluster
        import lmdeploy.pytorch.ray as lmdeploy_ray

        from opencompass_longctx.gpucheck.report import REHEARSAL_MARK

        def stop(*args, **kwargs):
            raise RuntimeError(f'{REHEARSAL_MARK} (LMDeploy starts Ray here and places {tp} workers on GPUs)')
        start, lmdeploy_ray.init_ray_cluster = lmdeploy_ray.init_ray_cluster, stop
        try:
            open_engine(rec, model_cfg, backend, 8, free_bytes, tp=tp)
        finally:
            lmdeploy_ray.init_ray_cluster = start
    engine = open_engine(rec, model_cfg, backend, 8, free_bytes, tp=tp)
    return run_bench(rec, model_cfg, backend, 8, peak_tflops, hbm_tbps, engine=engine)


def calibration_passes(stage: Dict):
    """(prefill, decode) records of a bench stage that the cost model may read: prefill passes checked to have had
    no prompt token served by the prefix cache, decode passes timed from their streamed tokens. Records of any other
    kind (an older report's, a pass that reused the cache) are left out."""
    pre = [p for p in stage.get('prefill', []) if p.get('cache_checked') and p.get('cached_tokens') == 0
           and p.get('seconds', 0) > 0]
    dec = [d for d in stage.get('decode', []) if d.get('streamed') and d.get('seconds', 0) > 0
           and d.get('window_tokens', 0) > 0]
    return pre, dec


def cost_model_lines(data: Dict) -> List[str]:
    """Measured constants of this GPU as lines for tables/cost_model.py, per engine (none when nothing measured):
    only from :func:`calibration_passes`, with ``calibrated_by`` naming the run (date, command, GPU, engine)."""
    stack = data['stages'].get('stack', {})
    key = data.get('gpu_key')
    lines = []
    for name, s in data['stages'].items():
        if not name.startswith('bench-') or not (s.get('prefill') or s.get('decode')):
            continue
        engine = name.split('-', 1)[1]
        all_pre, dec = calibration_passes(s)
        pre = [p for p in all_pre if p.get('mfu') is not None]
        dec_bw = [d for d in dec if d.get('bw_efficiency') is not None]
        run = (f"gpu_check {data['date']} on one {stack.get('gpu', 'GPU')} ({key or 'not in GPUS'}), {engine} "
               f"engine, `{data['command']}`")
        lines.append(f"# measured: {run}, stage {s.get('status')}")
        left = len(s.get('prefill', [])) - len(all_pre) + len(s.get('decode', [])) - len(dec)
        if left:
            lines.append(f'# {left} pass(es) left out: not timed apart or served by the prefix cache')
        if not pre:
            lines.append('# no MFU: this GPU is not in tables/cost_model.py GPUS (give --peak-tflops and --hbm-tbps)'
                         if all_pre else '# no prefill pass the cost model may read')
            lines += [f"#   prefill {p['tokens']} tokens: {p['tokens_per_s']:.0f} tokens/s" for p in all_pre]
            continue
        mean = sum(p['mfu'] for p in pre) / len(pre)
        lines.append('# prefill MFU (2 x matmul params, no embedding/lm_head, + causal attention; no cached token) '
                     'per prompt length: ' + ', '.join(f"{p['tokens']}: {p['mfu']:.3f}" for p in pre))
        lines.append('# the planner (plan/cost.py) counts 2 x all params per token: the value reproducing these times '
                     'under its formula would be ' + ', '.join(f"{p['planner_mfu']:.3f}" for p in pre))
        var = f"{(key or 'GPU').replace('-', '_')}_{engine.upper()}_MEASURED"
        lines.append(f'{var} = dict(prefill_mfu={mean:.3f},   # mean over the lengths above')
        if dec_bw:
            lines.append(f"    decode_bw_efficiency={min(d['bw_efficiency'] for d in dec_bw):.3f},   # min of "
                         + ', '.join(f"b{d['batch']}: {d['bw_efficiency']:.3f}" for d in dec_bw)
                         + ' (first to last streamed token)')
        if s.get('engine_start_s') is not None:
            lines.append(f"    engine_start_s={s['engine_start_s']:.0f},   # wrapper built, weights read, KV allocated")
        lines.append(f'    calibrated_by={run!r},')
        lines.append(')')
    for name, s in data['stages'].items():
        if name.startswith('opencompass-') and s.get('bands'):
            lines.append(f'# {name} task wall time plan -> measured: ' + ', '.join(
                f"{b['band']}: {b['seconds_plan']} -> {b['seconds_measured']} s" for b in s['bands']))
        if name.startswith('prefix-') and s.get('hit_rate') is not None:
            lines.append(f"# {name}: prefix-cache hit rate {s['hit_rate']:.3f} measured, "
                         f"{s['predicted_share']:.3f} the plan's share for the batch (declared "
                         f"{s['declared_share']:.2f}); {s['seconds_saved']:.1f} s saved of {s['seconds_uncached']:.1f}")
    return lines
