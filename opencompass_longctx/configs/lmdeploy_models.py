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
#   preflight and the backend choice read the real config.json of the model directory.
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
