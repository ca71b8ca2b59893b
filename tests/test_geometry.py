"""The KV and compute model of each layer type (opencompass_longctx.models.geometry) against figures computed by
hand from the published config.json of one model of each kind; dense GQA gives the formulas of before."""
import pytest

from lmdeploy_real import published
from opencompass_longctx.models import geometry as G
from opencompass_longctx.models import lmdeploy as L
from opencompass_longctx.plan import cost as C
MIB, GIB = 2 ** 20, 2 ** 30


def test_dense_gqa_is_the_formula_of_before():
    llama = published('llama-3.1-8b-instruct')
    assert G.describe(llama) == '32 full(GQA 8x128) layers'
    assert G.kv_bytes_per_token(llama) == 2 * 32 * 8 * 128 * 2 == 131072
    assert G.kv_bytes_per_token(llama, tp=4) == 131072 / 4
    assert G.state_bytes_per_seq(llama) == 0
    p = G.compute_profile(llama, 8.03e9)
    L_ = 100_000
    assert G.prefill_flops(p, L_) == 2 * 8.03e9 * L_ + 2 * 32 * 4096 * L_ * L_
    assert G.decode_bytes(p, 16.06e9, 8.03e9, 4, L_) == 16.06e9 + 4 * 131072 * L_


def test_moe_qwen3_30b_a3b():
    cfg = published('qwen3-30b-a3b-instruct-2507')
    # 48 layers x 4 KV heads x (128 K + 128 V) x 2 bytes = 98,304 bytes per token (96 KiB); 1M tokens: 91.55 GiB
    assert G.kv_bytes_per_token(cfg) == 48 * 4 * 256 * 2 == 98304
    assert G.kv_bytes_per_token(cfg) * 2 ** 20 / GIB == 96.0
    # compute with the 3.3e9 active parameters, not the 30.5e9 total, and attention over 32 query heads x 128
    # (4096, not the hidden size 2048): 2 x 3.3e9 x L + 2 x 48 x 4096 x L^2
    p = G.compute_profile(dict(cfg, active_params=3.3e9), 30.5e9)
    assert G.prefill_flops(p, 1000) == 2 * 3.3e9 * 1000 + 2 * 48 * 4096 * 1000 ** 2
    # decode reads the active share of the weights: 61e9 x 3.3 / 30.5 = 6.6e9 bytes, plus the KV of the context
    assert G.decode_bytes(p, 61e9, 30.5e9, 1, 1000) == pytest.approx(6.6e9 + 98304 * 1000)


def test_sliding_gpt_oss_and_gemma3():
    oss = published('gpt-oss-20b')
    assert G.describe(oss) == '12 full(GQA 8x64) + 12 sliding(128) layers'
    # LMDeploy caches every layer at full length (the window only reaches the kernel): 24 x 8 x 128 x 2 = 49,152
    assert G.kv_bytes_per_token(oss) == 24 * 8 * (64 + 64) * 2 == 49152
    p = G.compute_profile(dict(oss, active_params=3.6e9), 20.9e9)
    assert p['context_kv_bytes'] == p['window_kv_bytes'] == 12 * 8 * 128 * 2 == 24576
    # attention (64 query heads x 64 = 4096 wide, not the hidden size 2880): 12 full layers over L^2, 12 sliding
    # layers over L x 128
    L_ = 10_000
    assert G.prefill_flops(p, L_) == 2 * 3.6e9 * L_ + 2 * 12 * 4096 * L_ ** 2 + 2 * 12 * 4096 * L_ * 128
    # one decode step at context 10,000: the full layers read 10,000 tokens of KV, the sliding ones 128
    assert G.decode_bytes(p, 13.8e9, 20.9e9, 1, L_) == pytest.approx(13.8e9 * 3.6 / 20.9 + 24576 * (L_ + 128))
    gemma = published('gemma-3-27b-it')        # sliding_window_pattern 6: layers 6, 12, ..., 60 are global
    assert G.describe(gemma) == '10 full(GQA 16x128) + 52 sliding(1024) layers'
    assert G.kv_bytes_per_token(gemma) == 62 * 16 * 256 * 2 == 507904       # all 62 at full length (496 KiB)
    assert G.compute_profile(gemma, 27.4e9)['context_kv_bytes'] == 10 * 16 * 256 * 2 == 81920


def test_hybrid_qwen3_next_gated_deltanet():
    cfg = published('qwen3-next-80b-a3b-instruct')
    # full_attention_interval 4: 12 full layers, 36 Gated DeltaNet layers with no per-token cache
    assert G.kv_bytes_per_token(cfg) == 12 * 2 * (256 + 256) * 2 == 24576
    # tp=4 > 2 KV heads: each GPU holds one replicated head: 12 x 1 x 512 x 2 = 12,288
    assert G.kv_bytes_per_token(cfg, tp=4) == 12288
    # state per sequence and layer: conv (2 x 16 x 128 + 32 x 128) x 4 = 32,768 values, recurrent
    # 32 x 128 x 128 = 524,288 values; x 36 layers x 2 bytes = 40,108,032 bytes = 38.25 MiB (tp=4: a quarter)
    assert G.state_bytes_per_seq(cfg) == 36 * (8192 * 4 + 32 * 128 * 128) * 2 == 40108032
    assert G.state_bytes_per_seq(cfg) / MIB == 38.25
    assert G.state_bytes_per_seq(cfg, tp=4) == 40108032 / 4
    assert G.describe(cfg) == '12 full(GQA 2x256) + 36 linear(state 38.2 MiB/seq) layers'
    # the preflight's budget takes max_batch_size + 2 state slots first: batch 4 at tp=4 -> 6 x 9.56 MiB
    plan = L.kv_plan(cfg, 162.6e9, 262144, 4, 4, 0.8, 0, 80 * GIB)
    assert plan['state'] == 6 * 40108032 / 4
    assert plan['need'] == 12288 * 262144 * 4
    assert plan['budget'] == pytest.approx(0.8 * (80 * GIB - 162.6e9 / 4 - plan['state']))


def test_mla_deepseek_v2_lite():
    cfg = published('deepseek-v2-lite-chat')
    # one latent of kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values per layer and token, no V:
    # 27 x 576 x 2 = 31,104 bytes (the dense-GQA reading of its 16 KV heads x 128 would be 27 x 16 x 256 x 2 = 221,184)
    assert G.kv_bytes_per_token(cfg) == 27 * 576 * 2 == 31104
    assert 2 * L.kv_geometry(cfg)['layers'] * 16 * 128 * 2 == 221184
    assert G.kv_bytes_per_token(cfg, tp=4) == 31104      # one latent head: every GPU holds it whole
    assert G.describe(cfg) == '27 MLA(latent 576) layers'


def test_cost_model_uses_active_parameters():
    """plan.cost.task_seconds on a MoE engine: prefill with the active params, as G.prefill_flops."""
    from dataclasses import replace
    from types import SimpleNamespace

    from opencompass_longctx.models.engine_plan import EnginePlan
    cfg = published('qwen3-30b-a3b-instruct-2507')
    prof = dict(G.compute_profile(dict(cfg, active_params=3.3e9), 30.5e9), total_params=30.5e9)
    engine = EnginePlan(session_len=100_000, tp=2, weights=61e9, layers=48, hidden=2048, kv_bytes_per_token=98304,
                        max_batch_size=1, compute=prof)
    cm = C.cost_model(dict(output_fraction=0.0))
    ld = SimpleNamespace(tokens_per_row=100_000, ratio=None, rows=10, max_out_len=0)
    s = C.task_seconds([ld], engine, cm)
    flops = 2 * 312e12 * 0.4
    assert s['prefill'] == pytest.approx(10 * (2 * 3.3e9 * 1e5 + 2 * 48 * 4096 * 1e10) / flops)
    dense = replace(engine, compute=None)    # the arithmetic of before: all 30.5e9 parameters
    assert C.task_seconds([ld], dense, cm)['prefill'] == pytest.approx(
        10 * (2 * 30.5e9 * 1e5 + 2 * 48 * 2048 * 1e10) / flops)


def test_unknown_layer_type_is_a_clear_error():
    with pytest.raises(G.GeometryError, match='layer_types'):
        G.layer_groups(dict(num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                            hidden_size=16, layer_types=['full_attention', 'chunked_attention']))


@pytest.mark.parametrize('abbr, width', [
    ('llama-3.1-8b-instruct', 32 * 128), ('qwen2.5-7b-instruct', 28 * 128), ('glm-4-9b-chat-1m', 32 * 128),
    ('qwen3-30b-a3b-instruct-2507', 32 * 128), ('qwen3-next-80b-a3b-instruct', 16 * 256),
    ('gpt-oss-20b', 64 * 64), ('gemma-3-27b-it', 32 * 128),
    ('deepseek-v2-lite-chat', 16 * (512 + 64 + 512) / 2)])   # MLA compressed: scores over 576, values over 512
def test_attention_flops_use_query_heads_times_head_dim(abbr, width):
    """Causal attention costs 2 x heads x head_dim x L^2 per layer: hidden_size only where heads x head_dim equals
    it (the older rows), not for the 2025 models (hidden 2048 for Qwen3-30B-A3B and Qwen3-Next, 2880 for gpt-oss)."""
    cfg = published(abbr)
    p = G.compute_profile(cfg, 1e9)
    assert G.attention_width(cfg) == p['attn_width'] == width
    L = 131072
    attn = G.prefill_flops(p, L) - 2 * p['active_params'] * L
    assert attn == pytest.approx(2 * width * L * (p['attn_layers'] * L + p['sliding_layers'] * min(L, p['window'])))
    if G.text_config(cfg)['hidden_size'] == width:       # the older rows: the formula of before
        old = dict(p, attn_width=None)
        assert G.prefill_flops(old, L) == G.prefill_flops(p, L)
