import pytest

from opencompass_longctx.tables.tier_table import STANDARD_TIERS
from opencompass_longctx.tiers import TierError, parse_tier, sort_tiers, tier_tokens
def test_standard_tiers_parse_and_are_sorted():
    assert [parse_tier(t).name for t in STANDARD_TIERS] == STANDARD_TIERS
    assert sort_tiers(list(reversed(STANDARD_TIERS))) == STANDARD_TIERS


@pytest.mark.parametrize('text,name,tokens1000,tokens1024', [
    ('0k', '0k', 0, 0), ('1k', '1k', 1000, 1024), ('128k', '128k', 128000, 131072),
    ('1m', '1m', 1_000_000, 1_048_576), ('1M', '1m', 1_000_000, 1_048_576), ('192K', '192k', 192000, 196608),
    ('2m', '2m', 2_000_000, 2_097_152), ('10M', '10m', 10_000_000, 10_485_760), ('250', '250', 250, 250),
    ('0.5k', '0.5k', 500, 512), (' 64k ', '64k', 64000, 65536),
])
def test_parse(text, name, tokens1000, tokens1024):
    t = parse_tier(text)
    assert t.name == name
    assert t.tokens(1000) == tokens1000 == tier_tokens(text)
    assert t.tokens(1024) == tokens1024


@pytest.mark.parametrize('bad', ['', 'k', '12q', '1g', '-1k', '1.5', 'one k', None, 128])
def test_bad_tier_lists_accepted_forms(bad):
    with pytest.raises(TierError) as e:
        parse_tier(bad)
    assert "'128k'" in str(e.value) and '1m' in str(e.value)


def test_user_tiers_sort_between_standard_ones():
    assert sort_tiers(['1m', '192k', '2m', '128k', '250']) == ['250', '128k', '192k', '1m', '2m']


def test_tier_table_sizes_agree_with_the_parser():
    from opencompass_longctx.tables.tier_table import TIERS
    assert all(parse_tier(name).tokens(1000) == tokens for name, tokens in TIERS.items())


@pytest.mark.parametrize('text', ['9' * 400 + 'k', '1' + '0' * 5000, '9' * 15 + 'm', '1000001m', '2000000000000'])
def test_huge_tiers_are_tier_errors(text):
    with pytest.raises(TierError, match='too large') as e:
        parse_tier(text)
    assert type(e.value) is TierError and len(str(e.value)) < 1000   # not OverflowError / int-limit ValueError


@pytest.mark.parametrize('text', ['\u0663k', '\uff11\uff12\uff18k', '1\u0662\u0668k', '\u00a0128k', '128\u2009k',
                                  '128\u212a', '1.' + '0' * 16 + 'k'])
def test_only_ascii_digits_and_spaces_are_accepted(text):
    with pytest.raises(TierError, match='unknown tier'):
        parse_tier(text)


def test_canonical_names_are_ascii_and_exact():
    for text, name in (('00.50k', '0.5k'), ('0.0k', '0k'), ('007M', '7m'), ('0.125k', '0.125k'), ('1.250m', '1.25m')):
        t = parse_tier(text)
        assert t.name == name and t.name.isascii()
    assert parse_tier('0.125k').tokens(1024) == 128 and parse_tier('1.25m').tokens(1024) == 1_310_720


def test_a_tier_that_is_not_a_whole_number_of_tokens_in_the_unit_is_refused():
    t = parse_tier('0.1k')
    assert t.tokens(1000) == 100                      # BABILong / NoLiMa: 100 tokens
    with pytest.raises(TierError, match=r"'0.1k' is 102.4 tokens when 1k = 1024 tokens.*'102' or '103'"):
        t.tokens(1024)                                 # LongBioBench: 102.4 tokens, never rounded
    with pytest.raises(TierError, match='not a whole number'):
        parse_tier('0.0005k').tokens(1000)
    assert parse_tier('0.0005k').name == '0.0005k'     # and the parse itself is exact (no float rounding)
    assert sort_tiers(['0.0005k', '1k', '0.5k']) == ['0.0005k', '0.5k', '1k']


def test_a_parsed_tier_is_returned_as_is():
    t = parse_tier('192k')
    assert parse_tier(t) is t


@pytest.mark.parametrize('text,unit,name', [
    ('0', 1000, '0k'), ('0K', 1000, '0k'), ('0.0k', 1024, '0k'), ('1000k', 1000, '1m'), ('1024k', 1000, '1024k'),
    ('1024k', 1024, '1m'), ('1000k', 1024, '1000k'), ('0.25k', 1000, '250'), ('0.5k', 1000, '500'),
    ('0.5k', 1024, '512'), ('1.5k', 1024, '1.5k'), ('3000', 1024, '3000'), ('0.5m', 1000, '500k'),
    ('1500k', 1000, '1.5m'), ('2048k', 1024, '2m'), ('192K', 1024, '192k'),
])
def test_a_length_has_one_name_in_its_benchmarks_unit(text, unit, name):
    from opencompass_longctx.tiers import canonical_tier, length_name
    tier = canonical_tier(text, unit)
    assert tier.name == name and tier.tokens(unit) == parse_tier(text).tokens(unit)
    assert length_name(tier.tokens(unit), unit) == name


@pytest.mark.parametrize('unit', [1000, 1024])
def test_every_standard_name_is_its_own_lengths_name(unit):
    from opencompass_longctx.tiers import canonical_tier
    for name in STANDARD_TIERS + ['250', '500']:
        assert canonical_tier(name, unit).name == name


def test_a_tier_that_is_no_whole_number_of_tokens_has_no_name_there():
    from opencompass_longctx.tiers import canonical_tier
    with pytest.raises(TierError, match="'0.1k' is 102.4 tokens") as e:
        canonical_tier('0.1k', 1024)
    assert e.value.value == '0.1k'      # the tier as written: the one-line error finds it in the config


def test_equal_sizes_sort_by_name_whatever_the_order_given():
    names = ['1m', '1000k', '500', '0.5k', '1k']
    assert sort_tiers(names) == sort_tiers(list(reversed(names))) == sort_tiers(set(names)) == \
        ['0.5k', '500', '1k', '1000k', '1m']
