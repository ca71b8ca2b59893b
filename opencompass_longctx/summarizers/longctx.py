"""``LongCtxSummarizer``: OpenCompass's default summary plus the cross-benchmark tier table.

Its summary groups are derived from the dataset abbreviations of the run (a tier added by copying a config
shows up with no other edit); it then writes the tier table (markdown, CSV, JSON) and plots next to
OpenCompass's own summary and prints the table. Select it with ``configs/summarizers/longctx.py``.
"""
import os
from datetime import datetime
from typing import Dict, List, Optional

from opencompass.summarizers import DefaultSummarizer
from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg

from .metrics import NOLIMA_RATIO, RULER_THRESHOLD
from .report import ModelInfo, build, to_markdown, write
from .specs import BENCHMARKS, classify


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


class LongCtxSummarizer(DefaultSummarizer):

    def __init__(self, config, dataset_abbrs: Optional[List[str]] = None, summary_groups: Optional[List] = None,
                 prompt_db=None, ruler_threshold: float = RULER_THRESHOLD, nolima_ratio: float = NOLIMA_RATIO,
                 model_aliases: Optional[Dict[str, Dict[str, str]]] = None, plots: bool = True) -> None:
        self.abbrs = [dataset_abbr_from_cfg(d) for d in config['datasets']]
        given = list(summary_groups or [])
        names = {g['name'] for g in given}
        groups = given + [g for g in derive_summary_groups(self.abbrs) if g['name'] not in names]
        super().__init__(config, dataset_abbrs=dataset_abbrs, summary_groups=groups, prompt_db=prompt_db)
        self.ruler_threshold, self.nolima_ratio = ruler_threshold, nolima_ratio
        self.model_aliases, self.plots = model_aliases, plots

    def summarize(self, output_path: str = None,
                  time_str: str = datetime.now().strftime('%Y%m%d_%H%M%S')):  # noqa: B008 (as OpenCompass)
        super().summarize(output_path=output_path, time_str=time_str)
        models = [ModelInfo(model_abbr_from_cfg(m), m.get('max_seq_len')) for m in self.model_cfgs]
        report = build(self.work_dir, models, self.abbrs, self.ruler_threshold, self.nolima_ratio,
                       self.model_aliases)
        out_dir = os.path.dirname(output_path) if output_path else os.path.join(self.work_dir, 'summary')
        paths = write(report, out_dir, f'longctx_{time_str}', self.plots, self.work_dir)
        print('\nLong-context tier table\n\n' + to_markdown(report))
        self.logger.info(f'long-context tier table: {paths}')
        return report
