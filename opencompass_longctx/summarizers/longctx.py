"""``LongCtxSummarizer``: OpenCompass's default summary plus the cross-benchmark tier table.

Its summary groups are derived from the dataset abbreviations of the run (a tier added by copying a config
shows up with no other edit); it then writes the tier table (markdown, CSV, JSON) and plots next to
OpenCompass's own summary and prints the table. The table lists every dataset of the run that failed, with the
exception's last line and the task log (OpenCompass itself exits 0 when tasks fail); with ``fail_on_missing=True``
(or ``LONGCTX_FAIL_ON_MISSING=1``) the ``opencompass`` command then exits with status 1. Select it with
``configs/summarizers/longctx.py``.

A dataset of this package that no cell of the tier table reads (:mod:`.placement`: a user-made abbr such as
``babilong_qa1_4k_sys``, a task in no row, ...) is listed after the table (and under ``unplaced`` in its JSON);
when it has results (scores the table does not show) the command then exits with status 1 naming it, unless
``allow_unplaced=True`` (or ``LONGCTX_ALLOW_UNPLACED=1``) accepts it (a warning only).
"""
import os
from dataclasses import asdict
from datetime import datetime
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass.summarizers.default import (METRIC_BLACKLIST, METRIC_WHITELIST, DefaultSummarizer,
                                             model_abbr_from_cfg_used_in_summarizer)
from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg

from opencompass_longctx.summarizers.caveats import mark_caveats
from opencompass_longctx.combinations import resolved_config
from opencompass_longctx.summarizers.failures import Failure
from opencompass_longctx.summarizers.metrics import NOLIMA_RATIO, RULER_THRESHOLD
from opencompass_longctx.summarizers.placement import ALLOW_ENV, allow_unplaced_enabled, exit_message, section, stopping, unplaced
from opencompass_longctx.summarizers.table import ModelInfo, Results, build, to_markdown, write
from opencompass_longctx.summarizers.rows import BENCHMARKS, classify
FAIL_ENV = 'LONGCTX_FAIL_ON_MISSING'


def derive_summary_groups(abbrs: List[str]) -> List[Dict]:
    """One group per benchmark row and tier whose tasks are all in the run (children before parents)."""
    found = classify(abbrs)  # (per-model copies of a dataset: the first one names the group's subset)
    groups = []
    for bench in BENCHMARKS:
        for tier, tasks in found.get(bench.name, {}).items():
            made = set()
            for row in bench.rows:
                name = f'{bench.name}_{row.name}_{tier}'
                if row.of_rows:
                    if all(r in made for r in row.of_rows):
                        groups.append(dict(name=name, subsets=[(f'{bench.name}_{r}_{tier}', 'naive_average')
                                                               for r in row.of_rows]))
                        made.add(row.name)
                    continue
                if row.detail_filter or len(row.tasks) == 1:
                    continue  # a split of one dataset, or the dataset itself: no group
                present = [t for t in row.tasks if t in tasks]
                if present and (row.partial_ok or len(present) == len(row.tasks)):
                    groups.append(dict(name=name, subsets=[(tasks[t], bench.metric) for t in present]))
                    made.add(row.name)
    return groups


def table_inputs(cfg) -> Tuple[List[ModelInfo], List[str], List[Tuple[str, str]]]:
    """From a run's config: the models, the dataset abbrs, and the (model, dataset) pairs the run was meant to
    produce (``model_dataset_combinations`` when the config has it, else every model with every dataset)."""
    models = [ModelInfo(model_abbr_from_cfg(m), m.get('max_seq_len')) for m in cfg['models']]
    abbrs = [dataset_abbr_from_cfg(d) for d in cfg['datasets']]
    combos = cfg.get('model_dataset_combinations') or [dict(models=cfg['models'], datasets=cfg['datasets'])]
    expected = [(model_abbr_from_cfg(m), dataset_abbr_from_cfg(d))
                for c in combos for m in c['models'] for d in c['datasets']]
    return models, abbrs, list(dict.fromkeys(expected))


def fail_on_missing_enabled(flag: Optional[bool]) -> bool:
    if flag is not None:
        return bool(flag)
    return os.environ.get(FAIL_ENV, '').strip().lower() in ('1', 'true', 'yes')


def failure_exit(failures: Sequence[Failure], where: str) -> SystemExit:
    """The SystemExit (status 1, message on stderr) that ends a run whose datasets failed."""
    lines = [f'  {f.line()}' for f in failures]
    return SystemExit(f'{len(failures)} dataset(s) of the run failed or have no usable result '
                      f'(fail_on_missing / {FAIL_ENV}); the tier table lists them too ({where}):\n'
                      + '\n'.join(lines))


class RobustSummarizer(DefaultSummarizer):
    """``DefaultSummarizer`` whose result reading survives bad files: OpenCompass 0.5.4's ``_pick_up_results``
    with each file read once through ``Results`` (a truncated file, ``[]`` or a non-object becomes an
    ``{'error': ...}`` entry, which OpenCompass's table shows as '-', instead of a traceback)."""

    def __init__(self, config, dataset_abbrs=None, summary_groups=None, prompt_db=None) -> None:
        super().__init__(config, dataset_abbrs=dataset_abbrs, summary_groups=list(summary_groups or []),
                         prompt_db=prompt_db)
        self.results = Results(self.work_dir)

    def _pick_up_results(self):
        raw_results, parsed_results, dataset_metrics = {}, {}, {}
        for model in self.model_cfgs:
            model_abbr = model_abbr_from_cfg_used_in_summarizer(model)
            parsed_results.setdefault(model_abbr, {})
            raw_results.setdefault(model_abbr, {})
            for dataset in self.dataset_cfgs:
                dataset_abbr = dataset_abbr_from_cfg(dataset)
                result = self.results.get(model_abbr_from_cfg(model), dataset_abbr)
                if result is None:
                    continue
                result = {k: v for k, v in result.items() if k != 'details'}
                raw_results[model_abbr][dataset_abbr] = result
                if 'error' in result:
                    self.logger.warning(f'{model_abbr}/{dataset_abbr}: {result["error"]}')
                    continue
                scores = {m: s for m, s in result.items()
                          if m not in METRIC_BLACKLIST and isinstance(s, (int, float))}
                if not scores:
                    self.logger.warning(f'unknown result format: {result}, continue')
                    continue
                metrics = sorted(scores, key=lambda i: METRIC_WHITELIST.index(i) if i in METRIC_WHITELIST
                                 else len(METRIC_WHITELIST))
                if dataset_abbr in dataset_metrics and tuple(dataset_metrics[dataset_abbr]) != tuple(metrics):
                    self.logger.warning(f'{dataset_abbr} has different metrics: {dataset_metrics[dataset_abbr]} vs '
                                        f'{metrics} ({model_abbr})')
                    continue
                dataset_metrics[dataset_abbr] = metrics
                parsed_results[model_abbr][dataset_abbr] = scores
        dataset_eval_mode = {}
        for dataset in self.dataset_cfgs:
            inferencer = dataset.get('infer_cfg', {}).get('inferencer', {}).get('type', '')
            inferencer = inferencer if isinstance(inferencer, str) else inferencer.__name__
            mode = next((m for key, m in (('GenInferencer', 'gen'), ('PPLInferencer', 'ppl'),
                                          ('PPLOnlyInferencer', 'ppl'), ('LLInferencer', 'll')) if key in inferencer),
                        'unknown')
            dataset_eval_mode[dataset_abbr_from_cfg(dataset)] = mode
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
        groups = given + [g for g in derive_summary_groups(self.abbrs) if g['name'] not in names]
        super().__init__(config, dataset_abbrs=dataset_abbrs, summary_groups=groups, prompt_db=prompt_db)
        self.ruler_threshold, self.nolima_ratio = ruler_threshold, nolima_ratio
        self.model_aliases, self.plots = model_aliases, plots
        self.fail_on_missing = fail_on_missing_enabled(fail_on_missing)
        self.allow_unplaced = allow_unplaced_enabled(allow_unplaced)

    def summarize(self, output_path: str = None,
                  time_str: str = datetime.now().strftime('%Y%m%d_%H%M%S')):  # noqa: B008 (as OpenCompass)
        super().summarize(output_path=output_path, time_str=time_str)
        models, abbrs, expected = table_inputs(self.cfg)
        report = build(self.work_dir, models, abbrs, self.ruler_threshold, self.nolima_ratio,
                       self.model_aliases, expected=expected, results=self.results)
        mark_caveats(report, self.cfg['models'])   # tiers a model runs beyond its engine's support: marked
        lost = unplaced(self.cfg['datasets'], expected, dataset_abbr_from_cfg,
                        has_result=lambda m, a: os.path.isfile(self.results.path(m, a)))
        report['unplaced'] = [asdict(u) for u in lost]   # (in the JSON)
        out_dir = os.path.dirname(output_path) if output_path else os.path.join(self.work_dir, 'summary')
        paths = write(report, out_dir, f'longctx_{time_str}', self.plots)
        if lost:
            with open(paths['md'], 'a', encoding='utf-8') as f:
                f.write(section(lost))
        print('\nLong-context tier table\n\n' + to_markdown(report) + section(lost))
        self.logger.info(f'long-context tier table: {paths}')
        stops = []
        if report['failures']:
            self.logger.warning(f'{len(report["failures"])} dataset(s) failed or have no usable result: '
                                + '; '.join(f.line() for f in report['failures']))
            if self.fail_on_missing:
                stops.append(failure_exit(report['failures'], paths['md']).code)
        if lost:
            self.logger.warning(f'{len(lost)} dataset(s) of the run are not in the tier table: '
                                + '; '.join(u.line() for u in lost)
                                + (f' (accepted: allow_unplaced / {ALLOW_ENV})' if self.allow_unplaced else ''))
            if stopping(lost) and not self.allow_unplaced:
                stops.append(exit_message(stopping(lost), paths['md']))
        if stops:
            raise SystemExit('\n\n'.join(stops))
        return report
