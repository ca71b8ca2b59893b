"""The tier table's intervals, by simulation and on result files: coverage on NoLiMa's structure (58 needle entries
x 130 prompts per tier, each entry's accuracy logit-normal) and on independent BABILong-like data; the cells and
rows that report.build makes from result files; the effective length's interval; the clusters each benchmark
declares."""
import json

import numpy as np
import pytest

from opencompass_longctx.summarizers import formats
from opencompass_longctx.summarizers import table as rp
from opencompass_longctx.summarizers.metrics import (MIN_CLUSTERS, cluster_contributions, cluster_halfwidth,
                                                     mean_with_ci)
from opencompass_longctx.summarizers.rows import bench_by_name
ENTRIES, PER_ENTRY, REPS = 58, 130, 2000
# 2,000 replications: the coverage estimate's standard error at 95% is 0.49 points; 93-97% is +-4 of them


def nolima_tier(rng, reps, sd, center=0.0):
    """Per-entry (correct, count) of ``reps`` NoLiMa-like tiers: entry accuracy expit(N(center, sd))."""
    p = 1 / (1 + np.exp(-rng.normal(center, sd, (reps, ENTRIES))))
    return rng.binomial(PER_ENTRY, p).astype(float), np.full((reps, ENTRIES), PER_ENTRY)


@pytest.mark.parametrize('sd', [0.0, 0.5, 1.0, 2.0])
def test_the_clustered_interval_covers_95_percent_on_nolima_structure(sd):
    rng = np.random.default_rng(int(sd * 10) + 7)
    sums, counts = nolima_tier(rng, REPS, sd)
    est = 100 * sums.sum(1) / counts.sum(1)
    half = cluster_halfwidth(cluster_contributions(sums, counts))
    coverage = np.mean(np.abs(est - 50.0) <= half)          # the truth: expit(N(0, sd)) has mean 50% by symmetry
    assert 0.93 <= coverage <= 0.97, (sd, coverage)
    # what the binomial interval over 7,540 "independent" samples covers (the table before): far too little
    naive = np.array([mean_with_ci([(e, ENTRIES * PER_ENTRY)])[1] for e in est[:400]])
    naive_cov = np.mean(np.abs(est[:400] - 50.0) <= naive)
    if sd >= 1:
        assert naive_cov < 0.6 and np.mean(half) > 4 * np.mean(naive), (naive_cov, np.mean(half), np.mean(naive))


def test_the_binomial_interval_covers_95_percent_on_independent_babilong_like_rows():
    """qa1-qa5 at one tier, 100 independent stories per task: the row's mean of five accuracies."""
    rng = np.random.default_rng(11)
    truth = np.array([0.9, 0.7, 0.55, 0.35, 0.6])
    won = rng.random((REPS, 5, 100)) < truth[None, :, None]
    scores = 100 * won.mean(axis=2)
    halves = np.array([mean_with_ci([(s, 100) for s in row])[1] for row in scores])
    coverage = np.mean(np.abs(scores.mean(axis=1) - 100 * truth.mean()) <= halves)
    assert 0.93 <= coverage <= 0.97, coverage


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


def nolima_details(rng, entries, per_entry, p_entry):
    return [{'entry_id': f'e{e}', 'pair': f'e{e}-onehop', 'correct': bool(rng.random() < p_entry[e]),
             'haystack': f'book{k % 5}', 'over_length': False}
            for e in range(entries) for k in range(per_entry)]


def test_a_nolima_cell_from_result_files_rests_on_its_needle_entries(tmp_path):
    rng = np.random.default_rng(5)
    p_entry = 1 / (1 + np.exp(-rng.normal(0, 1.5, ENTRIES)))
    abbrs = []
    for tier in ('250', '500', '1k', '4k'):
        details = nolima_details(rng, ENTRIES, 26, p_entry)
        write_result(tmp_path, 'm', f'nolima_main_{tier}', details)
        abbrs.append(f'nolima_main_{tier}')
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], abbrs)
    (row,) = [r for r in report['rows'] if r.row == 'main']
    cell = row.cells['4k']
    assert cell.ci_method == 'clustered' and cell.clusters == ENTRIES and cell.n == ENTRIES * 26
    # by hand: CR1 over the entries, t with 57 degrees of freedom
    details = json.loads((tmp_path / 'results/m/nolima_main_4k.json').read_text())['details']
    y = np.array([d['correct'] for d in details], dtype=float).reshape(ENTRIES, 26)
    t_c = (y - y.mean()).sum(axis=1) / y.size
    from scipy.stats import t
    assert cell.ci95 == pytest.approx(100 * t.ppf(0.975, ENTRIES - 1) * np.sqrt(58 / 57 * np.sum(t_c ** 2)))
    assert cell.ci95 > 2 * mean_with_ci([(cell.score, cell.n)])[1]   # wider than the independent-sample interval
    # the split rows (one-hop) rest on the same entries; the written table says how many
    assert row.effective['nolima']['interval'] is not None
    md = formats.to_markdown(report)
    assert f'm/nolima/main/4k: n={ENTRIES * 26} in {ENTRIES} clusters' in md
    assert 'nolima: clustered by needle entry' in md
    csv_rows = [r for r in formats.to_csv(report).splitlines() if r.startswith('m,nolima,main,4k,')]
    assert csv_rows and csv_rows[0].endswith(f',clustered,{ENTRIES}')
    assert 'units' not in json.loads(formats.to_json(report))['rows'][0]['cells']['4k']   # bookkeeping not written


def test_a_cell_on_few_clusters_prints_no_interval_and_says_why(tmp_path):
    rng = np.random.default_rng(2)
    write_result(tmp_path, 'm', 'nolima_main_1k', nolima_details(rng, 4, 30, [0.2, 0.5, 0.8, 0.9]))
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], ['nolima_main_1k'])
    cell = [r for r in report['rows'] if r.row == 'main'][0].cells['1k']
    assert cell.ci95 is None and cell.clusters == 4 < MIN_CLUSTERS
    assert cell.text(True) == f'{cell.score:.1f} ±? (4 clusters)'


def test_clusters_missing_from_old_results_fall_back_to_independent_samples_with_a_note(tmp_path):
    rng = np.random.default_rng(3)
    details = [{k: v for k, v in d.items() if k != 'entry_id'} for d in nolima_details(rng, 20, 10, [0.5] * 20)]
    write_result(tmp_path, 'm', 'nolima_main_1k', details)
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], ['nolima_main_1k'])
    cell = [r for r in report['rows'] if r.row == 'main'][0].cells['1k']
    assert cell.ci_method == 'binomial' and cell.ci95 == pytest.approx(mean_with_ci([(cell.score, 200)])[1])
    assert any("do not name the clusters ('entry_id'" in n for n in report['notes'])


def babilong_run(work, model, p_story, tiers=('0k', '1k', '2k', '4k'), decay=0.0, seed=0):
    """qa1-qa5 at each tier, story i of a task the same at every tier (as the released files): a story's chance
    p_story[task, i], lower by ``decay`` per tier."""
    rng = np.random.default_rng(seed)
    abbrs = []
    for j, tier in enumerate(tiers):
        for k in range(5):
            p = np.clip(p_story[k] - decay * j, 0, 1)
            write_result(work, model, f'babilong_qa{k + 1}_{tier}',
                         [{'correct': bool(rng.random() < q)} for q in p])
            abbrs.append(f'babilong_qa{k + 1}_{tier}')
    return abbrs


def test_babilong_cells_stay_binomial_and_its_effective_length_resamples_stories_across_tiers(tmp_path):
    bench = bench_by_name('babilong')
    assert bench.cluster_of({}, 'qa1', 7) == bench.cluster_of({'x': 1}, 'qa1', 7) != bench.cluster_of({}, 'qa2', 7)
    rng = np.random.default_rng(9)
    p_story = rng.uniform(0.7, 1.0, (5, 100))
    abbrs = babilong_run(tmp_path, 'm', p_story, decay=0.05)
    report = rp.build(str(tmp_path), [rp.ModelInfo('m', 32768)], abbrs)
    row = [r for r in report['rows'] if r.row == 'qa1-qa5'][0]
    c = row.cells['1k']
    # every story is one sample of a tier: the binomial interval of the mean of the five tasks, as before
    assert c.ci_method == 'binomial' and c.clusters == 500
    assert c.ci95 == pytest.approx(mean_with_ci([(row.cells['1k'].tasks[t], 100) for t in c.tasks])[1])
    lo, hi = row.effective['ruler']['interval']
    order = ['<0k', '0k', '1k', '2k', '4k']
    assert order.index(lo) <= order.index(row.effective['ruler']['contiguous']) <= order.index(hi)


def test_two_models_apart_by_noise_at_the_deciding_tier_get_overlapping_effective_length_intervals(tmp_path):
    """The issue's case: equal true scores right at the threshold at one tier; the point effective lengths may
    differ, the intervals overlap."""
    p_story = np.full((5, 100), 0.9)
    a = babilong_run(tmp_path, 'a', p_story, tiers=('0k', '1k', '2k'), decay=0.0222, seed=1)
    babilong_run(tmp_path, 'b', p_story, tiers=('0k', '1k', '2k'), decay=0.0222, seed=2)
    report = rp.build(str(tmp_path), [rp.ModelInfo('a', 32768), rp.ModelInfo('b', 32768)], a)
    effs = {r.model: r.effective['ruler'] for r in report['rows'] if r.row == 'qa1-qa5'}
    order = ['<0k', '0k', '1k', '2k']
    spans = {m: (order.index(e['interval'][0]), order.index(e['interval'][1])) for m, e in effs.items()}
    assert spans['a'][0] <= spans['b'][1] and spans['b'][0] <= spans['a'][1], effs
    assert all(lo < hi for lo, hi in spans.values()), effs   # the deciding tier is uncertain: a real range
