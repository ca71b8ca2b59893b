"""``LongCtxSummarizer``: OpenCompass's default summary plus the cross-benchmark tier table.

Its summary groups are derived from the dataset abbreviations of the run and the benchmarks' specs
(:mod:`.groups`: a tier added by copying a config shows up with no other edit). After OpenCompass's own table it
adds the figures a benchmark's spec reports of its own (:class:`opencompass_longctx.spec.OwnReport`: NoLiMa's
base score, threshold and effective length per needle set, as rows of OpenCompass's table and as
``summary/nolima_<time>.{json,md}``); it then writes the tier table (markdown, CSV, JSON) and plots next to
OpenCompass's own summary and prints the table. The table lists every dataset of the run that failed, with the
exception's last line and the task log (OpenCompass itself exits 0 when tasks fail); with ``fail_on_missing=True``
(or ``LONGCTX_FAIL_ON_MISSING=1``) the ``opencompass`` command then exits with status 1. Select it with
``configs/summarizers/longctx.py``.

The tier report is :mod:`opencompass_longctx.leaderboard`'s, written by :mod:`opencompass_longctx.writers`.

A dataset of this package that no cell of the tier table reads (:mod:`opencompass_longctx.leaderboard.placement`: a
user-made abbr such as ``babilong_qa1_4k_sys``, a task in no row, ...) is listed after the table (and under
``unplaced`` in its JSON); when it has results (scores the table does not show) the command then exits with status 1
naming it, unless ``allow_unplaced=True`` (or ``LONGCTX_ALLOW_UNPLACED=1``) accepts it (a warning only).
"""
import json
import os
from datetime import datetime
from typing import Dict, List, Optional, Tuple

from opencompass.summarizers.default import DefaultSummarizer, model_abbr_from_cfg_used_in_summarizer
from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg

from opencompass_longctx.combinations import resolved_config
from opencompass_longctx.errors import in_opencompass
from opencompass_longctx.leaderboard.build import build
from opencompass_longctx.leaderboard.failures import fail_on_missing_enabled, failure_exit
from opencompass_longctx.leaderboard.placement import (ALLOW_ENV, allow_unplaced_enabled, exit_message, stopping,
                                                       unplaced)
from opencompass_longctx.leaderboard.results import Results, score_problem
from opencompass_longctx.leaderboard.runs import table_inputs
from opencompass_longctx.spec import OwnReport, spec_of
from opencompass_longctx.stats.effective import NOLIMA_RATIO, RULER_THRESHOLD
from opencompass_longctx.summarizers.groups import summary_groups as spec_groups
from opencompass_longctx.weights import record_run_models
from opencompass_longctx.writers.formats import render, save
from opencompass_longctx.writers.plots import plot_report
class RobustSummarizer(DefaultSummarizer):
    """``DefaultSummarizer`` whose result reading survives bad files: OpenCompass's own ``_pick_up_results`` reads
    the files it can parse, model by model; a file it cannot (truncated, ``[]``, not a JSON object: read once
    through ``Results``) becomes an ``{'error': ...}`` entry, which OpenCompass's table shows as '-'."""

    def __init__(self, config, dataset_abbrs=None, summary_groups=None, prompt_db=None) -> None:
        super().__init__(config, dataset_abbrs=dataset_abbrs, summary_groups=list(summary_groups or []),
                         prompt_db=prompt_db)
        self.results = Results(self.work_dir)

    def _unreadable(self, model, dataset) -> Optional[dict]:
        """An unparsable result, or one of this package's results whose score cannot be shown (outside [0, 100],
        none where samples were answered: :func:`.results.score_problem`), as an error entry: '-' in OpenCompass's
        table as in the tier table."""
        model_abbr, abbr = model_abbr_from_cfg(model), dataset_abbr_from_cfg(dataset)
        result = self.results.get(model_abbr, abbr)
        if not result or result.get('unreadable'):
            return result or None
        spec = spec_of(dataset)
        problem = spec and spec.summary and 'error' not in result and score_problem(result, spec.summary[0].metric)
        return {'error': f'unusable result file {self.results.path(model_abbr, abbr)}: {problem}',
                'unreadable': True} if problem else None

    def _pick_up_one(self, model, datasets):
        """OpenCompass's reading of one model's results of ``datasets`` (none: only the datasets' eval modes)."""
        models, every = self.model_cfgs, self.dataset_cfgs
        self.model_cfgs, self.dataset_cfgs = ([model] if model else []), datasets
        try:
            return super()._pick_up_results()
        finally:
            self.model_cfgs, self.dataset_cfgs = models, every

    def _pick_up_results(self):
        raw_results, parsed_results, dataset_metrics = {}, {}, {}
        for model in self.model_cfgs:
            model_abbr = model_abbr_from_cfg_used_in_summarizer(model)
            bad = {id(d): self._unreadable(model, d) for d in self.dataset_cfgs}
            raw, parsed, metrics, _ = self._pick_up_one(model, [d for d in self.dataset_cfgs if not bad[id(d)]])
            mine = raw_results.setdefault(model_abbr, {})
            parsed_results.setdefault(model_abbr, {})
            for d in self.dataset_cfgs:
                abbr = dataset_abbr_from_cfg(d)
                if bad[id(d)]:
                    mine[abbr] = dict(bad[id(d)])
                    self.logger.warning(f'{model_abbr}/{abbr}: {bad[id(d)]["error"]}')
                elif abbr in raw.get(model_abbr, {}):
                    mine[abbr] = raw[model_abbr][abbr]
            for abbr, names in metrics.items():
                if abbr in dataset_metrics and tuple(dataset_metrics[abbr]) != tuple(names):
                    self.logger.warning(f'{abbr} has different metrics: {dataset_metrics[abbr]} vs {names} '
                                        f'({model_abbr})')
                    continue
                dataset_metrics[abbr] = names
                parsed_results[model_abbr][abbr] = parsed[model_abbr][abbr]
        dataset_eval_mode = self._pick_up_one(None, self.dataset_cfgs)[3]
        return raw_results, parsed_results, dataset_metrics, dataset_eval_mode


class LongCtxSummarizer(RobustSummarizer):

    def __init__(self, config, dataset_abbrs: Optional[List[str]] = None, summary_groups: Optional[List] = None,
                 prompt_db=None, ruler_threshold: float = RULER_THRESHOLD, nolima_ratio: float = NOLIMA_RATIO,
                 model_aliases: Optional[Dict[str, Dict[str, str]]] = None, plots: bool = True,
                 fail_on_missing: Optional[bool] = None, allow_unplaced: Optional[bool] = None) -> None:
        config = resolved_config(config)   # each model's datasets as the run made them (opencompass_longctx.combinations)
        self.abbrs = [dataset_abbr_from_cfg(d) for d in config['datasets']]
        given = list(summary_groups or [])
        names = {g['name'] for g in given}
        groups = given + [g for g in spec_groups(self.abbrs) if g['name'] not in names]
        super().__init__(config, dataset_abbrs=dataset_abbrs, summary_groups=groups, prompt_db=prompt_db)
        self.ruler_threshold, self.nolima_ratio = ruler_threshold, nolima_ratio
        self.model_aliases, self.plots = model_aliases, plots
        self.fail_on_missing = fail_on_missing_enabled(fail_on_missing)
        self.allow_unplaced = allow_unplaced_enabled(allow_unplaced)
        self._own: Optional[List[Tuple[OwnReport, List, Dict[str, Dict]]]] = None

    def own_reports(self) -> List[Tuple[OwnReport, List, Dict[str, Dict]]]:
        """(report, its datasets, {model: its reports}) for each benchmark of the run with figures of its own."""
        if self._own is None:
            by_spec: Dict[str, Tuple[OwnReport, List]] = {}
            for d in self.dataset_cfgs:
                spec = spec_of(d)
                if spec is not None and spec.report is not None:
                    by_spec.setdefault(spec.name, (spec.report, []))[1].append(d)
            self._own = [(report, cfgs, {model_abbr_from_cfg_used_in_summarizer(m): report.reports(
                              [(d, self.results.get(model_abbr_from_cfg(m), dataset_abbr_from_cfg(d))) for d in cfgs])
                          for m in self.model_cfgs}) for report, cfgs in by_spec.values()]
        return self._own

    def _calculate_group_metrics(self, raw_results, parsed_results, dataset_metrics, dataset_eval_mode):
        """OpenCompass's groups, then the rows of each benchmark's own figures."""
        out = super()._calculate_group_metrics(raw_results, parsed_results, dataset_metrics, dataset_eval_mode)
        for report, _, by_model in self.own_reports():
            for model_abbr, reports in by_model.items():
                for name, metric, value in report.rows(reports):
                    parsed_results[model_abbr][name] = {metric: value}
                    raw_results[model_abbr][name] = {metric: value}
                    dataset_metrics[name] = [metric]
                    dataset_eval_mode[name] = 'gen'
        return out

    def write_own_reports(self, out_dir: str, time_str: str) -> None:
        """Each benchmark's own figures: ``<name>_<time>.json`` (every model's reports) and ``.md``, printed."""
        for report, cfgs, by_model in self.own_reports():
            os.makedirs(out_dir, exist_ok=True)
            md = report.markdown(by_model, cfgs)
            with open(os.path.join(out_dir, f'{report.name}_{time_str}.json'), 'w', encoding='utf-8') as f:
                json.dump(by_model, f, indent=1, sort_keys=True)
            with open(os.path.join(out_dir, f'{report.name}_{time_str}.md'), 'w', encoding='utf-8') as f:
                f.write(md)
            print(f'\n{report.heading}\n\n{md}')

    def summarize(self, output_path: str = None,
                  time_str: str = datetime.now().strftime('%Y%m%d_%H%M%S')):  # noqa: B008 (as OpenCompass)
        with in_opencompass():     # in the opencompass command: a LongCtxError is one line and exit status 2
            return self._summarize(output_path, time_str)

    def _summarize(self, output_path: Optional[str], time_str: str):
        record_run_models(self.cfg)   # (a run whose partitioners are OpenCompass's own records its models here)
        super().summarize(output_path=output_path, time_str=time_str)
        out_dir = os.path.dirname(output_path) if output_path else os.path.join(self.work_dir, 'summary')
        self.write_own_reports(out_dir, time_str)
        models, abbrs, expected = table_inputs(self.cfg)
        lost = unplaced(self.cfg['datasets'], expected, dataset_abbr_from_cfg,
                        has_result=lambda m, a: os.path.isfile(self.results.path(m, a)))
        report = build(self.work_dir, models, abbrs, self.ruler_threshold, self.nolima_ratio,
                       self.model_aliases, expected=expected, results=self.results,
                       model_cfgs={model_abbr_from_cfg(m): m for m in self.cfg['models']}, unplaced=lost)
        texts = render(report)
        paths = save(texts, out_dir, f'longctx_{time_str}')
        if self.plots:
            paths['plots'] = plot_report(report, os.path.join(out_dir, f'longctx_{time_str}_plots'))
        print('\nLong-context tier table\n\n' + texts['md'])
        self.logger.info(f'long-context tier table: {paths}')
        stops = []
        if report.failures:
            self.logger.warning(f'{len(report.failures)} dataset(s) failed or have no usable result: '
                                + '; '.join(f.line() for f in report.failures))
            if self.fail_on_missing:
                stops.append(failure_exit(report.failures, paths['md']).code)
        if lost:
            self.logger.warning(f'{len(lost)} dataset(s) of the run are not in the tier table: '
                                + '; '.join(u.line() for u in lost)
                                + (f' (accepted: allow_unplaced / {ALLOW_ENV})' if self.allow_unplaced else ''))
            if stopping(lost) and not self.allow_unplaced:
                stops.append(exit_message(stopping(lost), paths['md']))
        if stops:
            raise SystemExit('\n\n'.join(stops))
        return report
