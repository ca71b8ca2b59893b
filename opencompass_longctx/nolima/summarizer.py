"""OpenCompass summarizer for NoLiMa: the default table plus base score, threshold and effective length.

``summarizer = dict(type=NoLiMaSummarizer)`` (optionally with ``dataset_abbrs`` / ``summary_groups`` as for
OpenCompass's ``DefaultSummarizer``). From the NoLiMa datasets in the run it adds:

* groups per variant (``nolima_<variant>_avg``: mean accuracy over the tiers of 1K and above that were run)
  and per tier (``nolima_<tier>_variants``: mean over the variants run at that tier), when there is more than
  one member;
* rows ``nolima_<variant>_base_score``, ``nolima_<variant>_threshold`` and
  ``nolima_<variant>_effective_length`` (in K tokens, contiguous from 1K; 0 means "<1K"), computed from the
  per-test details in the results files (base score needs the 250/500/1K tiers);
* a report ``summary/nolima_<time>.{json,md}`` (per model and variant: acc(L), base, threshold, effective
  length contiguous and raw, splits by question type, order, depth and haystack), printed after the table.
"""
import json
import os.path as osp
from collections import defaultdict
from datetime import datetime

import mmengine
from opencompass.summarizers.default import model_abbr_from_cfg_used_in_summarizer
from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg

from opencompass_longctx.summarizers.longctx import RobustSummarizer
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.nolima import metrics as nm
from opencompass_longctx.nolima.needles import resolve_variant
_DETAIL_KEYS = ('pair', 'haystack', 'context_length', 'correct', 'question_type', 'order', 'depth_index', 'group',
                'over_length')


def is_nolima(dataset_cfg) -> bool:
    t = dataset_cfg.get('type', '')
    return 'NoLiMaDataset' in (t if isinstance(t, str) else getattr(t, '__name__', ''))


def variant_of(dataset_cfg) -> str:
    ns = dataset_cfg.get('needle_set', 'main')
    if isinstance(ns, str) and ns.endswith('.json'):
        return 'custom_' + osp.splitext(osp.basename(ns))[0]
    return resolve_variant(ns)


def _unwrap(v):
    return v[0] if isinstance(v, list) and len(v) == 1 else v


class NoLiMaSummarizer(RobustSummarizer):

    def __init__(self, config, dataset_abbrs=None, summary_groups=None, prompt_db=None, auto_groups=True):
        super().__init__(config, dataset_abbrs=dataset_abbrs, summary_groups=summary_groups, prompt_db=prompt_db)
        self.nolima = []  # (abbr, variant, tier, L, dataset cfg)
        for d in self.dataset_cfgs:
            if is_nolima(d):
                tier = parse_tier(d['tier'])
                self.nolima.append((dataset_abbr_from_cfg(d), variant_of(d), tier.name, tier.tokens(1000), d))
        if auto_groups:
            names = {g['name'] for g in self.summary_groups}
            self.summary_groups = self.summary_groups + [g for g in self._auto_groups() if g['name'] not in names]
        self._reports = None

    def _auto_groups(self):
        by_variant, by_tier = defaultdict(list), defaultdict(list)
        for abbr, variant, tier, L, _ in self.nolima:
            if L >= nm.MIN_REPORTED_LENGTH:
                by_variant[variant].append(abbr)
            by_tier[tier].append(abbr)
        groups = [dict(name=f'nolima_{v}_avg', subsets=[(a, 'accuracy') for a in abbrs])
                  for v, abbrs in by_variant.items() if len(abbrs) > 1]
        groups += [dict(name=f'nolima_{t}_variants', subsets=[(a, 'accuracy') for a in abbrs])
                   for t, abbrs in by_tier.items() if len(abbrs) > 1]
        return groups

    def _records(self, model, dataset_cfg):
        res = self.results.get(model_abbr_from_cfg(model), dataset_abbr_from_cfg(dataset_cfg))
        details = (res or {}).get('details')
        if not res or 'error' in res or not isinstance(details, list):
            return None  # no result, or one that cannot be used (OpenCompass's table shows '-')
        recs = [{k: _unwrap(d.get(k)) for k in _DETAIL_KEYS} for d in details if isinstance(d, dict)]
        # over-length tests are not applicable: left out of every aggregate; so is a detail that is not a test's
        return [r for r in recs if not r['over_length'] and isinstance(r['context_length'], int)
                and r['pair'] is not None and r['correct'] is not None]

    def nolima_reports(self):
        """{model_abbr: {variant: report}} from the per-test details of every NoLiMa result."""
        if self._reports is not None:
            return self._reports
        reports = {}
        for model in self.model_cfgs:
            m = model_abbr_from_cfg_used_in_summarizer(model)
            per_variant = defaultdict(list)
            for abbr, variant, tier, L, d in self.nolima:
                recs = self._records(model, d)
                if recs:
                    per_variant[variant].extend(recs)
            reports[m] = {v: nm.report(recs) for v, recs in per_variant.items()}
        self._reports = reports
        return reports

    def _calculate_group_metrics(self, raw_results, parsed_results, dataset_metrics, dataset_eval_mode):
        out = super()._calculate_group_metrics(raw_results, parsed_results, dataset_metrics, dataset_eval_mode)
        raw_results, parsed_results, dataset_metrics, dataset_eval_mode = out
        for model_abbr, variants in self.nolima_reports().items():
            for variant, rep in variants.items():
                if rep.get('base') is None:
                    continue
                rows = [(f'nolima_{variant}_base_score', 'base_score', rep['base']),
                        (f'nolima_{variant}_threshold', 'threshold', rep['threshold'])]
                if rep['effective_length'] != '-':
                    rows.append((f'nolima_{variant}_effective_length', 'effective_length_k',
                                 (rep['effective_length_tokens'] or 0) / 1000.0))
                for name, metric, value in rows:
                    parsed_results[model_abbr][name] = {metric: value}
                    raw_results[model_abbr][name] = {metric: value}
                    dataset_metrics[name] = [metric]
                    dataset_eval_mode[name] = 'gen'
        return raw_results, parsed_results, dataset_metrics, dataset_eval_mode

    def format_report(self) -> str:
        reports = self.nolima_reports()
        lengths = sorted({L for *_, L, _ in self.nolima})
        head = ['model', 'variant', 'base (thr)', 'effective', 'raw max'] + [nm.length_label(L) for L in lengths]
        lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
        for m, variants in reports.items():
            for v, rep in sorted(variants.items()):
                acc = {int(L): x for L, x in rep['accuracy'].items()}
                base = rep.get('base')
                first = [m, v, f'{base:.1f} ({rep["threshold"]:.1f})' if base is not None else '-',
                         rep.get('effective_length', '-'), rep.get('raw_effective_length', '-')]
                lines.append('| ' + ' | '.join(first + nm.format_row(acc, base, lengths)) + ' |')
        return '\n'.join(lines) + '\n'

    def summarize(self, output_path=None, time_str=datetime.now().strftime('%Y%m%d_%H%M%S')):  # noqa: B008
        super().summarize(output_path=output_path, time_str=time_str)
        if not self.nolima:
            return
        out_dir = osp.dirname(output_path) if output_path else osp.join(self.work_dir, 'summary')
        mmengine.mkdir_or_exist(out_dir)
        md = self.format_report()
        with open(osp.join(out_dir, f'nolima_{time_str}.json'), 'w', encoding='utf-8') as f:
            json.dump(self.nolima_reports(), f, indent=1, sort_keys=True)
        with open(osp.join(out_dir, f'nolima_{time_str}.md'), 'w', encoding='utf-8') as f:
            f.write(md)
        print('\nNoLiMa: base score (threshold = 0.85 x base), effective length (contiguous from 1K; raw = '
              'largest passing length); <ins>x</ins>: >= threshold, *x*: < 0.5 x base\n\n' + md)
