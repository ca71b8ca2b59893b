"""The GPU install gives one CUDA stack: pip's resolver report of ``.[lmdeploy]`` (metadata only, no CUDA wheel is
downloaded with --dry-run) has every CUDA package of one major version, as LMDeploy 0.18.0's CUDA 12.8 wheels need.
Needs PyPI (about 1-2 minutes); skipped with the reason when PyPI cannot be reached, except in CI (CI=true)."""
import json
import os
import subprocess
import sys

import pytest

from opencompass_longctx.models import cuda_stack
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pypi_reachable() -> bool:
    r = subprocess.run([sys.executable, '-m', 'pip', 'index', 'versions', 'lmdeploy'], capture_output=True,
                       text=True, timeout=120)
    return r.returncode == 0 and '0.18.0' in r.stdout


def test_cuda_major_of_a_distribution():
    assert cuda_stack.cuda_major('nvidia-nccl-cu12', '2.27.5') == 12
    assert cuda_stack.cuda_major('nvidia_nccl_cu13', '2.29.7') == 13
    assert cuda_stack.cuda_major('nvidia-cublas', '13.1.1.3') == 13       # unsuffixed toolkit wheel: its version
    assert cuda_stack.cuda_major('cuda-toolkit', '13.0.2') == 13
    assert cuda_stack.cuda_major('nvidia-cufft', '12.0.0.61') is None     # own numbering: says nothing
    assert cuda_stack.cuda_major('nvidia-ml-py', '13.580.82') is None
    assert cuda_stack.cuda_major('torch', '2.10.0') is None


def test_two_stacks_named_with_their_packages():
    dists = [('nvidia-nccl-cu12', '2.32.3'), ('nvidia-nccl-cu13', '2.29.7'), ('torch', '2.12.1')]
    text = cuda_stack.problem(dists)
    assert 'CUDA 12: nvidia-nccl-cu12==2.32.3' in text and 'CUDA 13: nvidia-nccl-cu13==2.29.7' in text
    assert "pip install -e '.[lmdeploy]'" in text
    assert cuda_stack.problem(dists[:1]) is None


@pytest.mark.e2e
def test_lmdeploy_extra_resolves_one_cuda_stack(tmp_path):
    if not _pypi_reachable():
        if os.environ.get('CI') == 'true':
            pytest.fail('PyPI is not reachable: CI must run the GPU-install resolve')
        pytest.skip('PyPI is not reachable here: the resolve of .[lmdeploy] needs it (metadata only)')
    report = tmp_path / 'report.json'
    r = subprocess.run([sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet', '--ignore-installed',
                        '--report', str(report), '.[lmdeploy]'], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    dists = cuda_stack.from_pip_report(json.loads(report.read_text()))
    names = {n.lower(): v for n, v in dists}
    assert names['lmdeploy'] == '0.18.0'
    majors = cuda_stack.cuda_majors(dists)
    assert list(majors) == [12], cuda_stack.problem(dists)
    assert 'nvidia-nccl-cu12' in names and 'nvidia-nccl-cu13' not in names
