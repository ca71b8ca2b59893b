"""Test marks are written on the tests (`pytest.mark.e2e` / `browser` / `slurm`), and a test that starts the real
pipeline without the e2e mark, or Chromium without the browser mark, fails (tests/conftest.py), so `make test-fast`
never runs one by accident."""
import subprocess
import sys

import pytest

from conftest import mark_needed


@pytest.mark.parametrize('args,mark', [
    (['opencompass', 'run.py', '--dry-run'], 'e2e'), ('/venv/bin/opencompass run.py', 'e2e'),
    (['longctx-report', 'outputs/x'], 'e2e'), ([sys.executable, '-m', 'opencompass_longctx.report', 'x'], 'e2e'),
    ([sys.executable, '-m', 'opencompass.cli.main'], 'e2e'), (['pip', 'install', '.'], 'e2e'), (['make', 'demo'], 'e2e'),
    (['/usr/bin/chromium', '--headless'], 'browser'), (['srun', '--help'], 'slurm'), ('sinfo -h', 'slurm'),
    ([sys.executable, '-c', 'print(1)'], None), (['nvidia-smi'], None), ('git status', None)])
def test_the_mark_a_command_needs(args, mark):
    assert mark_needed(args) == mark


def test_an_unmarked_test_that_starts_the_pipeline_fails():
    with pytest.raises(pytest.fail.Exception, match='without @pytest.mark.e2e'):
        subprocess.run(['opencompass', '--help'], capture_output=True)
    with pytest.raises(pytest.fail.Exception, match='without @pytest.mark.browser'):
        subprocess.run(['chromium', '--version'], capture_output=True)
    assert subprocess.run([sys.executable, '-c', 'print(1)'], capture_output=True, text=True).stdout == '1\n'
