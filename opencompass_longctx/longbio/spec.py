"""LongBioBench's spec (:mod:`opencompass_longctx.spec`): its sizes, its checks and its tables."""
from typing import Dict, Optional

from opencompass_longctx.spec import TIER_PATTERN, Bench, BenchmarkSpec, Row
from opencompass_longctx.options import integer, value_or
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.longbio.catalogue import LONGBIO_CATEGORIES, LONGBIO_CELLS, LONGBIO_NEED_TOKENS
from opencompass_longctx.longbio.generator import DEFAULT_TOKENIZER, TIER_UNIT
def data_tokenizer(d: Dict) -> str:
    tok = d.get('tokenizer')
    return DEFAULT_TOKENIZER if tok in (None, '', 'default') else tok   # as generator.make_spec reads it


def estimate_rows(d: Dict, tier_tokens: int) -> int:
    return value_or(integer(1), d.get('num_samples', 800), 800) * (2 if d.get('cell') == 'idk' else 1)


def _reserve(d: Dict) -> int:
    return value_or(integer(0), d.get('reserve_tokens', 0), 0)     # a bad value: the run checks report it


def _cap(d: Dict) -> Optional[int]:
    return value_or(integer(1), d.get('max_prompt_tokens'), None)


def estimate_prompt_tokens(d: Dict, tier_tokens: int) -> int:
    if not tier_tokens:          # 0k: the needles and the prompt only (the most over the authors' 800 samples)
        return LONGBIO_NEED_TOKENS.get(d.get('cell'), max(LONGBIO_NEED_TOKENS.values()))
    return min(tier_tokens - _reserve(d), _cap(d) or tier_tokens)


def fit_window(d: Dict, tokens: int) -> Dict:
    """The config with prompts built to at most ``tokens`` (the generator's budget capped: ``max_prompt_tokens``)."""
    return dict(d, max_prompt_tokens=int(tokens))


def sample_text(d: Dict) -> Optional[str]:
    """The user message of one small sample, in the dataset's tokenizer."""
    from opencompass_longctx.longbio.generator import Generator, make_spec
    spec = make_spec(parse_tier('1k'), cell='standard', tokenizer=d.get('tokenizer'))
    return Generator(spec).rows(0)[0]['user']


def fits(d: Dict) -> Optional[str]:
    """None when the cell's needles and prompt (the most over the authors' 800 samples) and ``reserve_tokens``
    fit the tier; else why not."""
    need = LONGBIO_NEED_TOKENS.get(d.get('cell'))
    tier = parse_tier(d['tier'])
    budget = tier.tokens(TIER_UNIT)
    reserve = _reserve(d)
    cap = _cap(d)
    if need is None or not budget or (need + reserve <= budget and (not cap or need <= cap)):
        return None
    if cap and need > cap:
        return f'LongBioBench {d.get("cell")} needs {need} tokens > max_prompt_tokens {cap} at {tier.name}'
    return (f"LongBioBench {d.get('cell')} needs {need} tokens + reserve_tokens {reserve} > {budget} at "
            f'{tier.name}')


def _rows():
    cats = tuple(Row(cat, tuple(c['cell'] for c in LONGBIO_CELLS if c['category'] == cat), partial_ok=True)
                 for cat in LONGBIO_CATEGORIES)
    return cats + (Row('mean', of_rows=tuple(LONGBIO_CATEGORIES)),)


# A sample's needles come from its seed (base seed, task family, n, index), not from the tier, and the standard,
# multi-standard, citation and IDK cells share the family 'standard': the samples with one seed are one cluster.
_RELATED = dict(cluster_keys=('seed',),
                relation="clustered by the sample's seed (the same needles and questions at every tier, and in the "
                         'standard, multi-standard, citation and IDK cells of one n); independent otherwise')

BENCHMARK = BenchmarkSpec(
    name='longbio', dataset_type='LongBioDataset', tier_unit=TIER_UNIT, tokens_column='prompt_tokens', prompt_columns=('system', 'user', 'prefix'),
    data_tokenizer=data_tokenizer, estimate_rows=estimate_rows, estimate_prompt_tokens=estimate_prompt_tokens,
    sample_text=sample_text, sample_keys=('tokenizer',),
    checks=(), check_keys=(), fits=fits, fit_window=fit_window,
    summary=(Bench(name='longbio', pattern=r'^longbio_(?!strict_)(?P<task>[a-z_0-9]+?)_' + TIER_PATTERN + '$',
                   rows=_rows(), base_tiers=('0k', '1k', '2k'), tier_unit=TIER_UNIT, **_RELATED,
                   notes='accuracy (%), compat mode; categories are means over their cells, mean over the '
                         'categories'),
             Bench(name='longbio_strict', pattern=r'^longbio_strict_(?P<task>[a-z_0-9]+?)_' + TIER_PATTERN + '$',
                   rows=_rows(), base_tiers=('0k', '1k', '2k'), tier_unit=TIER_UNIT, **_RELATED,
                   notes='accuracy (%), strict mode (the authors\' bugs fixed)')))
