"""``LongCtxPartitioner``: one inference task per (model, tier band), with an engine sized for the band.

OpenCompass's ``NaivePartitioner`` makes one task per (model, dataset): each is a fresh subprocess that imports
OpenCompass and builds the model (an LMDeploy engine: weights, KV cache, tensor-parallel workers) from scratch,
for a few seconds of work at the short tiers. This partitioner groups each model's datasets by tier band
(``TIER_BANDS`` of the tier table, or ``bands=[...]``), so a model is loaded once per band (or once per shard
when ``shards`` asks for parallel engines), and sizes each band's LMDeploy engine (``session_len`` and
``max_batch_size``) for that band. The model abbr is unchanged, so predictions, results and the tier table are
the same as with any other partitioner.

Every run (``--dry-run`` included) prints the plan, with its estimated GPU-hours and the problems found without
a GPU, and writes it to ``<work_dir>/plan/longctx_plan.{md,json}`` (see :mod:`opencompass_longctx.plan`).
With a ``SlurmRunner`` the plan also shows the ``srun`` request of every task and checks the partition and its GPUs
(:mod:`opencompass_longctx.run.cluster`); in a resumed run (``-r``) it says what is done and what is left
(:mod:`opencompass_longctx.run.resume`), and sets aside the saved predictions that do not match their current dataset
(those datasets restart) or stops a ``-r`` that has nothing to resume (:mod:`opencompass_longctx.run.resume_check`). With problems, a real run stops before any task starts
(``on_problem='error'``, the default; ``'warn'`` goes on); ``--dry-run`` only reports them. A config the plan cannot
be made from (a tier that is no tier, ``-r`` with nothing to resume, problems with ``on_problem='error'``) stops the
``opencompass`` command with one line and exit status 2 (:func:`opencompass_longctx.errors.in_opencompass`).

    infer = dict(partitioner=dict(type=LongCtxPartitioner),   # bands=['32k', '128k', '1m'], shards=1,
                 runner=dict(type=LocalRunner, ...))          # cost_model=dict(gpu='H100-80GB'), on_problem
"""
import os
import sys
from typing import Dict, List, Optional

from mmengine.config import Config
from opencompass.partitioners import NaivePartitioner
from opencompass.partitioners.base import BasePartitioner
from opencompass.registry import PARTITIONERS

from opencompass_longctx.run import cluster

from opencompass_longctx.run import resume

from opencompass_longctx.run import resume_check

from opencompass_longctx import combinations
from opencompass_longctx import plan as P
from opencompass_longctx.errors import LongCtxError, in_opencompass
from opencompass_longctx.util import counted, plural
from opencompass_longctx.weights import record_run_models
class RunCheckError(LongCtxError, RuntimeError):
    """Problems found before any task started (missing data, models or tokenizers)."""


def dry_run() -> bool:
    """Whether ``opencompass`` was started with ``--dry-run`` (argparse also accepts a prefix such as ``--dry``)."""
    return any(len(a) > 3 and '--dry-run'.startswith(a.split('=')[0]) for a in sys.argv[1:] if a.startswith('--d'))


@PARTITIONERS.register_module()
class LongCtxEvalPartitioner(NaivePartitioner):
    """OpenCompass's ``NaivePartitioner`` (same ``n``) over each model's datasets as ``LongCtxPartitioner`` ran them
    (:func:`opencompass_longctx.combinations.expand`)."""

    def __call__(self, cfg):
        with in_opencompass():     # in the opencompass command: a LongCtxError is one line and exit status 2
            line = resume_check.check_reuse(cfg['work_dir'], dry_run())   # -r where nothing ran: ask or refuse
            if line:
                print(line, flush=True)
            record_run_models(cfg)      # what identifies each model's weights, while they are reachable
            return super().__call__(cfg)

    def partition(self, model_dataset_combinations: List[Dict], *args, **kwargs):
        return super().partition(combinations.expand(model_dataset_combinations)[0], *args, **kwargs)


@PARTITIONERS.register_module()
class LongCtxPartitioner(BasePartitioner):
    """Args (besides OpenCompass's ``out_dir`` and ``keep_keys``):

    * ``bands``: each band's largest tier, ascending (default: ``TIER_BANDS`` of the tier table).
    * ``shards``: engines per band: an int, or ``{model_abbr: int}`` / ``{model_abbr: {band: int}}`` with ``'*'``
      as the default key. Shards split a band's datasets by prompt tokens.
    * ``cost_model``: overrides of ``opencompass_longctx/tables/cost_model.py`` (e.g. ``gpu='H100-80GB'``).
    * ``batch_cap``: the largest ``max_batch_size`` given to an engine (64).
    * ``headroom``: model tokens per data-tokenizer token, at least (1.10; the measured ratio x 1.05 when larger).
    * ``on_problem``: ``'error'`` (stop a real run when the checks find problems) or ``'warn'``.
    """

    def __init__(self, out_dir: str, bands: Optional[List[str]] = None, shards=1, cost_model: Optional[Dict] = None,
                 batch_cap: int = P.BATCH_CAP, headroom: float = P.SIZE_HEADROOM, on_problem: str = 'error',
                 keep_keys: Optional[List[str]] = None):
        super().__init__(out_dir=out_dir, keep_keys=keep_keys)
        if on_problem not in ('error', 'warn'):
            raise P.PlanError(f"on_problem must be 'error' or 'warn', got {on_problem!r}")
        P.band_edges(bands)        # validate now: a bad band list is a config error, not a task failure
        P.cost_model(cost_model)
        self.bands, self.shards, self.cost, self.batch_cap, self.headroom = bands, shards, cost_model, batch_cap, headroom
        self.on_problem = on_problem
        self.runners: Dict[str, Optional[Dict]] = {}
        self.reuse_line = ''

    def __call__(self, cfg):
        # partition() receives only models and datasets: the runners (what a Slurm job asks for) come from here
        self.runners = {stage: (cfg.get(stage) or {}).get('runner') for stage in ('infer', 'eval')}
        with in_opencompass():     # in the opencompass command: a LongCtxError is one line and exit status 2
            self.reuse_line = resume_check.check_reuse(cfg['work_dir'], dry_run())   # -r where nothing ran
            record_run_models(cfg)      # what identifies each model's weights, while they are reachable
            return super().__call__(cfg)

    def partition(self, model_dataset_combinations: List[Dict], work_dir: str, out_dir: str,
                  add_cfg: Dict = {}) -> List[Config]:  # noqa: B006 (OpenCompass's signature)
        # each model's datasets: its max_tier, NoLiMa in its own tokenizer, LongBioBench cells that fit their tier
        model_dataset_combinations, left_out = combinations.expand(model_dataset_combinations)
        # a resume reuses only saved predictions of the current datasets: the others are set aside and redone
        stale, unchecked = resume_check.stale_predictions(model_dataset_combinations, out_dir)
        if stale and not dry_run():
            from opencompass.utils import get_logger
            resume_check.set_aside(stale, get_logger())
        plan = P.make_plan(model_dataset_combinations, self.bands, self.shards, self.cost, out_dir, self.batch_cap,
                           self.headroom, redo=[(s.model, s.dataset) for s in stale])
        models = [m for c in model_dataset_combinations for m in c['models']]
        datasets = [d for c in model_dataset_combinations for d in c['datasets']]
        datasets_of = {d.get('abbr') for d in datasets}
        requests = cluster.requests(plan, self.runners.get('infer'))
        slurm_problems, slurm_notes = cluster.problems(self.runners, requests)
        problems = P.engine_problems(plan) + P.check_run(models, datasets) + slurm_problems
        summary = P.summarize(plan, problems)
        done = resume.summarize(resume.progress(model_dataset_combinations, plan, out_dir, self.bands, self.headroom,
                                                stale), plan, stale)
        done['notes'] += unchecked
        summary.cluster_requests, summary.resume, summary.left_out = requests, done, left_out or None
        markdown = (P.to_markdown(summary) + cluster.to_markdown(requests, self.runners, slurm_notes)
                    + resume.to_markdown(done) + (f'\n{self.reuse_line}\n' if self.reuse_line else ''))
        paths = P.write(summary, plan, os.path.join(work_dir, 'plan'), markdown)
        print('\n' + markdown + f"\nPlan written to {paths['md']} and {paths['json']}\n", flush=True)
        if problems and self.on_problem == 'error' and not dry_run():
            first = problems[0]
            where = counted(first['where'], 'dataset' if all(w in datasets_of for w in first['where']) else 'item')
            more = f' (and {plural(len(problems) - 1, "more problem")})' if len(problems) > 1 else ''
            raise RunCheckError(
                f'{len(problems)} problem(s) found before any task started: {where}: {first["problem"]}{more}; the '
                f'plan lists them ({paths["md"]}): fix them, or set on_problem=\'warn\' in the LongCtxPartitioner '
                'config to run anyway.')
        return [Config({'models': [t.model_cfg], 'datasets': [t.dataset_cfgs], 'work_dir': work_dir, **add_cfg})
                for t in plan['tasks']]
