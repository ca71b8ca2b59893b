"""Merges of run directories written by hand (no OpenCompass process): what a real leaderboard's history holds and
the merge must not lose (nothing shown twice, nothing dropped without a note): two spellings of one tier from two runs
of one model, a run resumed under an edited config (two config dumps), and a label that is another model's name."""
import json
import os

from opencompass_longctx import __version__
from opencompass_longctx.leaderboard.merge import build_merged, merge

BABILONG = 'opencompass_longctx.babilong.dataset.BabilongDataset'
TASKS = ('qa1', 'qa2', 'qa3', 'qa4', 'qa5')


def datasets(tier):
    return [dict(abbr=f'babilong_{t}_{tier}', type=BABILONG) for t in TASKS]


def write_run(root, stamp, models, dsets, acc, dump='run.py'):
    """A finished run: its config dump and a result of ``acc`` (4 samples) for every model and dataset."""
    run = os.path.join(str(root), stamp)
    os.makedirs(os.path.join(run, 'configs'), exist_ok=True)
    ms = [dict(type='opencompass_longctx.demo.tiny_chat.TinyChatModel', max_seq_len=100000, **m) for m in models]
    with open(os.path.join(run, 'configs', dump), 'w') as f:
        f.write(f'models = {ms!r}\ndatasets = {dsets!r}\n')
    for m in ms:
        for d in dsets:
            path = os.path.join(run, 'results', m['abbr'], f'{d["abbr"]}.json')
            os.makedirs(os.path.dirname(path), exist_ok=True)
            won = [i < round(4 * acc / 100) for i in range(4)]
            with open(path, 'w') as f:
                json.dump({'accuracy': acc, 'counts': {'n': 4, 'over_length': 0}, 'package_version': [__version__],
                           'details': [{'correct': [w]} for w in won]}, f)
    return run


def scores(merged):
    report = build_merged(merged, 85.6, 0.85)
    return {r.model: {t: c.score for t, c in r.cells.items()} for r in report.rows if r.bench == 'babilong'}


def test_one_models_cell_under_two_spellings_in_two_runs_is_the_newer_runs(tmp_path):
    old = write_run(tmp_path / 'a', '20260101_000000', [dict(abbr='m', path='/m')], datasets('4k'), 25.0)
    new = write_run(tmp_path / 'b', '20260104_000000', [dict(abbr='m', path='/m')], datasets('4K'), 100.0)
    merged = merge([old, new])
    assert scores(merged) == {'m': {'4k': 100.0}}
    (note,) = [n for n in merged.notes if 'another spelling' in n]
    assert f'5 cells in {old} and in {new}' in note and 'babilong_qa1_4k -> babilong_qa1_4K' in note


def test_a_run_resumed_under_an_edited_config_keeps_the_results_of_both_configs(tmp_path):
    run = write_run(tmp_path, '20260101_000000', [dict(abbr='m', path='/m')], datasets('4k'), 25.0,
                    dump='20260101_000000_111.py')
    write_run(tmp_path, '20260101_000000', [dict(abbr='m', path='/m')], datasets('8k'), 75.0,
              dump='20260102_090000_222.py')
    merged = merge([run])
    assert scores(merged) == {'m': {'4k': 25.0, '8k': 75.0}}
    assert any('2 saved configs' in n for n in merged.notes)


def test_a_model_dropped_from_the_config_before_it_ran_does_not_come_back(tmp_path):
    run = write_run(tmp_path, '20260101_000000', [dict(abbr='m', path='/m')], datasets('4k'), 25.0,
                    dump='20260101_000000_111.py')
    with open(os.path.join(run, 'configs', '20260101_000000_111.py'), 'a') as f:   # 'broken' was in it, never ran
        f.write("models.append(dict(type='opencompass_longctx.demo.tiny_chat.TinyChatModel', abbr='broken', "
                "path='/b', max_seq_len=100000))\n")
    write_run(tmp_path, '20260101_000000', [dict(abbr='m', path='/m')], datasets('8k'), 75.0,
              dump='20260102_090000_222.py')
    assert scores(merge([run])) == {'m': {'4k': 25.0, '8k': 75.0}}


def test_a_label_never_takes_the_name_of_another_model(tmp_path):
    """Two checkpoints named final get [e1] / [e2]; a third run's model is literally named 'final [e1]': three rows."""
    a = write_run(tmp_path / 'a', '20260101_000000', [dict(abbr='final', path='/e1/final')], datasets('4k'), 25.0)
    b = write_run(tmp_path / 'b', '20260102_000000', [dict(abbr='final', path='/e2/final')], datasets('4k'), 75.0)
    c = write_run(tmp_path / 'c', '20260103_000000', [dict(abbr='final [e1]', path='/zzz/other')], datasets('4k'),
                  100.0)
    assert scores(merge([a, b, c])) == {'final [e1] (2)': {'4k': 25.0}, 'final [e2]': {'4k': 75.0},
                                        'final [e1]': {'4k': 100.0}}


def test_an_unreadable_file_of_the_older_spelling_does_not_blank_the_newer_runs_cell(tmp_path):
    old = write_run(tmp_path / 'a', '20260101_000000', [dict(abbr='m', path='/m')], datasets('4k'), 25.0)
    with open(os.path.join(old, 'results', 'm', 'babilong_qa1_4k.json'), 'w') as f:
        f.write('{trunc')
    new = write_run(tmp_path / 'b', '20260104_000000', [dict(abbr='m', path='/m')], datasets('4K'), 100.0)
    assert scores(merge([old, new])) == {'m': {'4k': 100.0}}
