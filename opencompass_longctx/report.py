"""The tier table, the paired comparison of models and the leaderboard page, for finished OpenCompass runs.

    longctx-report RUN_DIR [RUN_DIR ...] [-o OUT_DIR] [--as RUN=NEWABBR] [--compare A B] [--no-plots] [--no-html]
                   [--screenshot]
    python -m opencompass_longctx.report ...      (the same)

Each RUN_DIR is a run directory (``outputs/x/20261129_153708``) or its parent (the newest run is used). Several
runs (other models, other days or clusters) are merged into one table (:mod:`.leaderboard.merge`: one abbr must
name the same model in every run, or ``--as RUN=NEWABBR`` shows one run's model under another name; the same model
and dataset in two runs must have the same data and scoring, the newer is used; a file that cannot be read is
left out and named). Nothing is re-run: the table is built from the runs' dumped configs, result files,
predictions and task logs (failed datasets are listed with their exception). Written to OUT_DIR (default: the run's ``summary/`` for one run, ``outputs/longctx_leaderboard``
for several): ``longctx_report.{md,csv,json}`` and plots (the tier table), ``longctx_compare.{md,csv,json}``
(paired differences and the ranking, for two models or more: every pair, or ``--compare A B``) and
``longctx_leaderboard.html`` (one self-contained page; ``--screenshot``: a PNG of it, with Debian's chromium).
With ``--fail-on-missing`` (or ``LONGCTX_FAIL_ON_MISSING=1``) the exit status is 1 when a dataset failed or has no
usable result; bad input (no run, no results, a saved config that does not parse, runs whose data differ, an unknown
model, an option out of its range: ``--nolima-ratio`` in (0, 1], ``--ruler-threshold`` in [0, 100], never NaN) exits
2 with one line that says what is wrong and what to give (the traceback with ``--debug`` or ``LONGCTX_DEBUG=1``).
A dataset of the runs' own benchmarks that no cell of the tier table reads (:mod:`.leaderboard.placement`: a
user-made abbr, a task in no row, ...) is listed (markdown and JSON: ``unplaced``); when it has results the exit
status is 1 naming it, unless ``--allow-unplaced``, ``LONGCTX_ALLOW_UNPLACED=1`` or the run's own summarizer option
``allow_unplaced=True`` accepts it (a warning only).
"""
import argparse
import itertools
import math
import os
import sys

from opencompass_longctx.errors import DEBUG_ENV, LongCtxError, debug_enabled, error_line
from opencompass_longctx.leaderboard.runs import ReportInputError, find_run  # noqa: F401 (find_run: part of this module's API)
from opencompass_longctx.stats.effective import NOLIMA_RATIO, RULER_THRESHOLD

DEFAULT_MERGED_DIR = os.path.join('outputs', 'longctx_leaderboard')


class _Parser(argparse.ArgumentParser):
    """argparse, whose errors are one line (``longctx-report: error: ...``, exit 2) without the long usage."""

    def error(self, message):
        self.exit(2, f'{self.prog}: error: {message} (longctx-report --help lists the options)\n')


def _number(value: float, what: str, low: float, high: float, low_open: bool, hint: str) -> float:
    inside = math.isfinite(value) and (low < value if low_open else low <= value) and value <= high
    if not inside:
        raise argparse.ArgumentTypeError(f"'{value:g}' is not {what} in {'(' if low_open else '['}{low:g}, "
                                         f'{high:g}] ({hint})')
    return value


def ratio(value: float) -> float:
    """``--nolima-ratio``: a fraction of the base score in (0, 1]; NaN, 0 and 85 are refused."""
    return _number(value, 'a ratio', 0, 1, True, 'a fraction of the base score: 0.85 for 85%')


def threshold(value: float) -> float:
    """``--ruler-threshold``: a score in [0, 100]; NaN and 150 are refused."""
    return _number(value, 'a score', 0, 100, False, 'an accuracy in %, e.g. 85')


def _args(argv):
    ap = _Parser(prog='longctx-report', description=__doc__.splitlines()[0])
    ap.add_argument('work_dirs', nargs='+', metavar='RUN_DIR')
    ap.add_argument('-o', '--output', help='output directory (default: <run>/summary for one run, '
                    f'{DEFAULT_MERGED_DIR} for several)')
    ap.add_argument('--as', dest='renames', action='append', default=[], metavar='RUN=NEWABBR',
                    help="show RUN's model under the name NEWABBR in every table and file (RUN:OLDABBR=NEWABBR for a "
                    'run with several models): to merge runs whose same abbr names different models')
    ap.add_argument('--compare', nargs=2, metavar=('A', 'B'), help='compare these two models only (A - B)')
    ap.add_argument('--rank-by', choices=('score', 'ruler', 'nolima'), default='score',
                    help='what the ranking orders by: score (paired tests, rank intervals; the default) or an '
                    'effective length (ruler, nolima: rank intervals from their 95%% intervals)')
    ap.add_argument('--ruler-threshold', type=float, default=RULER_THRESHOLD)
    ap.add_argument('--nolima-ratio', type=float, default=NOLIMA_RATIO)
    ap.add_argument('--no-plots', action='store_true')
    ap.add_argument('--no-html', action='store_true')
    ap.add_argument('--screenshot', action='store_true', help='also write longctx_leaderboard.png (needs chromium)')
    ap.add_argument('--fail-on-missing', action='store_true', default=None,
                    help='exit with status 1 when a dataset of the runs failed or has no usable result')
    ap.add_argument('--allow-unplaced', action='store_true', default=None,
                    help='exit 0 (with the warning) when datasets of the runs cannot be placed in the tier table')
    ap.add_argument('--debug', action='store_true',
                    help=f'show the traceback of an error instead of its one line (also {DEBUG_ENV}=1)')
    args = ap.parse_args(argv)
    for flag, value, check in (('--ruler-threshold', args.ruler_threshold, threshold),
                               ('--nolima-ratio', args.nolima_ratio, ratio)):
        try:
            check(value)
        except argparse.ArgumentTypeError as e:
            ap.error(f'argument {flag}: {e}')
    return args


def parse_rename(text: str):
    """``RUN=NEWABBR`` or ``RUN:OLDABBR=NEWABBR``: (run directory, old abbr or None, new abbr)."""
    where, eq, new = text.rpartition('=')
    if not eq or not where or not new.strip():
        raise ReportInputError(f'--as {text!r}: give RUN=NEWABBR (RUN: one of the run directories given; '
                               'RUN:OLDABBR=NEWABBR for a run with several models)')
    if os.path.isdir(where):
        return where, None, new
    run, colon, old = where.rpartition(':')
    if colon and os.path.isdir(run) and old:
        return run, old, new
    raise ReportInputError(f'--as {text!r}: {where!r} is not a run directory (give RUN=NEWABBR or '
                           'RUN:OLDABBR=NEWABBR, RUN as given on the command line)')


def run_report(args) -> dict:
    from opencompass_longctx.leaderboard.compare import FULL_TABLE_UP_TO, Comparer
    from opencompass_longctx.leaderboard.merge import build_merged, merge
    from opencompass_longctx.writers import comparison, formats, html
    from opencompass_longctx.writers.plots import start_plots
    merged = merge(args.work_dirs, [parse_rename(r) for r in args.renames])
    report = build_merged(merged, args.ruler_threshold, args.nolima_ratio)
    models = [m.abbr for m in merged.models]
    if args.compare:
        unknown = [m for m in args.compare if m not in models]
        if unknown:
            raise ReportInputError(f'--compare: unknown model {", ".join(map(repr, unknown))}; the runs have: '
                                   f'{", ".join(models)}')
        if args.compare[0] == args.compare[1]:
            raise ReportInputError(f'--compare: give two different models (got {args.compare[0]!r} twice)')
    if len(merged.runs) == 1 and not args.output:
        out = os.path.join(merged.runs[0].path, 'summary')
    else:
        out = args.output or DEFAULT_MERGED_DIR
    try:
        os.makedirs(out, exist_ok=True)
        if not os.access(out, os.W_OK | os.X_OK):
            raise PermissionError(13, 'Permission denied')
    except OSError as e:       # a file of that name, a parent that is a file, no permission: the user's to mend
        raise ReportInputError(f'cannot write the report to {out!r}: {e.strerror or e} (give -o DIR, a directory '
                               'this user can write)') from e
    texts = formats.render(report)
    paths = formats.save(texts, out, 'longctx_report')
    # the plots are drawn in a worker process while this one computes the comparisons (the other core)
    plotted = None if args.no_plots else start_plots(report, os.path.join(out, 'longctx_report_plots'))
    print(texts['md'])
    comparer = Comparer(report, merged.results, merged.marks)
    pairs = [tuple(args.compare)] if args.compare else list(itertools.combinations(models, 2))
    board = comparer.leaderboard(args.rank_by)
    # every pair on every row up to FULL_TABLE_UP_TO models; above, the comparisons the ranks rest on
    table = comparer.table(pairs) if args.compare or len(models) <= FULL_TABLE_UP_TO else comparer.ranked_table()
    if pairs:
        compared = comparison.render(table, board, args.rank_by)
        paths['compare'] = formats.save(compared, out, 'longctx_compare')
        print(compared['md'])
    if plotted is not None:
        paths['plots'] = plotted()
    if not args.no_html:
        paths['html'] = html.write_page(report, table, board, paths.get('plots') or [], args.rank_by,
                                        os.path.join(out, 'longctx_leaderboard.html'))
        if args.screenshot:
            paths['screenshot'] = html.screenshot(paths['html'], os.path.join(out, 'longctx_leaderboard.png'))
    print(f'written: {paths}')
    return dict(report=report, paths=paths, table=table, board=board, merged=merged)


def main(argv=None):
    args = _args(argv)
    from opencompass_longctx.leaderboard.failures import fail_on_missing_enabled, failure_exit
    from opencompass_longctx.leaderboard.placement import allow_unplaced_enabled, exit_message, stopping
    try:
        done = run_report(args)
    except LongCtxError as e:   # bad input: one line, exit 2 (the traceback with --debug or LONGCTX_DEBUG=1)
        if args.debug or debug_enabled([]):
            raise
        print(error_line('longctx-report', e), file=sys.stderr)
        return 2
    report = done['report']
    stops = []
    if report.failures and fail_on_missing_enabled(args.fail_on_missing):
        stops.append(failure_exit(report.failures, done['paths']['md']).code)
    lost = [(u, u.accepted_by_run) for u in report.unplaced or []]
    if lost:
        refused = stopping([u for u, ok in lost if not ok])
        if refused and not allow_unplaced_enabled(args.allow_unplaced):
            stops.append(exit_message(refused, done['paths']['md']))
        else:
            print(f'longctx-report: warning: {len(lost)} dataset(s) of the runs are not in the tier table: '
                  + '; '.join(u.line() + (' (accepted by its run: allow_unplaced)' if ok else '') for u, ok in lost),
                  file=sys.stderr)
    if stops:
        raise SystemExit('\n\n'.join(stops))
    return 0


if __name__ == '__main__':
    sys.exit(main())
