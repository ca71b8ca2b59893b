# The project's tiny random-weight chat model (built on first use, CPU only): proves the pipeline. Its answers are
# noise, so it writes at most out_len_cap=8 new tokens whatever a benchmark's max_out_len (a demo-model property,
# opencompass_longctx/demo/tiny_chat.py). batch_size=1: with no padding, attention runs fused (3x faster on CPU).
import os

from mmengine.config import read_base

from opencompass_longctx.demo.tiny_chat import TinyChatModel
with read_base():
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
models = [
    dict(
        type=TinyChatModel,
        abbr='tiny-chat',
        path=os.environ.get('LONGCTX_TINY_MODEL', 'outputs/longctx_demo/tiny-chat'),  # built on first use
        meta_template=LONGCTX_META_TEMPLATE,
        model_kwargs=dict(device_map='cpu', torch_dtype='float32'),
        generation_kwargs=dict(do_sample=False),  # greedy, as every benchmark's protocol
        max_seq_len=16384,
        max_out_len=20,
        batch_size=1,
        run_cfg=dict(num_gpus=0),
    )
]
