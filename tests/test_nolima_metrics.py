"""NoLiMa aggregate metrics: base score, threshold and effective length, checked against the published tables
(paper / repository README: per-length accuracies in, effective lengths and table marks out)."""
import re

import pytest

from opencompass_longctx.nolima import metrics as nm
from opencompass_longctx.nolima.needles import NoLiMaError
LENGTHS = [1000, 2000, 4000, 8000, 16000, 32000]
# The repository README's main table (12 models): claimed, effective, base (thr), 1K..32K with its marks.
README = """
| GPT-4o              | 128K | 8K  | 99.3 (84.4) | <ins>98.1</ins> | <ins>98.0</ins> | <ins>95.7</ins> | <ins>89.2</ins> | 81.6 | 69.7 |
| Llama 3.3 70B       | 128K | 2K  | 97.3 (82.7) | <ins>94.2</ins> | <ins>87.4</ins> | 81.5 | 72.1 | 59.5 | *42.7* |
| Llama 3.1 405B      | 128K | 2K  | 94.7 (80.5) | <ins>89.0</ins> | <ins>85.0</ins> | 74.5 | 60.1 | 48.4 | *38.0* |
| Llama 3.1 70B       | 128K | 2K  | 94.5 (80.3) | <ins>91.0</ins> | <ins>81.8</ins> | 71.2 | 62.7 | 51.8 | *43.2* |
| Gemini 1.5 Pro      | 2M   | 2K  | 92.6 (78.7) | <ins>86.4</ins> | <ins>82.7</ins> | 75.4 | 63.9 | 55.5 | 48.2 |
| Jamba 1.5 Mini      | 256K | <1K | 92.4 (78.6) | 76.3 | 74.1 | 70.8 | 62.2 | 52.7 | *43.6* |
| Command R+          | 128K | <1K | 90.9 (77.3) | 77.0 | 73.5 | 66.3 | *39.5* | *21.3* | *7.4* |
| Mistral Large 2     | 128K | 2K  | 87.9 (74.7) | <ins>86.1</ins> | <ins>85.5</ins> | 73.3 | 51.5 | *32.6* | *18.7* |
| Claude 3.5 Sonnet   | 200K | 4K  | 87.6 (74.4) | <ins>85.4</ins> | <ins>84.0</ins> | <ins>77.6</ins> | 61.7 | 45.7 | *29.8* |
| Gemini 1.5 Flash    | 1M   | <1K | 84.7 (72.0) | 68.6 | 61.6 | 51.0 | 44.4 | *35.5* | *28.6* |
| GPT-4o mini         | 128K | <1K | 84.9 (72.2) | 67.7 | 58.2 | 44.1 | *32.6* | *20.6* | *13.7* |
| Llama 3.1 8B        | 128K | 1K  | 76.7 (65.2) | <ins>65.7</ins> | 54.4 | 44.1 | *31.9* | *22.6* | *14.2* |
"""
# Rows added in the paper's 2025-04 update, without marks; '-' = not run.
LATER = [('Gemma 3 27B', '<1K', 88.6, [73.3, 65.6, 48.1, 32.7, 20.2, 9.5]),
         ('Gemma 3 12B', '1K', 87.4, [74.7, 61.8, 39.9, 27.4, 16.8, 7.3]),
         ('Gemini 2.0 Flash', '4K', 89.4, [87.7, 87.5, 77.9, 64.7, 48.2, 41.0]),
         ('Llama 4 Maverick', '2K', 90.1, [81.6, 78.3, 68.8, None, None, None]),
         ('Llama 4 Scout', '1K', 81.7, [72.3, 61.8, 50.8, 35.5, 26.9, 21.6]),
         ('Gemma 3 4B', '<1K', 73.6, [50.3, 35.3, 16.4, 7.5, 2.3, 0.9])]


def _readme_rows():
    for line in README.strip().splitlines():
        cells = [c.strip() for c in line.strip('|').split('|')]
        name, _, eff, base_thr, *scores = cells
        base, thr = map(float, re.match(r'([\d.]+) \(([\d.]+)\)', base_thr).groups())
        yield name, eff, base, thr, scores


def test_gpt4o_worked_example():
    acc = {1000: 98.1, 2000: 98.0, 4000: 95.7, 8000: 89.2, 16000: 81.6, 32000: 69.7}
    eff = nm.effective_length(acc, 99.3)
    assert eff['threshold'] == pytest.approx(84.405) and round(eff['threshold'], 1) == 84.4
    assert eff['contiguous'] == 8000 and eff['label'] == '8K' and eff['raw'] == 8000
    assert eff['marks'][8000]['underline'] and not eff['marks'][16000]['underline']
    assert not eff['marks'][32000]['italic']  # 69.7 > 0.5 x 99.3 = 49.65


@pytest.mark.parametrize('row', list(_readme_rows()), ids=lambda r: r[0])
def test_readme_effective_lengths_thresholds_and_marks(row):
    name, eff_label, base, thr, cells = row
    acc = {L: float(re.sub(r'[^\d.]', '', c)) for L, c in zip(LENGTHS, cells)}
    eff = nm.effective_length(acc, base)
    assert eff['label'] == eff_label
    assert abs(eff['threshold'] - thr) <= 0.1  # the README rounds the base before printing it
    assert nm.format_row(acc, base, LENGTHS) == cells


@pytest.mark.parametrize('name,eff_label,base,scores', LATER, ids=lambda x: x if isinstance(x, str) else '')
def test_later_models_effective_lengths(name, eff_label, base, scores):
    acc = {L: s for L, s in zip(LENGTHS, scores) if s is not None}
    assert nm.effective_length(acc, base)['label'] == eff_label


def test_contiguous_and_raw_effective_lengths_differ_when_a_longer_length_passes_again():
    acc = {1000: 90.0, 2000: 70.0, 4000: 86.0, 8000: 60.0}
    eff = nm.effective_length(acc, 100.0)
    assert (eff['label'], eff['raw_label']) == ('1K', '4K')
    acc[1000] = 80.0
    eff = nm.effective_length(acc, 100.0)
    assert eff['label'] == '<1K' and eff['contiguous'] is None and eff['raw'] == 4000
    assert nm.effective_length({250: 100.0, 500: 100.0}, 100.0)['label'] == '-'  # 1K not run
    with pytest.raises(NoLiMaError, match='needs a base score'):
        nm.effective_length(acc, None)


def _records(spec):
    """spec: {(L, pair, haystack): [correct, ...]} -> per-test records."""
    return [dict(context_length=L, pair=p, haystack=h, correct=c, question_type='onehop', order='default',
                 depth_index=i) for (L, p, h), cs in spec.items() for i, c in enumerate(cs)]


def test_base_score_is_the_mean_over_pairs_of_the_best_short_length():
    spec = {
        # pair A: haystack means 250 -> (100+50)/2 = 75, 500 -> (50+50)/2 = 50, 1K -> (100+100)/2 = 100 -> best 100
        (250, 'A', 'b1'): [1, 1], (250, 'A', 'b2'): [1, 0],
        (500, 'A', 'b1'): [1, 0], (500, 'A', 'b2'): [0, 1],
        (1000, 'A', 'b1'): [1, 1], (1000, 'A', 'b2'): [1, 1],
        # pair B: 250 -> 50, 500 -> 75, 1K -> 25 -> best 75
        (250, 'B', 'b1'): [1, 0], (250, 'B', 'b2'): [0, 1],
        (500, 'B', 'b1'): [1, 1], (500, 'B', 'b2'): [1, 0],
        (1000, 'B', 'b1'): [0, 0], (1000, 'B', 'b2'): [1, 0],
        # longer lengths never count towards the base
        (2000, 'A', 'b1'): [1, 1], (2000, 'B', 'b1'): [1, 1],
    }
    recs = _records(spec)
    pph = nm.per_pair_haystack(recs)
    assert pph[500]['B'] == {'b1': 100.0, 'b2': 50.0}
    assert nm.base_score(pph) == pytest.approx((100 + 75) / 2)
    # not the best *overall* length (1K: 62.5) and not the max over single haystacks
    assert nm.accuracy_by_length(recs) == {250: 62.5, 500: 62.5, 1000: 62.5, 2000: 100.0}
    rep = nm.report(recs)
    assert rep['base'] == pytest.approx(87.5) and rep['threshold'] == pytest.approx(0.85 * 87.5)
    assert rep['effective_length'] == '<1K' and rep['raw_effective_length'] == '2K'
    assert rep['n'] == {'250': 8, '500': 8, '1000': 8, '2000': 4}
    assert nm.base_score({2000: pph[2000]}) is None


def test_length_labels():
    assert [nm.length_label(L) for L in (250, 500, 1000, 32000, 128000)] == ['250', '500', '1K', '32K', '128K']
