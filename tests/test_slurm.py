"""OpenCompass's SlurmRunner for real, on a one-node Slurm cluster started by the test session
(tests/slurm_cluster.py): the reduced CPU leaderboard (the tiny chat model and the rule reader, two tier bands,
three benchmarks) runs every task as a Slurm job (count = the plan's tasks, read from the cluster's job completion
log) and gives the tier table of the same config's LocalRunner run; a task whose job is cancelled (scancel) in
the middle of a dataset resumes with `-r` from its saved batches; the plan shows each task's srun request and
checks the partition and its GPUs with sinfo."""
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.register_assert_rewrite('cluster_runs', 'slurm_cluster')   # plugins of this module (below)
from cluster_runs import (LOCAL, SLURM, assert_resumed_predictions, finish, interrupted_state,  # noqa: E402
                          mark_prediction, mark_saved_batch, plan_of, predictions, run, run_dir, start_gated,
                          tier_table)
from conftest import assert_clean_logs, run_opencompass  # noqa: E402
from opencompass_longctx.run import cluster  # noqa: E402
from opencompass_longctx.models.engine_plan import EnginePlan  # noqa: E402

pytest_plugins = ['slurm_cluster', 'cluster_runs']
JOB_RECORD_WAIT_S = 30


def new_jobs(slurm, before: int, expected: int):
    """The jobs finished since ``before`` (waiting a little for the completion log to hold ``expected``)."""
    deadline = time.time() + JOB_RECORD_WAIT_S
    while len(slurm.jobs()) - before < expected and time.time() < deadline:
        time.sleep(0.5)
    assert not slurm.running(), slurm.running()
    return slurm.jobs()[before:]


def task_job_name(task) -> str:
    """The job name SlurmRunner gives an inference task (OpenCompass's task abbr)."""
    return 'OpenICLInfer[' + ','.join(f"{task['model']}/{d}" for d in task['datasets']) + ']'


@pytest.mark.e2e
@pytest.mark.slurm
def test_leaderboard_runs_as_slurm_jobs_and_gives_the_local_tier_table(tmp_path, slurm_cluster, leaderboard_inputs,
                                                                      reference_run):
    env = slurm_cluster.env(leaderboard_inputs)
    before = len(slurm_cluster.jobs())
    t0 = time.time()
    proc = run(SLURM, tmp_path, env)
    seconds = time.time() - t0
    run_path = run_dir(tmp_path)
    assert_clean_logs(run_path)
    plan = plan_of(run_path)
    assert plan['tasks'] == 4 and plan['problems'] == []                 # 2 models x 2 bands
    jobs = new_jobs(slurm_cluster, before, plan['tasks'] + 2)
    infer = [j for j in jobs if j['Name'].startswith('OpenICLInfer[')]
    evals = [j for j in jobs if j['Name'].startswith('OpenICLEval[')]
    # every inference task ran as one Slurm job, and nothing else ran: the plan's tasks, no retry, no failure
    assert sorted(j['Name'] for j in infer) == sorted(task_job_name(t) for t in plan['task_list'])
    assert len(infer) + len(evals) == len(jobs) and len(evals) == 2     # one evaluation job per model
    assert all(j['JobState'] == 'COMPLETED' and j['ExitCode'] == '0:0' for j in jobs), jobs
    assert {j['Partition'] for j in jobs} == {'longctx'}
    # the GPU request: the plan's srun line per task, and the jobs got what it asked for (the rule reader: 1 GPU)
    requests = {(r['model'], r['band']): r for r in plan['cluster_requests']}
    for t in plan['task_list']:
        r = requests[(t['model'], t['band'])]
        assert r['gpus'] == t['gpus'] == (1 if t['model'] == 'rule-reader' else 0)
        assert r['srun'] == ('srun -p longctx --gres=gpu:1 -N1 -u' if r['gpus'] else 'srun -p longctx -N1 -u')
        (job,) = [j for j in infer if j['Name'] == task_job_name(t)]
        assert slurm_cluster.job_gpus()[job['JobId']] == str(r['gpus']), slurm_cluster.job_gpus()
    assert '## Cluster requests (SlurmRunner)' in proc.stdout and '`srun -p longctx --gres=gpu:1 -N1 -u`' in proc.stdout
    # the same tier table and the same predictions as the LocalRunner run of the same config
    assert tier_table(run_path) == tier_table(reference_run['dir'])
    for model in ('tiny-chat', 'rule-reader'):
        assert predictions(run_path, model) == predictions(reference_run['dir'], model)
    print(f'\nslurm cluster start {slurm_cluster.started_s:.1f} s; LocalRunner run {reference_run["seconds"]:.0f} s; '
          f'SlurmRunner run {seconds:.0f} s; {len(infer)} inference jobs for {plan["tasks"]} planned tasks')


@pytest.mark.e2e
@pytest.mark.slurm
def test_a_cancelled_job_resumes_from_its_saved_batches(tmp_path, slurm_cluster, leaderboard_inputs, reference_run):
    env = dict(slurm_cluster.env(leaderboard_inputs), LONGCTX_TEST_MODELS='tiny-chat', LONGCTX_TEST_TIERS='0k')
    before = len(slurm_cluster.jobs())
    proc, held = start_gated(SLURM, tmp_path, env, gate_at=4)
    assert held['slurm_job_id'], 'the gated task did not run as a Slurm job'
    slurm_cluster.run('scancel', held['slurm_job_id'])
    finish(proc, tmp_path)
    run_path = run_dir(tmp_path)
    jobs = new_jobs(slurm_cluster, before, 2)                  # the cancelled task and the evaluation
    (cancelled,) = [j for j in jobs if j['JobId'] == held['slurm_job_id']]
    assert cancelled['JobState'] == 'CANCELLED'
    task, finished, (partial, tmp), todo = interrupted_state(run_path)
    assert len(tmp.read_text().splitlines()) == held['batches_done'] - 2 * len(finished) >= 1
    saved_idx = mark_saved_batch(tmp)
    mark_prediction(Path(run_path) / 'predictions' / 'tiny-chat' / f'{finished[0]}.json')

    before = len(slurm_cluster.jobs())
    out = run(SLURM, tmp_path, env, '-r').stdout
    plan = plan_of(run_path)
    assert plan['tasks'] == 1 and plan['resume']['partial'][0]['dataset'] == partial
    assert f'tiny-chat/{partial}: 1 of 2 samples saved' in out
    jobs = new_jobs(slurm_cluster, before, 2)
    infer = [j for j in jobs if j['Name'].startswith('OpenICLInfer[')]
    # one job: the interrupted task, with the datasets it had not finished
    assert [j['Name'] for j in infer] == [f'OpenICLInfer[tiny-chat/{partial}' + ''.join(
        f',tiny-chat/{d}' for d in todo) + ']']
    assert all(j['JobState'] == 'COMPLETED' for j in jobs), jobs
    assert_resumed_predictions(run_path, reference_run['dir'], task['datasets'], partial, saved_idx, finished[0])

    # a resume of the finished run queues no job at all
    before = len(slurm_cluster.jobs())
    run(SLURM, tmp_path, env, '-r')
    assert plan_of(run_path)['tasks'] == 0
    time.sleep(2)
    assert slurm_cluster.jobs()[before:] == []


def _plan(*gpus):
    return {'tasks': [SimpleNamespace(model=f'm{i}', band='<= 32k', shard=0, shards=1, gpus=g, engine=EnginePlan(session_len=32768, tp=g))
                      for i, g in enumerate(gpus)]}


@pytest.mark.slurm
def test_the_plan_checks_the_partition_and_its_gpus_with_sinfo(slurm_cluster, monkeypatch):
    for k, v in slurm_cluster.env().items():
        monkeypatch.setenv(k, v)
    runner = {'type': 'SlurmRunner', 'partition': 'longctx', 'qos': 'normal'}
    reqs = cluster.requests(_plan(0, 2, 4), runner)
    assert [r['tp'] for r in reqs] == [0, 2, 4]                  # each task's engine
    assert [r['srun'] for r in reqs] == ['srun -p longctx --qos=normal -N1 -u',
                                         'srun -p longctx --qos=normal --gres=gpu:2 -N1 -u',
                                         'srun -p longctx --qos=normal --gres=gpu:4 -N1 -u']
    assert cluster.node_gpus('longctx') == {slurm_cluster.host: 2}
    problems, notes = cluster.problems({'infer': runner, 'eval': None}, reqs)
    (p,) = problems
    assert p['where'] == ['m2 <= 32k'] and 'ask for 4 GPUs' in p['problem'] and 'more than 2' in p['problem']
    assert notes == []
    # no partition named: the default one (sinfo marks it) is checked
    assert cluster.problems({'infer': {'type': 'SlurmRunner'}}, cluster.requests(_plan(2), {'type': 'SlurmRunner'})) \
        == ([], [])
    # a partition that does not exist, for inference or evaluation
    (p,) = cluster.problems({'eval': dict(runner, partition='nosuch')}, [])[0]
    assert "partition 'nosuch' does not exist" in p['problem'] and 'sinfo lists longctx' in p['problem']
    # quotatype is an option of patched srun builds: stock srun does not know it
    (p,) = cluster.problems({'infer': dict(runner, quotatype='auto')}, [])[0]
    assert 'does not know' in p['problem'] and 'quotatype' in p['problem']
    # no sinfo on the PATH: nothing is checked, and the plan says so
    monkeypatch.setenv('PATH', '/nonexistent')
    assert cluster.problems({'infer': runner}, reqs)[0] == []
    assert 'sinfo is not on the PATH' in cluster.problems({'infer': runner}, reqs)[1][0]


@pytest.mark.e2e
@pytest.mark.slurm
def test_a_partition_that_does_not_exist_stops_the_run_before_any_job(tmp_path, slurm_cluster, leaderboard_inputs):
    env = dict(slurm_cluster.env(leaderboard_inputs), LONGCTX_SLURM_PARTITION='gpu-a100')
    before = len(slurm_cluster.jobs())
    proc = run_opencompass([str(SLURM), '-w', 'out'], tmp_path, env)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "infer runner: Slurm partition 'gpu-a100' does not exist on this cluster (sinfo lists longctx)" in text
    assert 'problem(s) found before any task started' in text
    assert slurm_cluster.jobs()[before:] == [] and not slurm_cluster.running()


@pytest.mark.e2e
def test_opencompass_slurm_flag_is_warned_about(tmp_path, leaderboard_inputs):
    """`opencompass --slurm` drops LongCtxPartitioner (and its plan): the package says so as soon as it is imported."""
    config = LOCAL.with_name('cluster_slurm_flag.py')        # LongCtxPartitioner without options
    proc = run_opencompass([str(config), '-w', 'out', '--slurm', '-p', 'longctx', '--dry-run'], tmp_path,
                           dict(leaderboard_inputs, LONGCTX_TEST_TIERS='0k'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert cluster.SLURM_FLAG_WARNING in proc.stderr
    assert not os.path.exists(os.path.join(run_dir(tmp_path), 'plan'))      # indeed no plan was made
    assert cluster.slurm_flag_used(['/venv/bin/opencompass', 'c.py', '--slu'])
    assert not cluster.slurm_flag_used(['/venv/bin/opencompass', 'c.py', '--dry-run'])
    assert not cluster.slurm_flag_used([sys.executable, 'tasks.py', '--slurm'])
    quiet = subprocess.run([sys.executable, '-c', 'import opencompass_longctx'], capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stderr == ''
