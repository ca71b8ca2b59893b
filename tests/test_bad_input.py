"""Every bad input gets one or two lines (issue 41, item 6), and docs/configs.md's table of them is this test's
output (item 7): each case runs the real command (`opencompass` on a config written here, or `longctx-report`) in
a fresh directory, must exit 2 with its message on stderr in at most two lines and no traceback (OpenCompass's own
log lines aside), and the table of what each prints is rendered and compared with the one in the docs, so it cannot
drift. After a change of a message: `LONGCTX_WRITE_DOCS=1 python -m pytest -q -k bad_input_table` rewrites it.
`--debug` / `LONGCTX_DEBUG=1` give the traceback instead."""
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import REPO, run_opencompass

DOC = REPO / 'docs' / 'configs.md'
START, END = '<!-- bad-input table: written by tests/test_bad_input.py -->', '<!-- end of the bad-input table -->'

RUN = '''from mmengine.config import read_base
from opencompass.runners import LocalRunner

from opencompass_longctx.demo.rule_reader import BabiRuleReader
from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.datasets.longbio.longbio_base import LONGBIO_BASE

TIER = {tier!r}
models = [dict(type=BabiRuleReader, abbr='rule-reader', run_cfg=dict(num_gpus=0){model})]
datasets = [dict(d, tier=TIER, abbr=f"{{d['abbr']}}_{{TIER}}", num_samples=1) for d in LONGBIO_BASE]
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, task=dict(type=LongCtxInferTask)))
'''
IMPORT_OS = 'import os\n\n' + RUN.format(tier='1k', model='').replace(
    "num_samples=1)", "num_samples=int(os.environ.get('SAMPLES', '1')))")


@dataclass
class Case:
    bad: str                      # the bad input, as the docs table names it
    argv: List[str]               # the command, run in the case's directory
    expect: str                   # a part of the message it must print
    files: Dict[str, str] = field(default_factory=dict)
    before: List[str] = field(default_factory=list)   # an opencompass command that makes the input (a run dir)
    status: int = 2
    plan_line: str = ''           # a line of the printed plan that belongs to the message (what the problem is)


CASES = [
    Case("LongBioBench `TIER = '0.1k'` (102.4 tokens: LongBioBench's 1k is 1024)", ['opencompass', 'cfg.py', '--dry-run'],
         "tier '0.1k' is 102.4 tokens when 1k = 1024 tokens", {'cfg.py': RUN.format(tier='0.1k', model='')}),
    Case("`TIER = '3K'` (not the tier's one name)", ['opencompass', 'cfg.py'], "write '3k'",
         {'cfg.py': RUN.format(tier='3K', model='')}, plan_line='- ['),
    Case("LongBioBench `TIER = '1024k'` (1m there)", ['opencompass', 'cfg.py'], "write '1m'",
         {'cfg.py': RUN.format(tier='1024k', model='')}, plan_line='- ['),
    Case("a model's `max_tier='12q'`", ['opencompass', 'cfg.py', '--dry-run'], "max_tier '12q': unknown tier",
         {'cfg.py': RUN.format(tier='1k', model=", max_tier='12q'")}),
    Case('`-r` on a work dir where nothing ran', ['opencompass', 'cfg.py', '-r', '-w', 'fresh'], 'nothing to resume',
         {'cfg.py': RUN.format(tier='1k', model='')}),
    Case('`import os` at the top of a run config: OpenCompass itself stops (its config dump, see above)',
         ['opencompass', 'cfg.py', '-w', 'out'], 'SyntaxError: invalid syntax', {'cfg.py': IMPORT_OS}, status=1),
    Case('`longctx-report` on the run that `import os` left (its saved config does not parse)',
         ['longctx-report', 'out'], "OpenCompass wrote the module 'os' into it", {'cfg.py': IMPORT_OS},
         before=['cfg.py', '-w', 'out']),
    Case('`longctx-report` on a directory that does not exist', ['longctx-report', 'outputs/nowhere'],
         'no such directory'),
    Case('`longctx-report` on a directory without a run', ['longctx-report', '.'], 'no OpenCompass run found'),
    Case('`--nolima-ratio nan`', ['longctx-report', '.', '--nolima-ratio', 'nan'], "'nan' is not a ratio in (0, 1]"),
    Case('`--nolima-ratio 85`', ['longctx-report', '.', '--nolima-ratio', '85'], '0.85 for 85%'),
    Case('`--nolima-ratio 0`', ['longctx-report', '.', '--nolima-ratio', '0'], "'0' is not a ratio in (0, 1]"),
    Case('`--ruler-threshold nan`', ['longctx-report', '.', '--ruler-threshold', 'nan'],
         "'nan' is not a score in [0, 100]"),
    Case('`--ruler-threshold 150`', ['longctx-report', '.', '--ruler-threshold', '150'],
         "'150' is not a score in [0, 100]"),
]
_LOG = re.compile(r'^\d\d/\d\d \d\d:\d\d:\d\d - ')      # OpenCompass's own log lines


def _run(case: Case, where: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    for name, text in case.files.items():
        (where / name).write_text(text, encoding='utf-8')
    if case.before:
        run_opencompass(case.before, where, env)
    program, *args = case.argv
    if program == 'opencompass':
        return run_opencompass(args, where, env)
    return subprocess.run([sys.executable, '-m', 'opencompass_longctx.report', *args], cwd=where, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, **env))


def _said(proc: subprocess.CompletedProcess) -> List[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.strip() and not _LOG.match(ln)]


def _plain(text: str) -> str:
    """A message as the docs show it: run directories' timestamps, a config dump's process id and line as
    placeholders."""
    text = re.sub(r'\d{8}_\d{6}(_\d+)?', lambda m: '<time>' + ('_<pid>' if m.group(1) else ''), text)
    return re.sub(r'_<pid>\.py:\d+', '_<pid>.py:<line>', text)


@pytest.fixture(scope='module')
def outcomes(tmp_path_factory) -> List[Tuple[Case, subprocess.CompletedProcess]]:
    env = {'LONGCTX_CACHE_DIR': str(tmp_path_factory.mktemp('cache'))}
    env.pop('LONGCTX_DEBUG', None)
    out = []
    for i, case in enumerate(CASES):
        where = tmp_path_factory.mktemp(f'case{i}')
        out.append((case, _run(case, where, dict(env, LONGCTX_DEBUG='', LONGCTX_START_FRESH=''))))
    return out


@pytest.mark.e2e
@pytest.mark.parametrize('index', range(len(CASES)), ids=[c.argv[0] + ':' + c.expect[:30] for c in CASES])
def test_a_bad_input_is_one_or_two_lines_and_exit_2(outcomes, index):
    case, proc = outcomes[index]
    said = _said(proc)
    assert proc.returncode == case.status, proc.stdout[-2000:] + proc.stderr[-2000:]
    if case.status == 1:            # OpenCompass's own error: it is the documented cause
        assert case.expect in proc.stderr
        return
    assert 'Traceback' not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert 1 <= len(said) <= 2 and case.expect in said[0], said
    assert said[0].startswith(f'{case.argv[0]}: error: '), said
    if case.plan_line:             # the problem is printed once, its datasets counted
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(case.plan_line) and case.expect in ln]
        assert len(lines) == 1 and re.match(r'- \[\d+ items: ', lines[0]), proc.stdout[-3000:]


@pytest.mark.e2e
def test_nothing_already_written_is_lost(outcomes):
    by_expect = {c.expect: p for c, p in outcomes}
    assert by_expect['nothing to resume'].returncode == 2
    # -r where nothing ran: no task started, the directory holds no predictions
    assert 'fresh/<time>' in _plain(_said(by_expect['nothing to resume'])[0])


def _code(text: str) -> str:
    """A message as a code span of a table cell (it may hold backticks, ``<`` and ``|``)."""
    from opencompass_longctx.writers.formats import md_cell
    return f'`` {md_cell(text)} ``'


def _table(outcomes) -> str:
    from opencompass_longctx.writers.formats import md_cell, md_row
    lines = [md_row(['bad input', 'command', 'exit', 'what it prints (stderr; for a problem of the run checks, its '
                     'line of the printed plan first)']), '|---|---|---|---|']
    for case, proc in outcomes:
        said = _said(proc)
        if case.status == 1:
            said = [next(ln for ln in reversed(proc.stderr.splitlines()) if ln.strip())]
        plan = [ln for ln in proc.stdout.splitlines() if case.plan_line and ln.startswith(case.plan_line)
                and case.expect in ln]
        text = ' <br> '.join(_code(_plain(x)) for x in plan + said)
        if case.status == 1:
            text = "OpenCompass's own traceback, ending " + text
        lines.append(f'| {md_cell(case.bad)} | {_code(" ".join(case.argv))} | {proc.returncode} | {text} |')
    return '\n'.join(lines)


@pytest.mark.e2e
def test_the_bad_input_table_in_the_docs_is_this_tests_output(outcomes):
    table = _table(outcomes)
    text = DOC.read_text(encoding='utf-8')
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    fresh = f'{head}{START}\n{table}\n{END}{tail}'
    if os.environ.get('LONGCTX_WRITE_DOCS') == '1' and fresh != text:
        DOC.write_text(fresh, encoding='utf-8')
        pytest.skip('docs/configs.md: the bad-input table rewritten (LONGCTX_WRITE_DOCS=1): review and commit it')
    assert fresh == text, ('docs/configs.md: the bad-input table differs from what the commands print now; rewrite '
                           'it with LONGCTX_WRITE_DOCS=1 python -m pytest -q tests/test_bad_input.py')


@pytest.mark.e2e
def test_debug_shows_the_traceback(tmp_path):
    (tmp_path / 'cfg.py').write_text(RUN.format(tier='0.1k', model=''), encoding='utf-8')
    proc = run_opencompass(['cfg.py', '--dry-run'], tmp_path, {'LONGCTX_DEBUG': '1'})
    assert proc.returncode == 1 and 'Traceback (most recent call last)' in proc.stderr
    assert "TierError: 15 datasets (longbio_standard_0.1k" in proc.stderr
    report = subprocess.run([sys.executable, '-m', 'opencompass_longctx.report', str(tmp_path), '--debug'],
                            capture_output=True, text=True, timeout=600)
    assert report.returncode == 1 and 'Traceback' in report.stderr and 'ReportInputError' in report.stderr


def test_the_one_line_error_is_read_as_the_runs_exception():
    """The GPU check and the failure report read why `opencompass` stopped from its log: the one line counts as the
    exception when it comes after any traceback."""
    from opencompass_longctx.leaderboard.failures import last_exception
    log = ('Traceback (most recent call last):\n  File "x.py", line 1\nValueError: an earlier one\n'
           "12/04 21:16:36 - OpenCompass - INFO - Current exp folder: out/x\n"
           "opencompass: error: cfg.py:8: TierError: tier '0.1k' is 102.4 tokens\n")
    assert last_exception(log) == "cfg.py:8: TierError: tier '0.1k' is 102.4 tokens"
    assert last_exception(log + 'Traceback (most recent call last):\n  File "y"\nKeyError: 1\n') == 'KeyError: 1'
