"""Test marks are written on the tests (`pytest.mark.e2e` / `browser` / `slurm`), and a test that starts the real
pipeline without the e2e mark fails (tests/conftest.py), so `make test-fast` never runs one by accident."""
import subprocess
import sys

import pytest

from conftest import starts_pipeline


@pytest.mark.parametrize('args,pipeline', [
    (['opencompass', 'run.py', '--dry-run'], True), ('/venv/bin/opencompass run.py', True),
    (['longctx-report', 'outputs/x'], True), ([sys.executable, '-m', 'opencompass_longctx.report', 'x'], True),
    ([sys.executable, '-m', 'opencompass.cli.main'], True), (['pip', 'install', '.'], True), (['make', 'demo'], True),
    ([sys.executable, '-c', 'print(1)'], False), (['sinfo', '--version'], False), ('git status', False)])
def test_what_starts_the_pipeline(args, pipeline):
    assert starts_pipeline(args) is pipeline


def test_an_unmarked_test_that_starts_the_pipeline_fails():
    with pytest.raises(pytest.fail.Exception, match='without @pytest.mark.e2e'):
        subprocess.run(['opencompass', '--help'], capture_output=True)
    assert subprocess.run([sys.executable, '-c', 'print(1)'], capture_output=True, text=True).stdout == '1\n'
