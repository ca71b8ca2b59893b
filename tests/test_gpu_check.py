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
