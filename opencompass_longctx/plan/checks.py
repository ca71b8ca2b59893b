"""The run checks: every problem that can be found without a GPU and without building a dataset (model
directories and their tokenizers, ``$LONGCTX_MODEL_ROOT``, each dataset's data as its benchmark's spec checks it,
its options as its load parses them, an abbr that names another tier, removed options, engines that cannot hold
one sequence), in one list."""
import json
import os
import re
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.spec import check_tokenizer, spec_class, spec_of, load_kwargs
from opencompass_longctx.models.engine_plan import is_lmdeploy
from opencompass_longctx.options import parse_config
from opencompass_longctx.tiers import TierError, canonical_tier
from opencompass_longctx.util import type_name
def check_run(models: Sequence[Dict], datasets: Sequence[Dict]) -> List[Dict]:
    """Every problem that can be found without a GPU and without building a dataset: a list of
    ``{'problem': text, 'where': [model or dataset abbrs]}``, one entry per distinct problem."""
    found: Dict[str, List[str]] = {}

    def add(problem: str, where: str):
        names = found.setdefault(problem, [])
        if where not in names:
            names.append(where)

    root = os.environ.get('LONGCTX_MODEL_ROOT')
    for m in models:
        for p in _check_model(m):
            add(p, m.get('abbr') or m.get('path'))
    if not root and any(p.startswith("model directory 'models/") for p in found):
        add('$LONGCTX_MODEL_ROOT is not set: the shipped model configs look for the models under ./models. '
            'export LONGCTX_MODEL_ROOT=<the directory holding the model directories>', 'environment')
    seen: Dict = {}
    for d in datasets:
        spec = spec_of(d)
        if spec is None:
            continue
        try:
            key = json.dumps([type_name(d), d.get('tokenizer')] + list(spec.data_key(d)), default=str)
        except Exception:  # noqa: BLE001
            key = d.get('abbr')
        if key not in seen:
            seen[key] = dataset_problems(spec, d)
        for p in seen[key] + option_problems(d) + tier_problems(spec, d):
            add(p, d.get('abbr'))
    return [{'problem': p, 'where': w} for p, w in found.items()]


def dataset_problems(spec, d: Dict) -> List[str]:
    """A dataset config's problems: its tokenizer and the data its spec checks (a class that prepares its own data,
    such as the demo's, is not checked for it)."""
    problems: List[str] = []
    try:
        problems.extend(check_tokenizer(d.get('tokenizer')))
    except Exception as e:  # noqa: BLE001 - every problem is reported, none stops the other checks
        problems.append(f'{type(e).__name__}: {e}')
    if not getattr(spec_class(d), 'PREPARES_DATA', False):
        problems.extend(spec.problems(d))
    return problems


def option_problems(d: Dict) -> List[str]:
    """What the dataset's load would refuse in its options: the load's own parse (:mod:`..options`) run on the
    config's keys, its error as the problem (a tokenizer that :func:`check_tokenizer` already reports is left
    to it)."""
    from opencompass_longctx.tokenizer.counting import TokenizerError
    try:
        parse_config(spec_class(d), load_kwargs(d))
    except Exception as e:  # noqa: BLE001 - every refusal is a problem, with the load's message
        if isinstance(e, TokenizerError) and check_tokenizer(d.get('tokenizer')):
            return []
        return [f'{type(e).__name__}: {e}']
    return []


def tier_problems(spec, d: Dict) -> List[str]:
    """An abbr that the tier table would file under another tier than the dataset's (or not at all, for spaces
    around it): the abbr must end with the tier as the dataset's load names it."""
    abbr = d.get('abbr')
    if not isinstance(abbr, str):
        return []
    if abbr != abbr.strip():
        return [f'dataset abbr {abbr!r} has spaces around it: its results would not reach the tier table; write '
                f'{abbr.strip()!r}']
    for bench in spec.summary:
        m = re.match(bench.pattern, abbr)
        try:   # both as their length's one name: the options' check refuses a tier not written so
            tier = canonical_tier(d.get('tier'), bench.tier_unit).name
            named = canonical_tier(m.group('tier'), bench.tier_unit).name if m else tier
        except TierError:
            return []        # the options' problem
        if named != tier:    # (the abbrs are listed with the problem: one line for all of them)
            return [f"the dataset abbr names tier {m.group('tier')!r} but its tier is {tier!r}: its results would "
                    f"be filed under the wrong tier; end the abbr with _{tier} (build it from TIER, as the shipped "
                    'tier files do)']
    return []


def engine_problems(plan: Dict) -> List[Dict]:
    """Bands whose engine cannot hold one sequence on the declared GPU (the preflight would stop those tasks), and
    datasets whose prompts exceed the model's window by its own tokenizer's ratio (they would never be sent)."""
    found: Dict[str, List[str]] = {}
    for t in plan['tasks']:
        if t.engine and t.engine.verdict == 'bad backend':
            found.setdefault(f"{t.model}: {t.engine.reason}", []).append(t.model)
        elif t.engine and t.engine.verdict == 'does not fit':
            found.setdefault(f"the {t.band} engine of {t.model} does not fit the GPU: {t.engine.reason}",
                             []).append(t.model)
        if t.engine and t.engine.over_window:
            found.setdefault(f"{t.model}: prompts over its window by its own tokenizer, which would be held back as "
                             'over-length: ' + '; '.join(t.engine.over_window) + '. Give those datasets a '
                             'smaller tier, or max_prompt_tokens where the benchmark takes it (LongBioBench)',
                             []).append(t.model)
    return [{'problem': p, 'where': w} for p, w in found.items()]


def abbr_problem(abbr) -> Optional[str]:
    """Why OpenCompass would write a model's files outside the work dir (it joins the abbr into
    ``results/<abbr>/...``, ``predictions/<abbr>/...``): an absolute abbr, or a ``..`` or empty path component."""
    if not isinstance(abbr, str):
        return None
    parts = abbr.replace('\\', '/').split('/')
    if os.path.isabs(abbr) or abbr.startswith(('/', '\\')) or any(p in ('', '.', '..') for p in parts):
        return (f'model abbr {abbr!r} is not a relative name (OpenCompass writes results/<abbr>/ and '
                'predictions/<abbr>/ with it, so an absolute path, a ".." or "." component or an empty one between '
                "slashes would write outside the run or collide): name it e.g. 'org/model' or 'model-v1..2'")
    return None


def _check_model(m: Dict) -> List[str]:
    tname = type_name(m)
    path = m.get('path')
    bad_abbr = abbr_problem(m.get('abbr'))
    if bad_abbr:
        return [bad_abbr]
    if not path or tname in ('TinyChatModel', 'BabiRuleReader'):
        return []            # built on first use / not a language model
    if not os.path.isdir(path):
        from opencompass_longctx.tokenizer.counting import is_hub_id
        if is_hub_id(path) and not is_lmdeploy(m):
            return []        # a hub id: resolved from the Hugging Face cache at load time
        return [f'model directory {path!r} does not exist']     # (LongCtxTurboMindModel needs a local directory)
    problems = []
    if not os.path.isfile(os.path.join(path, 'config.json')):
        problems.append(f'model directory {path!r} has no config.json (not a Hugging Face model directory)')
    from opencompass_longctx.tokenizer.counting import tokenizer_files
    if not tokenizer_files(path):
        problems.append(f'model directory {path!r} has no tokenizer files (tokenizer.json, tokenizer.model, '
                        'vocab.json, ...)')
    return problems
