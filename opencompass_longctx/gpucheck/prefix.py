"""The prefix-cache stage: what LMDeploy's prefix cache really serves for a NoLiMa-shaped batch, beside what the plan
assumes for it.

The plan costs a dataset with prefix caching on as FLOPs(L) - FLOPs(cached part), the cached share measured from its
prompts (:func:`opencompass_longctx.prefix_reuse.cached_share`: issue order, 64-token blocks, an unbounded cache,
one prompt after another) or declared by its benchmark's spec (NoLiMa 0.65). Real engines admit several prompts
into one prefill step, evict blocks and (TurboMind) keep their trie in compiled code, so the share is checked here:

1. the batch: the check's own NoLiMa dataset at one tier, with more needle depths than the OpenCompass stage runs
   (every prompt of one book shares the book up to its needle), rendered with the model's chat template;
2. the same batch made uncacheable (each prompt preceded by a line of its own, so no two share a 64-token block;
   every response's ``cached_tokens`` checked to be 0), sent first and timed;
3. the batch as the leaderboard sends it (reuse order, the engine's batch size), timed, with LMDeploy's own count of
   the tokens its cache served (``Response.cached_tokens``).

Reported: the measured hit rate (cached tokens / prompt tokens), the plan's predicted share for this batch (its
formula, and the exact block trie on the real token ids at the engine's batch size), the spec's declared share,
and the seconds saved.
"""
from typing import Callable, Dict, List

from opencompass_longctx.gpucheck.throughput import BenchEngine, _uncached, timed_pass
SYSTEM = 'You are a helpful assistant'        # NoLiMa's system message (configs/datasets/nolima/nolima_base.py)
DEPTHS = list(range(0, 26, 2))                # 13 of NoLiMa's 26 needle depths


def nolima_batch(config_path: str, tier: str, pairs: int = 2) -> Dict:
    """The NoLiMa prompts of the check's config at ``tier`` (its first NoLiMa dataset, at :data:`DEPTHS` and
    ``pairs`` needle pairs), and the dataset config they come from."""
    from mmengine.config import Config
    from opencompass.utils import build_dataset_from_cfg

    from opencompass_longctx.spec import spec_of
    cfg = Config.fromfile(config_path)
    found = [d for d in cfg['datasets'] if str(d['abbr']).startswith('nolima') and d['tier'] == tier]
    if not found:
        raise RuntimeError(f'no NoLiMa dataset at tier {tier!r} in {config_path}: choose --prefix-tier among '
                           + ', '.join(sorted({str(d['tier']) for d in cfg['datasets']
                                               if str(d['abbr']).startswith('nolima')})))
    d = dict(found[0], depth_indices=DEPTHS, pairs=pairs, abbr=f"{found[0]['abbr']}_prefix")
    ds = build_dataset_from_cfg(d)
    rows = ds.test if hasattr(ds, 'test') else ds
    spec = spec_of(d)
    return {'prompts': list(rows['prompt']), 'dataset': d['abbr'], 'declared_share': spec.prefix_reuse}


def render(model_dir: str, prompts: List[str]) -> Dict:
    """The prompts as the engine receives them (the model's chat template, NoLiMa's system message) and their token
    ids in the model's tokenizer."""
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)
    texts = [tok.apply_chat_template([{'role': 'system', 'content': SYSTEM}, {'role': 'user', 'content': p}],
                                     tokenize=False, add_generation_prompt=True) for p in prompts]
    ids = [tok(t, add_special_tokens=False)['input_ids'] for t in texts]
    return {'texts': texts, 'ids': ids}


def predicted(texts: List[str], ids: List[List[int]]) -> Dict:
    """What the plan predicts for the batch: its formula on the texts and token counts (the build record's share),
    and the block trie of :mod:`opencompass_longctx.prefix_reuse` on the real token ids in reuse order (prompts
    admitted one after another, an unbounded cache)."""
    from opencompass_longctx.prefix_reuse import cached_share, prefilled_tokens, reuse_order
    total = sum(len(x) for x in ids)
    computed = prefilled_tokens(ids, reuse_order(texts))
    return {'predicted_share': cached_share(texts, [len(x) for x in ids]),
            'predicted_share_trie': 1 - computed / total if total else 0.0}


def run_prefix(rec, engine_now: Callable[[], BenchEngine], config_path: str, tier: str) -> Dict:
    """The stage (module doc): the batch and the plan's predictions first (no GPU), then ``engine_now()``, an open
    engine with prefix caching on, for the two timed passes."""
    from mmengine.config import Config

    from opencompass_longctx.prefix_reuse import batches, reuse_order
    batch = nolima_batch(config_path, tier)
    model_dir = dict(Config.fromfile(config_path)['models'][0])['path']
    shaped = render(model_dir, batch['prompts'])
    texts = shaped['texts']
    order = reuse_order(texts)
    rec.set(dataset=batch['dataset'], tier=tier, prompts=len(texts), declared_share=batch['declared_share'],
            **predicted(texts, shaped['ids']))
    engine = engine_now()
    if not engine.prefix_caching:
        return {'status': 'skipped', 'where': 'prefix caching is off in this engine (the model config or LMDeploy '
                'turns it off for this model): nothing to measure'}
    size = engine.size.max_batch_size
    rec.set(batch_size=size)
    longest = max(len(x) for x in shaped['ids']) + 8          # the uncacheable twin's own first line, the answer
    if longest > engine.size.session_len:
        raise RuntimeError(f"the bench engine's session_len {engine.size.session_len} cannot hold the NoLiMa "
                           f'batch at {tier} (its longest prompt is {longest - 8} tokens): choose a smaller '
                           '--prefix-tier')
    # 2. the uncacheable twin first: its blocks are keyed by its own first lines, so they serve nothing to step 3
    uncached = 0.0
    for part in batches(order, size):
        what = 'uncached twin of the NoLiMa batch'
        secs, res = timed_pass(engine, [engine.prompt(1, 'salt') + '\n' + texts[i] for i in part], 1, what)
        _uncached(res, what)
        uncached += secs
    rec.set(seconds_uncached=uncached)
    # 3. the batch as the leaderboard sends it
    cached_s, prompt_tokens, cached_tokens, per_prompt = 0.0, 0, 0, []
    for part in batches(order, size):
        secs, res = timed_pass(engine, [texts[i] for i in part], 1, 'the NoLiMa batch')
        cached_s += secs
        for r in res:
            prompt_tokens += r.input_token_len
            cached_tokens += r.cached_tokens
            per_prompt.append(r.cached_tokens)
    hit = cached_tokens / prompt_tokens if prompt_tokens else None
    out = {'seconds_cached': cached_s, 'seconds_saved': uncached - cached_s, 'prompt_tokens': prompt_tokens,
           'cached_tokens': cached_tokens, 'cached_tokens_per_prompt': per_prompt, 'hit_rate': hit}
    rec.set(**out)
    return out

