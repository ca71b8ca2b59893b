"""The tier table: effective lengths, N/A rule, confidence intervals, published references, and a real
opencompass run with two models, copied tier configs and the long-context summarizer."""
import csv
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, run_opencompass
from opencompass_longctx import __version__
from opencompass_longctx.stats.intervals import binomial_interval, wilson
from opencompass_longctx.stats.effective import effective_length, nolima_threshold
from opencompass_longctx.writers.formats import to_csv, to_json, to_markdown
from opencompass_longctx.leaderboard.build import ModelInfo, build
from opencompass_longctx.summarizers.groups import summary_groups
def test_nolima_effective_length_gpt4o_example():
    # NoLiMa's GPT-4o: base 99.3 -> threshold 84.4; 1K 98.1, 2K 98.0, 4K 95.7, 8K 89.2, 16K 81.6, 32K 69.7
    scores = [('1k', 98.1), ('2k', 98.0), ('4k', 95.7), ('8k', 89.2), ('16k', 81.6), ('32k', 69.7)]
    thr = nolima_threshold(99.3)
    assert thr == pytest.approx(84.405)
    assert effective_length(scores, thr) == {'contiguous': '8k', 'raw': '8k'}


def test_effective_length_rules():
    assert effective_length([('1k', 50.0), ('2k', 90.0)], 85.6) == {'contiguous': '<1k', 'raw': '2k'}
    assert effective_length([('1k', 90.0), ('2k', None), ('4k', 95.0)], 85.6) == {'contiguous': '1k', 'raw': '4k'}
    assert effective_length([('1k', None)], 85.6) == {'contiguous': None, 'raw': None}
    assert nolima_threshold(0.0) is None and nolima_threshold(None) is None


def test_confidence_interval():
    b = binomial_interval([(1.0, 0.5, 100)])
    assert (b.lo, b.hi) == (wilson(0.5, 100).lo, wilson(0.5, 100).hi) and b.lo < 50.0 < b.hi
    zero = binomial_interval([(1.0, 0.0, 20)])
    assert zero.lo == 0.0 and zero.hi > 10  # no zero-width interval at 0%, and no bound below 0
    five = binomial_interval([(0.2, 0.5, 100)] * 5)
    assert five.hi - five.lo == pytest.approx(wilson(0.5, 500).hi - wilson(0.5, 500).lo, rel=1e-9)


def write_result(work, model, abbr, acc, n=10, over=0, version=__version__, details=None):
    d = work / 'results' / model
    d.mkdir(parents=True, exist_ok=True)
    res = {'accuracy': acc, 'counts': [{'n': n, 'correct': 0, 'invalid_predictions': 0, 'over_length': over}],
           'package_version': [version] if version else None, 'details': details or []}
    if version is None:
        res.pop('package_version')
    (d / f'{abbr}.json').write_text(json.dumps(res))


def test_table_na_missing_published_and_versions(tmp_path):
    abbrs = [f'babilong_qa{i}_{t}' for t in ('0k', '4k', '64k') for i in range(1, 6)] + ['other_dataset']
    for t, acc in (('0k', 70.0), ('4k', 66.0)):
        for i in range(1, 6):
            write_result(tmp_path, 'qwen2.5-7b-instruct', f'babilong_qa{i}_{t}', acc)
    # 64k: every sample over the model's length -> N/A, not 0
    for i in range(1, 6):
        write_result(tmp_path, 'qwen2.5-7b-instruct', f'babilong_qa{i}_64k', 0.0, n=10, over=10)
    # second model: 4k results missing for qa3 (failed task), 64k above its max_seq_len; an old result file
    for t in ('0k', '4k'):
        for i in range(1, 6):
            if (t, i) != ('4k', 3):
                write_result(tmp_path, 'my-model', f'babilong_qa{i}_{t}', 40.0, version=None if i == 1 else __version__)
    models = [ModelInfo('qwen2.5-7b-instruct', 131072), ModelInfo('my-model', 32768)]
    rep = build(str(tmp_path), models, abbrs)
    assert rep.tiers == ['0k', '4k', '64k']
    rows = {(r.model, r.row): r for r in rep.rows}
    assert set(rows) == {('qwen2.5-7b-instruct', 'qa1-qa5'), ('my-model', 'qa1-qa5')}  # qa1-qa10 not run
    q = rows[('qwen2.5-7b-instruct', 'qa1-qa5')]
    assert q.cells['64k'].status == 'n/a' and 'longer than the model' in q.cells['64k'].reason
    assert q.mean == pytest.approx(68.0)  # N/A excluded from the mean
    assert q.published_name == 'Qwen2.5-7B-Instruct' and q.published['4k'] == 66
    assert q.effective['nolima'].base == 70.0 and q.effective['nolima'].contiguous == '4k'
    assert q.effective['ruler'].contiguous == '<0k'
    m = rows[('my-model', 'qa1-qa5')]
    assert m.cells['4k'].status == 'missing' and 'babilong_qa3_4k' in m.cells['4k'].reason
    assert m.cells['64k'].status == 'n/a' and 'max_seq_len 32768' in m.cells['64k'].reason
    assert m.published_name is None and 'my-model' in rep.models_without_published_counterpart
    assert any('my-model/babilong_qa1_0k' in n and 'older version' in n for n in rep.notes)
    md = to_markdown(rep)
    assert '| qwen2.5-7b-instruct | babilong | qa1-qa5 | 70.0 [' in md and '| N/A |' in md
    assert 'published: Qwen2.5-7B-Instruct | 68 | 66 | 55 |' in md
    assert 'measured - published | +2.0 | +0.0 |' in md
    rows_csv = list(csv.DictReader(to_csv(rep).splitlines()))
    assert {r['status'] for r in rows_csv} == {'ok', 'n/a', 'missing'}
    assert json.loads(to_json(rep))['rows'][0]['cells']['0k']['n'] == 50


def test_user_aliases_and_tier_order(tmp_path):
    abbrs = ['babilong_qa1_1m', 'babilong_qa1_192k', 'babilong_qa1_2k']
    for a in abbrs:
        write_result(tmp_path, 'm', a, 10.0)
    for i in range(2, 6):
        for t in ('1m', '192k', '2k'):
            write_result(tmp_path, 'm', f'babilong_qa{i}_{t}', 10.0)
            abbrs.append(f'babilong_qa{i}_{t}')
    rep = build(str(tmp_path), [ModelInfo('m')], abbrs, model_aliases={'babilong': {'m': 'Gemini 1.5 Pro 002'}})
    assert rep.tiers == ['2k', '192k', '1m']
    (r,) = rep.rows
    assert r.published_name == 'Gemini 1.5 Pro 002' and r.published['1m'] == 42


def test_groups_derived_from_abbrs():
    abbrs = [f'babilong_qa{i}_{t}' for t in ('4k', '192k') for i in range(1, 11)] + ['babilong_qa1_1k']
    names = [g['name'] for g in summary_groups(abbrs)]
    assert names == ['babilong_qa1-qa5_4k', 'babilong_qa1-qa10_4k', 'babilong_qa1-qa5_192k',
                     'babilong_qa1-qa10_192k']


def _longbio_run(work, tiers_cells, acc=60.0):
    abbrs = []
    for tier, cells in tiers_cells.items():
        for cell in cells:
            abbr = f'longbio_{cell}_{tier}'
            write_result(work, 'm', abbr, acc, n=4)
            abbrs.append(abbr)
    return abbrs


def test_a_category_mean_over_fewer_cells_than_it_has_says_so(tmp_path):
    from opencompass_longctx.longbio.catalogue import LONGBIO_CELLS
    every = [c['cell'] for c in LONGBIO_CELLS]
    abbrs = _longbio_run(tmp_path, {'1k': [c for c in every if c != 'multi_standard_10'], '8k': every})
    rep = build(str(tmp_path), [ModelInfo('m')], abbrs)
    rows = {r.row: r for r in rep.rows}
    assert rows['understanding'].cells['1k'].text(True).endswith('(5/6)')
    assert (rows['understanding'].cells['1k'].cells_used, rows['understanding'].cells['1k'].cells_total) == (5, 6)
    assert rows['understanding'].cells['8k'].text(True) == '60.0 ' + rows['understanding'].cells['8k'].interval_text()
    assert rows['reasoning'].cells['1k'].text() == '60.0'  # complete: no mark
    assert rows['mean'].cells['1k'].text().endswith('(14/15)')
    md = to_markdown(rep)
    assert '| m | longbio | understanding | 60.0 [' in md and '(5/6) | 60.0 [' in md
    assert ('- longbio understanding at 1k: the mean of 5 of its 6 cells (not run at this tier: multi_standard_10)'
            in md)
    row = next(r for r in csv.DictReader(to_csv(rep).splitlines()) if r['row'] == 'understanding' and r['tier'] == '1k')
    assert (row['cells_used'], row['cells_total']) == ('5', '6')


def test_printed_table_explains_its_columns_and_shows_the_base_and_threshold(tmp_path):
    abbrs = [f'babilong_qa{i}_{t}' for t in ('0k', '1k', '4k') for i in range(1, 6)]
    for a in abbrs:
        write_result(tmp_path, 'm', a, {'0k': 80.0, '1k': 70.0, '4k': 60.0}[a.rsplit('_', 1)[1]])
    rep = build(str(tmp_path), [ModelInfo('m')], abbrs)
    md = to_markdown(rep)
    header = md.splitlines()[0]
    assert header == ('| model | benchmark | row | 0k | 1k | 4k | mean | base (thr) | eff. len (NoLiMa 85% base) | '
                      'eff. len (RULER >= 85.6) |')
    (line,) = [ln for ln in md.splitlines() if ln.startswith('| m | babilong | qa1-qa5 |')]
    # base 80 at 0k, threshold 0.85 x 80; each effective length with its 95% interval from the resampling
    assert line.endswith('| 70.0 | 80.0 (68.0) | 1k [0k-4k] | <0k [<0k-0k] |')
    legend = md[md.index('How to read this table:'):]
    for words in ('eff. len (NoLiMa 85% base): the longest tier such that it and every shorter tier',
                  'eff. len (RULER >= 85.6): the same with a fixed threshold of 85.6',
                  '<X (e.g. <0k, <1k): the first tier, X, already scores below the threshold',
                  '- N/A: the model cannot hold that tier', '- -: no result', '* = over the tiers with a result',
                  'base (thr): the model\'s short-context base score and the threshold 0.85 x base',
                  'best score at their benchmark\'s base tiers (babilong 0k)', '(k/n) after a score', '- FAIL:'):
        assert words in legend, words


def _mixed_report(tmp_path):
    abbrs = [f'babilong_qa{i}_{t}' for t in ('0k', '4k') for i in range(1, 6)]
    for a in abbrs:
        write_result(tmp_path, 'm', a, 50.0)
    onehop = [{'question_type': ['onehop'], 'correct': [True], 'depth': [d], 'pair': ['p'], 'haystack': ['h'],
               'context_length': [L]} for d in (0.05, 0.95) for L in (250,)]
    for tier in ('250', '500'):
        write_result(tmp_path, 'm', f'nolima_main_{tier}', 100.0, n=2, details=onehop)
        abbrs.append(f'nolima_main_{tier}')
    return build(str(tmp_path), [ModelInfo('m')], abbrs)


def test_plots_have_one_axis_per_benchmark_and_no_empty_plot(tmp_path, monkeypatch):
    from opencompass_longctx.writers import plots
    rep = _mixed_report(tmp_path)
    specs = {p['file']: p for p in plots.score_plots(rep)}
    assert specs['score_vs_tier_babilong_qa1-qa5.png']['tiers'] == ['0k', '4k']  # not NoLiMa's 250/500
    assert specs['score_vs_tier_nolima_main.png']['tiers'] == ['250', '500']
    assert 'score_vs_tier_nolima_main_one-hop.png' in specs
    assert 'score_vs_tier_nolima_main_two-hop.png' not in specs  # no two-hop sample: nothing to draw
    drawn = {}
    monkeypatch.setattr(plots, '_save', lambda plt, fig, out_dir, name: drawn.setdefault(name, fig) and name)
    written = plots.plot_report(rep, str(tmp_path / 'plots'))
    assert sorted(written) == sorted(list(specs) + ['depth_nolima_m.png'])
    ticks = [t.get_text() for t in drawn['score_vs_tier_babilong_qa1-qa5.png'].axes[0].get_xticklabels()]
    assert ticks == ['0k', '4k']


def test_heatmap_explains_blank_cells(tmp_path, monkeypatch):
    from opencompass_longctx.writers import plots
    rep = _mixed_report(tmp_path)
    (h,) = plots.heatmaps(rep)
    assert h['tiers'] == ['250', '500'] and h['grid'][0] == [100.0, 100.0] and h['grid'][5] == [None, None]
    assert rep.benchmarks['nolima'].depth['m']['250'][0] == [1, 1]  # [correct, n] in the depth bin 0-10%
    path = plots.plot_report(rep, str(tmp_path / 'png'))[-1]  # the real file
    assert path.endswith('depth_nolima_m.png') and os.path.getsize(path) > 10000
    drawn = {}
    monkeypatch.setattr(plots, '_save', lambda plt, fig, out_dir, name: drawn.setdefault(name, fig) and name)
    plots.plot_report(rep, str(tmp_path / 'plots'))
    legend = drawn['depth_nolima_m.png'].axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ['blank: no sample at this depth and tier']


RUN_CONFIG = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

from opencompass_longctx.demo.datasets import DemoBabilongDataset, DemoNoLiMaDataset
from opencompass_longctx.demo.rule_reader import BabiRuleReader
with read_base():
    from ..configs.datasets.babilong.babilong_0k_gen import babilong_datasets as b0
    from ..configs.datasets.babilong.babilong_1k_gen import babilong_datasets as b1
    from ..configs.datasets.babilong.babilong_3k_gen import babilong_datasets as b3
    from ..configs.datasets.longbio.longbio_0k_gen import longbio_datasets as l0
    from ..configs.datasets.longbio.longbio_2k_gen import longbio_datasets as l2
    from ..configs.datasets.nolima.nolima_250_gen import nolima_datasets as n250
    from ..configs.datasets.nolima.nolima_500_gen import nolima_datasets as n500
    from ..configs.models.longctx_tiny_chat import models as tiny
    from ..configs.summarizers.longctx import summarizer

datasets = [dict(d, type=DemoBabilongDataset, path=DATA, num_samples=3) for d in [*b0[:5], *b1[:5], *b3[:5]]]
datasets += [dict(d, num_samples=1) for d in [*l0, *l2] if d['cell'] in ('standard', 'calculation', 'citation_1')]
datasets += [dict(d, type=DemoNoLiMaDataset, path=DATA + '_nolima', pairs=2, haystacks=[0], depth_indices=[0, 12, 25])
             for d in [*n250, *n500]]
models = [*tiny, dict(type=BabiRuleReader, abbr='rule-reader', max_seq_len=100000, max_out_len=20,
                      batch_size=8, run_cfg=dict(num_gpus=0))]
summarizer = dict(summarizer, model_aliases=dict(babilong={'rule-reader': 'Qwen2.5-7B-Instruct'}))
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=1),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLEvalTask)))
'''


@pytest.mark.e2e
def test_two_models_copied_tier_and_report(tmp_path):
    shutil.copytree(REPO / 'configs', tmp_path / 'configs')
    bdir = tmp_path / 'configs' / 'datasets' / 'babilong'
    text = (bdir / 'babilong_128k_gen.py').read_text()
    (bdir / 'babilong_3k_gen.py').write_text(text.replace("TIER = '128k'", "TIER = '3k'"))  # copy a config
    (tmp_path / 'examples').mkdir()
    cfg = tmp_path / 'examples' / 'run.py'
    cfg.write_text(RUN_CONFIG.replace('DATA', repr(str(tmp_path / 'data'))))
    env = {'LONGCTX_TINY_MODEL': str(tmp_path / 'tiny'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(cfg), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    logs = glob.glob(os.path.join(run, 'logs', '**', '*.out'), recursive=True)
    assert logs and not any('Traceback' in open(p).read() for p in logs)
    assert 'Long-context tier table' in proc.stdout
    (js,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))
    rep = json.load(open(js))
    assert rep['tiers'] == ['0k', '250', '500', '1k', '2k', '3k']  # the copied 3k tier is a new column
    table = {(r['model'], r['bench'], r['row']): r for r in rep['rows']}
    for model in ('tiny-chat', 'rule-reader'):  # every benchmark, two tiers or more, both models
        for bench, row, tiers in (('longbio', 'mean', ('0k', '2k')), ('nolima', 'main', ('250', '500'))):
            cells = table[(model, bench, row)]['cells']
            assert all(cells[t]['status'] == 'ok' and cells[t]['n'] > 0 for t in tiers), (model, bench)
        assert set(table[(model, 'nolima', 'main')]['effective']) == {'nolima', 'ruler'}  # both definitions
    rows = {(r['model'], r['row']): r for r in rep['rows'] if r['bench'] == 'babilong'}
    assert set(rows) == {('tiny-chat', 'qa1-qa5'), ('rule-reader', 'qa1-qa5')}
    rule = rows[('rule-reader', 'qa1-qa5')]
    for tier in ('0k', '1k', '3k'):
        cell = rule['cells'][tier]
        assert cell['status'] == 'ok' and cell['n'] == 15 and cell['ci_lo'] < cell['score'] < cell['ci_hi']
        assert cell['tasks']['qa1'] == 100.0 and cell['tasks']['qa2'] == 100.0  # it reads the whole context
        assert cell['tasks']['qa3'] == 0.0
    assert rule['effective']['nolima']['contiguous'] == '3k' and rule['effective']['ruler']['contiguous'] == '<0k'
    assert rule['published_name'] == 'Qwen2.5-7B-Instruct'
    md = open(js[:-5] + '.md').read()
    assert 'measured - published' in md and '| tiny-chat | babilong | qa1-qa5 |' in md
    plots = {os.path.basename(p): p for p in glob.glob(os.path.join(js[:-5] + '_plots', '*.png'))}
    assert {'score_vs_tier_babilong_qa1-qa5.png', 'score_vs_tier_longbio_mean.png', 'score_vs_tier_nolima_main.png',
            'depth_longbio_tiny-chat.png', 'depth_nolima_rule-reader.png'} <= set(plots)
    from PIL import Image   # a drawn plot (256-colour PNG since the page's plots): many colours, not a blank canvas
    with Image.open(plots['score_vs_tier_babilong_qa1-qa5.png']) as im:
        assert im.width >= 600 and len(im.convert('RGB').getcolors(1 << 16) or []) > 20
    summary = open(glob.glob(os.path.join(run, 'summary', 'summary_*.csv'))[0]).read()
    assert 'babilong_qa1-qa5_3k' in summary  # derived group in OpenCompass's own table
    # re-summarize with OpenCompass itself, no inference: -m viz -r <timestamp>
    ts = os.path.basename(run)
    for f in glob.glob(os.path.join(run, 'summary', 'longctx_*')):
        shutil.rmtree(f) if os.path.isdir(f) else os.remove(f)
    proc = run_opencompass([str(cfg), '-w', 'out', '-m', 'viz', '-r', ts], tmp_path, env)
    assert proc.returncode == 0 and 'Long-context tier table' in proc.stdout, proc.stderr[-2000:]
    assert json.load(open(glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))[0]))['tiers'] == rep['tiers']
    # re-summarize from the files alone
    out = subprocess.run([sys.executable, '-m', 'opencompass_longctx.report', str(tmp_path / 'out'), '--no-plots'],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '| rule-reader | babilong | qa1-qa5 |' in out.stdout
    assert os.path.isfile(os.path.join(run, 'summary', 'longctx_report.csv'))
