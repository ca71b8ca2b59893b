# NoLiMa: the shared part of every tier config. Per-tier files only set the tier.
#
# Tiers are NoLiMa's own lengths: the haystack holds L tokens with 1k = 1000 (tier '250' -> L=250, '500',
# '1k' -> 1000, '2k' ... '32k' -> 32000, '64k', '128k'), counted with the evaluated model's tokenizer
# (set NOLIMA_TOKENIZER, or `tokenizer=` per dataset, to the model's tokenizer directory; without it lengths
# use the offline default tiktoken:cl100k_base and are marked non-canonical). The needle, template, question
# and chat formatting come on top (~100-150 tokens), so a model needs max_seq_len >= L + ~400.
# Several models: one copy of each dataset per model, as OpenCompass's examples/eval_ruler.py does:
#   datasets = [dict(d, tokenizer=m['path'], max_seq_len=m['max_seq_len'], abbr=f"{d['abbr']}@{m['abbr']}")
#               for m in models for d in nolima_datasets]
#   model_dataset_combinations = [dict(models=[m], datasets=[d for d in datasets if d['tokenizer'] == m['path']])
#                                 for m in models]
# (max_seq_len= makes the loader refuse a tier whose prompts would not fit instead of letting them be cut.)
# Depths: linspace(0, 1, 26) up to 32k, 11 above. Books: haystack/rand_shuffle, switching to
# rand_shuffle_long only where the short books cannot hold L (64k may fit, 128k does not).
#
# Protocol defaults = the authors': one system message "You are a helpful assistant", their task template
# (the CoT set's own template for 'cot'), greedy, 192 new tokens, `contains` scoring (all four metrics are in
# the results file). Data: amodaresi/NoLiMa (non-commercial licence; download it yourself):
# path = $NOLIMA_DATA, else $COMPASS_DATA_CACHE/nolima.
import os

from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

from opencompass_longctx.run.inferencer import LongCtxGenInferencer
from opencompass_longctx.nolima.dataset import NoLiMaDataset
from opencompass_longctx.nolima.evaluator import NoLiMaEvaluator
# 'main' is the benchmark (58 pairs); the others are the paper's ablations and controls.
NOLIMA_VARIANTS = ['main', 'hard', 'cot', 'mc', 'direct', 'distractor']

nolima_reader_cfg = dict(input_columns=['prompt'], output_column='answer')
nolima_infer_cfg = dict(
    prompt_template=dict(type=PromptTemplate, template=dict(
        begin=[dict(role='SYSTEM', fallback_role='HUMAN', prompt='You are a helpful assistant')],
        round=[dict(role='HUMAN', prompt='{prompt}')])),
    retriever=dict(type=ZeroRetriever),
    # a prompt longer than the model's max_seq_len (after its chat template) is not sent and is counted as
    # over-length (left out of the score; a tier with none that fit shows N/A), never cut
    inferencer=dict(type=LongCtxGenInferencer, max_out_len=192, overlength='skip'),
)
# Reasoning models: dict(d, infer_cfg=nolima_reasoning_infer_cfg) (1536 tokens; <think> traces are stripped
# before scoring by default).
nolima_reasoning_infer_cfg = dict(nolima_infer_cfg, inferencer=dict(type=LongCtxGenInferencer, max_out_len=1536,
                                                                   overlength='skip'))
nolima_eval_cfg = dict(evaluator=dict(type=NoLiMaEvaluator, metric='contains', strip_think=True))

NOLIMA_BASE_BY_VARIANT = {
    v: dict(
        type=NoLiMaDataset,
        abbr=f'nolima_{v}',
        needle_set=v,
        path=os.environ.get('NOLIMA_DATA') or None,          # None: $COMPASS_DATA_CACHE/nolima
        tokenizer=os.environ.get('NOLIMA_TOKENIZER') or None,  # the evaluated model's tokenizer directory
        reader_cfg=nolima_reader_cfg,
        infer_cfg=nolima_infer_cfg,
        eval_cfg=nolima_eval_cfg,
    ) for v in NOLIMA_VARIANTS
}
NOLIMA_BASE = [NOLIMA_BASE_BY_VARIANT['main']]
NOLIMA_ALL_VARIANTS = [NOLIMA_BASE_BY_VARIANT[v] for v in NOLIMA_VARIANTS]
