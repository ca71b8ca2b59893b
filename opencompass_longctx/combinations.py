"""Which datasets each model of a run gets, so that a run's config can stay a list of models and datasets.

For every (model, dataset) pair of a run (its ``model_dataset_combinations``, else every model with every
dataset), :func:`expand` applies three rules, the same for inference (``LongCtxPartitioner``), evaluation
(``LongCtxEvalPartitioner``) and the tier table (``LongCtxSummarizer``):

* a model config's ``max_tier`` (e.g. ``'128k'``) leaves out the datasets above it (compared as tier sizes,
  1k = 1000); a model without one gets every tier;
* ``tokenizer='model'`` in a dataset config becomes the evaluated model's own tokenizer (its ``tokenizer_path``,
  else its ``path``), and the dataset's abbr gets ``@<model abbr>`` (NoLiMa counts its tiers in the model's
  tokens: one copy of the dataset per model);
* a model config's ``thinks=True`` raises the decoding budgets (:mod:`opencompass_longctx.reasoning`);
* a dataset whose benchmark spec says it cannot fit its tier (LongBioBench: the cell's needles and
  ``reserve_tokens``) is left out, and the plan names it;
* for an LMDeploy model, a dataset whose longest prompt and answer exceed the model's window is built to fit it
  where its benchmark can (LongBioBench's prompt budget), else left out as N/A with the reason
  (:mod:`opencompass_longctx.models.window`): the plan costs only prompts that can be sent.

A pair can be given twice with the same result: a config that already did this by hand plans the same.
"""
import copy
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.spec import spec_of
from opencompass_longctx.tiers import TierError, parse_tier
from opencompass_longctx.errors import LongCtxError
from opencompass_longctx.util import counted
MODEL_TOKENIZER = 'model'
RUN_OPTIONS = ('max_tier', 'thinks', 'declared_geometry')   # model-config keys read by the harness, not the model class


class SelectionError(LongCtxError, ValueError):
    """A run option that cannot be applied (``tokenizer='model'`` for a model without a path, a bad max_tier)."""


def _abbr(cfg, kind: str) -> str:
    from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg
    return (model_abbr_from_cfg if kind == 'model' else dataset_abbr_from_cfg)(cfg)


def for_model(model: Dict, d: Dict) -> Tuple[Optional[Dict], str]:
    """(the dataset config as this model runs it, '') or (None, why it is left out)."""
    got, why, _ = for_model_noted(model, d)
    return got, why


def for_model_noted(model: Dict, d: Dict) -> Tuple[Optional[Dict], str, str]:
    """:func:`for_model` and a note when the dataset was built to fit the model's window ('' otherwise)."""
    max_tier = model.get('max_tier')
    if max_tier is not None and 'tier' in d:
        try:
            above = parse_tier(d['tier']).sort_key > parse_tier(max_tier).sort_key
        except ValueError as e:
            error = SelectionError(f"{_abbr(model, 'model')}: max_tier {max_tier!r}: {e}")
            error.value = max_tier if isinstance(max_tier, str) else None
            raise error from None
        if above:
            return None, f'above max_tier {max_tier}', ''
    if d.get('tokenizer') == MODEL_TOKENIZER:
        path = model.get('tokenizer_path') or model.get('path')
        if not path:
            raise SelectionError(f"{_abbr(d, 'dataset')}: tokenizer='model' needs the model's tokenizer, but "
                                 f"{_abbr(model, 'model')} has no path or tokenizer_path")
        d = dict(d, tokenizer=path, abbr=f"{_abbr(d, 'dataset')}@{_abbr(model, 'model')}")
    spec = spec_of(d)
    if model.get('thinks') and spec is not None:   # decoding budgets of a thinking model (reasoning.py)
        from opencompass_longctx.reasoning import for_thinking_model
        d = for_thinking_model(d, spec)
    why = spec.fits(d) if spec is not None else None
    if why:
        return None, why, ''
    from opencompass_longctx.models.window import fit
    return fit(model, d, spec, _abbr(model, 'model'))


def combinations_of(cfg) -> List[Dict]:
    """A run config's (model, datasets) combinations, as OpenCompass's partitioners read them."""
    return list(cfg.get('model_dataset_combinations') or [dict(models=cfg['models'], datasets=cfg['datasets'])])


def expand(combinations: Sequence[Dict]) -> Tuple[List[Dict], List[Dict]]:
    """One combination per model with the datasets it gets, and the pairs left out or changed for the model:
    ``{'model', 'dataset', 'reason'}``, with ``kept=True`` for a dataset built to fit the model's window."""
    out, left, bad = [], [], {}
    for comb in combinations:
        for model in comb['models']:
            kept = []
            for d in comb['datasets']:
                try:
                    got, why, note = for_model_noted(model, d)
                except TierError as e:    # a tier that is no tier of its benchmark: said once for all its datasets
                    bad.setdefault((str(e), e.value), []).append(_abbr(d, 'dataset'))
                    continue
                if got is None:
                    left.append({'model': _abbr(model, 'model'), 'dataset': _abbr(d, 'dataset'), 'reason': why})
                else:
                    kept.append(got)
                    if note:
                        left.append({'model': _abbr(model, 'model'), 'dataset': _abbr(d, 'dataset'),
                                     'reason': note, 'kept': True})
            out.append({'models': [model], 'datasets': kept})
    if bad:
        (message, value), names = next(iter(bad.items()))
        names = list(dict.fromkeys(names))
        raise TierError(f'{counted(names, "dataset")}: {message}', value)
    return out, left



def without_run_options(model: Dict) -> Dict:
    """The model config a task builds (the keys only this module reads removed)."""
    return {k: v for k, v in model.items() if k not in RUN_OPTIONS}


def resolved_config(cfg):
    """A copy of a run config whose ``model_dataset_combinations`` are expanded and whose ``datasets`` are the
    datasets of the run as the models run them (each once, in the config's order; a per-model copy where its
    source stood)."""
    combos, _ = expand(combinations_of(cfg))
    order = {_abbr(d, 'dataset'): i for i, d in enumerate(cfg['datasets'])}
    found: Dict[str, Dict] = {}
    for c in combos:
        for d in c['datasets']:
            found.setdefault(_abbr(d, 'dataset'), d)

    def position(abbr: str) -> int:
        return order.get(abbr, order.get(abbr.rsplit('@', 1)[0], len(order)))

    out = copy.deepcopy(cfg)
    out['datasets'] = sorted(found.values(), key=lambda d: position(_abbr(d, 'dataset')))
    out['model_dataset_combinations'] = combos
    return out


def left_out_lines(left: Sequence[Dict]) -> List[str]:
    """The left-out pairs in a few lines: per reason, how many pairs and which datasets."""
    by_reason: Dict[str, List[str]] = {}
    for x in left:
        names = by_reason.setdefault(x['reason'], [])
        if x['dataset'] not in names:
            names.append(x['dataset'])
    pairs = {r: sum(1 for x in left if x['reason'] == r) for r in by_reason}
    return [f"- {pairs[r]} model x dataset pair{'' if pairs[r] == 1 else 's'} ({len(n)} dataset"
            f"{'' if len(n) == 1 else 's'}: {', '.join(n[:4])}{', ...' if len(n) > 4 else ''}): {r}"
            for r, n in by_reason.items()]
