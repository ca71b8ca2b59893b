"""The plan of a run, before any GPU is spent: which process loads which model, how many times, at what size.

:func:`make_plan` turns a run's model x dataset combinations into inference tasks, one per (model, tier band)
(or a few shards of a band), and costs them:

* Bands. A dataset's tier is read from its config (never by building it). Each band of the tier table
  (``TIER_BANDS``: up to 32k, 64k-128k, 256k-1m) is one task per model, so each model's engine starts once per
  band. Datasets inside a task run shortest first.
* Engine size (LMDeploy models, those with an ``engine_config``): ``session_len`` for the band's longest prompt
  (tier in the model's tokens with 10% headroom for tokenizer differences, the chat template and the longest
  generation), capped at the model's own ``max_seq_len``; ``max_batch_size`` from the KV-cache arithmetic of
  :mod:`opencompass_longctx.models.engine` (the runtime preflight's) for that ``session_len`` on the declared GPU
  (:mod:`opencompass_longctx.models.engine_plan`, the one place an engine is decided). Other models (Hugging Face
  on a CPU) are only grouped.
* Samples and prompt tokens: from each dataset's benchmark spec (:mod:`opencompass_longctx.spec`): exact from the
  dataset's build record when it was built before, else the tier arithmetic (:mod:`.loads`).
* Cost: GPU-hours from the cost model (``opencompass_longctx/tables/cost_model.py``) and the harness
  overhead (engine starts and subprocess imports) as a share of the total (:mod:`.cost`).
* Checks that need no GPU: data present for every dataset, model directories with their tokenizers,
  ``$LONGCTX_MODEL_ROOT``; every problem in one list (:mod:`.checks`).

Modules: :mod:`.bands`, :mod:`.loads`, :mod:`.grouping` (tasks), :mod:`.summary` (the plan's summary, typed),
:mod:`.cost`, :mod:`.checks`, :mod:`.render` (markdown and JSON). None of them names a benchmark.

``LongCtxPartitioner`` (:mod:`opencompass_longctx.run.partitioner`) runs this in every ``opencompass`` run, ``--dry-run``
included, prints the plan and writes it next to the run (``<work_dir>/plan/``).
"""
from opencompass_longctx.models.engine_plan import (BATCH_CAP, GIB, is_lmdeploy, model_geometry,  # noqa: F401
                                                    plan_engine, size_engine)
from opencompass_longctx.tiers import parse_tier  # noqa: F401
from opencompass_longctx.plan.bands import PlanError, band_edges, band_name, band_of  # noqa: F401
from opencompass_longctx.plan.checks import check_run, engine_problems  # noqa: F401
from opencompass_longctx.plan.cost import cost_model, task_seconds  # noqa: F401
from opencompass_longctx.plan.grouping import TaskPlan, make_plan, model_tokenizer, shard_count  # noqa: F401
from opencompass_longctx.plan.loads import SIZE_HEADROOM, TEMPLATE_TOKENS, DatasetLoad, dataset_load  # noqa: F401
from opencompass_longctx.plan.render import to_json, to_markdown, write  # noqa: F401
from opencompass_longctx.plan.summary import BandSummary, ModelSummary, PlanSummary, summarize  # noqa: F401
