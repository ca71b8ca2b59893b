# Leaderboard comparison: long-context models served by LMDeploy (TurboMind, tensor parallel) on BABILong,
# tier by tier. Needs GPUs, `pip install -e ".[lmdeploy]"` and the BABILong data (see README).
#   opencompass examples/eval_longctx.py             # run
#   opencompass examples/eval_longctx.py --dry-run   # parse and partition only (any machine)
from mmengine.config import read_base
from opencompass.models import TurboMindModelwithChatTemplate
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

with read_base():
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
    from ..configs.datasets.babilong.babilong_0k_gen import babilong_datasets as babilong_0k
    from ..configs.datasets.babilong.babilong_4k_gen import babilong_datasets as babilong_4k
    from ..configs.datasets.babilong.babilong_16k_gen import babilong_datasets as babilong_16k
    from ..configs.datasets.babilong.babilong_32k_gen import babilong_datasets as babilong_32k
    from ..configs.datasets.babilong.babilong_64k_gen import babilong_datasets as babilong_64k
    from ..configs.datasets.babilong.babilong_128k_gen import babilong_datasets as babilong_128k
    from ..configs.summarizers.longctx import summarizer

TIERS = ['0k', '4k', '16k', '32k', '64k', '128k']
datasets = [*babilong_0k, *babilong_4k, *babilong_16k, *babilong_32k, *babilong_64k, *babilong_128k]

# One entry per model: (abbr, HF path or local dir, tensor-parallel degree, extra TurboMind engine keys).
MODEL_TABLE = [
    ('qwen2.5-7b-instruct-1m', 'Qwen/Qwen2.5-7B-Instruct-1M', 2, dict()),
    ('internlm2_5-7b-chat-1m', 'internlm/internlm2_5-7b-chat-1m', 2, dict(rope_scaling_factor=2.5)),
    ('llama-3.1-8b-instruct', 'meta-llama/Llama-3.1-8B-Instruct', 2, dict()),
]
# The largest tier (128k GPT-2 tokens; other tokenizers differ by a few percent) + a margin for the chat
# template and tokenizer differences + the 20 generated tokens.
SESSION_LEN = 128000 + 8192 + 20
models = [
    dict(
        type=TurboMindModelwithChatTemplate,
        abbr=abbr,
        path=path,
        meta_template=LONGCTX_META_TEMPLATE,
        engine_config=dict(session_len=SESSION_LEN, max_batch_size=1, tp=tp, cache_max_entry_count=0.7, **extra),
        gen_config=dict(do_sample=False),
        max_seq_len=SESSION_LEN,
        max_out_len=20,
        batch_size=1,
        run_cfg=dict(num_gpus=tp),
    )
    for abbr, path, tp, extra in MODEL_TABLE
]

# OpenCompass's table shows the per-tier groups; the long-context tier table (every model, benchmark and tier
# side by side with the published numbers, effective lengths, plots) follows it.
summarizer = dict(summarizer, dataset_abbrs=[f'babilong_qa1-qa{last}_{tier}' for tier in TIERS for last in (5, 10)])
# One task per model x dataset: long tiers are heavy, and NaivePartitioner does not build every dataset in
# the main process just to size it.
infer = dict(partitioner=dict(type=NaivePartitioner),
             runner=dict(type=LocalRunner, max_num_workers=8, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=100),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLEvalTask)))
work_dir = 'outputs/longctx'
