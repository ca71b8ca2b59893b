"""Context-length tiers: the only place where tier names are parsed and turned into tokens.

A tier is written ``<number><unit>``: ``0k``, ``128k``, ``192k``, ``1m``, ``2m``, ``10m``, ``0.5k``, or a plain
token count such as ``250``. Units are case-insensitive (``1M`` == ``1m``). The standard list lives in
``opencompass_longctx/tables/tier_table.py`` (pure data, also read by configs).

Rules: ASCII digits only, at most one decimal point, nothing but white space around; the number is exact
(no floating point); a tier above ``MAX_TIER_TOKENS`` (counted with 1k = 1000) is refused. A tier is parsed
once, where a loader receives it (:func:`parse_tier` returns a :class:`Tier` as is), and the ``Tier`` is
passed inward. A dataset config's tier must be written as its canonical name (:func:`dataset_tier`): it also
names the dataset's abbr and files.

What a tier means in tokens depends on the benchmark's own convention, given here as ``unit``:

* BABILong: 1k = 1000 GPT-2 tokens, 1m = 1,000,000 (the authors' data; the input text itself holds
  the tier minus a 300-token prompt allowance).
* NoLiMa: 1k = 1000 tokens of the evaluated model's tokenizer.
* LongBioBench: 1k = 1024 tokens (the authors' default with an HF tokenizer), 1m = 1024 * 1024.

A tier must be a whole number of tokens in the benchmark's unit: ``0.1k`` is 100 BABILong tokens but 102.4
LongBioBench tokens, so LongBioBench refuses it (:meth:`Tier.tokens` raises :class:`TierError`).

One length, one name. Within a benchmark a length has exactly one name (:func:`canonical_tier`, :func:`length_name`):
of the ways to write its token count in the benchmark's unit (a plain count, a number of k, a number of m), the
shortest; on a tie k, then the plain count, then m; 0 tokens is ``0k``. So ``0``, ``0k`` and ``0K`` are ``0k``;
for BABILong and NoLiMa ``1000k`` is ``1m`` and ``1024k`` stays ``1024k``; for LongBioBench ``1024k`` is ``1m``
and ``1000k`` stays ``1000k``; ``0.25k`` is NoLiMa's ``250``. Every standard name (0k, 1k, ... 512k, 1m, 250, 500)
is its own length's name. The tier table reads an abbr's tier this way (:meth:`~.spec.Bench.match`), so base
tiers and effective lengths see one name per length; a dataset config must write it so (:func:`dataset_tier`).
"""
import re
from dataclasses import dataclass
from fractions import Fraction

from opencompass_longctx.tables.tier_table import STANDARD_TIERS
from opencompass_longctx.errors import LongCtxError
_TIER_RE = re.compile(r'\s*([0-9]+)(?:\.([0-9]+))?\s*([km]?)\s*', re.IGNORECASE | re.ASCII)
MAX_TIER_TOKENS = 10 ** 12
ACCEPTED_FORMS = ("a number (ASCII digits, at most 15 after the point) followed by 'k' or 'm' "
                  "(case-insensitive), e.g. '0k', '128k', '192k', '0.5k', '1m', '1M', '2m', or a plain token "
                  f"count such as '250'; at most {MAX_TIER_TOKENS:,} tokens; "
                  f"standard tiers: {', '.join(STANDARD_TIERS)}")


class TierError(LongCtxError, ValueError):
    """A tier string that cannot be parsed, or a tier that is not a whole number of a benchmark's tokens
    (``value``: the tier as written)."""

    def __init__(self, message: str, value=None):
        super().__init__(message)
        self.value = value if isinstance(value, str) else None


def _scale(unit_letter: str, unit: int) -> int:
    return {'': 1, 'k': unit, 'm': unit * unit if unit == 1024 else unit * 1000}[unit_letter]


@dataclass(frozen=True)
class Tier:
    name: str         # canonical, lower-case: '128k', '1m', '0.5k', '250'
    number: Fraction  # the number as written, exactly: 128, 1, 1/2, 250
    unit: str         # 'k', 'm' or '' (plain tokens)

    def tokens(self, unit: int = 1000) -> int:
        """Token budget of this tier when 1k = ``unit`` tokens (1m = unit**2 for unit 1024, 1000*unit
        otherwise). A tier that is not a whole number of such tokens raises :class:`TierError`."""
        value = self.number * _scale(self.unit, unit)
        if value.denominator != 1:
            raise TierError(
                f'tier {self.name!r} is {float(value):g} tokens when 1k = {unit} tokens: not a whole number of '
                f'tokens. Write a tier that is, e.g. {_whole_examples(value, self.unit, unit)}.', self.name)
        return int(value)

    @property
    def sort_key(self) -> Fraction:
        return self.number * _scale(self.unit, 1000)

    def __str__(self) -> str:
        return self.name


def _whole_examples(value: Fraction, letter: str, unit: int) -> str:
    lo = int(value)
    out = [f"'{lo}'", f"'{lo + 1}'"]
    if letter:  # the nearest multiple of 1/8 of the unit letter, which is whole for 1000 and 1024 alike
        eighths = round(value / _scale(letter, unit) * 8)
        if eighths:
            out.append(f"'{_decimal(Fraction(eighths, 8))}{letter}'")
    return ' or '.join(out)


def _decimal(x: Fraction) -> str:
    """Canonical decimal text of a finite decimal fraction: no leading zeros, no trailing zeros or point."""
    whole, frac = divmod(x, 1)
    if not frac:
        return str(int(whole))
    digits = ''
    while frac:
        frac *= 10
        d, frac = divmod(frac, 1)
        digits += str(int(d))
    return f'{int(whole)}.{digits}'


def _too_large(text: str) -> TierError:
    shown = text.strip()
    shown = repr(shown) if len(shown) <= 40 else repr(shown[:40])[:-1] + "...'"
    return TierError(f'tier {shown} is too large: at most {MAX_TIER_TOKENS:,} tokens (1k = 1000); '
                     f'accepted: {ACCEPTED_FORMS}', text.strip())


def _parse(text: str) -> Tier:
    m = _TIER_RE.fullmatch(text)
    if not m or len(m.group(2) or '') > 15:
        raise TierError(f'unknown tier {text!r}; accepted: {ACCEPTED_FORMS}', text)
    whole, frac, unit = m.group(1).lstrip('0'), m.group(2) or '', m.group(3).lower()
    if len(whole) > 13:   # checked before any arithmetic: 10**13 is over the limit in every unit
        raise _too_large(text)
    number = Fraction(f'{whole or 0}.{frac or 0}')
    if not unit and number.denominator != 1:
        raise TierError(f'unknown tier {text!r}: a plain token count must be a whole number; '
                        f'accepted: {ACCEPTED_FORMS}', text)
    if number * _scale(unit, 1000) > MAX_TIER_TOKENS:
        raise _too_large(text)
    return Tier(name=f'{_decimal(number)}{unit}', number=number, unit=unit)


def parse_tier(value) -> Tier:
    """Parse '128k', '1M', '2m', '250' into a canonical :class:`Tier` (a Tier is returned as is).

    Raises :class:`TierError` listing the accepted forms for anything else.
    """
    if isinstance(value, Tier):
        return value
    if not isinstance(value, str):
        raise TierError(f'tier must be a string, got {type(value).__name__} {value!r}; '
                        f'accepted: {ACCEPTED_FORMS}')
    return _parse(value)


def dataset_tier(value, unit: int = 1000) -> Tier:
    """A dataset config's tier (1k = ``unit`` tokens): parsed, and refused unless written as its length's one name
    (:func:`canonical_tier`). The tier a config writes also ends its abbr (``abbr=f"{d['abbr']}_{TIER}"``), which
    names the prediction and result files, so ``'4K'`` or ``'4000'`` would file the results apart from ``'4k'``'s."""
    tier = canonical_tier(value, unit)
    if isinstance(value, str) and value != tier.name:
        raise TierError(f"tier {value!r} is not written as its canonical name: write {tier.name!r} (TIER = "
                        f"'{tier.name}': one name per length, docs/benchmarks.md#tiers; it also ends the dataset's "
                        'abbr and file names)', value)
    return tier


def tier_tokens(value, unit: int = 1000) -> int:
    """Token budget of a tier string under a benchmark's unit convention."""
    return parse_tier(value).tokens(unit)


def sort_tiers(names):
    """Tier names sorted by size (1k = 1000), equal sizes by name, unparseable names last in their given order:
    the same order from any set of names."""
    def key(n):
        try:
            return (0, parse_tier(n).sort_key, n)
        except TierError:
            return (1, 0, '')
    return sorted(names, key=key)


CANONICAL_RULE = ('the shortest way to write its token count in the benchmark\'s unit (a plain count, k or m; on '
                  'a tie k, then the plain count, then m; 0 tokens is 0k)')


def length_name(tokens: int, unit: int = 1000) -> str:
    """The one name of a length of ``tokens`` tokens in a benchmark whose 1k = ``unit`` tokens (see the module
    docstring): ``length_name(1_000_000) == '1m'``, ``length_name(1_048_576, 1024) == '1m'``,
    ``length_name(250) == '250'``, ``length_name(0) == '0k'``."""
    if tokens == 0:
        return '0k'
    names = [(len(str(tokens)), 1, str(tokens))]
    for rank, letter in ((0, 'k'), (2, 'm')):
        x = Fraction(tokens, _scale(letter, unit))
        den = x.denominator
        for p in (2, 5):
            while den % p == 0:
                den //= p
        if den == 1:     # a finite decimal (always so for 1000 and 1024)
            text = f'{_decimal(x)}{letter}'
            names.append((len(text), rank, text))
    return min(names)[2]


def canonical_tier(value, unit: int = 1000) -> Tier:
    """A tier as its length's one name in a benchmark whose 1k = ``unit`` tokens: ``'0'`` -> ``0k``, ``'1000k'``
    -> ``1m`` (unit 1000), ``'1024k'`` -> ``1m`` (unit 1024). Raises :class:`TierError` for a tier that is not a
    tier, or not a whole number of the benchmark's tokens."""
    tier = parse_tier(value)
    name = length_name(tier.tokens(unit), unit)
    return tier if name == tier.name else _parse(name)
