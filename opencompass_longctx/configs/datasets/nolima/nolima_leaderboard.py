# NoLiMa's part of the leaderboard example (examples/eval_longctx.py takes every benchmark's <name>_leaderboard.py:
# opencompass_longctx.spec.example): its tiers, each in the evaluated model's own tokenizer (tokenizer='model': one
# copy per model, abbr <dataset>@<model>). Its own figures (base score, effective length) follow the tier table.
from mmengine.config import read_base

with read_base():
    from .nolima_250_gen import nolima_datasets as nolima_250
    from .nolima_500_gen import nolima_datasets as nolima_500
    from .nolima_1k_gen import nolima_datasets as nolima_1k
    from .nolima_2k_gen import nolima_datasets as nolima_2k
    from .nolima_4k_gen import nolima_datasets as nolima_4k
    from .nolima_8k_gen import nolima_datasets as nolima_8k
    from .nolima_16k_gen import nolima_datasets as nolima_16k
    from .nolima_32k_gen import nolima_datasets as nolima_32k

datasets = [dict(d, tokenizer='model') for d in [*nolima_250, *nolima_500, *nolima_1k, *nolima_2k, *nolima_4k,
                                                 *nolima_8k, *nolima_16k, *nolima_32k]]
dataset_abbrs = []
