"""Separate real CPU runs for the report tests (test_report_merge.py, test_report_compare.py, test_report_html.py),
made once per session through the real `opencompass` command (tests/configs/report_run.py): the tiny chat model in
one run, the rule reader in another (BABILong qa1-qa5, LongBioBench standard and idk, NoLiMa copied per model
tokenizer, at 0k/250 and 1k, 3 samples), and a smaller rule-reader run over other data (2 samples, 0k only)."""
import glob
import os
import subprocess
import sys

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass

CONFIG = REPO / 'tests' / 'configs' / 'report_run.py'
_MEMO = {}


def _run(root, name, env):
    proc = run_opencompass([str(CONFIG), '-w', name], root, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(root / name / '*'))
    assert_clean_logs(run)
    return run


def make_runs(root, tiny_model_dir) -> dict:
    if _MEMO:
        return _MEMO
    from opencompass_longctx.demo import babilong_data
    babilong_data.write(str(root / 'babilong'), tiers=('0k', '1k'), tasks=[f'qa{i}' for i in range(1, 6)], samples=3)
    env = {'LONGCTX_TINY_MODEL': tiny_model_dir, 'LONGCTX_TEST_DATA': str(root / 'babilong'),
           'NOLIMA_TEST_DATA': str(root / 'nolima'), 'LONGCTX_CACHE_DIR': str(root / 'cache')}
    _MEMO['tiny'] = _run(root, 'out_tiny', dict(env, LONGCTX_REPORT_MODEL='tiny'))
    _MEMO['rule'] = _run(root, 'out_rule', dict(env, LONGCTX_REPORT_MODEL='rule'))
    _MEMO['rule_small'] = _run(root, 'out_rule_small', dict(env, LONGCTX_REPORT_MODEL='rule', LONGCTX_REPORT_SAMPLES='2',
                                                            LONGCTX_REPORT_TIERS='0k'))
    _MEMO['root'] = root
    return _MEMO


@pytest.fixture(scope='session')
def report_runs(tmp_path_factory, tiny_model_dir):
    return make_runs(tmp_path_factory.mktemp('report_runs'), tiny_model_dir)


def report_cli(*args, cwd):
    """`python -m opencompass_longctx.report ARGS` in a subprocess: CompletedProcess."""
    return subprocess.run([sys.executable, '-m', 'opencompass_longctx.report', *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))


def report(*args):
    """The same entry point in this process (`longctx-report` is `sys.exit(main())`): its exit status and output,
    as a CompletedProcess (the imports are paid once per session, not once per call)."""
    import contextlib
    import io
    from opencompass_longctx.report import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def own_table(run):
    """The tier table the run's own summarizer wrote (CSV rows)."""
    import csv
    (path,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.csv'))
    with open(path, newline='', encoding='utf-8') as f:
        return list(csv.DictReader(f))


def read_csv(path):
    import csv
    with open(path, newline='', encoding='utf-8') as f:
        return list(csv.DictReader(f))
