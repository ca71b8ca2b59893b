"""Print the tier table and write its files and plots for any finished OpenCompass run.

    python -m opencompass_longctx.report WORK_DIR [--ruler-threshold 85.6] [--no-plots] [--fail-on-missing]

WORK_DIR is a run directory (``outputs/x/20261129_153708``) or its parent (the newest run is used). Nothing
is re-run: the table is built from the run's dumped config, its result files and its task logs (failed datasets
are listed with their exception). With ``--fail-on-missing`` (or ``LONGCTX_FAIL_ON_MISSING=1``) the exit status
is 1 when a dataset of the run failed or has no usable result.
"""
import argparse
import glob
import os
import sys

from .summarizers.metrics import NOLIMA_RATIO, RULER_THRESHOLD


def find_run(work_dir: str) -> str:
    if glob.glob(os.path.join(work_dir, 'configs', '*.py')):
        return work_dir
    runs = sorted(d for d in glob.glob(os.path.join(work_dir, '*')) if glob.glob(os.path.join(d, 'configs', '*.py')))
    if not runs:
        raise SystemExit(f'{work_dir}: no OpenCompass run found (expected <run>/configs/*.py)')
    return runs[-1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('work_dir')
    ap.add_argument('--ruler-threshold', type=float, default=RULER_THRESHOLD)
    ap.add_argument('--nolima-ratio', type=float, default=NOLIMA_RATIO)
    ap.add_argument('--no-plots', action='store_true')
    ap.add_argument('--fail-on-missing', action='store_true', default=None,
                    help='exit with status 1 when a dataset of the run failed or has no usable result')
    args = ap.parse_args(argv)
    from mmengine.config import Config

    from .summarizers.longctx import fail_on_missing_enabled, failure_exit, table_inputs
    from .summarizers.report import build, to_markdown, write
    run = find_run(args.work_dir)
    cfg = Config.fromfile(sorted(glob.glob(os.path.join(run, 'configs', '*.py')))[-1])
    models, abbrs, expected = table_inputs(cfg)
    aliases = (cfg.get('summarizer') or {}).get('model_aliases')
    report = build(run, models, abbrs, args.ruler_threshold, args.nolima_ratio, aliases, expected=expected)
    paths = write(report, os.path.join(run, 'summary'), 'longctx_report', not args.no_plots)
    print(to_markdown(report))
    print(f'written: {paths}')
    if report['failures'] and fail_on_missing_enabled(args.fail_on_missing):
        raise failure_exit(report['failures'], paths['md'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
