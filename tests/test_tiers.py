import pytest

from opencompass_longctx.configs.tier_table import STANDARD_TIERS
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
    from opencompass_longctx.configs.tier_table import TIERS
    assert all(parse_tier(name).tokens(1000) == tokens for name, tokens in TIERS.items())
