"""Opt-in: the official scorer against the authors' published model outputs (data not in the repo).

Reads ../shared/conformance/babilong next to the repository, or $BABILONG_CONFORMANCE_DIR; skipped when
neither exists."""
import os

import pytest

from conftest import SHARED
from opencompass_longctx.babilong.conformance import check
DIR = os.environ.get('BABILONG_CONFORMANCE_DIR') or str(SHARED / 'conformance' / 'babilong')


@pytest.mark.skipif(not os.path.isfile(os.path.join(DIR, 'reference_scores.json')),
                    reason='BABILong conformance data not present')
def test_official_and_lenient_scores_match_every_reference_file():
    rows = check(DIR)
    official = [r for r in rows if r['mode'] == 'official']
    assert len(official) == 90
    bad = [r for r in rows if not r['ok']]
    assert not bad, bad[:5]
