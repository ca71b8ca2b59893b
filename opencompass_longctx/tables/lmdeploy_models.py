# Long-context models served by LMDeploy 0.18: one table (pure data; configs read_base() it).
#   native_window: the context the model was trained for; window: the longest context with the RoPE scaling
#   its authors recommend; tp: tensor-parallel GPUs (80 GB cards) for its largest tier, as checked by the KV-cache
#   preflight; max_tier: the largest standard tier to run.
#   backend: 'auto' (default) = TurboMind when architectures[0] is in LMDeploy's TurboMind SUPPORTED_ARCHS
#   (lmdeploy/turbomind/supported_models.py), else the PyTorch engine; a row may force one.
#   trust_remote_code: True where the model directory ships code (auto_map: tokenizer/config classes); LMDeploy's
#   pipeline refuses to load those without it.
#   rope: the RoPE scaling LMDeploy applies at every engine size (from the model's own config.json);
#   long_context: engine keys for engines whose session_len exceeds native_window only (hf_overrides rewrites
#   config.json in both engines; TurboMind 0.18 ignores rope_scaling_factor), with the scaling they give.
#   Bands that fit the native window get no static scaling. tests/test_lmdeploy_rope.py checks each row's rope
#   and long_context against LMDeploy's own parsing of the published config.json (tests/data/model_configs).
#   caveats: tiers above `above` tokens run a setup the engine does not support as the authors recommend: the
#   plan and the tier table mark those cells.
#   arch: the model's geometry as its published config.json gives it (key names as there) and its parameter
#   count, so that a run can be planned and costed before the models are downloaded; at run time the KV-cache
#   preflight and the backend choice read the real config.json of the model directory. Layer types (full,
#   sliding, MLA, Gated DeltaNet) are read from these keys by opencompass_longctx/models/geometry.py.
#   active_params: parameters a token uses (MoE: the routed experts it picks plus the shared ones; the model
#   card's figure); compute is costed with them, memory with params. checkpoint_bytes: the published
#   checkpoint's size where it is not 2 bytes per parameter (gpt-oss ships MXFP4 experts).
#   thinks: the model writes a reasoning trace before its answer (decoding budgets: opencompass_longctx/combinations.py).
#   source: where the geometry was read, and when (tests/data/model_configs/SOURCES.md has the same per file).
_QWEN25_7B = dict(architectures=['Qwen2ForCausalLM'], num_hidden_layers=28, num_attention_heads=28,
                  num_key_value_heads=4, hidden_size=3584, intermediate_size=18944, vocab_size=152064, params=7.62e9)
_NO_DCA = [dict(above=262144, reason="Qwen2.5-1M needs dual-chunk attention above 256k (Qwen's recipe, vLLM); "
                                     'LMDeploy 0.18 has none: measures a degraded setup')]
LONGCTX_LMDEPLOY_MODELS = [
    dict(abbr='qwen2.5-7b-instruct', hf_id='Qwen/Qwen2.5-7B-Instruct', native_window=32768, window=131072,
         max_tier='128k', tp=1, max_batch_size=4, cache_max_entry_count=0.8, engine=dict(), rope=dict(type='default'),
         # YaRN x4 beyond 32k, as the Qwen2.5 model card recommends. TurboMind derives the YaRN factor from
         # max_position_embeddings / original_max_position_embeddings (lmdeploy/turbomind/models/utils.py:154-156):
         # max_position_embeddings must be raised to 131072 with it, or the factor is 1.0. rope_parameters too:
         # with transformers 5 both engines read that key first (rope_scaling is then ignored), with its rope_theta.
         long_context=dict(hf_overrides=dict(max_position_embeddings=131072,
                                             rope_scaling=dict(rope_type='yarn', factor=4.0,
                                                               original_max_position_embeddings=32768),
                                             rope_parameters=dict(rope_type='yarn', factor=4.0, rope_theta=1e6,
                                                                  original_max_position_embeddings=32768)),
                           rope=dict(type='yarn', factor=4.0, original=32768)),
         arch=_QWEN25_7B, note='short-window reference; YaRN x4 only in engines longer than 32k'),
    dict(abbr='qwen2.5-7b-instruct-1m', hf_id='Qwen/Qwen2.5-7B-Instruct-1M', native_window=1010000,
         window=1010000, max_tier='1m', tp=2, max_batch_size=1, cache_max_entry_count=0.7, engine=dict(),
         rope=dict(type='default'), caveats=_NO_DCA, arch=_QWEN25_7B,
         note="Qwen's 1M recipe uses dual-chunk attention (vLLM); LMDeploy has none: marked above 256k"),
    dict(abbr='qwen2.5-14b-instruct-1m', hf_id='Qwen/Qwen2.5-14B-Instruct-1M', native_window=1010000,
         window=1010000, max_tier='1m', tp=4, max_batch_size=1, cache_max_entry_count=0.7, engine=dict(),
         rope=dict(type='default'), caveats=_NO_DCA,
         arch=dict(architectures=['Qwen2ForCausalLM'], num_hidden_layers=48, num_attention_heads=40,
                   num_key_value_heads=8, hidden_size=5120, intermediate_size=13824, vocab_size=152064,
                   params=14.77e9),
         note="Qwen's 1M recipe uses dual-chunk attention (vLLM); LMDeploy has none: marked above 256k"),
    dict(abbr='internlm2_5-7b-chat-1m', hf_id='internlm/internlm2_5-7b-chat-1m', native_window=262144,
         window=1048576, max_tier='1m', tp=4, max_batch_size=1, cache_max_entry_count=0.7, engine=dict(),
         trust_remote_code=True, rope=dict(type='dynamic', factor=2.5, original=262144),
         arch=dict(architectures=['InternLM2ForCausalLM'], num_hidden_layers=32, num_attention_heads=32,
                   num_key_value_heads=8, hidden_size=4096, intermediate_size=14336, vocab_size=92544,
                   params=7.74e9),
         note="dynamic NTK x2.5 from its config.json (the LMDeploy docs' rope_scaling_factor=2.5 is the same; "
              'TurboMind 0.18 ignores that key)'),
    dict(abbr='internlm3-8b-instruct', hf_id='internlm/internlm3-8b-instruct', native_window=32768, window=131072,
         max_tier='128k', tp=1, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(), trust_remote_code=True,
         rope=dict(type='dynamic', factor=6.0, original=32768),
         arch=dict(architectures=['InternLM3ForCausalLM'], num_hidden_layers=48, num_attention_heads=32,
                   num_key_value_heads=2, head_dim=128, hidden_size=4096, intermediate_size=10240,
                   vocab_size=128512, params=8.8e9),
         note="dynamic NTK x6 from its config.json (OpenCompass's 128k config sets rope_scaling_factor=6.0, ignored "
              'by TurboMind 0.18: the same scaling)'),
    dict(abbr='llama-3.1-8b-instruct', hf_id='meta-llama/Llama-3.1-8B-Instruct', native_window=131072,
         window=131072, max_tier='128k', tp=1, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(),
         rope=dict(type='llama3', factor=8.0, original=8192),
         arch=dict(architectures=['LlamaForCausalLM'], num_hidden_layers=32, num_attention_heads=32,
                   num_key_value_heads=8, hidden_size=4096, intermediate_size=14336, vocab_size=128256,
                   params=8.03e9),
         note='128k native (llama3 RoPE scaling is in its config.json)'),
    dict(abbr='glm-4-9b-chat-1m', hf_id='THUDM/glm-4-9b-chat-1m', native_window=1048576, window=1048576,
         max_tier='1m', tp=2, max_batch_size=1, cache_max_entry_count=0.7, engine=dict(), trust_remote_code=True,
         # ChatGLMModel is not a TurboMind architecture in LMDeploy 0.18: stated, so that a plan made without
         # LMDeploy installed sizes the PyTorch engine (tests check 'auto' gives the same)
         backend='pytorch', rope=dict(type='default', base=1e8),
         arch=dict(architectures=['ChatGLMModel'], num_layers=40, num_attention_heads=32, multi_query_group_num=4,
                   kv_channels=128, hidden_size=4096, ffn_hidden_size=13696, padded_vocab_size=151552,
                   params=9.4e9),
         note='1M native (seq_length in its config.json, RoPE base 10000 x rope_ratio 10000); PyTorch engine'),
]

# --- 2025-2026 models (issue 21): MoE, sliding-window, hybrid linear attention, MLA ---------------------------------
_QWEN3_256K = [dict(above=262144, reason="Qwen3-2507's 1M recipe is dual-chunk attention + MInference above 256k "
                                         '(config_1m.json, vLLM/SGLang); LMDeploy 0.18 has neither')]
LONGCTX_LMDEPLOY_MODELS += [
    # MoE, 128 experts (8 routed per token), 256k native. TurboMind (Qwen3MoeForCausalLM is in SUPPORTED_ARCHS).
    # Run to 256k, the length LMDeploy serves as Qwen publishes it; the 1M recipe is marked (_QWEN3_256K).
    dict(abbr='qwen3-30b-a3b-instruct-2507', hf_id='Qwen/Qwen3-30B-A3B-Instruct-2507', native_window=262144,
         window=262144, max_tier='256k', tp=2, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(),
         rope=dict(type='default'), caveats=_QWEN3_256K, thinks=False, active_params=3.3e9,
         arch=dict(architectures=['Qwen3MoeForCausalLM'], num_hidden_layers=48, num_attention_heads=32,
                   num_key_value_heads=4, head_dim=128, hidden_size=2048, intermediate_size=6144,
                   moe_intermediate_size=768, num_experts=128, num_experts_per_tok=8, vocab_size=151936,
                   params=30.5e9),
         source='config.json and model card of Qwen/Qwen3-30B-A3B-Instruct-2507 (values as published, from knowledge; '
                'Hugging Face not reachable here, 2026-12-01)',
         note='MoE 30.5B total / 3.3B active; 256k native'),
    # MoE (32 experts, 4 per token) alternating 128-token sliding and full attention layers; YaRN x32 over 4k in
    # its config.json (131072 positions). TurboMind (GptOssForCausalLM in SUPPORTED_ARCHS). A reasoning model.
    dict(abbr='gpt-oss-20b', hf_id='openai/gpt-oss-20b', native_window=131072, window=131072, max_tier='128k', tp=1,
         max_batch_size=1, cache_max_entry_count=0.8, engine=dict(), rope=dict(type='yarn', factor=32.0, original=4096),
         thinks=True, active_params=3.6e9, checkpoint_bytes=13.8e9,
         # every tier: TurboMind 0.18 has no YaRN `truncate` (its PyTorch engine, which reads it, cannot load MXFP4)
         caveats=[dict(above=-1, reason="TurboMind 0.18 ignores YaRN truncate=false in gpt-oss's config.json "
                                        '(turbomind/models/utils.py parse_rope_param has no such field; its rope '
                                        'setup rounds the correction range, 8.09-17.40 -> 8-18): the frequencies '
                                        'of that ramp differ from the reference at every length')],
         arch=dict(architectures=['GptOssForCausalLM'], num_hidden_layers=24, num_attention_heads=64,
                   num_key_value_heads=8, head_dim=64, hidden_size=2880, intermediate_size=2880,
                   num_local_experts=32, num_experts_per_tok=4,
                   layer_types=['sliding_attention', 'full_attention'] * 12, sliding_window=128,
                   vocab_size=201088, params=20.9e9),
         source='config.json of openai/gpt-oss-20b as quoted in public code (searched 2026-12-01: 24 layers, '
                'sliding/full alternating, window 128, 64/8 heads x 64, 32 experts top-4, YaRN x32 over 4096)',
         note='MoE 20.9B / 3.6B active, MXFP4 experts; half its layers slide over 128 tokens; thinks'),
    # Hybrid: 36 Gated DeltaNet layers and 12 full-attention layers (one in four), MoE 512 experts (10 per token).
    # The PyTorch engine (Qwen3NextForCausalLM is only in its module map); its Gated DeltaNet kernels need
    # flash-linear-attention (fla) and tilelang (pytorch/backends/cuda/gated_delta_rule.py; LMDeploy pulls both).
    dict(abbr='qwen3-next-80b-a3b-instruct', hf_id='Qwen/Qwen3-Next-80B-A3B-Instruct', native_window=262144,
         window=262144, max_tier='256k', tp=4, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(),
         backend='pytorch', rope=dict(type='default'), thinks=False, active_params=3.9e9,
         caveats=[dict(above=262144, reason='Qwen3-Next extends to 1M with YaRN x4 (model card); not set here')],
         arch=dict(architectures=['Qwen3NextForCausalLM'], num_hidden_layers=48, full_attention_interval=4,
                   num_attention_heads=16, num_key_value_heads=2, head_dim=256, hidden_size=2048,
                   intermediate_size=5120, linear_conv_kernel_dim=4, linear_key_head_dim=128,
                   linear_num_key_heads=16, linear_num_value_heads=32, linear_value_head_dim=128,
                   moe_intermediate_size=512, num_experts=512, num_experts_per_tok=10, vocab_size=151936,
                   params=81.3e9),
         source='config.json of Qwen/Qwen3-Next-80B-A3B-Instruct as quoted in public code (searched 2026-12-01); '
                'active parameters from the model card (3B activated; 3.9e9 with embeddings and shared experts)',
         note='hybrid Gated DeltaNet + gated attention (1 in 4), MoE 81B / ~3B active; 256k native'),
    # Sliding: 5 local layers (1,024-token window) per global one; 128k with linear RoPE x8 in its config.json.
    # The PyTorch engine (Gemma3ForConditionalGeneration is only in its module map).
    dict(abbr='gemma-3-27b-it', hf_id='google/gemma-3-27b-it', native_window=131072, window=131072, max_tier='128k',
         tp=2, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(), backend='pytorch',
         rope=dict(type='linear', factor=8.0), thinks=False, active_params=27.4e9,
         arch=dict(architectures=['Gemma3ForConditionalGeneration'],
                   text_config=dict(model_type='gemma3_text', hidden_size=5376, num_hidden_layers=62,
                                    num_attention_heads=32, num_key_value_heads=16, head_dim=128,
                                    intermediate_size=21504, sliding_window=1024, sliding_window_pattern=6,
                                    query_pre_attn_scalar=168, rope_scaling=dict(factor=8.0, rope_type='linear'),
                                    rope_theta=1000000.0, rope_local_base_freq=10000.0,
                                    max_position_embeddings=131072, vocab_size=262208),
                   params=27.4e9),
         source='config.json of google/gemma-3-27b-it (values as published, from knowledge; 2026-12-01)',
         note='62 layers, 52 slide over 1,024 tokens: LMDeploy 0.18 still caches all 62 at full length'),
    # MLA: the cache holds kv_lora_rank + qk_rope_head_dim = 576 values per layer and token. DeepSeek-V3.x and
    # Kimi-K2 (same attention) do not fit 8 x 80 GB in bf16 (671B / 1T parameters); V2-Lite is the MLA model
    # that does. 32k context (model card). The PyTorch engine (DeepseekV2ForCausalLM is only in its module map).
    dict(abbr='deepseek-v2-lite-chat', hf_id='deepseek-ai/DeepSeek-V2-Lite-Chat', native_window=32768, window=32768,
         max_tier='32k', tp=1, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(), backend='pytorch',
         trust_remote_code=True, rope=dict(type='yarn', factor=40.0, original=4096), thinks=False,
         active_params=2.4e9,
         arch=dict(architectures=['DeepseekV2ForCausalLM'], num_hidden_layers=27, num_attention_heads=16,
                   num_key_value_heads=16, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128,
                   v_head_dim=128, hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408,
                   n_routed_experts=64, num_experts_per_tok=6, vocab_size=102400, params=15.7e9),
         source='config.json of deepseek-ai/DeepSeek-V2-Lite-Chat (values as published, from knowledge; 2026-12-01)',
         note='MLA (latent 512 + rope 64), MoE 15.7B / 2.4B active; 32k'),
]
