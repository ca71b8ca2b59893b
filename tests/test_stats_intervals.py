"""The tier table's intervals (opencompass_longctx.stats.intervals), by simulation and on result files.

Coverage is simulated with a known truth (docs/leaderboard.md): per-cluster ability logit-normal, outcomes Bernoulli,
2,000 replications (the coverage estimate's standard error at 95% is 0.49 points). Two grids, as issue 40 measured
them: balanced clusters, and one cluster holding 60% of 500 samples; 10-20 clusters, cluster sd 0-1 on the logit
scale, centre 0 and 2 (50% and about 85%). The bounded CR2 interval keeps 93-97% on both; CR1 (the table before)
covers far less where one cluster dominates. Run with -s to print the table."""
import json
import math

import numpy as np
import pytest

from opencompass_longctx.stats import coverage
from opencompass_longctx.stats import intervals as I
from opencompass_longctx.writers import formats
from opencompass_longctx.leaderboard import build as rp
from opencompass_longctx.stats.effective import holding_point
from opencompass_longctx.leaderboard.benchmarks import bench_by_name
REPS = 2000


GRID = [(g, dom, sd, mu) for dom in (None, 0.6) for g in (10, 20) for sd in (0.0, 0.5, 1.0) for mu in (0.0, 2.0)]


@pytest.mark.parametrize('g,dominant,sd,mu', GRID)
def test_the_clustered_interval_covers_93_to_97_percent_on_balanced_and_dominated_cells(g, dominant, sd, mu):
    c = coverage.simulate(g, dominant, sd, mu, reps=REPS)
    print(f'G={g} dominant={dominant} sd={sd} mu={mu}: bounded CR2 {100 * c.covered:.1f}% (width {c.width:.1f} '
          f'points), CR1 {100 * c.covered_cr1:.1f}%')
    assert 0.925 <= c.covered <= 0.975, c.covered      # 93-97% with the +-0.5 point noise of 2,000 replications
    assert c.inside == 1.0
    if dominant and sd >= 0.5:
        assert c.covered_cr1 < 0.8, c.covered_cr1       # the interval the table printed before: far too narrow here


@pytest.mark.parametrize('sd', [0.0, 1.0, 2.0])
def test_the_clustered_interval_covers_95_percent_on_nolima_structure(sd):
    """58 needle entries x 130 prompts of one tier."""
    rng = np.random.default_rng(int(sd * 10) + 7)
    entries, per = 58, 130
    n = np.full(entries, float(per))
    p = 1 / (1 + np.exp(-rng.normal(0, sd, (1000, entries))))
    s = rng.binomial(per, p).astype(float)
    hits = 0
    for row in s:
        b = I.clustered_interval(I.ClusterTable(np.arange(entries), np.zeros(entries, dtype=np.int64), n, row, row,
                                                np.array([1.0])))
        hits += b.contains(50.0)       # the truth: expit(N(0, sd)) has mean 50% by symmetry
    assert 0.93 <= hits / 1000 <= 0.97, hits / 1000


def test_the_wilson_interval_stays_inside_0_100_where_a_normal_one_leaves_it():
    """n = 20 and accuracy at most 10%: the normal interval crosses 0 in most replications; Wilson never, and it
    still covers about 95% over the range."""
    rng = np.random.default_rng(4)
    covered, crossed = [], 0
    for p in (0.02, 0.05, 0.1, 0.3, 0.5):
        x = rng.binomial(20, p, REPS)
        for k in x:
            b = I.wilson(k / 20, 20)
            assert 0 <= b.lo <= 100 * k / 20 <= b.hi <= 100
            covered.append(b.contains(100 * p))
            half = 1.96 * math.sqrt(max(k / 20 * (1 - k / 20), 1e-12) / 20)
            crossed += p <= 0.1 and k / 20 - half < 0
    assert crossed > 0.5 * 3 * REPS
    assert 0.93 <= np.mean(covered) <= 0.98, np.mean(covered)


def test_the_interval_of_independent_babilong_like_rows_covers_95_percent():
    """qa1-qa5 at one tier, 100 independent stories per task: the row's mean of five accuracies (Wilson at the
    mean's effective sample size)."""
    rng = np.random.default_rng(11)
    truth_p = np.array([0.9, 0.7, 0.55, 0.35, 0.6])
    won = rng.random((REPS, 5, 100)) < truth_p[None, :, None]
    hits = 0
    for row in won.mean(axis=2):
        b = I.binomial_interval([(0.2, q, 100) for q in row])
        hits += b.contains(100 * truth_p.mean())
    assert 0.93 <= hits / REPS <= 0.97, hits / REPS


def test_a_small_dataset_at_100_percent_beside_a_large_one_keeps_its_uncertainty():
    """A row of two datasets, 10 samples at 95% and 1,000 at 50%: a dataset at 100% (most draws of the small one)
    added no variance before, and the interval covered 46%; each dataset's variance read at its Wilson centre
    covers at least 95% (conservative where the sizes are this unequal), and equal sizes stay near 95%."""
    rng = np.random.default_rng(5)
    for truth, sizes, low, high in (([.95, .5], [10, 1000], .95, 1.0), ([.97, .5], [30, 300], .95, 1.0),
                                    ([.9] * 4, [25] * 4, .92, .97), ([.99, .97, .6, .5, .8], [20] * 5, .93, .98)):
        k = len(truth)
        drawn = rng.binomial(sizes, truth, (REPS, k)) / np.array(sizes)
        covered = np.mean([I.binomial_interval([(1 / k, q, n) for q, n in zip(row, sizes)])
                           .contains(100 * np.mean(truth)) for row in drawn])
        assert low <= covered <= high, (truth, sizes, covered)
    assert I.binomial_interval([(1.0, 0.3, 50)]) == I.wilson(0.3, 50)      # one dataset: the plain Wilson interval


def test_wilson_is_the_textbook_interval():
    b = I.wilson(0.5, 100)
    z = I.Z95
    center, half = (0.5 + z * z / 200) / (1 + z * z / 100), z / (1 + z * z / 100) * math.sqrt(0.25 / 100 + z * z / 4e4)
    assert (b.lo, b.hi) == pytest.approx((100 * (center - half), 100 * (center + half)))
    assert I.wilson(0.0, 20).lo == 0 and I.wilson(1.0, 20).hi == 100 and I.wilson(0.0, 20).hi > 10


# ---------------------------------------------------------------------------------------------- from result files
def write_result(work, model, abbr, details, metric='accuracy'):
    path = work / 'results' / model / f'{abbr}.json'
    path.parent.mkdir(parents=True, exist_ok=True)
    scored = [d for d in details if not d.get('over_length')]
    res = {metric: 100.0 * sum(d['correct'] for d in scored) / len(scored), 'details': details,
           'counts': {'n': len(details), 'over_length': len(details) - len(scored)},
           'package_version': rp.__version__}
    path.write_text(json.dumps(res))
    return res


def nolima_details(rng, entries, per_entry, p_entry, question_type=None):
    return [{'entry_id': f'e{e}', 'pair': f'e{e}-onehop', 'correct': bool(rng.random() < p_entry[e]),
             'haystack': f'book{k % 5}', 'over_length': False,
             'question_type': question_type or ('onehop' if k % 2 else 'twohop')}
            for e in range(entries) for k in range(per_entry)]


def one_cell(tmp_path, abbr, details, tier):
    write_result(tmp_path, 'm', abbr, details)
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], [abbr])
    return report, [r for r in report.rows if r.row == 'main'][0].cells[tier]


def test_a_dominated_nolima_cell_from_result_files_rests_on_the_cr2_variance(tmp_path):
    """12 needle entries, one holding 60% of the prompts: the cell's interval is the bounded CR2 one, by hand."""
    rng = np.random.default_rng(5)
    counts = [156] + [9] * 11 + [5]         # 12 + 1 entries, 260 prompts
    p_entry = 1 / (1 + np.exp(-rng.normal(0, 1, len(counts))))
    details = [{'entry_id': f'e{e}', 'correct': bool(rng.random() < p_entry[e]), 'over_length': False}
               for e, c in enumerate(counts) for _ in range(c)]
    report, cell = one_cell(tmp_path, 'nolima_main_1k', details, '1k')
    assert cell.ci_method == 'clustered' and cell.clusters == len(counts)
    y = np.array([d['correct'] for d in details], dtype=float)
    e = np.array([int(d['entry_id'][1:]) for d in details])
    resid = np.bincount(e, weights=y - y.mean())
    h = np.bincount(e) / len(y)
    var = float(np.sum(resid ** 2 / (1 - h))) / len(y) ** 2          # CR2 of a mean, written out
    p = y.mean()
    table = I.ClusterTable(np.arange(len(counts)), np.zeros(len(counts), dtype=np.int64), np.bincount(e).astype(float),
                           np.bincount(e, weights=y), np.bincount(e, weights=y), np.array([1.0]))
    assert I.cr2_variance(table) == pytest.approx((p, var))
    b = I.wilson(p, p * (1 - p) / var, I.critical_value(table, I.working_rho(table)))
    assert (cell.ci_lo, cell.ci_hi) == pytest.approx((b.lo, b.hi))
    assert cell.ci_lo < cell.score < cell.ci_hi and cell.ci_hi - cell.ci_lo > 2 * 1.96 * 100 * math.sqrt(var)
    assert f'{cell.score:.1f} [{cell.ci_lo:.1f}, {cell.ci_hi:.1f}]' == cell.text(True)


def test_a_cell_on_few_clusters_prints_no_interval_and_says_why(tmp_path):
    rng = np.random.default_rng(2)
    _, cell = one_cell(tmp_path, 'nolima_main_1k', nolima_details(rng, 4, 30, [0.2, 0.5, 0.8, 0.9]), '1k')
    assert cell.ci_lo is None and cell.clusters == 4 < I.MIN_CLUSTERS
    assert cell.text(True) == f'{cell.score:.1f} [? 4 clusters]'


def test_an_effective_length_on_few_clusters_prints_no_interval_and_says_why(tmp_path):
    """Resampling 4 needle entries would print a tight effective-length interval that means nothing (1 cluster:
    every resample the same, '2k' with no caveat): the row's effective lengths get none, as its cells, and say why;
    ranked by effective length, such a row can take any rank."""
    rng = np.random.default_rng(3)
    abbrs = []
    for tier, p in (('1k', 0.97), ('2k', 0.95), ('4k', 0.4)):
        write_result(tmp_path, 'm', f'nolima_main_{tier}', nolima_details(rng, 4, 40, [p] * 4))
        abbrs.append(f'nolima_main_{tier}')
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], abbrs)
    (row,) = [r for r in report.rows if r.row == 'main']
    ruler = row.effective['ruler']
    assert ruler.contiguous == '2k' and ruler.interval is None and ruler.few_clusters == 4
    assert ruler.text() == '2k [? 4 clusters]' and ruler.to_dict('ruler')['few_clusters'] == 4
    assert row.effective['nolima'].interval is None
    from opencompass_longctx.leaderboard.compare import _span
    assert _span(ruler, 1000) == (-math.inf, math.inf)


def test_cells_at_0_and_100_percent_on_few_samples_print_bounds_inside_0_100(tmp_path):
    abbrs = []
    for k, tier in enumerate(('0k', '1k', '2k')):
        for t in range(1, 6):
            won = [False] * 20 if tier == '0k' else [True] * 20 if tier == '1k' else [i < 1 for i in range(20)]
            write_result(tmp_path, 'm', f'babilong_qa{t}_{tier}', [{'correct': w} for w in won])
            abbrs.append(f'babilong_qa{t}_{tier}')
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], abbrs)
    cells = [c for r in report.rows for c in r.cells.values() if c.status == 'ok']
    assert cells and all(0 <= c.ci_lo <= c.score <= c.ci_hi <= 100 for c in cells)
    assert {(c.score, c.ci_lo) for c in cells if c.score == 0} == {(0.0, 0.0)}
    assert {(c.score, c.ci_hi) for c in cells if c.score == 100} == {(100.0, 100.0)}
    for text in (formats.to_markdown(report), formats.to_csv(report), formats.to_json(report)):
        assert '-0.' not in text.replace('- (', '') and '100.1' not in text and 'nan' not in text.lower()


def test_a_nan_sample_makes_the_cell_missing_with_the_sample_named_never_nan_in_the_table(tmp_path):
    rng = np.random.default_rng(8)
    details = nolima_details(rng, 20, 10, [0.6] * 20)
    details[7]['correct'] = float('nan')
    path = tmp_path / 'results' / 'm' / 'nolima_main_1k.json'
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({'accuracy': 65.5, 'details': details, 'counts': {'n': 200, 'over_length': 0},
                                'package_version': rp.__version__}))
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], ['nolima_main_1k'])
    cells = {r.row: r.cells['1k'] for r in report.rows}
    assert cells['main'].status == 'missing' and 'sample 7 has correct = nan' in cells['main'].reason
    assert cells['main one-hop'].status != 'ok'        # the one-hop split does not count the NaN as correct
    for text in (formats.to_markdown(report), formats.to_csv(report), formats.to_json(report)):
        assert 'nan]' not in text and ' nan' not in text.replace('= nan', '')


def test_clusters_missing_from_old_results_fall_back_to_independent_samples_with_a_note(tmp_path):
    rng = np.random.default_rng(3)
    details = [{k: v for k, v in d.items() if k != 'entry_id'} for d in nolima_details(rng, 20, 10, [0.5] * 20)]
    report, cell = one_cell(tmp_path, 'nolima_main_1k', details, '1k')
    b = I.wilson(cell.score / 100, 200)
    assert cell.ci_method == 'wilson' and (cell.ci_lo, cell.ci_hi) == pytest.approx((b.lo, b.hi))
    assert any("do not name the clusters ('entry_id'" in n for n in report.notes)


def test_babilong_cells_stay_independent_and_the_effective_length_interval_holds_its_point(tmp_path):
    bench = bench_by_name('babilong')
    assert bench.cluster_of({}, 'qa1', 7) == bench.cluster_of({'x': 1}, 'qa1', 7) != bench.cluster_of({}, 'qa2', 7)
    rng = np.random.default_rng(9)
    abbrs = []
    for j, tier in enumerate(('0k', '1k', '2k', '4k')):
        for k in range(5):
            write_result(tmp_path, 'm', f'babilong_qa{k + 1}_{tier}',
                         [{'correct': bool(rng.random() < 0.95 - 0.05 * j)} for _ in range(100)])
            abbrs.append(f'babilong_qa{k + 1}_{tier}')
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], abbrs)
    row = [r for r in report.rows if r.row == 'qa1-qa5'][0]
    c = row.cells['1k']
    b = I.binomial_interval([(0.2, s / 100, 100) for s in c.tasks.values()])
    assert c.ci_method == 'wilson' and c.clusters == 500 and (c.ci_lo, c.ci_hi) == pytest.approx((b.lo, b.hi))
    order = ['<0k', '0k', '1k', '2k', '4k']
    lo, hi = row.effective['ruler'].interval
    assert order.index(lo) <= order.index(row.effective['ruler'].contiguous) <= order.index(hi)


def test_an_effective_length_interval_is_widened_to_hold_its_point():
    tiers = ['1k', '2k', '4k']
    assert holding_point(['<1k', '<1k'], '1k', tiers) == ['<1k', '1k']
    assert holding_point(['2k', '4k'], '1k', tiers) == ['1k', '4k']
    assert holding_point(['1k', '2k'], '2k', tiers) == ['1k', '2k']
    assert holding_point(None, '1k', tiers) is None
