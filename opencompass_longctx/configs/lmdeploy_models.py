# Long-context models served by LMDeploy: one table (pure data; configs read_base() it).
#   native_window: the context the model was trained for; window: the longest context with the RoPE scaling
#   its authors recommend (engine keys below); tp: tensor-parallel GPUs (80 GB cards) for its largest tier, as
#   checked by the KV-cache preflight; max_tier: the largest standard tier to run.
# TurboMind's rope_scaling_factor is dynamic NTK; hf_overrides rewrites config.json (both engines).
#   arch: the model's geometry as its published config.json gives it (key names as there) and its parameter
#   count, so that a run can be planned and costed before the models are downloaded; at run time the KV-cache
#   preflight reads the real config.json of the model directory.
_QWEN25_7B = dict(num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4, hidden_size=3584,
                  intermediate_size=18944, vocab_size=152064, params=7.62e9)
LONGCTX_LMDEPLOY_MODELS = [
    dict(abbr='qwen2.5-7b-instruct', hf_id='Qwen/Qwen2.5-7B-Instruct', native_window=32768, window=131072,
         max_tier='128k', tp=1, max_batch_size=4, cache_max_entry_count=0.8,
         engine=dict(hf_overrides=dict(rope_scaling=dict(rope_type='yarn', factor=4.0,
                                                         original_max_position_embeddings=32768))),
         arch=_QWEN25_7B,
         note='short-window reference; YaRN x4 beyond 32k, as the Qwen2.5 model card recommends'),
    dict(abbr='qwen2.5-7b-instruct-1m', hf_id='Qwen/Qwen2.5-7B-Instruct-1M', native_window=1010000,
         window=1010000, max_tier='1m', tp=2, max_batch_size=1, cache_max_entry_count=0.7, engine=dict(),
         arch=_QWEN25_7B,
         note="Qwen's 1M recipe uses dual-chunk attention (vLLM); TurboMind above 256k is unverified"),
    dict(abbr='qwen2.5-14b-instruct-1m', hf_id='Qwen/Qwen2.5-14B-Instruct-1M', native_window=1010000,
         window=1010000, max_tier='1m', tp=4, max_batch_size=1, cache_max_entry_count=0.7, engine=dict(),
         arch=dict(num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8, hidden_size=5120,
                   intermediate_size=13824, vocab_size=152064, params=14.77e9),
         note="Qwen's 1M recipe uses dual-chunk attention (vLLM); TurboMind above 256k is unverified"),
    dict(abbr='internlm2_5-7b-chat-1m', hf_id='internlm/internlm2_5-7b-chat-1m', native_window=262144,
         window=1048576, max_tier='1m', tp=4, max_batch_size=1, cache_max_entry_count=0.7,
         engine=dict(rope_scaling_factor=2.5),
         arch=dict(num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, hidden_size=4096,
                   intermediate_size=14336, vocab_size=92544, params=7.74e9),
         note='rope_scaling_factor 2.5 as in the LMDeploy long-context docs'),
    dict(abbr='internlm3-8b-instruct', hf_id='internlm/internlm3-8b-instruct', native_window=32768, window=131072,
         max_tier='128k', tp=1, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(rope_scaling_factor=6.0),
         arch=dict(num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=2, head_dim=128,
                   hidden_size=4096, intermediate_size=10240, vocab_size=128512, params=8.8e9),
         note="dynamic NTK x6 for 128k, as OpenCompass's InternLM3 128k config"),
    dict(abbr='llama-3.1-8b-instruct', hf_id='meta-llama/Llama-3.1-8B-Instruct', native_window=131072,
         window=131072, max_tier='128k', tp=1, max_batch_size=1, cache_max_entry_count=0.8, engine=dict(),
         arch=dict(num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, hidden_size=4096,
                   intermediate_size=14336, vocab_size=128256, params=8.03e9),
         note='128k native (llama3 RoPE scaling is in its config.json)'),
    dict(abbr='glm-4-9b-chat-1m', hf_id='THUDM/glm-4-9b-chat-1m', native_window=1048576, window=1048576,
         max_tier='1m', tp=2, max_batch_size=1, cache_max_entry_count=0.7, engine=dict(),
         arch=dict(num_layers=40, num_attention_heads=32, multi_query_group_num=4, kv_channels=128,
                   hidden_size=4096, ffn_hidden_size=13696, padded_vocab_size=151552, params=9.4e9),
         note='1M native (seq_length in its config.json)'),
]
