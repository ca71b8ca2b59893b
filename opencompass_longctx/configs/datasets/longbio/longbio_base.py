# LongBioBench: the shared part of every tier config. Per-tier files only set the tier.
#
# One dataset per cell (15 cells, opencompass_longctx/longbio/catalogue.py), generated on the fly and cached:
#   LONGBIO_BASE         mode='compat': the authors' protocol and scoring (abbr longbio_<cell>_<tier>)
#   LONGBIO_STRICT_BASE  mode='strict': their bugs fixed (abbr longbio_strict_<cell>_<tier>)
# Prompt: a system message, the user message and the authors' assistant prefix (a BOT turn). The package's model
# wrappers (models.hf.LongCtxHFChatModel, models.lmdeploy.LongCtxTurboMindModel; continue_final_message=True by
# default) continue it as the authors do; OpenCompass's own chat wrappers drop it. Each result records which
# (scoring.answer_prefix). Decoding: greedy, 50 * n new tokens (the authors').
# Override any load() argument per dataset, e.g. dict(d, tokenizer='/path/to/Qwen2.5-7B-Instruct') for the
# authors' data tokenizer, num_samples=..., seed=..., density=0.5, depth=[0.0, 0.5], shots=0.
import os

from mmengine.config import read_base
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

from opencompass_longctx.longbio.dataset import LongBioDataset
from opencompass_longctx.run.inferencer import LongCtxGenInferencer
from opencompass_longctx.longbio.evaluator import LongBioEvaluator
with read_base():
    from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS
# LongBioBench fills the whole prompt (system, user message, answer prefix) to the tier: a run keeps this many tokens
# of each tier for the chat template and the answer (reserve_tokens=...), as the leaderboard example and the GPU check
# do (the tier files leave it 0, the authors' protocol).
LONGBIO_RESERVE_TOKENS = 512
# The authors generated 800 samples per cell.
LONGBIO_NUM_SAMPLES = int(os.environ.get('LONGBIO_NUM_SAMPLES', '800'))

longbio_reader_cfg = dict(input_columns=['system', 'user', 'prefix'], output_column='answer')
longbio_prompt_template = dict(type=PromptTemplate, template=dict(
    begin=[dict(role='SYSTEM', fallback_role='HUMAN', prompt='{system}')],
    round=[dict(role='HUMAN', prompt='{user}'), dict(role='BOT', prompt='{prefix}')]))

LONGBIO_BASE = [
    dict(
        type=LongBioDataset,
        abbr=f"longbio_{c['cell']}",
        cell=c['cell'],
        mode='compat',
        num_samples=LONGBIO_NUM_SAMPLES,
        reader_cfg=longbio_reader_cfg,
        infer_cfg=dict(prompt_template=longbio_prompt_template, retriever=dict(type=ZeroRetriever),
                       inferencer=dict(type=LongCtxGenInferencer, max_out_len=50 * c['n'], overlength='skip')),
        eval_cfg=dict(evaluator=dict(type=LongBioEvaluator)),
    ) for c in LONGBIO_CELLS
]
LONGBIO_STRICT_BASE = [dict(d, abbr='longbio_strict_' + d['cell'], mode='strict') for d in LONGBIO_BASE]
