"""The package's one error base class, and where it becomes one line and exit status 2.

Every error this package raises is a :class:`LongCtxError` and also the built-in kind it has always been (a
``ValueError`` for a bad option or file, a ``FileNotFoundError`` for missing data, a ``RuntimeError`` for a run
that cannot go on), so ``except LongCtxError`` catches what the harness refuses and ``except ValueError`` keeps
working. :class:`ScoringError` is the one error of the benchmarks' scoring and evaluators.

A :class:`LongCtxError` is bad input, and its message says what to change, so a command shows it as one line
(``<command>: error: <message>``) with exit status 2 and no traceback (:func:`stop_on_error`): ``longctx-report``
around its whole run, and the plugin's entry points in OpenCompass's own process (``LongCtxPartitioner``,
``LongCtxEvalPartitioner`` and ``LongCtxSummarizer``: OpenCompass calls them from ``opencompass.cli.main`` and lets a
``SystemExit`` through, so nothing of OpenCompass is patched). ``--debug`` (the command's own flag) or
``LONGCTX_DEBUG=1`` shows the traceback instead. An error that names a value the user wrote (``value``: a tier) is
placed at the first line of the command's config file that holds it (``cfg.py:8``).
"""
import contextlib
import io
import os
import sys
from typing import Iterator, Optional, Sequence

DEBUG_ENV = 'LONGCTX_DEBUG'


class LongCtxError(Exception):
    """An error raised by opencompass-longctx (its message says what to change). ``value``: the text the user wrote
    that it is about, when it names one (found in the config file to say where)."""
    value: Optional[str] = None


class ScoringError(LongCtxError, ValueError):
    """Predictions, references or a scoring option that a benchmark's scoring refuses."""


def debug_enabled(argv: Optional[Sequence[str]] = None) -> bool:
    """``--debug`` among the command's arguments, or ``LONGCTX_DEBUG=1``: show tracebacks."""
    args = sys.argv[1:] if argv is None else argv
    return '--debug' in args or os.environ.get(DEBUG_ENV, '').strip().lower() in ('1', 'true', 'yes')


def config_line(config: Optional[str], value: Optional[str]) -> str:
    """``'<config>:<line>: '`` for the first line of the config file that writes ``value`` in quotes (``''`` when
    there is no config, no value, or no such line)."""
    if not config or not value or not os.path.isfile(config):
        return ''
    quoted = (f"'{value}'", f'"{value}"')
    try:
        with open(config, encoding='utf-8') as f:
            for number, line in enumerate(f, 1):
                if any(q in line for q in quoted):
                    return f'{config}:{number}: '
    except (OSError, ValueError):
        pass
    return ''


@contextlib.contextmanager
def stop_on_error(command: str, config: Optional[str] = None, debug: Optional[bool] = None,
                  kind: bool = False) -> Iterator[None]:
    """Turn a :class:`LongCtxError` raised inside into ``<command>: error: [<config>:<line>: ]<message>`` on stderr
    and ``SystemExit(2)`` (``kind``: the message after the error's class name, ``TierError: ...``, as a traceback's
    last line reads); with ``debug`` (default: :func:`debug_enabled`) it is raised as it is."""
    try:
        yield
    except LongCtxError as e:
        if debug_enabled() if debug is None else debug:
            raise
        print(error_line(command, e, config, kind), file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def error_line(command: str, e: LongCtxError, config: Optional[str] = None, kind: bool = False) -> str:
    """``<command>: error: [<config>:<line>: ][<Type>: ]<message>``: how a command shows a :class:`LongCtxError`."""
    what = f'{type(e).__name__}: {e}' if kind else str(e)
    return f'{command}: error: {config_line(config, e.value)}{what}'


def opencompass_args():
    """The arguments of the running ``opencompass`` command, read with its own parser (None elsewhere: a task
    subprocess, a test, or arguments it would refuse)."""
    cli = sys.modules.get('opencompass.cli.main')
    if cli is None:
        return None
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return cli.parse_args()
    except SystemExit:
        return None


def in_opencompass(command: str = 'opencompass'):
    """:func:`stop_on_error` for plugin code that OpenCompass's main process runs (a partitioner, the summarizer):
    there its errors are one line and exit 2; anywhere else (a task subprocess, a test) they are raised as usual."""
    main = getattr(sys.modules.get('__main__'), '__spec__', None)
    if sys.modules.get('opencompass.cli.main') is None and getattr(main, 'name', None) != 'opencompass.cli.main':
        return contextlib.nullcontext()   # (`python -m opencompass.cli.main` runs it as __main__)
    return stop_on_error(command, getattr(opencompass_args(), 'config', None), kind=True)
