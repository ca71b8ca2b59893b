"""NoLiMa's own figures beside the tier table (:class:`opencompass_longctx.spec.OwnReport`; no OpenCompass import).

Per model and needle set (``main``, ``hard``, ..., ``custom_<file>`` for a needle file): acc(L), the base score,
the threshold and the effective length (contiguous from 1K, and the raw largest passing length), with splits by
question type, order, depth and haystack (:func:`opencompass_longctx.nolima.metrics.report`), computed from the
per-test details of the results. OpenCompass's table gets the rows ``nolima_<set>_base_score``,
``nolima_<set>_threshold`` and ``nolima_<set>_effective_length`` (in K tokens; 0 means "<1K"); the base score
needs the 250/500/1K tiers. Over-length tests are not applicable and left out of every figure.
"""
import os.path as osp
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

from opencompass_longctx.spec import OwnReport
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.nolima import metrics as nm
from opencompass_longctx.nolima.needles import resolve_variant
DETAIL_KEYS = ('pair', 'haystack', 'context_length', 'correct', 'question_type', 'order', 'depth_index', 'group',
               'over_length')
HEADING = ('NoLiMa: base score (threshold = 0.85 x base), effective length (contiguous from 1K; raw = largest '
           'passing length); <ins>x</ins>: >= threshold, *x*: < 0.5 x base')


def variant_of(dataset_cfg) -> str:
    ns = dataset_cfg.get('needle_set', 'main')
    if isinstance(ns, str) and ns.endswith('.json'):
        return 'custom_' + osp.splitext(osp.basename(ns))[0]
    return resolve_variant(ns)


def _unwrap(v):
    return v[0] if isinstance(v, list) and len(v) == 1 else v


def records(result: Optional[dict]) -> Optional[List[dict]]:
    """The scored tests of one result (None: no result, or one that cannot be used)."""
    details = (result or {}).get('details')
    if not result or 'error' in result or not isinstance(details, list):
        return None
    recs = [{k: _unwrap(d.get(k)) for k in DETAIL_KEYS} for d in details if isinstance(d, dict)]
    return [r for r in recs if not r['over_length'] and isinstance(r['context_length'], int)
            and r['pair'] is not None and r['correct'] is not None]


def reports(results: Sequence[Tuple[Dict, Optional[dict]]]) -> Dict[str, dict]:
    """{needle set: report} of one model, from its (dataset config, result) pairs."""
    per_variant = defaultdict(list)
    for cfg, result in results:
        recs = records(result)
        if recs:
            per_variant[variant_of(cfg)].extend(recs)
    return {v: nm.report(recs) for v, recs in per_variant.items()}


def rows(model_reports: Dict[str, dict]) -> List[Tuple[str, str, float]]:
    """OpenCompass rows (name, metric, value): base score, threshold and effective length of each needle set."""
    out = []
    for variant, rep in model_reports.items():
        if rep.get('base') is None:
            continue
        out += [(f'nolima_{variant}_base_score', 'base_score', rep['base']),
                (f'nolima_{variant}_threshold', 'threshold', rep['threshold'])]
        if rep['effective_length'] != '-':
            out.append((f'nolima_{variant}_effective_length', 'effective_length_k',
                        (rep['effective_length_tokens'] or 0) / 1000.0))
    return out


def markdown(by_model: Dict[str, Dict[str, dict]], dataset_cfgs: Sequence[Dict]) -> str:
    """One line per model and needle set: base (threshold), effective lengths, acc(L) with the paper's marks."""
    lengths = sorted({parse_tier(d['tier']).tokens(1000) for d in dataset_cfgs})
    head = ['model', 'variant', 'base (thr)', 'effective', 'raw max'] + [nm.length_label(L) for L in lengths]
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for m, variants in by_model.items():
        for v, rep in sorted(variants.items()):
            acc = {int(L): x for L, x in rep['accuracy'].items()}
            base = rep.get('base')
            first = [m, v, f'{base:.1f} ({rep["threshold"]:.1f})' if base is not None else '-',
                     rep.get('effective_length', '-'), rep.get('raw_effective_length', '-')]
            lines.append('| ' + ' | '.join(first + nm.format_row(acc, base, lengths)) + ' |')
    return '\n'.join(lines) + '\n'


NOLIMA_REPORT = OwnReport(name='nolima', reports=reports, rows=rows, markdown=markdown, heading=HEADING)
