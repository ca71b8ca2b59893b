"""One aggregation path: OpenCompass's summary groups come from the benchmarks' specs (the rows the tier table
shows, plus NoLiMa's means), NoLiMa's own figures come through the long-context summarizer, and the result
reading is OpenCompass's own method with the unreadable files set aside."""
import csv
import json
import shutil

import pytest
from mmengine.config import Config, ConfigDict
from opencompass.summarizers.default import DefaultSummarizer

from conftest import REPO
from opencompass_longctx import __version__
from opencompass_longctx.nolima import metrics as nm
from opencompass_longctx.summarizers.groups import shipped_abbrs, shipped_groups, summary_groups
from opencompass_longctx.summarizers.longctx import LongCtxSummarizer, RobustSummarizer
DATASETS = REPO / 'opencompass_longctx' / 'configs' / 'datasets'
TYPES = {'longbio': 'opencompass_longctx.longbio.dataset.LongBioDataset',
         'nolima': 'opencompass_longctx.nolima.dataset.NoLiMaDataset',
         'babilong': 'opencompass_longctx.babilong.dataset.BabilongDataset'}
GEN = 'opencompass_longctx.run.inferencer.LongCtxGenInferencer'


def _abbrs(cfg):
    return [d['abbr'] for v in cfg.values() if isinstance(v, list) for d in v if isinstance(d, dict) and 'tier' in d]


@pytest.mark.parametrize('bench,new_tier,group', [('longbio', '192k', 'longbio_strict_mean_192k'),
                                                  ('babilong', '3k', 'babilong_qa1-qa5_3k'),
                                                  ('nolima', '3k', 'nolima_3k_variants')])
def test_a_copied_tier_config_adds_its_groups_with_no_edit(tmp_path, bench, new_tier, group):
    src = next(p for p in sorted((DATASETS / bench).glob(f'{bench}_*_gen.py')) if 'TIER = ' in p.read_text())
    tier = src.read_text().split("TIER = '", 1)[1].split("'", 1)[0]
    copy = tmp_path / f'{bench}_{new_tier}_gen.py'
    copy.write_text(src.read_text().replace(f"TIER = '{tier}'", f"TIER = '{new_tier}'"))
    added = _abbrs(Config.fromfile(str(copy)))
    assert added and all(a.endswith(f'_{new_tier}') for a in added)
    names = [g['name'] for g in summary_groups(shipped_abbrs(bench) + added)]
    assert group in names and group not in [g['name'] for g in shipped_groups(bench)]
    mine = next(g for g in summary_groups(shipped_abbrs(bench) + added) if g['name'] == group)
    assert {s[0] for s in mine['subsets']} <= set(added) | {n for n in names if n.endswith(f'_{new_tier}')}


def _details(n, correct, **keys):
    return [dict({k: [v] for k, v in keys.items()}, correct=[i < correct], over_length=[False], pair=[f'p{i % 2}'],
                 haystack=[f'h{i // 2 % 2}'], question_type=['onehop' if i % 4 < 2 else 'twohop'], order=['x'],
                 depth_index=[i % 2], depth=[i / n]) for i in range(n)]


def _run(root, results):
    """A finished run: {abbr: (accuracy, details)} of one model 'm', and its config."""
    (root / 'results' / 'm').mkdir(parents=True)
    datasets = []
    for abbr, (acc, details) in results.items():
        res = {'accuracy': acc, 'counts': [{'n': len(details), 'over_length': 0}], 'details': details,
               'package_version': [__version__]}
        (root / 'results' / 'm' / f'{abbr}.json').write_text(json.dumps(res))
        datasets.append(dict(abbr=abbr, type=TYPES[abbr.split('_')[0]], tier=abbr.rsplit('_', 1)[1],
                             infer_cfg=dict(retriever=dict(type='ZeroRetriever'), inferencer=dict(type=GEN))))
    return ConfigDict(models=[dict(abbr='m', max_seq_len=200000)], datasets=datasets, work_dir=str(root))


def _summary_csv(root):
    (path,) = (root / 'summary').glob('summary_*.csv')
    return {r['dataset']: r for r in csv.DictReader(open(path))}


def test_opencompass_groups_are_the_tier_table_rows(tmp_path):
    cells = {'1k': {'standard': 60.0, 'multi_standard_2': 40.0, 'calculation': 20.0, 'idk': 80.0},
             '2k': {'standard': 50.0, 'rank_2': 30.0, 'citation_1': 70.0}}
    results = {f'longbio_{c}_{t}': (acc, _details(4, 2)) for t, cs in cells.items() for c, acc in cs.items()}
    report = LongCtxSummarizer(_run(tmp_path, results), plots=False).summarize(time_str='t')
    table = {(r.row, t): c.score for r in report.rows for t, c in r.cells.items() if c.status == 'ok'}
    rows = _summary_csv(tmp_path)
    groups = summary_groups(list(results))
    assert [g['name'] for g in groups] == [f'longbio_{r}_{t}' for t in cells
                                           for r in ('understanding', 'reasoning', 'trustworthiness', 'mean')]
    for g in groups:
        row, tier = g['name'][len('longbio_'):].rsplit('_', 1)
        assert float(rows[g['name']]['m']) == pytest.approx(table[row, tier], abs=0.005), g['name']
    assert table['mean', '1k'] == pytest.approx((50.0 + 20.0 + 80.0) / 3)


def test_nolima_figures_and_means_come_through_the_one_summarizer(tmp_path, capsys):
    lengths = {'250': 250, '500': 500, '1k': 1000, '2k': 2000, '4k': 4000}
    right = {'250': 7, '500': 8, '1k': 6, '2k': 3, '4k': 6}
    results = {f'nolima_main_{t}': (100.0 * right[t] / 8, _details(8, right[t], context_length=L))
               for t, L in lengths.items()}
    results['nolima_hard_1k'] = (25.0, _details(8, 2, context_length=1000))
    LongCtxSummarizer(_run(tmp_path, results), plots=False).summarize(time_str='t')
    rows = _summary_csv(tmp_path)
    records = [dict(context_length=L, pair=f'p{i % 2}', haystack=f'h{i // 2 % 2}', correct=i < right[t])
               for t, L in lengths.items() for i in range(8)]
    base = nm.base_score(nm.per_pair_haystack(records))
    assert float(rows['nolima_main_base_score']['m']) == pytest.approx(base, abs=0.005)
    assert float(rows['nolima_main_threshold']['m']) == pytest.approx(0.85 * base, abs=0.005)
    acc = nm.accuracy_by_length(records)
    eff = nm.effective_length(acc, base)
    assert float(rows['nolima_main_effective_length']['m']) == (eff['contiguous'] or 0) / 1000
    assert float(rows['nolima_main_avg']['m']) == pytest.approx((acc[1000] + acc[2000] + acc[4000]) / 3, abs=0.005)
    assert float(rows['nolima_1k_variants']['m']) == pytest.approx((acc[1000] + 25.0) / 2, abs=0.005)
    assert 'nolima_hard_base_score' not in rows   # no base tier of the hard set was run
    saved = json.load(open(tmp_path / 'summary' / 'nolima_t.json'))['m']['main']
    assert saved['base'] == pytest.approx(base) and saved['effective_length'] == eff['label']
    assert set(saved['by_question_type']) == {'onehop', 'twohop'}
    out = capsys.readouterr().out
    assert 'NoLiMa: base score' in out and '| m | main |' in (tmp_path / 'summary' / 'nolima_t.md').read_text()
    assert out.index('NoLiMa: base score') < out.index('Long-context tier table')


def test_result_reading_is_opencompass_s_own_less_the_unreadable_files(tmp_path):
    results = {f'longbio_{c}_1k': (50.0 + i, _details(4, 2)) for i, c in enumerate(('standard', 'rank', 'idk'))}
    cfg = _run(tmp_path, results)
    ours, theirs = RobustSummarizer(cfg)._pick_up_results(), DefaultSummarizer(cfg)._pick_up_results()
    assert ours == theirs
    shutil.copy(tmp_path / 'results' / 'm' / 'longbio_rank_1k.json', tmp_path / 'keep.json')
    (tmp_path / 'results' / 'm' / 'longbio_rank_1k.json').write_text('{"accuracy": 5')   # truncated
    raw, parsed, metrics, modes = RobustSummarizer(cfg)._pick_up_results()
    assert 'unreadable result file' in raw['m']['longbio_rank_1k']['error']
    assert list(raw['m']) == list(results) and 'longbio_rank_1k' not in parsed['m']
    assert parsed['m']['longbio_idk_1k'] == theirs[1]['m']['longbio_idk_1k'] and modes == theirs[3]
