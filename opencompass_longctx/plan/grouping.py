"""Task grouping: a run's model x dataset combinations become inference tasks, one per
(model, tier band) or a few shards of a band, each with its engine sized and costed.

Datasets inside a task run shortest first; shards split a band's datasets by prompt tokens. An LMDeploy model's
task config gets the band's ``session_len`` and ``max_batch_size``; a prompt the model holds but the band's
engine does not is a miss of that engine (``model_window``), never a silent cut."""
import copy
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.models.engine_plan import BATCH_CAP, Band, EnginePlan, is_lmdeploy, plan_engine
from opencompass_longctx.combinations import without_run_options
from opencompass_longctx.tiers import parse_tier, sort_tiers
from opencompass_longctx.util import type_name
from opencompass_longctx.plan.bands import PlanError, band_edges, band_name, band_of
from opencompass_longctx.plan.cost import cost_model, task_seconds
from opencompass_longctx.plan.loads import SIZE_HEADROOM, dataset_load
@dataclass
class TaskPlan:
    model: str
    band: str
    shard: int
    shards: int
    datasets: List[str]
    tiers: List[str]
    rows: int
    prompt_tokens: int
    exact: bool
    gpus: int
    engine: Optional[EnginePlan]
    seconds: Dict[str, float]
    model_cfg: Dict = field(repr=False, default_factory=dict)
    dataset_cfgs: List = field(repr=False, default_factory=list)

    @property
    def gpu_hours(self) -> float:
        s = self.seconds
        return max(self.gpus, 1) * (s['start'] + s['prefill'] + s['decode']) / 3600

    @property
    def gpu_hours_without_reuse(self) -> float:
        s = self.seconds
        return max(self.gpus, 1) * (s['start'] + s.get('prefill_without_reuse', s['prefill']) + s['decode']) / 3600

    @property
    def overhead_gpu_hours(self) -> float:
        return max(self.gpus, 1) * self.seconds['start'] / 3600


def model_tokenizer(model_cfg):
    """The model's own tokenizer (from its directory), or None when it cannot be loaded here."""
    path = model_cfg.get('path')
    if not path or not os.path.isdir(path):
        return None
    try:
        from opencompass_longctx.tokenizer.counting import get_tokenizer
        return get_tokenizer(path)
    except Exception:  # noqa: BLE001 - the plan then uses the default headroom (and says so)
        return None



def _split_shards(loads: List, n: int) -> List[List]:
    """n groups balanced by prompt tokens (largest first into the lightest group), each shortest tier first."""
    groups = [[] for _ in range(n)]
    weight = [0] * n
    for ld in sorted(loads, key=lambda x: (-x[1].prompt_tokens, x[1].abbr)):
        i = weight.index(min(weight))
        groups[i].append(ld)
        weight[i] += ld[1].prompt_tokens
    return [sorted(g, key=lambda x: (parse_tier(x[1].tier).sort_key, x[1].tokens_per_row, x[1].abbr))
            for g in groups if g]


def shard_count(shards, model_abbr: str, band: str) -> int:
    if isinstance(shards, dict):
        n = shards.get(model_abbr, shards.get('*', 1))
        if isinstance(n, dict):
            n = n.get(band, n.get('*', 1))
    else:
        n = shards
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise PlanError(f'shards must be a positive integer (or a dict of them by model abbr / band), got {n!r}')
    return n


def make_plan(combinations: Sequence[Dict], bands: Optional[Sequence[str]] = None, shards=1,
              cost: Optional[Dict] = None, out_dir: Optional[str] = None, batch_cap: int = BATCH_CAP,
              headroom: float = SIZE_HEADROOM, redo: Sequence = ()) -> Dict:
    """The tasks and costs of a run. ``combinations``: ``[{'models': [...], 'datasets': [...]}]`` as OpenCompass's
    partitioners receive them. ``out_dir``: the predictions directory (datasets already predicted are skipped, except
    the ``(model abbr, dataset abbr)`` pairs in ``redo``: saved predictions a resume sets aside)."""
    from opencompass.utils import get_infer_output_path, model_abbr_from_cfg
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) or headroom < 1:
        raise PlanError(f'headroom must be a number >= 1 (model tokens per data token, at least), got {headroom!r}')
    edges = band_edges(bands)
    cm = cost_model(cost)
    tasks: List[TaskPlan] = []
    skipped = []
    for comb in combinations:
        for model in comb['models']:
            abbr = model_abbr_from_cfg(model)
            model_tok = model_tokenizer(model) if is_lmdeploy(model) else None
            by_band: Dict[int, List] = {}
            for d in comb['datasets']:
                if (out_dir and (abbr, d.get('abbr')) not in redo
                        and os.path.exists(get_infer_output_path(model, d, out_dir))):
                    skipped.append((abbr, d.get('abbr')))
                    continue
                ld = dataset_load(d, model.get('max_out_len'), model_tok)
                ld.min_headroom = float(headroom)
                by_band.setdefault(band_of(ld.tier, edges), []).append((d, ld))
            for bi in sorted(by_band):
                name = band_name(bi, edges)
                n = shard_count(shards, abbr, name)
                groups = _split_shards(by_band[bi], min(n, len(by_band[bi])))
                for si, group in enumerate(groups):    # context parallelism is considered for the band of 1m
                    tasks.append(_task(model, abbr, name, si, len(groups), group, cm, batch_cap,
                                       bi == band_of('1m', edges)))
    return {'tasks': tasks, 'skipped': skipped, 'bands': [band_name(i, edges) for i in range(len(edges) + 1)],
            'cost_model': cm}


def _with_model_window(d: Dict, window: int) -> Dict:
    d = copy.deepcopy(d)
    inferencer = (d.get('infer_cfg') or {}).get('inferencer')
    if inferencer is not None and type_name(inferencer) == 'LongCtxGenInferencer':
        inferencer['model_window'] = window
    return d


def _task(model, abbr, band, shard, shards, group, cm, batch_cap, consider_cp=False) -> TaskPlan:
    """One inference task: its datasets, and for an LMDeploy model the engine :mod:`..models.engine_plan` decides
    for them, written into the task's model config."""
    loads = [ld for _, ld in group]
    cfg = copy.deepcopy(without_run_options(model))
    engine = None
    if is_lmdeploy(model):
        engine = plan_engine(model, Band(tuple(loads), consider_cp), cm['gpu_spec'], batch_cap)
        cfg = engine.task_model(cfg)
        if engine.shortened:   # a prompt the model holds but this engine does not is a miss, never a cut
            group = [(_with_model_window(d, engine.window), ld) for d, ld in group]
    gpus = int((model.get('run_cfg') or {}).get('num_gpus', 0))
    return TaskPlan(model=abbr, band=band, shard=shard, shards=shards, datasets=[ld.abbr for ld in loads],
                    tiers=sort_tiers({ld.tier for ld in loads}),
                    rows=sum(ld.rows for ld in loads), prompt_tokens=sum(ld.prompt_tokens for ld in loads),
                    exact=all(ld.exact for ld in loads), gpus=gpus, engine=engine,
                    seconds=task_seconds(loads, engine, cm), model_cfg=cfg, dataset_cfgs=[d for d, _ in group])
