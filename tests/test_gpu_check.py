"""The GPU check's CPU parts: the LMDeploy wheel repack, and the parser of LMDeploy's engine log lines (fed the
real config classes' reprs, as LMDeploy 0.18 logs them)."""
import csv
import io
import os
import subprocess
import sys
import zipfile

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'bench')
sys.path.insert(0, BENCH)
import build_gpu_wheelhouse as W  # noqa: E402
import gpu_check as G  # noqa: E402


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


def test_engine_log_parsed_from_lmdeploy_reprs():
    from lmdeploy import PytorchEngineConfig
    from lmdeploy.pytorch.config import CacheConfig
    backend = PytorchEngineConfig(session_len=36657, max_batch_size=50, cache_max_entry_count=0.8)
    cache = CacheConfig(max_batches=50, block_size=64, num_cpu_blocks=0, num_gpu_blocks=27511)
    # as lmdeploy/serve/core/async_engine.py:168 and pytorch/engine/executor/base.py:439 log them
    text = (f'2026-12-01 22:49:06,330 - lmdeploy - INFO - async_engine.py:168 - updated backend_config={backend}\n'
            f'2026-12-01 22:49:09,100 - lmdeploy - INFO - base.py:439 - Building CacheEngine with config: \n'
            f'{cache}.\n')
    engines = G.parse_engine_log(text)
    assert engines == [{'session_len': 36657, 'max_batch_size': 50, 'num_gpu_blocks': 27511, 'block_size': 64,
                        'max_batches': 50}]
    assert G.parse_engine_log(text.replace('updated backend_config', 'input backend_config')) == []


def test_unknown_stage_is_refused(capsys):
    with pytest.raises(SystemExit):
        G.main(['--stages', 'env,warmup'])
    assert "unknown stage(s) ['warmup']" in capsys.readouterr().err


def test_engine_inputs_parsed_from_lmdeploy_reprs():
    """What the package handed LMDeploy (logged before the engine is built: a rehearsal has it too)."""
    from lmdeploy import PytorchEngineConfig
    hf = {'max_position_embeddings': 131072,
          'rope_scaling': {'rope_type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 32768}}
    long = PytorchEngineConfig(session_len=131072, max_batch_size=13, hf_overrides=hf)
    short = PytorchEngineConfig(session_len=32768, max_batch_size=55)
    text = ''.join(f'2026-12-02 01:23:54,992 - lmdeploy - INFO - async_engine.py:133 - input backend=pytorch, '
                   f'backend_config={c}\n' for c in (short, long))
    got = G.parse_engine_inputs(text)
    assert [(g['session_len'], g['max_batch_size']) for g in got] == [(32768, 55), (131072, 13)]
    assert got[0]['hf_overrides'] == 'None' and "'factor': 4.0" in got[1]['hf_overrides']
    assert G.parse_engine_log(text) == []          # not an engine built


def _bands(**over):
    b = dict(band='<= 32k', session_len_plan=32768, max_batch_size_plan=55, session_len_input=32768,
             max_batch_size_input=55, engines_built=1, engine_matches_plan=True, datasets_missing=[])
    b.update(over)
    return [b, dict(b, band='32k-128k', session_len_plan=131072, session_len_input=131072)]


def test_rehearsal_run_judged_by_its_bands():
    bands = _bands(engines_built=0, engine_matches_plan=None, datasets_missing=['x'])
    assert G.judge_run({'bands': bands, 'rehearsal_stops': ['<= 32k', '32k-128k']}, True)['status'] == \
        'rehearsal stop'
    assert G.judge_run({'bands': bands, 'rehearsal_stops': ['<= 32k']}, True)['status'] == 'failed'
    wrong = _bands(max_batch_size_input=4)
    assert G.judge_run({'bands': wrong, 'rehearsal_stops': ['<= 32k', '32k-128k']}, True)['status'] == 'failed'
    assert G.judge_run({'bands': []}, True)['status'] == 'failed'


def test_device_run_judged_by_its_bands():
    assert G.judge_run({'bands': _bands()}, False)['status'] == 'ok'
    missing = G.judge_run({'bands': _bands(datasets_missing=['babilong_qa1_0k'])}, False)
    assert missing['status'] == 'failed' and '<= 32k' in missing['error']
    assert G.judge_run({'bands': _bands(engines_built=0)}, False)['status'] == 'failed'


def test_stage_limits_keep_inside_the_device_call(monkeypatch):
    now = 1000.0
    monkeypatch.setattr(G.time, 'time', lambda: now)
    assert G.stage_limit('model', ['data', 'opencompass', 'bench'], None) == G.LIMITS['model']
    # 590 s left: the opencompass stage is cut only by the bench stage's reserve
    assert G.stage_limit('opencompass', ['bench'], now + 590) == min(G.LIMITS['opencompass'],
                                                                     590 - G.RESERVE['bench'])
    assert G.stage_limit('opencompass', ['bench'], now + 250) == 250 - G.RESERVE['bench']
    assert G.stage_limit('bench', [], now + 30) == 30
    assert G.stage_limit('bench', [], now - 5) == 0


def test_stage_out_of_time_is_skipped_and_reported(tmp_path):
    report = G.Report(str(tmp_path), rehearse=True, deadline=G.time.time() + 2)
    entry = report.stage('env', lambda: {'never': 'run'})
    assert entry['status'] == 'skipped' and 'never' not in entry
    assert '| env | skipped |' in (tmp_path / 'gpu_check.md').read_text()


def test_stage_result_may_set_its_status(tmp_path):
    report = G.Report(str(tmp_path), rehearse=True)
    entry = report.stage('data', lambda: {'status': 'failed', 'error': 'bands missing'})
    assert entry['status'] == 'failed' and entry['limit_s'] == G.LIMITS['data']


def test_bad_limits_refused(capsys):
    with pytest.raises(SystemExit):
        G.main(['--limits', 'opencompass=fast'])
    assert '--limits' in capsys.readouterr().err


def test_tiktoken_files_taken_from_the_litellm_wheel(tmp_path, monkeypatch):
    """Without litellm installed (a bare Python here), the two vocabulary files come out of its wheel."""
    import hashlib
    from opencompass_longctx import tokenization as T
    data = {b: f'{b} ranks\n'.encode() for b in W.TIKTOKEN_BASES}
    for b in W.TIKTOKEN_BASES:
        monkeypatch.setitem(T._TIKTOKEN_FILES, b, (f'sha1-of-{b}', hashlib.sha256(data[b]).hexdigest()))

    def not_found(base):
        raise T.TokenizerError(base)
    monkeypatch.setattr(T, '_find_tiktoken_file', not_found)
    cache = tmp_path / 'cache'
    cache.mkdir()
    with zipfile.ZipFile(cache / 'litellm-1.83.0-py3-none-any.whl', 'w') as z:
        for b in W.TIKTOKEN_BASES:
            z.writestr(f'litellm/litellm_core_utils/tokenizers/sha1-of-{b}', data[b])
    assert W.copy_tiktoken_files(str(tmp_path / 'tiktoken'), str(cache)) == list(W.TIKTOKEN_BASES)
    for b in W.TIKTOKEN_BASES:
        assert (tmp_path / 'tiktoken' / f'sha1-of-{b}').read_bytes() == data[b]
    monkeypatch.setitem(T._TIKTOKEN_FILES, 'p50k_base', ('sha1-of-p50k_base', '0' * 64))
    with pytest.raises(SystemExit, match='sha256 differs'):
        W.copy_tiktoken_files(str(tmp_path / 'tiktoken2'), str(cache))


def test_rehearsal_sitecustomize_is_valid_python(tmp_path):
    site = G.rehearsal_site(str(tmp_path))
    src = open(os.path.join(site, 'sitecustomize.py'), encoding='utf-8').read()
    compile(src, 'sitecustomize.py', 'exec')
    assert G.REHEARSAL_MARK in src and 'torch.cuda.Stream = Stream' in src


def test_complete_weights_are_reused(tmp_path):
    shapes = {'a.weight': (2, 3), 'b.bias': (3,)}
    assert G.existing_weights(str(tmp_path), shapes) is None
    (tmp_path / 'model-00001.safetensors').write_bytes(b'x')
    (tmp_path / 'model.safetensors.index.json').write_text(
        '{"weight_map": {"a.weight": "model-00001.safetensors", "b.bias": "model-00001.safetensors"}}')
    assert G.existing_weights(str(tmp_path), shapes)['weights_reused'] is True
    assert G.existing_weights(str(tmp_path), dict(shapes, c=(1,))) is None
    (tmp_path / 'model-00001.safetensors').unlink()
    assert G.existing_weights(str(tmp_path), shapes) is None
