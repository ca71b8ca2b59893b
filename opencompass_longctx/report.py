"""Print the tier table and write its files and plots for any finished OpenCompass run.

    python -m opencompass_longctx.report WORK_DIR [--ruler-threshold 85.6] [--no-plots]

WORK_DIR is a run directory (``outputs/x/20261129_153708``) or its parent (the newest run is used). Nothing
is re-run: the table is built from the run's dumped config and its result files.
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
    args = ap.parse_args(argv)
    from mmengine.config import Config
    from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg

    from .summarizers.report import ModelInfo, build, to_markdown, write
    run = find_run(args.work_dir)
    cfg = Config.fromfile(sorted(glob.glob(os.path.join(run, 'configs', '*.py')))[-1])
    models = [ModelInfo(model_abbr_from_cfg(m), m.get('max_seq_len')) for m in cfg['models']]
    abbrs = [dataset_abbr_from_cfg(d) for d in cfg['datasets']]
    aliases = (cfg.get('summarizer') or {}).get('model_aliases')
    report = build(run, models, abbrs, args.ruler_threshold, args.nolima_ratio, aliases)
    paths = write(report, os.path.join(run, 'summary'), 'longctx_report', not args.no_plots, run)
    print(to_markdown(report))
    print(f'written: {paths}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
