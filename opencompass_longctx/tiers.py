"""Context-length tiers: the only place where tier names are parsed and turned into tokens.

A tier is written ``<number><unit>``: ``0k``, ``128k``, ``192k``, ``1m``, ``2m``, ``10m``, or a plain
token count such as ``250``. Units are case-insensitive (``1M`` == ``1m``). The standard list lives in
``opencompass_longctx/configs/tier_table.py`` (pure data, also read by configs).

What a tier means in tokens depends on the benchmark's own convention, given here as ``unit``:

* BABILong: 1k = 1000 GPT-2 tokens, 1m = 1,000,000 (the authors' data; the input text itself holds
  the tier minus a 300-token prompt allowance).
* NoLiMa: 1k = 1000 tokens of the evaluated model's tokenizer.
* LongBioBench: 1k = 1024 tokens (the authors' default with an HF tokenizer).
"""
import re
from dataclasses import dataclass

from .configs.tier_table import STANDARD_TIERS

_TIER_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*([km]?)\s*$', re.IGNORECASE)
ACCEPTED_FORMS = ("a number followed by 'k' or 'm' (case-insensitive), e.g. "
                  "'0k', '128k', '192k', '1m', '1M', '2m', or a plain token count such as '250'; "
                  f"standard tiers: {', '.join(STANDARD_TIERS)}")


class TierError(ValueError):
    """A tier string that cannot be parsed."""


@dataclass(frozen=True, order=False)
class Tier:
    name: str      # canonical, lower-case: '128k', '1m', '250'
    number: float  # the number as written: 128, 1, 250
    unit: str      # 'k', 'm' or '' (plain tokens)

    def tokens(self, unit: int = 1000) -> int:
        """Token budget of this tier when 1k = ``unit`` tokens (1m = unit**2 for unit 1000/1024)."""
        scale = {'': 1, 'k': unit, 'm': unit * unit if unit == 1024 else unit * 1000}[self.unit]
        return int(round(self.number * scale))

    @property
    def sort_key(self) -> float:
        return self.tokens(1000)

    def __str__(self) -> str:
        return self.name


def parse_tier(value) -> Tier:
    """Parse '128k', '1M', '2m', '250' (or a Tier) into a canonical :class:`Tier`.

    Raises :class:`TierError` listing the accepted forms for anything else.
    """
    if isinstance(value, Tier):
        return value
    if not isinstance(value, str):
        raise TierError(f'tier must be a string, got {type(value).__name__} {value!r}; '
                        f'accepted: {ACCEPTED_FORMS}')
    m = _TIER_RE.match(value)
    if not m:
        raise TierError(f'unknown tier {value!r}; accepted: {ACCEPTED_FORMS}')
    num_s, unit = m.group(1), m.group(2).lower()
    number = float(num_s)
    if not unit and number != int(number):
        raise TierError(f'unknown tier {value!r}: a plain token count must be a whole number; '
                        f'accepted: {ACCEPTED_FORMS}')
    num_s = num_s.rstrip('0').rstrip('.') if '.' in num_s else str(int(num_s))
    return Tier(name=f'{num_s}{unit}', number=number, unit=unit)


def tier_tokens(value, unit: int = 1000) -> int:
    """Token budget of a tier string under a benchmark's unit convention."""
    return parse_tier(value).tokens(unit)


def sort_tiers(names):
    """Tier names sorted by size (unparseable names last, in their given order)."""
    def key(n):
        try:
            return (0, parse_tier(n).sort_key)
        except TierError:
            return (1, 0)
    return sorted(names, key=key)
