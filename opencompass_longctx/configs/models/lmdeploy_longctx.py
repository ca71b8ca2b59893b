# LMDeploy configs for the long-context leaderboard models (TurboMind or PyTorch engine: the row's backend), one per row of
# opencompass_longctx/tables/lmdeploy_models.py. Models are read from $LONGCTX_MODEL_ROOT/<name> (local
# Hugging Face directories; the KV preflight reads their config.json before any weight is loaded).
# session_len = the largest tier in the model's tokens (+5% for tokenizer differences) + template margin +
# the longest generation, capped at the model's window: the most the model is ever given. With LongCtxPartitioner
# each tier band gets an engine sized for that band instead (session_len, max_batch_size), within this cap.
# The row's long-context recipe (native_window, rope, long_context, caveats) and trust_remote_code travel with
# the model config: LongCtxTurboMindModel applies long_context only to engines longer than native_window.
# tp == run_cfg.num_gpus. `opencompass --models lmdeploy_longctx ...` takes `models` (all the table's models).
import os

from mmengine.config import read_base

from opencompass_longctx.models.lmdeploy import LongCtxTurboMindModel
from opencompass_longctx.reasoning import strip_trace
with read_base():
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
    from opencompass_longctx.tables.tier_table import TIERS
MODEL_ROOT = os.environ.get('LONGCTX_MODEL_ROOT', 'models')
TEMPLATE_MARGIN = 2048
# The most new tokens a benchmark's protocol gives an answer, over every benchmark (each declares its own: its
# spec's answer_tokens; NoLiMa's 192 today). An import in a config is lazy; __import__ runs it now.
MAX_OUT_LEN = __import__('opencompass_longctx.spec', fromlist=['longest_answer']).longest_answer()
THINK_MARGIN = 2048  # a thinking model's trace (opencompass_longctx.reasoning: +1536 new tokens per benchmark)

lmdeploy_longctx_models = [
    dict(
        type=LongCtxTurboMindModel,
        abbr=m['abbr'],
        path=os.path.join(MODEL_ROOT, m['hf_id'].split('/')[1]),
        meta_template=LONGCTX_META_TEMPLATE,
        backend=m.get('backend', 'auto'),
        trust_remote_code=m.get('trust_remote_code', False),
        engine_config=dict(m['engine'], session_len=session_len, max_batch_size=m['max_batch_size'], tp=m['tp'],
                           cache_max_entry_count=m['cache_max_entry_count']),
        native_window=m['native_window'],
        rope=m['rope'],
        long_context=m.get('long_context'),
        caveats=m.get('caveats', []),
        gen_config=dict(do_sample=False),
        max_seq_len=session_len,
        max_tier=m['max_tier'],   # the largest tier this model runs (read by LongCtxPartitioner, not the model)
        # what the planner sizes the engine and costs the run with before the model is downloaded
        declared_geometry={k: m[k] for k in ('arch', 'checkpoint_bytes', 'active_params') if k in m},
        thinks=m.get('thinks', False),   # a reasoning model: larger decoding budgets (opencompass_longctx.reasoning)
        max_out_len=MAX_OUT_LEN,
        batch_size=m['max_batch_size'],
        run_cfg=dict(num_gpus=m['tp']),
        # a thinking model's trace is cut off before scoring (OpenCompass applies a model's pred_postprocessor first)
        **({'pred_postprocessor': dict(type=strip_trace)} if m.get('thinks') else {}),
    )
    for m in LONGCTX_LMDEPLOY_MODELS
    for session_len in [min(m['window'], TIERS[m['max_tier']] * 105 // 100 + TEMPLATE_MARGIN + MAX_OUT_LEN
                            + (THINK_MARGIN if m.get('thinks') else 0))]
]
models = lmdeploy_longctx_models
