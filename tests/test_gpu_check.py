"""The GPU check (``longctx-gpu-check``, opencompass_longctx/gpucheck/) on the CPU: the Python version checked first,
the report saved at each measurement, the failure path with failing engine doubles (the real ``opencompass`` run,
whose exit status is 0, with the failed task's log tail copied and the verdict naming it; the throughput stage
through the leaderboard wrapper on LMDeploy's real pipeline), the MFU arithmetic, the parser of LMDeploy's engine log
lines (fed the real config classes' reprs, as LMDeploy 0.18 logs them), and the carried-wheelhouse recipe
(bench/build_gpu_wheelhouse.py, bench/gpu_check.sh)."""
import csv
import io
import json
import os
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import REPO
from opencompass_longctx.gpucheck import cli, environment, report as R, runlog, stages, throughput as T
sys.path.insert(0, str(REPO / 'bench'))
import build_gpu_wheelhouse as W  # noqa: E402


def _wheel(path):
    files = {'lmdeploy/__init__.py': b'__version__ = "0.18.0"\n',
             'lmdeploy/turbomind/__init__.py': b'',
             'lmdeploy/turbomind/_turbomind.cpython-312-x86_64-linux-gnu.so': b'\0' * 1000,
             'lmdeploy/turbomind/lib64/libxgrammar.a': b'\0' * 100,
             'lmdeploy-0.18.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: lmdeploy\nVersion: 0.18.0\n',
             'lmdeploy-0.18.0.dist-info/WHEEL': b'Wheel-Version: 1.0\nRoot-Is-Purelib: false\n'
                                                 b'Tag: cp312-cp312-manylinux_2_28_x86_64\n'}
    rows = [(n, W.record_hash(d), str(len(d))) for n, d in files.items()]
    buf = io.StringIO()
    csv.writer(buf, lineterminator='\n').writerows(rows + [('lmdeploy-0.18.0.dist-info/RECORD', '', '')])
    with zipfile.ZipFile(path, 'w') as z:
        for n, d in files.items():
            z.writestr(n, d)
        z.writestr('lmdeploy-0.18.0.dist-info/RECORD', buf.getvalue())


@pytest.mark.e2e
def test_strip_wheel_drops_turbomind_and_keeps_record_exact(tmp_path):
    src = tmp_path / 'src' / 'lmdeploy-0.18.0-cp312-cp312-manylinux_2_28_x86_64.whl'
    src.parent.mkdir()
    _wheel(src)
    (tmp_path / 'out').mkdir()
    out, dropped = W.strip_wheel(str(src), str(tmp_path / 'out'))
    assert sorted(dropped) == ['lmdeploy/turbomind/_turbomind.cpython-312-x86_64-linux-gnu.so',
                               'lmdeploy/turbomind/lib64/libxgrammar.a']
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        record = list(csv.reader(io.StringIO(z.read('lmdeploy-0.18.0.dist-info/RECORD').decode())))
        listed = {r[0] for r in record}
        assert listed == names                      # every member listed, nothing listed that is gone
        for name, digest, size in record:
            if digest:
                assert W.record_hash(z.read(name)) == digest and int(size) == len(z.read(name))
    target = tmp_path / 'site'
    # pip installs it as the GPU machine's would (CPython 3.12, manylinux), whatever Python runs the test
    subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--no-index', '--target', str(target),
                    '--python-version', '3.12', '--implementation', 'cp', '--platform', 'manylinux_2_28_x86_64',
                    '--only-binary=:all:', out], check=True)
    assert (target / 'lmdeploy' / 'turbomind' / '__init__.py').is_file()
    assert not list((target / 'lmdeploy' / 'turbomind').glob('_turbomind*'))



# ---------------------------------------------------------------------------------------------- the Python, first
def test_python_version_is_checked_against_what_gpu_install_installs():
    """3.10-3.12: LMDeploy 0.18.0 and torch 2.10.0 go to 3.14, but numpy<2 has no cp313 wheel and pyarrow==20.0.0
    none for cp314 (the pins make gpu-install installs)."""
    assert environment.check_python((3, 12, 3)) == [] and environment.check_python((3, 10, 0)) == []
    (py313,) = environment.check_python((3, 13, 1))
    assert '3.10 to 3.12' in py313 and 'numpy<2' in py313 and 'cp313' in py313
    (py314,) = environment.check_python((3, 14, 1))
    assert 'pyarrow==20.0.0' in py314 and 'make gpu-install PYTHON=python3.12' in py314
    (old,) = environment.check_python((3, 9, 18))
    assert 'Python 3.9.18' in old and '3.10 to 3.12' in old and 'LMDeploy 0.18.0' in old
    (new,) = environment.check_python((3, 15, 0))
    assert 'Python 3.15.0' in new and 'make gpu-install PYTHON=python3.12' in new
    # the carried wheelhouse: cp312 wheels only
    assert environment.check_python((3, 12, 9), exact='3.12') == []
    (cp,) = environment.check_python((3, 11, 7), exact='3.12')
    assert 'Python 3.11.7' in cp and 'cp312' in cp


def test_a_wrong_python_stops_the_check_before_anything_else(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(environment, 'python_version', lambda: (3, 9, 18))

    def never(*a, **k):
        raise AssertionError('the stack was checked after a failed Python check')
    monkeypatch.setattr(environment, 'check_stack', never)
    assert cli.main(['--out', str(tmp_path / 'out'), '--work', str(tmp_path / 'work')]) == 2
    data = json.loads((tmp_path / 'out' / 'gpu_check.json').read_text())
    assert list(data['stages']) == ['python'] and data['stages']['python']['status'] == 'failed'
    assert data['verdict'].startswith('VERDICT: nothing checked: Python 3.9.18')
    md = (tmp_path / 'out' / 'gpu_check.md').read_text()
    assert md.rstrip().splitlines()[-1] == data['verdict']             # the report ends with the verdict
    assert capsys.readouterr().out.rstrip().splitlines()[-1] == data['verdict']   # and so does the output


def test_gpu_work_of_the_check_runs_in_a_child_process():
    """The check's own process opens no CUDA context before the OpenCompass runs (its GPU query and the random
    weights run in a spawned child), so the engines find the GPU as free as the plan assumes."""
    assert environment.in_child(os.getpid) != os.getpid()
    assert environment.in_child(environment.check_python, (3, 9, 1)) == environment.check_python((3, 9, 1))
    # a spawned child of `python -m opencompass_longctx.gpucheck` imports that module as __mp_main__: no second check
    import runpy
    runpy.run_module('opencompass_longctx.gpucheck', run_name='__mp_main__')


def test_a_cpu_torch_is_named_with_what_to_do(tmp_path):
    """This machine's real stack (LMDeploy's Python unpacked, a CPU torch): the check stops at the stack stage."""
    pytest.importorskip('lmdeploy')
    assert cli.main(['--out', str(tmp_path / 'out'), '--work', str(tmp_path / 'work')]) == 2
    data = json.loads((tmp_path / 'out' / 'gpu_check.json').read_text())
    assert data['stages']['stack']['status'] == 'failed' and data['stages']['stack']['lmdeploy'] == '0.18.0'
    assert 'is fine; nothing checked: torch ' in data['verdict'] and 'CPU build' in data['verdict']
    assert 'make gpu-install' in data['verdict']
    assert 'model' not in data['stages']


@pytest.mark.e2e
def test_bench_script_checks_the_python_before_installing(tmp_path):
    """bench/gpu_check.sh: the package's own Python check, from the checkout, before the cp312 wheelhouse."""
    if sys.version_info[:2] == (3, 12):
        pytest.skip('this Python is the wheelhouse\'s')
    house = tmp_path / 'house'
    house.mkdir()
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path / 'out'), LONGCTX_WHEELHOUSE=str(house),
               LONGCTX_GPU_SITE=str(tmp_path / 'site'))
    proc = subprocess.run(['bash', str(REPO / 'bench' / 'gpu_check.sh')], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert 'cp312' in proc.stdout and 'no wheels' not in proc.stderr      # stopped before looking for wheels
    assert not (tmp_path / 'site').exists()
    data = json.loads((tmp_path / 'out' / 'gpu_check.json').read_text())
    assert 'cp312' in data['verdict'] and data['command'].startswith('longctx-gpu-check')


# ---------------------------------------------------------------------------------------------- the report
def test_each_measurement_is_saved_when_made_and_kept_when_the_stage_is_cut(tmp_path):
    out = tmp_path / 'out'
    report = R.Report(str(out), 'longctx-gpu-check', limits=dict(R.LIMITS, bench=5))
    seen = []

    def bench(rec):
        rec.add('prefill', {'tokens': 4096, 'seconds': 0.5, 'tokens_per_s': 8192.0, 'mfu': 0.41})
        seen.append(json.loads((out / 'gpu_check.json').read_text())['stages']['bench-pytorch'])
        rec.add('prefill', {'tokens': 32768, 'seconds': 5.0, 'tokens_per_s': 6553.6, 'mfu': 0.52})
        time.sleep(30)          # the 128k prompt that never ends: the stage's time limit (5 s) cuts it
    entry = report.stage('bench-pytorch', bench)
    assert seen[0]['prefill'] == [{'tokens': 4096, 'seconds': 0.5, 'tokens_per_s': 8192.0, 'mfu': 0.41}]
    assert seen[0]['status'] == 'running'
    assert entry['status'] == 'failed' and 'stage time limit of 5 s reached' in entry['error']
    assert entry['seconds'] < 15
    data = json.loads((out / 'gpu_check.json').read_text())
    assert [p['tokens'] for p in data['stages']['bench-pytorch']['prefill']] == [4096, 32768]
    md = (out / 'gpu_check.md').read_text()
    assert '| prefill | 4096 | 1 | - | its own pass, 1 new token | 0.500 | 8192 | 0.410 |' in md
    assert '| prefill | 32768 |' in md
    lines = [json.loads(x) for x in (out / 'gpu_check.jsonl').read_text().splitlines()]
    assert [x['prefill']['tokens'] for x in lines if 'prefill' in x] == [4096, 32768]
    line = report.finish()
    assert 'FAILS: PyTorch engine throughput (TimeoutError: stage time limit of 5 s reached; measured before it: ' \
           'prefill at 4k, 32k)' in line
    assert (out / 'gpu_check.md').read_text().rstrip().splitlines()[-1] == line
    assert not list(out.glob('*.tmp'))


def test_stage_limits_keep_inside_the_call(monkeypatch):
    now = 1000.0
    monkeypatch.setattr(R.time, 'time', lambda: now)
    limits = dict(R.LIMITS, model=90, data=40, opencompass=380, bench=110)
    assert R.stage_limit('model', ['data', 'opencompass-pytorch', 'bench-pytorch'], None, limits) == 90
    # 590 s left: the opencompass stage is cut only by the bench stage's reserve
    assert R.stage_limit('opencompass-pytorch', ['bench-pytorch'], now + 590, limits) == min(380,
                                                                                         590 - R.RESERVE['bench'])
    assert R.stage_limit('opencompass-pytorch', ['bench-pytorch'], now + 250, limits) == 250 - R.RESERVE['bench']
    assert R.stage_limit('bench-pytorch', [], now + 30, limits) == 30
    assert R.stage_limit('bench-pytorch', [], now - 5, limits) == 0


def test_stage_out_of_time_is_skipped_and_reported(tmp_path):
    report = R.Report(str(tmp_path), 'longctx-gpu-check', rehearse=True, deadline=time.time() + 2)
    entry = report.stage('model', lambda rec: {'never': 'run'})
    assert entry['status'] == 'skipped' and 'never' not in entry
    assert '| model | skipped |' in (tmp_path / 'gpu_check.md').read_text()
    assert 'not run: model directory (no time left in this run)' in report.finish()


def test_stage_result_may_set_its_status(tmp_path):
    report = R.Report(str(tmp_path), 'longctx-gpu-check', rehearse=True)
    entry = report.stage('data', lambda rec: {'status': 'failed', 'error': 'bands missing'})
    assert entry['status'] == 'failed' and entry['limit_s'] == R.LIMITS['data']
    assert 'FAILS: datasets (bands missing)' in report.finish()


def test_unknown_stage_and_bad_limits_are_refused(capsys):
    with pytest.raises(SystemExit):
        cli.main(['--stages', 'model,warmup'])
    assert "unknown stage(s) ['warmup']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(['--limits', 'opencompass=fast'])
    assert '--limits' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(['--engines', 'vllm'])
    assert '--engines' in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- MFU arithmetic
QWEN7B = json.loads((REPO / 'tests' / 'data' / 'model_configs' / 'qwen2.5-7b-instruct.json').read_text())


def test_the_model_directory_is_qwen25_7b_as_published():
    """The check writes Qwen2.5-7B-Instruct's config.json from the leaderboard row's geometry."""
    cfg = stages.model_config()
    assert {k: cfg[k] for k in QWEN7B} == QWEN7B


def test_mfu_counts_no_embedding_and_no_lm_head(tmp_path):
    h, layers, vocab, inter, kv = 3584, 28, 152064, 18944, 4 * 128
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * inter
    assert T.matmul_params(QWEN7B) == layers * per_layer == 6_525_288_448
    assert T.embedding_params(QWEN7B) == 2 * vocab * h            # untied: the table and lm_head
    # the same count as transformers' own Qwen2 class: every 2-D weight but the embedding and lm_head
    (tmp_path / 'config.json').write_text(json.dumps(stages.model_config()))
    shapes = stages.weight_shapes(str(tmp_path / 'config.json'))
    matmuls = sum(a * b for k, (a, b, *rest) in ((k, s) for k, s in shapes.items() if len(s) == 2)
                  if 'embed_tokens' not in k and 'lm_head' not in k)
    assert matmuls == T.matmul_params(QWEN7B)
    L = 4096
    flops = T.prefill_flops(QWEN7B, L)
    assert flops == 2 * layers * per_layer * L + 2 * layers * (28 * 128) * L * L
    assert T.mfu(flops, 0.25, 989) == pytest.approx(flops / 0.25 / 989e12)
    assert T.mfu(flops, 0.25, None) is None
    # counting all 7.6B parameters (the embedding and lm_head as per-token FLOPs) is about 15% high at 4k
    weights = 2.0 * sum(stages._numel(s) for s in shapes.values())
    high = T.planner_prefill_flops(QWEN7B, L, weights) / flops
    assert 1.14 < high < 1.17
    # and still 5.5% at 128k, where causal attention is half of the FLOPs
    assert 1.05 < T.planner_prefill_flops(QWEN7B, 131072, weights) / T.prefill_flops(QWEN7B, 131072) < 1.06
    # a decode step reads the weights less the embedding table, and the KV cache of each sequence
    kvpt = 2 * layers * kv * 2
    assert T.decode_step_bytes(QWEN7B, weights, 8, 4096) == weights - 2 * vocab * h + 8 * kvpt * 4096


def test_gpu_names_map_to_the_cost_models_gpus():
    assert T.gpu_key('NVIDIA H200') == 'H200-141GB'
    assert T.gpu_key('NVIDIA H100 80GB HBM3') == 'H100-80GB'
    assert T.gpu_key('NVIDIA A100-SXM4-80GB') == 'A100-80GB'
    assert T.gpu_key('NVIDIA A100-SXM4-40GB') is None and T.gpu_key('NVIDIA L4') is None


def test_a_gpu_not_in_the_table_is_planned_for_its_own_memory(capsys):
    args, _, _ = cli.parse(['--peak-tflops', '362', '--hbm-tbps', '2.0'])
    l40 = cli._gpu(args, {'gpu': 'NVIDIA L40S', 'gpu_memory_gib': 44.4})
    assert l40['key'] == 'this-gpu' and (l40['peak'], l40['hbm']) == (362, 2.0)
    assert l40['gpus']['this-gpu']['visible_memory_gib'] == 44.4 and 'as given' in l40['gpus']['this-gpu']['source']
    bare = cli._gpu(cli.parse([])[0], {'gpu': 'NVIDIA L40S', 'gpu_memory_gib': 44.4})
    assert bare['peak'] is None and 'mean nothing' in bare['gpus']['this-gpu']['source']
    h200 = cli._gpu(cli.parse([])[0], {'gpu': 'NVIDIA H200', 'gpu_memory_gib': 139.8})
    assert (h200['key'], h200['gpus'], h200['peak'], h200['hbm']) == ('H200-141GB', None, 989, 4.8)
    with pytest.raises(SystemExit):
        cli.parse(['--gpu', 'H300'])
    assert "--gpu: 'H300' is not in tables/cost_model.py GPUS" in capsys.readouterr().err


def test_bench_engine_fits_what_the_gpu_holds():
    weights = 15.23e9
    big = T.bench_engine(QWEN7B, weights, 139 * 1024 ** 3, 64, 'pytorch')
    assert big == T.BenchSize(131072, 64, list(T.LENGTHS))
    # 22 GiB free: no 128k sequence beside 14.2 GiB of weights (7 GiB of KV), a 32k one and a batch of 8 short ones
    small = T.bench_engine(QWEN7B, weights, 22 * 1024 ** 3, 8, 'turbomind')
    assert small == T.BenchSize(32768 + 512, 8, [4096, 32768])
    # the decode batch is cut to what the KV pool holds: 17 GiB free leave 2.25 GiB, 9 sequences of 4.3k tokens
    tight = T.bench_engine(QWEN7B, weights, 17 * 1024 ** 3, 64, 'turbomind')
    assert tight == T.BenchSize(32768 + 512, 9, [4096, 32768])
    assert T.bench_engine(QWEN7B, weights, 16 * 1024 ** 3, 64, 'turbomind').session_len == 4096 + 512
    with pytest.raises(RuntimeError, match='not even a 4608-token engine'):
        T.bench_engine(QWEN7B, weights, 14.3 * 1024 ** 3, 8, 'turbomind')


# ---------------------------------------------------------------------------------------------- failure paths
FAILING_DOUBLE = '''"""A failing engine double: LMDeploy's real pipeline; its engine fails to build (a CUDA error)."""
import lmdeploy_double as D


class FailingEngine(D.FakeEngine):
    def __init__(self, *args, **kwargs):
        raise RuntimeError('failing engine double: CUDA error: out of memory while allocating the KV cache')


class FailingEngineModel(D.RecordingTurboMindModel):
    def __init__(self, *args, **kwargs):
        D.FakeEngine = FailingEngine        # what the engine builders of lmdeploy_double construct
        super().__init__(*args, **kwargs)
'''


def _failing_config(tmp_path, tiny, babilong, gpu_memory_gib=1.0):
    return f'''from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.babilong.babilong_base import BABILONG_BASE
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
models = [dict(type='failing_double.FailingEngineModel', abbr='double-failing', path={tiny!r},
               meta_template=LONGCTX_META_TEMPLATE, backend='pytorch',
               engine_config=dict(tp=1, session_len=8192, max_batch_size=1), max_seq_len=8192, max_out_len=16,
               batch_size=1, gpu_memory_gib={gpu_memory_gib}, run_cfg=dict(num_gpus=1))]
datasets = [dict(BABILONG_BASE[0], tier=t, abbr=f"{{BABILONG_BASE[0]['abbr']}}_{{t}}", path={babilong!r},
                 num_samples=1) for t in ('0k', '1k')]
infer = dict(partitioner=dict(type=LongCtxPartitioner, bands=['0k', '1k']),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
work_dir = {str(tmp_path / 'work' / 'runs-pytorch')!r}
'''


@pytest.mark.e2e
def test_a_failing_engine_is_reported_with_its_log_tail_and_named_in_the_verdict(tmp_path, tiny_model_dir,
                                                                                demo_babilong):
    """The real opencompass command; the engine double fails to build in the infer task. OpenCompass exits 0: the
    check finds the failed datasets in the task logs, copies each failed task's log tail into the report and says
    in its verdict what failed and why."""
    pytest.importorskip('lmdeploy')
    doubles = tmp_path / 'doubles'
    doubles.mkdir()
    (doubles / 'failing_double.py').write_text(FAILING_DOUBLE)
    config = tmp_path / 'work' / 'eval_failing.py'
    config.parent.mkdir()
    config.write_text(_failing_config(tmp_path, tiny_model_dir, str(demo_babilong)))
    env = dict(os.environ, LMDEPLOY_LOG_LEVEL='INFO', CUDA_VISIBLE_DEVICES='0',
               PYTHONPATH=os.pathsep.join([str(doubles), str(REPO / 'tests' / 'doubles'),
                                           os.environ.get('PYTHONPATH', '')]))
    out = tmp_path / 'out'
    report = R.Report(str(out), 'longctx-gpu-check')
    entry = report.stage('opencompass-pytorch', stages.stage_opencompass, str(config),
                         str(tmp_path / 'work' / 'runs-pytorch'), env)
    assert entry['rc'] == 0                                   # OpenCompass says nothing went wrong
    assert entry['status'] == 'failed'
    assert sorted(f['dataset'] for f in entry['failed_tasks']) == ['babilong_qa1_0k', 'babilong_qa1_1k']
    assert {f['stage'] for f in entry['failed_tasks']} == {'infer'}
    assert all('failing engine double: CUDA error' in f['reason'] for f in entry['failed_tasks'])
    # LMDeploy was handed the plan's engine (logged before it builds), and none was built
    assert [b['session_len_input'] for b in entry['bands']] == [b['session_len_plan'] for b in entry['bands']]
    assert all(b['engines_built'] == 0 and b['predictions'] == 0 for b in entry['bands'])
    tails = entry['log_tails']
    assert tails and all(p.endswith('.out') for p in tails)
    assert any('Traceback (most recent call last)' in t and 'failing engine double' in t for t in tails.values())
    line = report.finish()
    assert 'FAILS: PyTorch engine through OpenCompass (2 failed task(s), first babilong_qa1_' in line
    assert 'RuntimeError: failing engine double: CUDA error: out of memory' in line
    assert 'BABILong 0 (0/2 datasets)' in line
    md = (out / 'gpu_check.md').read_text()
    assert "failed tasks (OpenCompass exited 0; the tail of each task's log)" in md
    assert 'raise RuntimeError(\'failing engine double' in md           # the tail itself, with the frame
    assert md.rstrip().splitlines()[-1] == line


@pytest.mark.e2e
def test_opencompass_stopping_before_its_tasks_is_the_reason_given(tmp_path, tiny_model_dir, demo_babilong):
    """The plan finds that no engine fits a 2 MiB GPU: OpenCompass stops (exit 2) before any task, and the verdict
    gives its exception, not the tasks that never started."""
    pytest.importorskip('lmdeploy')
    config = tmp_path / 'work' / 'eval_failing.py'
    config.parent.mkdir()
    config.write_text(_failing_config(tmp_path, tiny_model_dir, str(demo_babilong), gpu_memory_gib=0.002))
    report = R.Report(str(tmp_path / 'out'), 'longctx-gpu-check')
    entry = report.stage('opencompass-pytorch', stages.stage_opencompass, str(config),
                         str(tmp_path / 'work' / 'runs-pytorch'), dict(os.environ))
    assert entry['rc'] == 2 and entry['status'] == 'failed'
    assert 'RunCheckError: 2 problem(s) found before any task started' in entry['opencompass_error']
    line = report.finish()
    assert 'FAILS: PyTorch engine through OpenCompass (opencompass exited with 2: ' in line
    assert 'RunCheckError: 2 problem(s) found before any task started' in line


@pytest.mark.e2e
def test_an_opencompass_run_cut_at_the_stage_limit_still_reports_what_it_did(tmp_path, monkeypatch):
    """A run that outlives its stage: its progress is saved while it runs, it is killed at the limit, and its plan,
    the task that never finished and that task's log tail are in the report. (A stand-in for the opencompass
    command: it writes a run directory as OpenCompass would, then hangs, as an engine that never returns would.)"""
    runs = tmp_path / 'work' / 'runs-pytorch'
    run = runs / '20261202_120000'
    fake = tmp_path / 'fake_opencompass'
    plan = {'task_list': [{'model': 'm', 'band': '<= 32k', 'datasets': ['babilong_qa1_0k', 'babilong_qa1_4k'],
                           'rows': 2, 'prompt_tokens': 4200, 'gpu_hours': 0.01,
                           'engine': {'session_len': 8192, 'max_batch_size': 4, 'backend': 'pytorch'},
                           'seconds': {'start': 100.0, 'prefill': 1.0, 'decode': 2.0}}]}
    fake.write_text(f"""#!/bin/bash
mkdir -p {run}/plan {run}/predictions/m {run}/logs/infer/m
echo '{json.dumps(plan)}' > {run}/plan/longctx_plan.json
echo '{{"0": {{"prediction": "kitchen"}}}}' > {run}/predictions/m/babilong_qa1_0k.json
printf 'Task [m/babilong_qa1_0k,m/babilong_qa1_4k]\\nlmdeploy - INFO - session=1, input_tokens=3900, max_new_tokens=16\\n' \
  > {run}/logs/infer/m/babilong_qa1_0k.out
echo 'the 4k prompt is being served' >> {run}/logs/infer/m/babilong_qa1_0k.out
exec sleep 120
""")
    fake.chmod(0o755)
    monkeypatch.setattr(stages.sys, 'executable', str(fake))
    monkeypatch.setattr(stages, 'POLL_S', 1)
    report = R.Report(str(tmp_path / 'out'), 'longctx-gpu-check', limits=dict(R.LIMITS, opencompass=20))
    start = time.time()
    entry = report.stage('opencompass-pytorch', stages.stage_opencompass, str(tmp_path / 'eval.py'), str(runs),
                         dict(os.environ))
    assert time.time() - start < 15
    assert entry['rc'] == 'killed at the stage limit' and entry['status'] == 'failed'
    progress = [json.loads(x) for x in (tmp_path / 'out' / 'gpu_check.jsonl').read_text().splitlines()
                if 'running_s' in x]
    assert progress and progress[-1]['predictions_written'] == 1
    (band,) = entry['bands']
    assert band['predictions'] == 1 and band['datasets_missing'] == ['babilong_qa1_4k']
    assert band['engine_input_tokens'] == 3900 and band['engine_longest_need'] == 3916 and band['fits_session_len']
    evaluated, served = entry['failed_tasks']      # the 0k dataset was never evaluated, the 4k one never answered
    assert (evaluated['dataset'], evaluated['stage']) == ('babilong_qa1_0k', 'eval')
    assert 'the run was interrupted' in evaluated['reason']
    assert (served['dataset'], served['stage']) == ('babilong_qa1_4k', 'infer')
    assert 'was the task killed?' in served['reason']
    assert 'the 4k prompt is being served' in entry['log_tails'][served['log']]
    assert 'FAILS: PyTorch engine through OpenCompass (2 failed task(s), first babilong_qa1_0k: no result' \
           in report.finish()


@pytest.fixture
def engine_double(monkeypatch):
    """LMDeploy's real pipeline with the engine double (tests/doubles/lmdeploy_double.py), undone after the test."""
    lmdeploy = pytest.importorskip('lmdeploy')
    assert lmdeploy
    monkeypatch.syspath_prepend(str(REPO / 'tests' / 'doubles'))
    import lmdeploy_double
    for obj, name, value in lmdeploy_double.engine_patches():
        monkeypatch.setattr(obj, name, value, raising=False)
    monkeypatch.setattr(lmdeploy_double, '_NEXT', {})     # no fake-engine settings left from another test
    monkeypatch.setattr(T, 'LENGTHS', (256, 1024, 2048))
    monkeypatch.setattr(T, 'DECODE_CONTEXT', 512)
    return lmdeploy_double


def _wrapper_cfg(tiny, double, **fake):
    from opencompass_longctx.configs.meta_template import LONGCTX_META_TEMPLATE
    return dict(type=double.RecordingTurboMindModel, abbr='double', path=tiny, meta_template=LONGCTX_META_TEMPLATE,
                engine_config=dict(tp=1, cache_max_entry_count=0.8), gen_config=dict(do_sample=False),
                gpu_memory_gib=1.0, fake_engine=fake, max_out_len=16, batch_size=2, run_cfg=dict(num_gpus=1))


def test_throughput_through_the_wrapper_saves_each_measurement(tmp_path, tiny_model_dir, engine_double):
    report = R.Report(str(tmp_path), 'longctx-gpu-check')
    report.data['stages']['stack'] = {'status': 'ok', 'gpu': 'NVIDIA H200', 'python': '3.12.3'}
    report.data['gpu_key'] = 'H200-141GB'
    entry = report.stage('bench-pytorch', T.run_bench, _wrapper_cfg(tiny_model_dir, engine_double), 'pytorch', 2,
                         989.0, 4.8, 1024 ** 3)
    assert entry['status'] == 'ok', entry.get('traceback')
    assert entry['engine'] == {'session_len': 2048 + 512, 'max_batch_size': 2, 'lengths': [256, 1024, 2048],
                               'backend': 'pytorch', 'tp': 1}
    assert [p['tokens'] for p in entry['prefill']] == [256, 1024, 2048]    # LMDeploy's own count of each prompt
    assert all(p['mfu'] == pytest.approx(p['flops'] / p['seconds'] / 989e12) for p in entry['prefill'])
    assert [(d['context'], d['batch']) for d in entry['decode']] == [(512, 1), (512, 2)]
    # prefill: the engine's prefix cache is on (as the leaderboard runs it), but no prompt shares a block with another
    assert entry['prefix_caching'] == 'on'
    assert all(p['cache_checked'] and p['cached_tokens'] == 0 for p in entry['prefill'])
    # decode: timed from the streamed tokens, after every prefill, on fresh prompts
    for d in entry['decode']:
        assert d['streamed'] and d['seconds'] > 0 and 0 < d['window_tokens'] <= d['batch'] * T.DECODE_NEW
        assert d['generated'] == [T.DECODE_NEW] * d['batch'] and d['seconds'] < d['wall_s']
    lines = T.cost_model_lines(report.data)
    assert lines[0].startswith('# measured: gpu_check ')
    assert 'on one NVIDIA H200 (H200-141GB), pytorch engine' in lines[0]
    assert any(x.startswith('H200_141GB_PYTORCH_MEASURED = dict(prefill_mfu=') for x in lines)
    assert any(x.startswith("    calibrated_by='gpu_check ") for x in lines)
    assert 'PyTorch engine throughput at 256, 1k, 2k' in report.finish()


def test_an_engine_error_mid_bench_keeps_what_was_measured(tmp_path, tiny_model_dir, engine_double):
    """The double's third request gets INTERNAL_ENGINE_ERROR (warm-up, 256 ok; 1024 fails): the stage fails with
    LMDeploy's error, the 256-token prefill stays in the report, and the verdict says both."""
    report = R.Report(str(tmp_path), 'longctx-gpu-check')
    entry = report.stage('bench-pytorch', T.run_bench, _wrapper_cfg(tiny_model_dir, engine_double, error_every=3),
                         'pytorch', 2, 989.0, 4.8, 1024 ** 3)
    assert entry['status'] == 'failed' and 'LMDeploy answered 1 of 1 prompts with an error' in entry['error']
    assert entry['error'].startswith('RuntimeError: prefill of 1024 tokens: LMDeploy answered')
    assert [p['tokens'] for p in entry['prefill']] == [256]
    saved = json.loads((tmp_path / 'gpu_check.json').read_text())['stages']['bench-pytorch']
    assert [p['tokens'] for p in saved['prefill']] == [256]
    line = report.finish()
    assert 'FAILS: PyTorch engine throughput (RuntimeError: prefill of 1024 tokens: LMDeploy answered 1 of 1 prompts ' \
           'with an error' in line
    assert 'measured before it: prefill at 256)' in line


@pytest.mark.parametrize('engine', ['turbomind', 'pytorch'])
def test_bench_builds_the_leaderboard_row_from_the_checks_own_config(tmp_path, engine, engine_double):
    """The bench stage builds the wrapper from the config the opencompass stage runs (the leaderboard's
    qwen2.5-7b-instruct row on the chosen engine, run options removed as the infer task removes them), here on
    LMDeploy's real pipeline with the engine double, over a Qwen2.5 tokenizer directory (no weights: the preflight
    estimates them from config.json)."""
    from opencompass_longctx.tokenizer.qwen_dir import build
    model = tmp_path / 'model'
    build(str(model))
    (model / 'config.json').write_text(json.dumps(stages.model_config()))
    config = tmp_path / 'eval.py'
    config.write_text(stages.eval_config(str(model), str(tmp_path / 'data'), ['0k'], '4k', 1, engine,
                                         str(tmp_path / 'runs'), 'H200-141GB', None, 139))
    report = R.Report(str(tmp_path / 'out'), 'longctx-gpu-check')
    entry = report.stage(f'bench-{engine}', cli._bench, str(config), engine, 2, dict(peak=989.0, hbm=4.8), True)
    assert entry['status'] == 'ok', entry.get('traceback')
    assert entry['engine']['backend'] == engine and entry['engine']['lengths'] == [256, 1024, 2048]
    assert ('TurboMind' in entry['backend_reason']) == (engine == 'turbomind')
    assert [p['tokens'] for p in entry['prefill']] == [256, 1024, 2048]
    assert entry['matmul_params'] == T.matmul_params(stages.model_config())


DOUBLE_SITE = """# every process of the test run: LMDeploy's real pipeline with the engine double (tests/doubles/lmdeploy_double.py)
import sys
sys.path.insert(0, {doubles!r})
import lmdeploy_double
for obj, name, value in lmdeploy_double.engine_patches():
    setattr(obj, name, value)
"""


@pytest.mark.e2e
@pytest.mark.e2e   # cli.main runs the opencompass command, twice
def test_the_command_end_to_end_with_the_engine_double(tmp_path, monkeypatch, engine_double):
    """``longctx-gpu-check`` from its Python check to its verdict, on LMDeploy's real pipeline with the engine double
    standing in for TurboMind and the PyTorch engine (both 'available', as on a GPU machine with the full wheel) and
    a 139 GiB GPU standing in for CUDA: both engines serve all three benchmarks through the real opencompass command,
    the plan matches the engines, the bench measures, the verdict says what works."""
    from opencompass_longctx.tokenizer.qwen_dir import build
    model = tmp_path / 'model'
    build(str(model))
    (model / 'config.json').write_text(json.dumps(stages.model_config()))
    site = tmp_path / 'site'
    site.mkdir()
    (site / 'sitecustomize.py').write_text(DOUBLE_SITE.format(doubles=str(REPO / 'tests' / 'doubles')))
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join([str(site), os.environ.get('PYTHONPATH', '')]))
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    checked = environment.check_stack

    def stack(rehearse=False):          # this machine's real stack, with a GPU it does not have
        info, problems = checked(rehearse=True)
        return dict(info, gpu='NVIDIA H200', gpu_memory_gib=139.8, gpu_free_gib=139.3, gpus=1), problems
    monkeypatch.setattr(environment, 'check_stack', stack)
    config = stages.eval_config
    monkeypatch.setattr(stages, 'eval_config', lambda *a: config(*a[:-1], 139))
    monkeypatch.setattr(cli, '_free_bytes', lambda rehearse: 139 * 1024 ** 3)   # the bench engines' GPU
    out = tmp_path / 'out'
    rc = cli.main(['--out', str(out), '--work', str(tmp_path / 'work'), '--model-dir', str(model),
                   '--tiers', '0k', '--long-tier', '4k', '--prefix-tier', '250'])
    data = json.loads((out / 'gpu_check.json').read_text())
    assert rc == 0, data['verdict']
    assert data['stages']['stack']['engines'] == ['turbomind', 'pytorch']
    for engine in ('turbomind', 'pytorch'):
        (band,) = data['stages'][f'opencompass-{engine}']['bands']
        assert band['backend_engine'] == band['backend_plan'] == engine and band['engine_matches_plan']
        assert band['predictions'] == band['rows_plan'] and band['engine_prompts'] == band['rows_plan']
        assert band['token_counts_differ'] == 0 and band['fits_session_len']
        assert set(band['by_benchmark']) == {'babilong', 'longbio', 'nolima'}
        assert [p['tokens'] for p in data['stages'][f'bench-{engine}']['prefill']] == [256, 1024, 2048]
    # every row of the check's datasets measured as the inferencer measures it, within its band's engine
    rows = data['stages']['data']['datasets']
    assert rows and all(d['fits'] and d['longest_prompt'] + d['max_out_len'] <= d['session_len'] for d in rows)
    # the prefix cache on a NoLiMa batch: LMDeploy's cached_tokens (the double keeps LMDeploy's block trie and serves
    # one prompt after another, as the plan's model of it does), beside the plan's prediction, and the time saved
    for engine in ('turbomind', 'pytorch'):
        pre = data['stages'][f'prefix-{engine}']
        assert pre['status'] == 'ok' and pre['prompts'] == 26 and pre['cached_tokens'] > 0
        assert pre['hit_rate'] == pytest.approx(pre['predicted_share_trie'], abs=0.01)
        assert abs(pre['hit_rate'] - pre['predicted_share']) < 0.1 and pre['declared_share'] == 0.65
        assert pre['seconds_uncached'] > 0 and pre['seconds_cached'] > 0
        assert data['stages'][f'tp-{engine}']['status'] == 'skipped'       # one GPU
    line = data['verdict']
    assert line.startswith('VERDICT: works: ') and 'FAILS' not in line
    assert 'TurboMind prefix cache: hit rate ' in line and 'predicted by the plan' in line
    assert 'not run: TurboMind at tp > 1 (1 GPU(s) visible' in line
    assert 'TurboMind through OpenCompass: predictions BABILong' in line and 'NoLiMa' in line
    assert 'PyTorch engine throughput at 256, 1k, 2k' in line
    assert any(x.startswith('H200_141GB_TURBOMIND_MEASURED = dict(') for x in data['cost_model_lines'])
    assert (out / 'eval_gpu_check_turbomind.py').is_file()


# ---------------------------------------------------------------------------------------------- LMDeploy's log lines
def test_engine_log_parsed_from_lmdeploy_reprs():
    from lmdeploy import PytorchEngineConfig
    from lmdeploy.pytorch.config import CacheConfig
    backend = PytorchEngineConfig(session_len=36657, max_batch_size=50, cache_max_entry_count=0.8)
    cache = CacheConfig(max_batches=50, block_size=64, num_cpu_blocks=0, num_gpu_blocks=27511)
    # as lmdeploy/serve/core/async_engine.py:168 and pytorch/engine/executor/base.py:439 log them
    text = (f'2026-12-01 22:49:06,330 - lmdeploy - INFO - async_engine.py:168 - updated backend_config={backend}\n'
            f'2026-12-01 22:49:09,100 - lmdeploy - INFO - base.py:439 - Building CacheEngine with config: \n'
            f'{cache}.\n')
    engines = runlog.parse_engine_log(text)
    assert engines == [{'backend': 'pytorch', 'session_len': 36657, 'max_batch_size': 50, 'num_gpu_blocks': 27511,
                        'block_size': 64, 'max_batches': 50}]
    assert runlog.parse_engine_log(text.replace('updated backend_config', 'input backend_config')) == []


def test_turbomind_engine_and_request_counts_parsed_from_lmdeploy_lines():
    from lmdeploy import TurbomindEngineConfig
    tm = TurbomindEngineConfig(session_len=36657, max_batch_size=50, cache_max_entry_count=0.8)
    text = (f'2026-12-02 - lmdeploy - INFO - async_engine.py:133 - input backend=turbomind, backend_config={tm}\n'
            f'2026-12-02 - lmdeploy - INFO - async_engine.py:168 - updated backend_config={tm}\n'
            '2026-12-02 - lmdeploy - INFO - async_engine.py:578 - session=1, input_tokens=30001, '
            'max_new_tokens=64, prep=True\n'
            '2026-12-02 - lmdeploy - INFO - async_engine.py:578 - session=2, input_tokens=35000, '
            'max_new_tokens=192, prep=True\n')
    assert runlog.parse_engine_log(text) == [{'backend': 'turbomind', 'session_len': 36657, 'max_batch_size': 50}]
    assert runlog.parse_engine_inputs(text)[0]['backend'] == 'turbomind'
    assert runlog.engine_requests(text) == {'engine_prompts': 2, 'engine_input_tokens': 65001,
                                            'engine_longest_need': 35192}


def test_engine_inputs_parsed_from_lmdeploy_reprs():
    """What the package handed LMDeploy (logged before the engine is built: a rehearsal has it too)."""
    from lmdeploy import PytorchEngineConfig
    hf = {'max_position_embeddings': 131072,
          'rope_scaling': {'rope_type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 32768}}
    long = PytorchEngineConfig(session_len=131072, max_batch_size=13, hf_overrides=hf)
    short = PytorchEngineConfig(session_len=32768, max_batch_size=55)
    text = ''.join(f'2026-12-02 01:23:54,992 - lmdeploy - INFO - async_engine.py:133 - input backend=pytorch, '
                   f'backend_config={c}\n' for c in (short, long))
    got = runlog.parse_engine_inputs(text)
    assert [(g['session_len'], g['max_batch_size']) for g in got] == [(32768, 55), (131072, 13)]
    assert got[0]['hf_overrides'] == 'None' and "'factor': 4.0" in got[1]['hf_overrides']
    assert runlog.parse_engine_log(text) == []          # not an engine built
    assert got[0]['backend'] == 'pytorch'


def _bands(**over):
    b = dict(band='<= 32k', session_len_plan=32768, max_batch_size_plan=55, session_len_input=32768,
             max_batch_size_input=55, engines_built=1, engine_matches_plan=True, datasets_missing=[])
    b.update(over)
    return [b, dict(b, band='32k-128k', session_len_plan=131072, session_len_input=131072)]


def test_rehearsal_run_judged_by_its_bands():
    bands = _bands(engines_built=0, engine_matches_plan=None, datasets_missing=['x'])
    assert stages.judge_run({'bands': bands, 'rehearsal_stops': ['<= 32k', '32k-128k']}, True)['status'] == \
        'rehearsal stop'
    assert stages.judge_run({'bands': bands, 'rehearsal_stops': ['<= 32k']}, True)['status'] == 'failed'
    wrong = _bands(max_batch_size_input=4)
    assert stages.judge_run({'bands': wrong, 'rehearsal_stops': ['<= 32k', '32k-128k']}, True)['status'] == 'failed'
    assert stages.judge_run({'bands': []}, True)['status'] == 'failed'


def test_device_run_judged_by_its_bands():
    assert stages.judge_run({'bands': _bands()}, False)['status'] == 'ok'
    missing = stages.judge_run({'bands': _bands(datasets_missing=['babilong_qa1_0k'])}, False)
    assert missing['status'] == 'failed' and '<= 32k' in missing['error']
    assert stages.judge_run({'bands': _bands(engines_built=0)}, False)['status'] == 'failed'
    # the engine's own count of a prompt and its answer over the plan's session_len
    over = stages.judge_run({'bands': _bands(fits_session_len=False, engine_longest_need=33000)}, False)
    assert over['status'] == 'failed' and '<= 32k: 33000 > 32768' in over['error']
    failed = stages.judge_run({'bands': _bands(), 'failed_tasks': [dict(
        model='m', dataset='nolima_main_4k', stage='eval', reason='KeyError: gold', log='x.out')]}, False)
    assert failed['status'] == 'failed' and 'nolima_main_4k (eval): KeyError: gold' in failed['error']


def test_verdict_of_a_run_that_works():
    served = {'babilong': {'predictions': 16, 'datasets': 16, 'datasets_written': 16},
              'nolima': {'predictions': 7, 'datasets': 3, 'datasets_written': 3}}
    band = dict(_bands()[0], by_benchmark=served, engine_prompts=23, token_counts_differ=0)
    data = {'stages': {
        'python': {'status': 'ok', 'python': '3.12.3'},
        'stack': {'status': 'ok', 'python': '3.12.3', 'lmdeploy': '0.18.0', 'torch': '2.10.0+cu128',
                  'torch_cuda': '12.8', 'gpu': 'NVIDIA H100 80GB HBM3'},
        'model': {'status': 'ok'}, 'data': {'status': 'ok'},
        'opencompass-turbomind': {'status': 'ok', 'bands': [band]},
        'opencompass-pytorch': {'status': 'skipped'},
        'bench-turbomind': {'status': 'ok', 'prefill': [{'tokens': 4095, 'mfu': 0.512}, {'tokens': 130560,
                                                                                         'mfu': 0.6}]}}}
    line = R.verdict(data)
    assert line == ("VERDICT: works: Python 3.12.3, LMDeploy 0.18.0, torch 2.10.0+cu128 (CUDA 12.8) on NVIDIA H100 "
                    "80GB HBM3; model directory; datasets; TurboMind through OpenCompass: predictions BABILong 16 "
                    "(16/16 datasets), NoLiMa 7 (3/3 datasets), the engine's token counts of 23 prompts as the "
                    "check's, engines as planned; TurboMind throughput at 4k, 128k (prefill MFU 0.51/0.60) | "
                    "not run: PyTorch engine through OpenCompass (no time left)")
    data['stages']['stack']['warnings'] = ['packages built for 2 CUDA major versions are installed together']
    assert R.verdict(data).endswith('| warning: packages built for 2 CUDA major versions are installed together')


def test_tiktoken_files_taken_from_the_litellm_wheel(tmp_path, monkeypatch):
    """Without litellm installed (a bare Python here), the two vocabulary files come out of its wheel."""
    import hashlib
    from opencompass_longctx.tokenizer import counting as T
    data = {b: f'{b} ranks\n'.encode() for b in W.TIKTOKEN_BASES}
    for b in W.TIKTOKEN_BASES:
        monkeypatch.setitem(T.TIKTOKEN_FILES, b, (f'sha1-of-{b}', hashlib.sha256(data[b]).hexdigest()))

    def not_found(base):
        raise T.TokenizerError(base)
    monkeypatch.setattr(T, 'find_tiktoken_file', not_found)
    cache = tmp_path / 'cache'
    cache.mkdir()
    with zipfile.ZipFile(cache / 'litellm-1.83.0-py3-none-any.whl', 'w') as z:
        for b in W.TIKTOKEN_BASES:
            z.writestr(f'litellm/litellm_core_utils/tokenizers/sha1-of-{b}', data[b])
    assert W.copy_tiktoken_files(str(tmp_path / 'tiktoken'), str(cache)) == list(W.TIKTOKEN_BASES)
    for b in W.TIKTOKEN_BASES:
        assert (tmp_path / 'tiktoken' / f'sha1-of-{b}').read_bytes() == data[b]
    monkeypatch.setitem(T.TIKTOKEN_FILES, 'p50k_base', ('sha1-of-p50k_base', '0' * 64))
    with pytest.raises(SystemExit, match='sha256 differs'):
        W.copy_tiktoken_files(str(tmp_path / 'tiktoken2'), str(cache))


def test_rehearsal_sitecustomize_is_valid_python(tmp_path):
    site = stages.rehearsal_site(str(tmp_path))
    src = open(os.path.join(site, 'sitecustomize.py'), encoding='utf-8').read()
    compile(src, 'sitecustomize.py', 'exec')
    assert R.REHEARSAL_MARK in src and 'torch.cuda.Stream = Stream' in src


def test_complete_weights_are_reused(tmp_path):
    shapes = {'a.weight': (2, 3), 'b.bias': (3,)}
    assert stages.existing_weights(str(tmp_path), shapes) is None
    (tmp_path / 'model-00001.safetensors').write_bytes(b'x')
    (tmp_path / 'model.safetensors.index.json').write_text(
        '{"weight_map": {"a.weight": "model-00001.safetensors", "b.bias": "model-00001.safetensors"}}')
    assert stages.existing_weights(str(tmp_path), shapes)['weights_reused'] is True
    assert stages.existing_weights(str(tmp_path), dict(shapes, c=(1,))) is None
    (tmp_path / 'model-00001.safetensors').unlink()
    assert stages.existing_weights(str(tmp_path), shapes) is None


# ---------------------------------------------------------------------------------------------- issue 38
def test_a_pass_served_by_the_prefix_cache_is_an_error_not_a_figure(tmp_path, tiny_model_dir, engine_double):
    """The bench engine keeps prefix caching on (as the leaderboard runs it); its own prompts are keyed so that none
    shares a block, and a prompt sent twice is served from the cache: that pass is refused, never timed."""
    report = R.Report(str(tmp_path), 'longctx-gpu-check')
    kept = {}
    entry = report.stage('bench-pytorch', T.run_bench, _wrapper_cfg(tiny_model_dir, engine_double), 'pytorch', 2,
                         989.0, 4.8, 1024 ** 3, None, kept)
    assert entry['status'] == 'ok', entry.get('traceback')
    engine = kept['engine']
    try:
        assert engine.prefix_caching
        prompt = engine.prompt(512, 'again')
        secs, res = T.timed_pass(engine, [prompt], 1, 'first')
        T._uncached(res, 'first')                        # a key of its own: nothing cached
        secs, res = T.timed_pass(engine, [prompt], 1, 'second')
        assert res[0].cached_tokens == 448              # 7 full blocks of 64, the last token always computed
        with pytest.raises(T.CacheServedError, match='second: the prefix cache served 448 prompt tokens'):
            T._uncached(res, 'second')
    finally:
        engine.close()


def test_decode_is_timed_from_the_last_first_token_to_the_last_token():
    # (seconds since the pass began, request, tokens generated so far): request 1's prefill ends at 0.5 s
    events = [(0.1, 0, 1), (0.2, 0, 2), (0.5, 1, 1), (0.6, 0, 3), (0.6, 1, 2), (0.9, 0, 4), (0.9, 1, 3), (1.2, 1, 4)]
    w = T.decode_window(events, 2, 4)
    assert w['seconds'] == pytest.approx(0.7) and w['window_tokens'] == (4 - 2) + (4 - 1)
    assert w['generated'] == [4, 4] and w['steps'] == 2.5
    with pytest.raises(RuntimeError, match='no decode was timed'):      # every token at once: no time, no figure
        T.decode_window([(0.3, 0, 1), (0.3, 0, 8)], 1, 8)
    with pytest.raises(RuntimeError, match='1 of 2 requests produced no token'):
        T.decode_window([(0.3, 0, 1), (0.4, 0, 2)], 2, 2)


def test_the_cost_model_reads_only_passes_timed_apart():
    stage = {'status': 'ok', 'engine_start_s': 61.0,
             'prefill': [{'tokens': 4096, 'seconds': 0.5, 'tokens_per_s': 8192.0, 'mfu': 0.41, 'planner_mfu': 0.5,
                          'cache_checked': True, 'cached_tokens': 0},
                         {'tokens': 32768, 'seconds': 3.0, 'tokens_per_s': 10922.0, 'mfu': 0.9, 'planner_mfu': 1.0}],
             'decode': [{'batch': 1, 'seconds': 1.0, 'window_tokens': 128, 'bw_efficiency': 0.7, 'streamed': True},
                        {'batch': 8, 'seconds': 1e-9, 'window_tokens': 1024, 'bw_efficiency': 99.0}]}
    data = {'date': '2026-12-04 10:00 UTC', 'command': 'longctx-gpu-check', 'gpu_key': 'H200-141GB',
            'stages': {'stack': {'gpu': 'NVIDIA H200'}, 'bench-pytorch': stage}}
    pre, dec = T.calibration_passes(stage)
    assert [p['tokens'] for p in pre] == [4096] and [d['batch'] for d in dec] == [1]
    lines = T.cost_model_lines(data)
    assert '# 2 pass(es) left out: not timed apart or served by the prefix cache' in lines
    assert 'H200_141GB_PYTORCH_MEASURED = dict(prefill_mfu=0.410,   # mean over the lengths above' in lines
    assert any(x.startswith('    decode_bw_efficiency=0.700,') for x in lines)
    assert "    calibrated_by='gpu_check 2026-12-04 10:00 UTC on one NVIDIA H200 (H200-141GB), pytorch engine, " \
           "`longctx-gpu-check`'," in lines
    # the table takes it: calibrated_by is a cost-model entry, and the plan's cost line names the run
    from opencompass_longctx.plan.cost import cost_model
    assert cost_model(dict(prefill_mfu=0.41, calibrated_by='gpu_check X'))['calibrated_by'] == 'gpu_check X'


def test_the_pytorch_engine_needs_a_c_compiler_and_python_h(tmp_path, monkeypatch):
    import sysconfig
    monkeypatch.delenv('CC', raising=False)
    monkeypatch.setenv('PATH', str(tmp_path))                     # no gcc, no clang
    monkeypatch.setattr(sysconfig, 'get_paths', lambda *a, **k: {'include': str(tmp_path / 'include')})
    info, problems = environment.check_build_tools()
    assert info == {'c_compiler': None, 'python_h': None}
    v = environment.python_version()
    assert 'apt-get install gcc' in problems[0] and f'apt-get install python{v[0]}.{v[1]}-dev' in problems[1]
    (tmp_path / 'include').mkdir()
    (tmp_path / 'include' / 'Python.h').write_text('')
    monkeypatch.setenv('CC', '/usr/bin/cc')
    assert environment.check_build_tools() == ({'c_compiler': '/usr/bin/cc',
                                                'python_h': str(tmp_path / 'include' / 'Python.h')}, [])
    # the check then fails every PyTorch-engine stage with those packages, without running it
    assert cli._blocked(None, problems)['error'].startswith('the PyTorch engine cannot build its kernels here: no C')


def test_markdown_cells_keep_their_columns():
    data = {'rehearse': False, 'date': 'd', 'command': 'c', 'stages': {
        'bench-pytorch': {'status': 'failed', 'seconds': 1.0, 'error': 'RuntimeError: a | b\nsecond line'}}}
    row = next(x for x in R.to_markdown(data).splitlines() if x.startswith('| bench-pytorch'))
    assert row == '| bench-pytorch | failed | 1.0 | RuntimeError: a \\| b |'
    assert R.row('x|y', 'p\nq', 0.5, None) == '| x\\|y | p q | 0.500 | - |'


def test_the_prefix_stage_predicts_what_the_plan_would():
    from opencompass_longctx.gpucheck.prefix import predicted
    book = list(range(1000, 1640))                  # 640 shared tokens: 10 full blocks
    ids = [book + [1], book + [2, 3], list(range(5000, 5200))]
    texts = ['b' * 640 + 'x', 'b' * 640 + 'yz', 'c' * 200]
    got = predicted(texts, ids)
    assert got['predicted_share_trie'] == pytest.approx(640 / (641 + 642 + 200))
    assert got['predicted_share'] == pytest.approx(640 / (641 + 642 + 200))


def test_the_data_stage_fails_on_rows_that_would_not_be_sent(tmp_path):
    """LongBioBench fills its prompt to the tier: at 32k, without the example's reserve_tokens, prompts + the answer
    exceed the 32768 engine of the short band and would be held back; the check's own config carries
    reserve_tokens, and the data stage measures every row as the inferencer would and fails on any that does not
    fit."""
    from opencompass_longctx.tokenizer.qwen_dir import build
    model = tmp_path / 'model'
    build(str(model))
    (model / 'config.json').write_text(json.dumps(stages.model_config()))
    text = stages.eval_config(str(model), str(tmp_path / 'data'), ['32k'], '64k', 4, 'pytorch',
                              str(tmp_path / 'runs'), 'H200-141GB', None, 139)
    assert 'reserve_tokens=LONGBIO_RESERVE_TOKENS' in text
    keep = "\ndatasets = [d for d in datasets if d['abbr'] == 'longbio_standard_32k']\n"
    ok_cfg, bad_cfg = tmp_path / 'ok.py', tmp_path / 'bad.py'
    ok_cfg.write_text(text + keep)
    bad_cfg.write_text(text + keep + "datasets = [dict(d, reserve_tokens=0) for d in datasets]\n")
    report = R.Report(str(tmp_path / 'out'), 'longctx-gpu-check', rehearse=True)
    ok = report.stage('data', stages.stage_data, str(ok_cfg))
    assert ok['status'] == 'ok', ok.get('error') or ok.get('traceback')
    (row,) = ok['datasets']
    assert row['rows'] == 4 and row['fits'] and row['session_len'] == 32768
    assert row['longest_prompt'] + row['max_out_len'] <= 32768
    assert '| longbio_standard_32k | <= 32k | 4 |' in (tmp_path / 'out' / 'gpu_check.md').read_text()
    bad = R.Report(str(tmp_path / 'bad'), 'longctx-gpu-check', rehearse=True).stage('data', stages.stage_data,
                                                                                 str(bad_cfg))
    (row,) = bad['datasets']
    assert bad['status'] == 'failed' and row['over_engine'] >= 1 and not row['fits']
    assert 'longbio_standard_32k: ' in bad['error'] and 'exceed the <= 32k engine (32768 tokens' in bad['error']
