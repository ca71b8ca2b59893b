"""Preemption and resume through the real `opencompass` command with the tiny model (LocalRunner): a task killed
with SIGKILL in the middle of a dataset, then `-r`. Datasets already finished are not run again, the interrupted
dataset continues from OpenCompass's saved batches (tmp_*.jsonl; the test marks a saved prediction and finds the
mark in the final file), every other prediction equals an uninterrupted run's byte for byte, the plan of the
resumed run (`--dry-run -r` and `-r`) says what is done and what is left, and a resume of a finished run starts no
inference task. The Slurm variant (scancel) is in test_slurm.py."""
import json
import os
import signal
from pathlib import Path

import pytest

pytest.register_assert_rewrite('cluster_runs')   # its asserts report as the tests' own; a plugin of this module
from cluster_runs import (LOCAL, assert_resumed_predictions, finish, interrupted_state, mark_prediction,  # noqa: E402
                          mark_saved_batch, plan_of, run, run_dir, start_gated)
from opencompass_longctx.run import resume  # noqa: E402

pytest_plugins = ['cluster_runs']
TINY_ONLY = {'LONGCTX_TEST_MODELS': 'tiny-chat', 'LONGCTX_TEST_TIERS': '0k'}   # one task: six datasets of 2
GATE_AT = 4          # the tiny model stops before its 4th batch: its task's first dataset is done, the second has 1
                     # saved batch, the others have not started


@pytest.mark.e2e
def test_killed_task_resumes_from_its_saved_batches(tmp_path, leaderboard_inputs, reference_run):
    env = dict(leaderboard_inputs, **TINY_ONLY)
    proc, held = start_gated(LOCAL, tmp_path, env, GATE_AT)
    os.kill(held['pid'], signal.SIGKILL)                                 # preempted in the middle of a dataset
    finish(proc, tmp_path)
    run_path = run_dir(tmp_path)
    task, finished, (partial, tmp), todo = interrupted_state(run_path)
    saved_lines = tmp.read_text().splitlines()
    assert len(saved_lines) == held['batches_done'] - 2 * len(finished) == 1
    assert finished and todo                    # finished, interrupted and not started datasets in one task
    saved_idx = mark_saved_batch(tmp)
    mark_prediction(Path(run_path) / 'predictions' / 'tiny-chat' / f'{finished[0]}.json')
    logs_before = {p: p.stat().st_mtime_ns for p in Path(run_path, 'logs', 'infer').rglob('*.out')}

    # the plan of the resumed run, before it runs: what is done and what is left
    dry = run(LOCAL, tmp_path, env, '-r', '--dry-run')
    left = plan_of(run_path)['resume']
    assert left['resumed'] is True
    (band,) = [b for b in left['bands'] if b['band'] == task['band']]
    assert band['datasets_done'] == len(finished) and band['datasets_partial'] == 1
    assert band['datasets_left'] == 1 + len(todo) and band['tasks_left'] == 1
    assert band['samples_done'] == 2 * len(finished) + 1 and band['saved_samples'] == 1
    assert band['samples_left'] == 2 * (len(task['datasets']) - len(finished)) - 1
    assert left['partial'] == [{'model': 'tiny-chat', 'dataset': partial, 'saved': 1, 'rows': 2,
                                'tmp': f'tiny-chat/tmp_{partial}.jsonl'}]
    assert '## Resumed run: done and left' in dry.stdout and f'tiny-chat/{partial}: 1 of 2 samples saved' in dry.stdout
    assert band['prompt_tokens_left'] > 0

    # the resumed run: only the interrupted task runs, from its saved batches
    out = run(LOCAL, tmp_path, env, '-r').stdout
    plan = plan_of(run_path)
    assert plan['tasks'] == 1 and plan['task_list'][0]['datasets'] == [partial, *todo]
    assert plan['resume']['bands'] == left['bands']                       # the real run planned what the dry run said
    assert 'Partitioned into 1 tasks' in out
    assert_resumed_predictions(run_path, reference_run['dir'], task['datasets'], partial, saved_idx, finished[0])
    for p, mtime in logs_before.items():
        if p.stem not in task['datasets']:
            assert p.stat().st_mtime_ns == mtime, f'{p} was run again'

    # a resume of the finished run starts no inference task
    again = run(LOCAL, tmp_path, env, '-r').stdout
    final = plan_of(run_path)
    assert final['tasks'] == 0 and final['task_list'] == []
    assert final['resume']['total']['datasets_left'] == 0
    assert final['resume']['total']['datasets_done'] == len(task['datasets']) == 6
    assert 'Partitioned into 0 tasks' in again


def test_left_gpu_hours_of_an_lmdeploy_plan(tmp_path):
    """A finished dataset leaves nothing, a dataset with half its samples saved leaves what a dataset of the other
    half would cost (the plan of such a run, made independently), an unreadable tmp file saves nothing (OpenCompass
    moves it aside and starts the dataset over)."""
    from opencompass_longctx import plan as P
    from opencompass_longctx.configs.datasets.nolima.nolima_base import NOLIMA_BASE
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    row = LONGCTX_LMDEPLOY_MODELS[0]
    model = {'abbr': row['abbr'], 'path': f"models/{row['abbr']}", 'engine_config': {'tp': 2},
             'max_seq_len': 40000, 'max_out_len': 64, 'run_cfg': {'num_gpus': 2}, 'declared_geometry': {'arch': row['arch']}}

    def nolima(tier, pairs):
        return dict(NOLIMA_BASE[0], tier=tier, abbr=f'nolima_main_{tier}', pairs=pairs, haystacks=[0],
                    depth_indices=[0, 1, 2, 3])

    pred = tmp_path / 'predictions'
    folder = pred / row['abbr']
    folder.mkdir(parents=True)
    (folder / 'nolima_main_4k.json').write_text('{}')                                  # finished
    (folder / 'tmp_nolima_main_8k.jsonl').write_text(                                  # 4 of its 8 samples saved
        ''.join(json.dumps({'idx': str(i), 'prediction': 'x'}) + '\n' for i in range(4)))
    (folder / 'tmp_nolima_main_16k.jsonl').write_text('{"idx": "0"}\n{"idx": ')        # cut mid-line by the kill
    combos = [{'models': [model], 'datasets': [nolima('4k', 1), nolima('8k', 2), nolima('16k', 1)]}]
    plan = P.make_plan(combos, bands=['32k'], out_dir=str(pred))
    (task,) = plan['tasks']
    assert task.seconds['costed'] and task.datasets == ['nolima_main_8k', 'nolima_main_16k']
    entries = resume.progress(combos, plan, str(pred), bands=['32k'])
    assert [(e.state, e.rows, e.saved) for e in entries] == [('done', 4, 4), ('partial', 8, 4), ('todo', 4, 0)]
    summary = resume.summarize(entries, plan)
    (band,) = summary['bands']
    # the same run with the 8k dataset's other half only, planned from scratch
    half = [{'models': [model], 'datasets': [nolima('8k', 1), nolima('16k', 1)]}]
    (other,) = P.make_plan(half, bands=['32k'])['tasks']
    assert band['gpu_hours_left'] < task.gpu_hours
    assert abs(band['gpu_hours_left'] - other.gpu_hours) < 1e-12
    assert band['prompt_tokens_left'] == other.prompt_tokens
    assert (band['datasets_done'], band['datasets_partial'], band['datasets_left']) == (1, 1, 2)
    assert (band['samples_done'], band['saved_samples'], band['samples_left']) == (8, 4, 8)
    assert any('tmp_nolima_main_16k.jsonl cannot be read' in n and 'moves it aside' in n for n in summary['notes'])
    md = resume.to_markdown(summary)
    assert f"| {row['abbr']} | <= 32k | 1 | 1 | 8 (4) | 2 (1) | 8 |" in md
    assert f"{band['gpu_hours_left']:.2f} |" in md
    assert f"{row['abbr']}/nolima_main_8k: 4 of 8 samples saved ({row['abbr']}/tmp_nolima_main_8k.jsonl)" in md
