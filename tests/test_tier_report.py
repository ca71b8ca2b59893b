"""The typed tier report (opencompass_longctx.leaderboard.tier_report): built once, each shown cell's interval made
once, and serialised to the keys ``longctx_report.json`` has always had."""
import json

from opencompass_longctx.demo.synthetic_run import write_run
from opencompass_longctx.leaderboard import units
from opencompass_longctx.leaderboard.merge import build_merged, merge
from opencompass_longctx.writers.formats import to_json

TIERS = {'babilong': ['0k', '1k'], 'nolima': ['250', '1k'], 'longbio': ['0k', '2k']}


def _report(tmp_path):
    run = write_run(str(tmp_path / 'run' / '20261204_000000'), ['a', 'b'],
                    lambda m, b, t: 0.9 - 0.2 * (m == 'b') - 0.1 * TIERS[b].index(t), TIERS, samples=12, entries=12,
                    per_entry=3)
    return build_merged(merge([run]), 85.6, 0.85)


def test_each_shown_cell_has_its_interval_made_once(tmp_path, monkeypatch):
    made = []
    real = units._interval
    monkeypatch.setattr(units, '_interval', lambda found: made.append(found) or real(found))
    report = _report(tmp_path)
    scored = {id(c): c for r in report.rows for c in r.cells.values() if c.status == 'ok'}
    assert scored and len(made) == len(scored)           # one interval per cell the table shows, none for another
    assert all(c.ci_method in ('wilson', 'clustered') for c in scored.values())


def test_the_json_is_the_reports_serialisation_with_the_files_keys(tmp_path):
    report = _report(tmp_path)
    data = json.loads(to_json(report))
    assert data == json.loads(json.dumps(report.to_dict()))
    assert set(data) == {'bench_tiers', 'depth', 'failures', 'fingerprints', 'footnotes', 'merge_notes',
                         'model_identities', 'models_without_published_counterpart', 'nolima_ratio', 'notes',
                         'package_version', 'partial', 'references', 'rows', 'ruler_threshold', 'runs', 'tiers',
                         'unplaced'}
    row = data['rows'][0]
    assert set(row) == {'model', 'bench', 'row', 'cells', 'mean', 'mean_note', 'effective', 'published_name',
                        'published', 'datasets'}
    assert set(next(iter(row['cells'].values()))) == {'score', 'ci_lo', 'ci_hi', 'n', 'status', 'reason', 'tasks',
                                                      'cells_used', 'cells_total', 'marks', 'ci_method', 'clusters'}
    assert set(row['effective']['nolima']) == {'contiguous', 'raw', 'base', 'threshold', 'interval'}
    assert set(row['effective']['ruler']) == {'contiguous', 'raw', 'threshold', 'interval'}
    assert data['bench_tiers'] == TIERS and set(data['depth']) == {'nolima'}
