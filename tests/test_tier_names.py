"""One column per length (issue 41, items 2, 4 and 5), through the real table code (`leaderboard.build.build` and its
Markdown) on result files written here: `0`, `0k` and `0K` are one tier with the short-context base; `1000k` is `1m`
for BABILong and `1024k` is `1m` for LongBioBench (`1000k` stays apart there, in one order whatever the hash seed);
NoLiMa's `0.25k` is its base tier `250`; a partial LongBioBench row gets no published difference; a `|` in a model
abbr does not shift the columns."""
import json
import os
import subprocess
import sys

import pytest

from test_summarizer import write_result

from opencompass_longctx.writers.formats import md_cell, published_diff, to_csv, to_markdown
from opencompass_longctx.leaderboard.benchmarks import classify
from opencompass_longctx.leaderboard.tier_report import Cell
from opencompass_longctx.leaderboard.build import ModelInfo, build


def _babilong(work, model, tiers, acc=50.0):
    abbrs = []
    for tier in tiers:
        for i in range(1, 6):
            write_result(work, model, f'babilong_qa{i}_{tier}', acc)
            abbrs.append(f'babilong_qa{i}_{tier}')
    return abbrs


def test_zero_spelled_three_ways_is_one_column_with_the_base(tmp_path):
    abbrs = _babilong(tmp_path, 'a', ['0'], 80.0) + _babilong(tmp_path, 'b', ['0K'], 70.0) + \
        _babilong(tmp_path, 'c', ['0k'], 60.0) + _babilong(tmp_path, 'a', ['4k'], 75.0)
    found = classify(abbrs, all_abbrs=True)
    assert sorted(found['babilong']) == ['0k', '4k']
    assert found['babilong']['0k']['qa1'] == ['babilong_qa1_0', 'babilong_qa1_0K', 'babilong_qa1_0k']
    rep = build(str(tmp_path), [ModelInfo('a'), ModelInfo('b'), ModelInfo('c')], abbrs,
                expected=[(m, a) for m in 'abc' for a in abbrs if os.path.isfile(tmp_path / 'results' / m / f'{a}.json')])
    assert rep.tiers == ['0k', '4k']
    rows = {r.model: r for r in rep.rows if r.row == 'qa1-qa5'}
    assert [rows[m].cells['0k'].score for m in 'abc'] == [80.0, 70.0, 60.0]
    assert rows['a'].effective['nolima'].base == 80.0          # '0' is the base tier 0k
    assert rows['a'].effective['nolima'].contiguous == '4k'
    assert rows['a'].datasets['0k'] == {'qa1': 'babilong_qa1_0', 'qa2': 'babilong_qa2_0', 'qa3': 'babilong_qa3_0',
                                        'qa4': 'babilong_qa4_0', 'qa5': 'babilong_qa5_0'}


def test_a_million_by_each_benchmarks_unit(tmp_path):
    abbrs = _babilong(tmp_path, 'a', ['1000k']) + _babilong(tmp_path, 'b', ['1m']) + _babilong(tmp_path, 'a', ['1024k'])
    for tier in ('1024k', '1m', '1000k'):
        write_result(tmp_path, 'a', f'longbio_standard_{tier}', 40.0, n=4)
        abbrs.append(f'longbio_standard_{tier}')
    found = classify(abbrs, all_abbrs=True)
    assert sorted(found['babilong']) == ['1024k', '1m']            # 1000k = 1m = 1,000,000 tokens
    assert sorted(found['longbio']) == ['1000k', '1m']             # 1024k = 1m = 1,048,576 tokens; 1000k is less
    assert found['longbio']['1m']['standard'] == ['longbio_standard_1024k', 'longbio_standard_1m']
    rep = build(str(tmp_path), [ModelInfo('a'), ModelInfo('b')], abbrs)
    assert rep.tiers == ['1000k', '1m', '1024k']                   # equal sizes (1k = 1000) ordered by name
    assert {b.name: b.tiers for b in rep.benchmarks.values()} == {'babilong': ['1m', '1024k'], 'longbio': ['1000k', '1m']}


@pytest.mark.e2e
def test_equal_length_columns_come_in_one_order_whatever_the_hash_seed(tmp_path):
    abbrs = []
    for tier in ('1m', '1024k', '1000k', '500', '0.5k', '512'):
        write_result(tmp_path, 'a', f'longbio_standard_{tier}', 40.0, n=4)
        abbrs.append(f'longbio_standard_{tier}')
    code = ('import json, sys; from opencompass_longctx.leaderboard.build import ModelInfo, build; '
            f'print(json.dumps(build({str(tmp_path)!r}, [ModelInfo("a")], {abbrs!r}).tiers))')
    seen = {subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONHASHSEED=seed)).stdout for seed in ('1', '2', '3')}
    assert len(seen) == 1 and json.loads(seen.pop()) == ['500', '512', '1000k', '1m']   # 0.5k is 512 there


def test_nolima_quarter_k_is_its_base_tier_250(tmp_path):
    abbrs = []
    for tier, acc in (('0.25k', 90.0), ('1k', 88.0), ('4k', 60.0)):
        write_result(tmp_path, 'a', f'nolima_main_{tier}', acc, n=20)
        abbrs.append(f'nolima_main_{tier}')
    rep = build(str(tmp_path), [ModelInfo('a')], abbrs)
    assert rep.tiers == ['250', '1k', '4k']
    (main,) = [r for r in rep.rows if r.row == 'main']
    assert main.effective['nolima'].base == 90.0 and main.effective['nolima'].contiguous == '1k'


def test_a_partial_row_gets_no_published_difference(tmp_path):
    abbrs = []
    for cell in ('standard', 'paraphrase', 'pronoun', 'multi_standard_2', 'multi_standard_5', 'multi_standard_10'):
        write_result(tmp_path, 'full', f'longbio_{cell}_64k', 90.0, n=4)
        abbrs.append(f'longbio_{cell}_64k')
    write_result(tmp_path, 'part', 'longbio_standard_64k', 0.0, n=4)
    aliases = {'longbio': {'full': 'Qwen2.5-14B-Instruct-1M', 'part': 'Qwen2.5-14B-Instruct-1M'}}
    expected = [('full', a) for a in abbrs] + [('part', 'longbio_standard_64k')]
    rep = build(str(tmp_path), [ModelInfo('full'), ModelInfo('part')], abbrs, model_aliases=aliases, expected=expected)
    rows = {r.model: r for r in rep.rows if r.row == 'understanding'}
    assert rows['part'].cells['64k'].text() == '0.0 (1/6)' and rows['part'].published['64k'] == 96.3
    md = to_markdown(rep).splitlines()
    diffs = [ln for ln in md if ln.startswith('|  |  | measured - published |')]
    assert '| +-6.3 |' not in diffs[0] and '-6.3' in diffs[0] and '- (1/6)' in diffs[1], diffs[:2]
    assert not any('-96.3' in ln for ln in diffs)                 # never a partial mean against the full number
    part_csv = [r for r in __import__('csv').DictReader(to_csv(rep).splitlines())
                if r['model'] == 'part' and r['row'] == 'understanding']
    assert part_csv[0]['diff'] == '' and part_csv[0]['published'] == '96.3'
    assert published_diff(Cell(score=50.0, cells_used=6, cells_total=6), 40.0) == '+10.0'
    assert published_diff(Cell(status='missing'), 40.0) == '' and published_diff(Cell(score=1.0), None) == ''


def test_a_bar_in_a_model_abbr_does_not_shift_the_columns(tmp_path):
    abbrs = _babilong(tmp_path, 'org|model', ['0k', '1k'])
    md = to_markdown(build(str(tmp_path), [ModelInfo('org|model')], abbrs))
    head, rule, row = [ln for ln in md.splitlines() if ln.startswith('|')][:3]
    cells = lambda line: len(line.replace('\\|', '').split('|'))    # noqa: E731 (cells between unescaped bars)
    assert cells(row) == cells(head) == cells(rule) and row.startswith('| org\\|model | babilong | qa1-qa5 |')
    assert md_cell('a|b\\c\nd') == 'a\\|b\\\\c d'


def test_every_tier_a_spec_names_is_its_lengths_one_name():
    """The base tiers (and a summary group's first tier) are compared with the table's tier names: each must be the
    name the table reads for its length in its benchmark's unit."""
    from opencompass_longctx.spec import summary_tables
    from opencompass_longctx.tiers import canonical_tier
    for bench in summary_tables():
        for tier in bench.base_tiers + ((bench.task_mean_from,) if bench.task_mean_from else ()):
            assert canonical_tier(tier, bench.tier_unit).name == tier, (bench.name, tier)
