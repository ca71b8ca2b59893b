# BABILong: the shared part of every tier config. Per-tier files only set the tier.
# Protocol defaults = the authors': all three prompt parts, official prompts, greedy, 20 new tokens,
# one user turn, official (strict label-set) scoring. Override any load() argument per dataset, e.g.
# dict(d, sample_source='official') for the leaderboard's 1000-sample sets up to 32k.
import os

from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

from opencompass_longctx.babilong.dataset import BabilongDataset
from opencompass_longctx.babilong.evaluator import BabilongEvaluator
from opencompass_longctx.run.inferencer import LongCtxGenInferencer
BABILONG_TASKS = [f'qa{i}' for i in range(1, 11)]  # qa11-qa20 exist only at 0k

babilong_reader_cfg = dict(input_columns=['prompt'], output_column='target')
babilong_infer_cfg = dict(
    prompt_template=dict(type=PromptTemplate, template=dict(round=[dict(role='HUMAN', prompt='{prompt}')])),
    retriever=dict(type=ZeroRetriever),
    # prompts longer than the model's max_seq_len (after its chat template) are skipped and counted, never cut
    inferencer=dict(type=LongCtxGenInferencer, max_out_len=20, overlength='skip'),
)
# With a system prompt (the leaderboard's API-path scripts use "You are a helpful assistant."): use
# dict(d, infer_cfg=babilong_system_infer_cfg, abbr=d['abbr'] + '_sys'). A real system message needs a model
# meta template with a SYSTEM role (opencompass_longctx.configs.meta_template.LONGCTX_META_TEMPLATE).
babilong_system_infer_cfg = dict(
    babilong_infer_cfg,
    prompt_template=dict(type=PromptTemplate, template=dict(
        begin=[dict(role='SYSTEM', fallback_role='HUMAN', prompt='You are a helpful assistant.')],
        round=[dict(role='HUMAN', prompt='{prompt}')])),
)
babilong_eval_cfg = dict(evaluator=dict(type=BabilongEvaluator, mode='official'))

BABILONG_BASE = [
    dict(
        type=BabilongDataset,
        abbr=f'babilong_{task}',
        task=task,
        path=os.environ.get('BABILONG_DATA') or None,  # None: $COMPASS_DATA_CACHE/babilong
        sample_source='100',
        reader_cfg=babilong_reader_cfg,
        infer_cfg=babilong_infer_cfg,
        eval_cfg=babilong_eval_cfg,
    ) for task in BABILONG_TASKS
]
