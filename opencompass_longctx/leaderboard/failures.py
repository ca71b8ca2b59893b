"""Which datasets of a finished run failed, and why, read from the run's task logs (no OpenCompass import).

OpenCompass exits 0 when a task fails; the exception sits in the task's log, ``<run>/logs/infer/<model>/<abbr>.out``
or ``logs/eval/...``, where ``<abbr>`` is the first dataset of the task (a task may hold several datasets). For
every (model, dataset) pair the run was meant to produce that has no usable result, this finds the stage that
failed (no predictions: inference; predictions but no result: evaluation), the log of the task that held the
dataset, and the exception's last line in it.
"""
import glob
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

_TASK = re.compile(r'Task \[([^\]]*)\]')                         # OpenICLInferTask's first line
_PROGRESS = re.compile(r'Progress of This Task --> Models: \d+/\d+, Datasets: (\d+)/\d+')
_LOG_LINE = re.compile(r'^\d\d/\d\d \d\d:\d\d:\d\d - ')           # an OpenCompass logger line
_HEAD = _TAIL = 1 << 16                                          # bytes read from each end of a log
# LongCtxInferTask and LongCtxEvalTask (opencompass_longctx/run/tasks.py) log each dataset that fails and go on
_DATASET_FAILED = re.compile(r'longctx: dataset failed \[([^\]]+)\]: (.*)')
MAX_REASON = 300
FAIL_ENV = 'LONGCTX_FAIL_ON_MISSING'


@dataclass
class Failure:
    model: str
    dataset: str
    stage: str                  # 'infer' | 'eval' | 'result' (the result file exists but cannot be used)
    reason: str
    log: Optional[str] = None   # the task log (or the unusable result file): the run directory joined with its path

    def line(self) -> str:
        if self.stage == 'result':  # the reason names the file
            return f'{self.model}/{self.dataset}: {self.reason}'
        where = f' (log: {self.log})' if self.log else ''
        return f'{self.model}/{self.dataset}: {self.stage} failed: {self.reason}{where}'


def _read(path: str, tail: Optional[bool]) -> str:
    """The head of a log (tail=False), its tail (True) or all of it (None)."""
    with open(path, 'rb') as f:
        if tail:
            f.seek(max(f.seek(0, os.SEEK_END) - _TAIL, 0))
        return f.read(-1 if tail is None else _TAIL if tail else _HEAD).decode('utf-8', 'replace')


ONE_LINE_ERROR = 'opencompass: error: '   # how the plugin's errors end the opencompass command


def last_exception(text: str) -> Optional[str]:
    """The exception line of the last traceback in ``text`` ('Type: message', continuation lines joined), or the
    last one-line error of the plugin (``opencompass: error: [cfg.py:8: ]Type: message``,
    :func:`opencompass_longctx.errors.stop_on_error`) when it comes after it; None when there is neither."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith('Traceback (most recent call last):')]
    one_line = [i for i, ln in enumerate(lines) if ln.startswith(ONE_LINE_ERROR)]
    if one_line and (not starts or one_line[-1] > starts[-1]):
        text = lines[one_line[-1]][len(ONE_LINE_ERROR):].strip()
        return text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + '…'
    if not starts:
        return None
    i = starts[-1] + 1
    while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace()):
        i += 1  # the frames: indented lines
    msg = []
    while i < len(lines) and lines[i].strip() and not _LOG_LINE.match(lines[i]):
        msg.append(lines[i].strip())
        i += 1
    text = ' '.join(msg)
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + '…'


def _prediction_exists(run: str, model: str, abbr: str) -> bool:
    base = os.path.join(run, 'predictions', model, abbr)
    return os.path.isfile(base + '.json') or os.path.isfile(base + '_0.json')


class _Logs:
    """The task logs of one run: each log's head (its task line), tail (its traceback) or whole text read once."""

    def __init__(self, run: str):
        self.run = run
        self._text: Dict[Tuple[str, Optional[bool]], str] = {}
        self._tasks: Optional[Dict[str, Tuple[str, int, List[str]]]] = None

    def text(self, path: str, tail: Optional[bool] = True) -> str:
        if (path, tail) not in self._text:
            self._text[(path, tail)] = _read(path, tail)
        return self._text[(path, tail)]

    def infer_log(self, model: str, abbr: str) -> Tuple[Optional[str], Optional[int], List[str]]:
        """(log path, position of the dataset in its task, the task's entries) of the infer task that held it,
        from the first line of every infer log (``Task [model/abbr,...]``)."""
        if self._tasks is None:
            self._tasks = {}
            # recursive: a model abbr with a slash (org/model) nests its logs as OpenCompass nests its results
            for path in sorted(glob.glob(os.path.join(self.run, 'logs', 'infer', '**', '*.out'), recursive=True)):
                m = _TASK.search(_read(path, tail=False))
                entries = m.group(1).split(',') if m else []
                for i, entry in enumerate(entries):
                    self._tasks.setdefault(entry, (path, i, entries))
        hit = self._tasks.get(f'{model}/{abbr}')
        if hit:
            return hit
        direct = os.path.join(self.run, 'logs', 'infer', model, f'{abbr}.out')
        return (direct, None, []) if os.path.isfile(direct) else (None, None, [])  # died before its task line

    def dataset_failures(self, path: str) -> Dict[str, str]:
        """{'model/dataset': 'Type: message'} of the datasets LongCtxInferTask logged as failed in this log."""
        return {m.group(1): (m.group(2) if len(m.group(2)) <= MAX_REASON else m.group(2)[:MAX_REASON - 1] + '…')
                for m in _DATASET_FAILED.finditer(self.text(path, tail=None))}

    def eval_log(self, model: str, abbr: str, order: Sequence[str]) -> Tuple[Optional[str], List[str]]:
        """(log path, the datasets before this one in its task) of the eval task that held the dataset. Eval logs
        do not list their datasets, and OpenCompass's partitioners chunk a model's datasets in config order, so
        it is the log named after the dataset or after the nearest dataset before it that has a log."""
        folder = os.path.join(self.run, 'logs', 'eval', model)
        order = list(order) if abbr in order else [abbr]
        at = order.index(abbr)
        for i in range(at, -1, -1):
            path = os.path.join(folder, f'{order[i]}.out')
            if os.path.isfile(path):
                return path, order[i:at]
        return None, []


def incomplete_reason(abbr: str, counts: dict, n: int) -> Optional[str]:
    """Why a dataset whose evaluator wrote these counts is incomplete (the tier table shows it as missing), or None:
    samples its engine could not hold (``engine_too_small``) or answered with an error (``engine_error``), both
    left out of the score (:mod:`opencompass_longctx.overlength`)."""
    engine, errors = int(counts.get('engine_too_small', 0) or 0), int(counts.get('engine_error', 0) or 0)
    parts = []
    if engine:
        parts.append(f'{engine} of {n} samples fit the model but not the engine sized for their tier band (not sent, '
                     'or refused or cut short by LMDeploy: see the infer log): rerun this dataset with a larger '
                     'headroom or KV cache')
    if errors:
        parts.append(f'{errors} of {n} samples got an error response from the engine (not scored; LMDeploy\'s '
                     'error is in the infer log): rerun this dataset')
    return f'{abbr}: ' + '; '.join(parts) if parts else None


def usable(res: Optional[dict]) -> bool:
    return res is not None and 'error' not in res


def find_failures(run: str, expected: Sequence[Tuple[str, str]], result: Callable[[str, str], Optional[dict]]
                  ) -> List[Failure]:
    """A Failure for every expected (model abbr, dataset abbr) pair without a usable result, in ``expected``'s
    order. ``result(model, abbr)`` returns the result dict, ``{'error': why}`` or None (as ``Results.get``)."""
    logs = _Logs(run)
    order: Dict[str, List[str]] = {}
    for model, abbr in expected:
        order.setdefault(model, []).append(abbr)
    out = []
    for model, abbr in dict.fromkeys(expected):
        res = result(model, abbr)
        if usable(res):
            continue
        if res is not None and res.get('unreadable'):
            out.append(Failure(model, abbr, 'result', str(res['error']),
                               os.path.join(run, 'results', model, f'{abbr}.json')))
            continue
        before: List[str] = []  # the dataset of the same task where it stopped, when that came first
        own = None  # the dataset's own failure line (LongCtxInferTask goes on after a failing dataset)
        if not _prediction_exists(run, model, abbr):
            stage, (path, pos, entries) = 'infer', logs.infer_log(model, abbr)
            if path:
                own = logs.dataset_failures(path).get(f'{model}/{abbr}')
            if own is None and pos is not None and len(entries) > 1:  # the dataset the task was on when it stopped
                m = list(_PROGRESS.finditer(logs.text(path, tail=None)))
                at = int(m[-1].group(1)) - 1 if m else pos
                before = [entries[at].split('/', 1)[-1]] if 0 <= at < pos else []
        else:
            stage, (path, chunk) = 'eval', logs.eval_log(model, abbr, order[model])
            own = logs.dataset_failures(path).get(f'{model}/{abbr}') if path else None
            before = [] if own is not None else [a for a in chunk if not usable(result(model, a))][:1]
        exc = last_exception(logs.text(path)) if path else None
        if res is not None:  # OpenCompass's evaluator wrote {'error': ...} instead of a score
            reason = str(res['error'])
        elif own is not None:
            reason = own
        elif path is None:
            reason = 'no result and no task log (the run was interrupted, or the task never started)'
        elif exc is None:
            reason = 'no result, and the task log shows no exception (was the task killed?)'
        elif before:
            reason = f'not reached: its task stopped at {before[0]} with {exc}'
        else:
            reason = exc
        out.append(Failure(model, abbr, stage, reason, path))
    return out


def fail_on_missing_enabled(flag: Optional[bool]) -> bool:
    """``fail_on_missing`` / ``--fail-on-missing``: the option when given, else ``LONGCTX_FAIL_ON_MISSING``."""
    if flag is not None:
        return bool(flag)
    return os.environ.get(FAIL_ENV, '').strip().lower() in ('1', 'true', 'yes')


def failure_exit(failures: Sequence[Failure], where: str) -> SystemExit:
    """The SystemExit (status 1, message on stderr) that ends a run whose datasets failed."""
    lines = [f'  {f.line()}' for f in failures]
    return SystemExit(f'{len(failures)} dataset(s) of the run failed or have no usable result '
                      f'(fail_on_missing / {FAIL_ENV}); the tier table lists them too ({where}):\n'
                      + '\n'.join(lines))
