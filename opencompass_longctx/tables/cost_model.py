# The cost model of a run: one table of constants, with their sources (pure data; the planner imports it and
# configs can read_base() it). Override any entry per run: LongCtxPartitioner(cost_model=dict(gpu='H100-80GB',
# prefill_mfu=0.5, ...)). The estimates it gives are estimates: measure your own GPUs and put the numbers here.
#
# Time of one inference task (one engine, on `tp` GPUs of one kind):
#   start      = subprocess_import_s + engine_start_s
#   prefill    = sum over prompts of (2 * active_params * L + 2 * full_layers * width * L^2
#                + 2 * sliding_layers * width * L * min(L, window)) / (tp * bf16_tflops * prefill_mfu)
#                (matmuls with the parameters a token uses, MoE: its experts; causal attention over the full layers,
#                windowed layers capped at their window; width = query heads x head dim, MLA in LMDeploy's
#                compressed form; L = prompt tokens; opencompass_longctx/models/geometry.py attention_width)
#   decode     = per batch of b prompts, out_tokens steps of (weights x active/total + b x (KV of the context over
#                full layers + KV of the window over sliding layers + fixed state)) / tp read from HBM at
#                hbm_tbps * decode_bw_efficiency (decoding is memory-bound). Dense models: all params, all layers.
#   GPU-hours  = tp * (start + prefill + decode) / 3600
# memory_gib: the card's name; visible_memory_gib: what CUDA reports as its total (torch.cuda.get_device_properties
# total_memory: about 79.2 GiB of an 80 GB A100/H100, 140.4 of a 141 GB H200). Both engines size their KV cache
# from the FREE memory (TurboMind cudaMemGetInfo; PyTorch engine executor/base.py), so the plan sizes from
# visible_memory_gib minus CUDA_NOT_FREE_GIB, what CUDA already holds when the engine starts (its context). The
# runtime preflight asks CUDA itself (torch.cuda.mem_get_info). Assumptions until measured on each GPU.
CUDA_NOT_FREE_GIB = 0.5
GPUS = {
    'A100-80GB': dict(memory_gib=80, visible_memory_gib=79.2, bf16_tflops=312, hbm_tbps=2.039,
                      source='NVIDIA A100 datasheet (SXM4 80GB): 312 TFLOPS dense BF16, 2,039 GB/s HBM2e'),
    'H100-80GB': dict(memory_gib=80, visible_memory_gib=79.2, bf16_tflops=989, hbm_tbps=3.35,
                      source='NVIDIA H100 datasheet (SXM5): 989 TFLOPS dense BF16, 3.35 TB/s HBM3'),
    'H200-141GB': dict(memory_gib=141, visible_memory_gib=140.4, bf16_tflops=989, hbm_tbps=4.8,
                       source='NVIDIA H200 datasheet (SXM): 989 TFLOPS dense BF16, 4.8 TB/s HBM3e'),
}

COST_MODEL = dict(
    # the GPU the run is planned for (a key of GPUS); the shipped model table sizes tp for 80 GB cards
    gpu='A100-80GB',
    # fraction of peak BF16 FLOPs reached in prefill. Assumption, not a measurement: 0.4 is typical of
    # flash-attention prefill at long context in serving engines; LMDeploy publishes request throughput
    # (InternLM/lmdeploy/docs/en/benchmark/a100_fp16.md: llama2-7b, tp=1, batch 256: 6,981 tokens/s on ShareGPT),
    # not prefill MFU.
    prefill_mfu=0.4,
    # fraction of HBM bandwidth reached when decoding. Assumption (0.6 is typical of weight-streaming decode).
    decode_bw_efficiency=0.6,
    # seconds to build an LMDeploy engine: read the weights, build the TurboMind model, allocate the KV cache,
    # start tp workers. Estimate for a 7-14B model from local NVMe (users report tens of seconds to minutes).
    engine_start_s=90,
    # seconds each OpenCompass task subprocess spends importing OpenCompass before any work: measured on the
    # project's CI machine (`python -X importtime -c "import opencompass.tasks"`: 8.8 s; about 10 s in all).
    subprocess_import_s=10,
    # share of max_out_len a model generates on average (1.0 = every answer runs to the limit: an upper bound)
    output_fraction=1.0,
    # the GPU-check run whose measured lines set prefill_mfu, decode_bw_efficiency and engine_start_s (None: the
    # values above are assumptions). longctx-gpu-check prints them with this key filled in, from passes timed
    # apart only (prefill with no prompt token served by the prefix cache, decode from its streamed tokens).
    calibrated_by=None,
)
