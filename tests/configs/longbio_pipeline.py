# Test config: all 15 LongBioBench cells at 0k, 2k, 8k and 128k in both modes (the cells each tier holds),
# through the real pipeline with the project's tiny CPU model. Few samples, 4 new tokens. The model's 16k
# window holds the 0k and 2k prompts; the 8k and 128k ones (in its small-vocabulary tokenizer) are over-length:
# never sent, never truncated, counted (the oracle re-evaluation in the test then scores those tiers too).
# This proves the plumbing (generation in three processes, prompts, inference, evaluation, summary), not a model.
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

with read_base():
    from ...configs.datasets.longbio.longbio_0k_gen import longbio_datasets as compat_0k
    from ...configs.datasets.longbio.longbio_0k_gen import longbio_strict_datasets as strict_0k
    from ...configs.datasets.longbio.longbio_2k_gen import longbio_datasets as compat_2k
    from ...configs.datasets.longbio.longbio_2k_gen import longbio_strict_datasets as strict_2k
    from ...configs.datasets.longbio.longbio_8k_gen import longbio_datasets as compat_8k
    from ...configs.datasets.longbio.longbio_8k_gen import longbio_strict_datasets as strict_8k
    from ...configs.datasets.longbio.longbio_128k_gen import longbio_datasets as compat_128k
    from ...configs.datasets.longbio.longbio_128k_gen import longbio_strict_datasets as strict_128k
    from ...configs.models.longctx_tiny_chat import models as tiny_models
    from ...configs.summarizers.longbio import longbio_summary_groups
    from ._env_longbio import MAX_SEQ_LEN, NUM_SAMPLES

TIERS = ['0k', '2k', '8k', '128k']
datasets = [
    dict(d, num_samples=NUM_SAMPLES,
         infer_cfg=dict(d['infer_cfg'], inferencer=dict(d['infer_cfg']['inferencer'], max_out_len=4)))
    for d in [*compat_0k, *strict_0k, *compat_2k, *strict_2k, *compat_8k, *strict_8k, *compat_128k, *strict_128k]
]
models = [dict(m, max_seq_len=MAX_SEQ_LEN, max_out_len=4) for m in tiny_models]

summarizer = dict(
    dataset_abbrs=[f'{p}{name}' for tier in TIERS for p in ('longbio_', 'longbio_strict_')
                   for name in [f'mean_{tier}', f'understanding_{tier}', f'reasoning_{tier}', f'trustworthiness_{tier}']]
    + [d['abbr'] for d in datasets],
    summary_groups=longbio_summary_groups,
)
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
