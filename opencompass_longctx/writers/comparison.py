"""The comparison's files: the paired differences and the leaderboard of
:class:`~opencompass_longctx.leaderboard.compare.Comparer` as Markdown, CSV and JSON (``longctx_compare.*``), with
the words that say how they were made (:data:`METHODS`, :data:`RANK_RULE`; the page prints them too)."""
import csv
import io
import json
from dataclasses import fields
from typing import Dict, Optional, Sequence

from opencompass_longctx.leaderboard.compare import FULL_TABLE_UP_TO, LEVEL, Paired
from opencompass_longctx.leaderboard.tier_report import Effective
from opencompass_longctx.stats import paired as stats
from opencompass_longctx.stats.ranks import rank_text
from opencompass_longctx.writers.formats import md_row


def _num(v: Optional[float], fmt: str = '+.1f') -> str:
    return '' if v is None else format(v, fmt)


def interval_text(p: Paired) -> str:
    return '' if p.lo is None else f'[{p.lo:+.1f}, {p.hi:+.1f}]'


def excluded_text(p: Paired) -> str:
    parts = [f'{v} {k}' for k, v in sorted(p.excluded.items())]
    if p.unmatched:
        parts.append(f'{p.unmatched} in one model only')
    return ', '.join(parts) or '0'


def method_text(p: Paired) -> str:
    """'sign-flip (58 clusters)', 'mcnemar (7540 pairs)', 'not testable'."""
    if not p.method or p.method == stats.NOT_TESTABLE or not p.clusters:
        return p.method
    return f'{p.method} ({p.clusters} {"pairs" if p.method == "mcnemar" else "clusters"})'


METHODS = ('Methods (95% level): sign-flip = a sign-flip permutation test over clusters (samples that share text, '
           "as the benchmark declares them: NoLiMa's needle entry; else every sample its own), every one of the 2^G "
           f'sign vectors counted where the models differ on G <= {stats.EXACT_UP_TO} clusters (a uniform win over G '
           'clusters: p = 2/2^G), '
           'its interval the same test inverted; sign-flip (normal) = its normal approximation, for more clusters '
           f'(where at most {stats.EXACT_UP_TO} of them differ, p is the larger of it and the exact p); '
           'mcnemar = the exact McNemar test and Clopper-Pearson interval, for independent 0/1 samples of equal '
           f'weight; not testable = fewer than {stats.MIN_TESTABLE} clusters, where no sign flip can reach p < 0.05. '
           '* = p < 0.05.')
RANK_RULE = ('Ranks ({rank_by}): by score, every pair of models is compared (paired, over the samples and the tiers '
             "both have) and Holm's step-down correction runs over all pairs of the ranking at once; a model's rank "
             'interval is [1 + the models significantly better, K - the models significantly worse] (a single number '
             'when both ends meet; models whose intervals share a rank are not told apart). Models are listed by '
             'best rank (as Chatbot Arena lists them), then pairwise wins on their shared tiers, then their mean. Per '
             'tier the same over the models with a score '
             'there. By ruler or nolima: by that effective length, the rank interval from the effective lengths\' '
             '95% intervals (a model is above another only when its interval lies wholly above), listed by best '
             'rank, then length.')


def _board_line(e: dict) -> str:
    vs = e['vs'] or {}
    p = Paired(**{k: v for k, v in vs.items() if k in Paired.__dataclass_fields__}) if vs else None
    eff = Effective(e['effective'], interval=e.get('effective_interval'), few_clusters=e.get('effective_few', 0)).text()
    diff = ('' if p is None else f'{p.a} - {p.b} = {p.diff:+.1f}' + (' *' if vs.get('significant') else '')
            if p.diff is not None else p.note)
    per_tier = ', '.join(f'{t}: {rank_text(tuple(r))}' for t, r in e.get('tier_ranks', {}).items())
    return md_row([e['bench'], e['row'], e.get('rank_text', e['rank']), e['model'], _num(e['mean'], '.1f') or '-',
                   ', '.join(e.get('tiers') or []) + (' †' if e.get('partial') else ''), per_tier, diff,
                   '' if p is None else interval_text(p), '' if p is None else method_text(p),
                   _num(vs.get('p_holm'), '.3g'), eff, e.get('decision', '')])


def to_markdown(table: Sequence[Paired], board: Sequence[dict], rank_by: str = 'score') -> str:
    models = {x for p in table for x in (p.a, p.b)}
    lines = ['Paired differences A - B (percentage points) over the samples both models ran, 95% interval. '
             + METHODS, '']
    if len(models) > FULL_TABLE_UP_TO:
        lines += [f'{len(models)} models: the pairwise table ({len(table)} comparisons) is in longctx_compare.csv '
                  'and .json; the ranks below rest on it.']
    else:
        lines += ['| A | B | benchmark | row | tier | A - B | 95% interval | method | p | pairs | excluded | note |',
                  '|' + '---|' * 12]
        for p in table:
            lines.append(md_row([p.a, p.b, p.bench, p.row, p.tier, _num(p.diff) + (' *' if p.significant else ''),
                                 interval_text(p), method_text(p), _num(p.p, '.3g'), str(p.pairs), excluded_text(p),
                                 p.note]))
    lines += ['', 'Leaderboard per benchmark. ' + RANK_RULE.format(rank_by=rank_by)
              + ' †: the model has fewer tiers than others and is ranked on the tiers it shares with each.', '',
              '| benchmark | row | rank | model | mean | tiers | rank per tier | vs leader (leader - model, shared '
              'tiers) | 95% interval | method | p (Holm) | eff. len (95% interval) | why |', '|' + '---|' * 13]
    lines += [_board_line(e) for e in board]
    return '\n'.join(lines) + '\n'


def to_csv(table: Sequence[Paired]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(['a', 'b', 'benchmark', 'row', 'tier', 'diff', 'lo', 'hi', 'significant', 'testable', 'method', 'p',
                'clusters', 'pairs', 'excluded', 'unmatched', 'note'])
    for p in table:
        w.writerow([p.a, p.b, p.bench, p.row, p.tier, _num(p.diff, '.4f'), _num(p.lo, '.4f'), _num(p.hi, '.4f'),
                    int(p.significant), int(p.testable), p.method, _num(p.p, '.6g'), p.clusters, p.pairs,
                    excluded_text(p), p.unmatched, p.note])
    return buf.getvalue()


def to_json(table: Sequence[Paired], board: Sequence[dict], rank_by: str = 'score') -> str:
    names = [f.name for f in fields(Paired)]     # flat fields (``excluded`` a dict of ints): no deep copy needed
    rows = [dict({k: getattr(p, k) for k in names}, significant=p.significant) for p in table]
    method = dict(level=LEVEL, tests=METHODS, exact_up_to=stats.EXACT_UP_TO, min_testable=stats.MIN_TESTABLE,
                  ranks=RANK_RULE.format(rank_by=rank_by))
    return json.dumps({'method': method, 'paired': rows, 'leaderboard': list(board)}, indent=1, sort_keys=True)


def render(table: Sequence[Paired], board: Sequence[dict], rank_by: str) -> Dict[str, str]:
    """The comparison as Markdown, CSV and JSON text: {'md', 'csv', 'json'} (written as ``longctx_compare.*``)."""
    return {'md': to_markdown(table, board, rank_by), 'csv': to_csv(table), 'json': to_json(table, board, rank_by)}
