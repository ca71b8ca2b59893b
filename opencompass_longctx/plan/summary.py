"""The plan's summary, typed: per model and band, the tasks, engine starts, GPUs, datasets, samples, prompt tokens,
the engine (:class:`~opencompass_longctx.models.engine_plan.EnginePlan`: size, verdict, backend, RoPE, caveats, cp)
and GPU-hours, built once from the tasks (:func:`summarize`) and read by attribute: the Markdown (:mod:`.render`), the
partitioner (which adds the cluster requests, the resume and what was left out) and the plan file.

The plan file (``longctx_plan.json``) is :meth:`PlanSummary.to_dict`, in the form it had as a dict: a key that was
written only where it applied (a band's ``rope`` and ``cp``, a model's ``backend``, ``prefix_caching`` and
``layer_types``, the partitioner's ``cluster_requests``, ``resume`` and ``left_out``) is still written only there."""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.tiers import sort_tiers


@dataclass
class BandSummary:
    """One model's band: its tasks (one per shard) and the engine they start."""
    gpus_per_task: int
    tasks: int = 0
    engine_starts: int = 0
    datasets: int = 0
    samples: int = 0
    prompt_tokens: int = 0
    exact: bool = True                      # prompt tokens from build records (False: the tier arithmetic)
    tiers: List[str] = field(default_factory=list)
    session_len: Optional[int] = None
    max_batch_size: Optional[int] = None
    verdict: Optional[str] = None
    reason: str = ''
    gpu_hours: float = 0.0
    caveats: Dict[str, List[str]] = field(default_factory=dict)    # {tier: caveat marks}
    rope: Optional[Dict] = None             # the RoPE scaling of the band's engine (an LMDeploy model's)
    cp: Optional[Tuple[int, str]] = None    # (cp, why) where the plan considered context parallelism
    lmdeploy: bool = False                  # the band has an engine the plan sized

    def to_dict(self) -> Dict:
        out = {'tasks': self.tasks, 'engine_starts': self.engine_starts, 'gpus_per_task': self.gpus_per_task,
               'datasets': self.datasets, 'samples': self.samples, 'prompt_tokens': self.prompt_tokens,
               'exact': self.exact, 'tiers': self.tiers, 'session_len': self.session_len,
               'max_batch_size': self.max_batch_size, 'verdict': self.verdict, 'reason': self.reason,
               'gpu_hours': self.gpu_hours, 'caveats': self.caveats}
        if self.lmdeploy:
            out['rope'] = self.rope
        if self.cp is not None:
            out['cp'] = self.cp
        return out


@dataclass
class ModelSummary:
    """One model: its bands in the order the plan runs them, and the engine it is served by (LMDeploy models)."""
    lmdeploy: bool
    bands: Dict[str, BandSummary] = field(default_factory=dict)
    tasks: int = 0
    engine_starts: int = 0
    gpu_hours: float = 0.0
    overhead_gpu_hours: float = 0.0
    backend: Optional[Tuple[str, str]] = None          # (backend, why)
    prefix_caching: Optional[str] = None               # 'on (...)' / 'off (...)'
    layer_types: Optional[Tuple[str, float]] = None    # (the layer types in words, KV bytes per token)
    engine_seen: bool = False                          # an engine was planned for it (its keys are written)

    def to_dict(self) -> Dict:
        out = {'bands': {name: b.to_dict() for name, b in self.bands.items()}, 'tasks': self.tasks,
               'engine_starts': self.engine_starts, 'gpu_hours': self.gpu_hours,
               'overhead_gpu_hours': self.overhead_gpu_hours, 'lmdeploy': self.lmdeploy}
        if self.engine_seen:
            out.update(backend=self.backend, prefix_caching=self.prefix_caching, layer_types=self.layer_types)
        return out


@dataclass
class PlanSummary:
    """The run's plan in figures: per model (in the order of the tasks), the totals, the cost model and the problems
    found without a GPU; the partitioner adds its Slurm requests, the resume and what the config left out."""
    models: Dict[str, ModelSummary]
    tasks: int
    engine_starts: int
    gpu_hours: float
    overhead_gpu_hours: float
    gpu_hours_without_reuse: float
    overhead_share: Optional[float]
    costed: bool
    skipped_already_predicted: int
    cost_model: Dict
    problems: List[Dict]
    cluster_requests: Optional[List[Dict]] = None     # run.cluster.requests (the partitioner)
    resume: Optional[Dict] = None                     # run.resume.summarize (the partitioner)
    left_out: Optional[List[Dict]] = None             # combinations.expand's left-out and fitted pairs

    @property
    def any_lmdeploy(self) -> bool:
        return any(m.lmdeploy for m in self.models.values())

    def to_dict(self) -> Dict:
        """The plan file's form (module doc)."""
        out = {'models': {name: m.to_dict() for name, m in self.models.items()}, 'tasks': self.tasks,
               'engine_starts': self.engine_starts, 'gpu_hours': self.gpu_hours,
               'overhead_gpu_hours': self.overhead_gpu_hours, 'gpu_hours_without_reuse': self.gpu_hours_without_reuse,
               'overhead_share': self.overhead_share, 'costed': self.costed,
               'skipped_already_predicted': self.skipped_already_predicted, 'cost_model': self.cost_model,
               'problems': self.problems}
        for key in ('cluster_requests', 'resume', 'left_out'):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def summarize(plan: Dict, problems: Sequence[Dict] = ()) -> PlanSummary:
    """Per model and band: tasks, engine starts, GPUs, datasets, samples, tokens, engine size, GPU-hours."""
    models: Dict[str, ModelSummary] = {}
    for t in plan['tasks']:
        m = models.setdefault(t.model, ModelSummary(lmdeploy=t.engine is not None))
        b = m.bands.setdefault(t.band, BandSummary(gpus_per_task=t.gpus))
        b.tasks += 1
        b.engine_starts += 1
        b.datasets += len(t.datasets)
        b.samples += t.rows
        b.prompt_tokens += t.prompt_tokens
        b.exact = b.exact and t.exact
        b.tiers = sort_tiers(set(b.tiers) | set(t.tiers))
        if t.engine:
            _add_engine(m, b, t.engine)
        b.gpu_hours += t.gpu_hours
        m.tasks += 1
        m.engine_starts += 1
        m.gpu_hours += t.gpu_hours
        m.overhead_gpu_hours += t.overhead_gpu_hours
    total = sum(m.gpu_hours for m in models.values())
    overhead = sum(m.overhead_gpu_hours for m in models.values())
    return PlanSummary(models=models, tasks=len(plan['tasks']),
                       engine_starts=sum(m.engine_starts for m in models.values()), gpu_hours=total,
                       overhead_gpu_hours=overhead,
                       gpu_hours_without_reuse=sum(t.gpu_hours_without_reuse for t in plan['tasks']),
                       overhead_share=overhead / total if total else None,
                       costed=all(t.seconds.get('costed') for t in plan['tasks'] if t.engine),
                       skipped_already_predicted=len(plan['skipped']), cost_model=dict(plan['cost_model']),
                       problems=list(problems))


def _add_engine(m: ModelSummary, b: BandSummary, e) -> None:
    """A task's engine (:class:`~opencompass_longctx.models.engine_plan.EnginePlan`) into its band and model."""
    b.session_len = max(b.session_len or 0, e.session_len)
    b.max_batch_size, b.verdict, b.reason = e.max_batch_size, e.verdict, e.reason or ''
    b.rope, b.lmdeploy = e.rope, True
    b.caveats.update(e.caveats or {})
    if e.cp_note:
        b.cp = (e.cp, e.cp_note)
    m.backend, m.prefix_caching = (e.backend, e.backend_reason), e.prefix_caching
    m.layer_types, m.engine_seen = (e.layer_types, e.kv_bytes_per_token), True
