"""Tier bands: each band of the tier table (``TIER_BANDS``, or ``bands=[...]``) is one inference task per model,
so a model's engine starts once per band."""
from typing import List, Optional, Sequence

from opencompass_longctx.tables.tier_table import TIER_BANDS
from opencompass_longctx.tiers import TierError, parse_tier
from opencompass_longctx.errors import LongCtxError
class PlanError(LongCtxError, ValueError):
    """A run that cannot be planned (bad band list, shard count, cost-model entry)."""


def band_edges(bands: Optional[Sequence[str]] = None) -> List[int]:
    """Each band's largest tier as a size (1k = 1000), ascending."""
    names = list(TIER_BANDS if bands is None else bands)
    if not names:
        raise PlanError('bands must name at least one tier (each band\'s largest tier), e.g. '
                        f"{TIER_BANDS}")
    try:
        edges = [parse_tier(b).sort_key for b in names]
    except TierError as e:
        raise PlanError(f'bad band list {names!r}: {e}') from None
    if edges != sorted(set(edges)):
        raise PlanError(f'bands must be increasing tiers without repeats, got {names!r}')
    return edges


def band_of(tier: str, edges: Sequence[int]) -> int:
    """Index of the band that holds ``tier``; tiers above the last edge share one extra band."""
    size = parse_tier(tier).sort_key
    for i, e in enumerate(edges):
        if size <= e:
            return i
    return len(edges)


def band_name(i: int, edges: Sequence[int]) -> str:
    def label(n):
        if n >= 1000000 and n % 1000000 == 0:
            return f'{n // 1000000}m'
        return f'{n // 1000}k' if n % 1000 == 0 else str(n)
    if i == 0:
        return f'<= {label(edges[0])}'
    if i < len(edges):
        return f'{label(edges[i - 1])}-{label(edges[i])}'
    return f'> {label(edges[-1])}'
