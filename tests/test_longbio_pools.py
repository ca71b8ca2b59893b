"""LongBioBench pools and templates: sizes, substring-freeness, manifest, first-person rules."""
import os
import shutil

import pytest

from opencompass_longctx.longbio import pools as P
from opencompass_longctx.longbio.people import first_person_mechanical, template_set, third_person
def test_pools_valid_and_of_the_expected_sizes():
    assert P.validate() == []
    p = P.load_pools()
    sizes = {k: len(v) for k, v in p.values.items()}
    # same order as the authors' pools (spec 3.1): names ~100/~100/~250, tens of thousands of cities, ...
    assert sizes['given'] >= 100 and sizes['middle'] >= 100 and sizes['surname'] >= 250
    assert sizes['birthplace'] >= 20000
    assert 400 <= sizes['work_city'] <= 600
    assert sizes['university'] >= 300 and sizes['major'] >= 150 and sizes['hobby'] >= 300
    assert all(18 <= len(rows) <= 40 for rows in p.paraphrase.values())
    assert set(p.paraphrase) == set(P.ATTRIBUTES)
    # the standard sentences keep the authors' wording: they define the question prefixes
    assert p.standard['university'] == 'The university where <This person> was graduated from is <attr>.'
    assert p.standard['birthplace'] == '<This person> was born in <attr>.'


def test_no_value_is_a_substring_of_another():
    p = P.load_pools()
    for name, vals in p.values.items():
        low = [v.casefold() for v in vals]
        if len(vals) < 2000:  # quadratic check on the small pools; the validator covers the cities
            for i, a in enumerate(low):
                assert not any(a in b for j, b in enumerate(low) if j != i), (name, vals[i])
    names = [*p.values['given'], *p.values['middle'], *p.values['surname']]
    assert P.substring_pairs(names) == []
    assert P.substring_pairs(p.values['birthplace']) == []
    # the validator does catch one
    assert P.substring_pairs(['York', 'New York', 'Paris']) == [('York', 'New York')]


def test_manifest_detects_an_edited_pool(tmp_path, monkeypatch):
    assert P.check_manifest() == P.pools_sha256()
    copy = tmp_path / 'pools'
    shutil.copytree(P.POOLS_DIR, copy)
    with open(copy / 'hobbies.txt', 'a', encoding='utf-8') as f:
        f.write('underwater basket weaving\n')
    monkeypatch.setattr(P, 'POOLS_DIR', str(copy))
    with pytest.raises(P.PoolError, match='differs from its manifest'):
        P.check_manifest()
    shutil.copy(os.path.join(os.path.dirname(P.__file__), 'pools', 'hobbies.txt'), copy / 'hobbies.txt')
    assert P.check_manifest()   # restored: valid again
    os.remove(copy / 'majors.txt')
    with pytest.raises(P.PoolError, match='missing'):
        P.check_manifest()


def test_person_placeholders_and_first_person_rules():
    assert third_person('<This person> calls <attr> their birthplace.') == '{name} calls <attr> his/her birthplace.'
    # the authors' mechanical first person keeps their grammar errors (compat)
    assert first_person_mechanical('<This person> finds joy in <attr>.') == 'I finds joy in <attr>.'
    assert first_person_mechanical("<This person>'s hometown is <attr>.") == 'My hometown is <attr>.'
    assert first_person_mechanical('One of the pleasures for <This person-o> is <attr>.') == \
        'One of the pleasures for me is <attr>.'
    compat, strict = template_set('first_person', 'compat'), template_set('first_person', 'strict')
    assert any(t.startswith('I finds') or t.startswith('I is') for t in compat.paraphrase['hobby'])
    assert not any(t.startswith('I finds') or t.startswith('I is') for t in strict.paraphrase['hobby'])
    assert len(compat.paraphrase['hobby']) == len(strict.paraphrase['hobby'])
