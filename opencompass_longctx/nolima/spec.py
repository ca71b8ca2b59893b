"""NoLiMa's spec (:mod:`opencompass_longctx.spec`): its sizes, its data checks and its tables."""
import os
from typing import Dict, List, Optional

from opencompass_longctx.spec import TIER_PATTERN, Bench, BenchmarkSpec, Row
from opencompass_longctx.options import integer, value_or
from opencompass_longctx.reasoning import OWN_MODE
from opencompass_longctx.tokenizer.counting import DEFAULT_TOKENIZER
from opencompass_longctx.nolima import data as ndata
from opencompass_longctx.nolima import metrics as nmetrics
from opencompass_longctx.nolima.haystack import default_depth_intervals
from opencompass_longctx.nolima.needles import EXPECTED_PAIRS, resolve_variant
from opencompass_longctx.nolima.prompts import MAX_NEW_TOKENS, REASONING_MAX_NEW_TOKENS
from opencompass_longctx.nolima.summary import NOLIMA_REPORT
FAITHFUL_THINKING_MODE = 'nolima-reasoning'     # the paper's budget for reasoning models
SAMPLE_CHARS = 60000
PROMPT_EXTRA_TOKENS = 150     # besides the haystack of L tokens: needle, template and question


def data_tokenizer(d: Dict) -> str:
    return d.get('tokenizer') or DEFAULT_TOKENIZER


def estimate_rows(d: Dict, tier_tokens: int) -> int:
    """Pairs x haystacks x depths."""
    pairs = d.get('pairs')
    if isinstance(pairs, int) and not isinstance(pairs, bool):
        n_pairs = pairs
    elif isinstance(pairs, (list, tuple)):
        n_pairs = len(pairs)
    else:
        try:
            n_pairs = EXPECTED_PAIRS.get(resolve_variant(d.get('needle_set', 'main')), EXPECTED_PAIRS['main'])
        except Exception:  # noqa: BLE001 - a custom needle set: the main set's size as the estimate
            n_pairs = EXPECTED_PAIRS['main']
    haystacks = len(d['haystacks']) if d.get('haystacks') else ndata.NUM_BOOKS
    depths = (len(d['depth_indices']) if d.get('depth_indices') else
              value_or(integer(1), d.get('depth_intervals'), None) or default_depth_intervals(tier_tokens))
    return n_pairs * haystacks * depths


def thinking_budget(max_out_len: int):
    """The paper's rule for reasoning models: 1536 new tokens for trace plus answer (spec nolima.md, Decoding),
    the trace stripped before scoring (``strip_think``, the default). A budget other than the authors' 192 is
    kept as it is, in the package's named mode (not the paper's protocol)."""
    if int(max_out_len) != MAX_NEW_TOKENS:
        return int(max_out_len), OWN_MODE
    return max(REASONING_MAX_NEW_TOKENS, int(max_out_len)), FAITHFUL_THINKING_MODE


def estimate_prompt_tokens(d: Dict, tier_tokens: int) -> int:
    return tier_tokens + PROMPT_EXTRA_TOKENS


def sample_text(d: Dict) -> Optional[str]:
    """The start of the first book."""
    rel = ndata.book_relpaths('rand_shuffle', [0])[0]
    with open(ndata.locate([rel], d.get('path'), False, None)[rel], encoding='utf-8') as f:
        return f.read(SAMPLE_CHARS)


def check_files(d: Dict) -> List[str]:
    """The needle set and the books the loader reads (raises the loader's DataNotFoundError when missing)."""
    ns = d.get('needle_set', 'main')
    if isinstance(ns, str) and ns.endswith('.json'):
        if not os.path.isfile(ns):
            return [f'needle set {ns!r} does not exist']
    else:
        ndata.locate([ndata.needle_relpath(resolve_variant(ns))], d.get('path'), False, None, what='the needle set')
    # 'auto' reads the short books first (the long ones only where those cannot hold L): both layouts need them
    hs_tier = d.get('haystack_tier', 'auto')
    books = list(d.get('haystacks') or range(ndata.NUM_BOOKS))
    ndata.locate(ndata.book_relpaths('rand_shuffle' if hs_tier == 'auto' else hs_tier, books), d.get('path'),
                 False, None, what='the books')
    return []


BENCHMARK = BenchmarkSpec(
    name='nolima', dataset_type='NoLiMaDataset', tier_unit=1000, tokens_column='prompt_tokens_approx',
    data_tokenizer=data_tokenizer, estimate_rows=estimate_rows, estimate_prompt_tokens=estimate_prompt_tokens,
    sample_text=sample_text, sample_keys=('path',), thinking_budget=thinking_budget, report=NOLIMA_REPORT,
    # one book's prompts share its text up to each needle, and a needle's questions the text up to the question:
    # 63% (1k) to 68% (32k) of the prompt tokens are served from cached blocks (bench/bench_prefix.py, 58 pairs)
    prefix_reuse=0.65,
    checks=(check_files,), check_keys=('path', 'needle_set', 'haystacks', 'haystack_tier', 'tier'),
    summary=(Bench(name='nolima', pattern=r'^nolima_(?P<task>main|hard|cot|mc|direct|distractor)_' + TIER_PATTERN
                   + r'(?:@.+)?$',
                   rows=(Row('main', ('main',)),
                         Row('main one-hop', ('main',), detail_filter=('question_type', 'onehop')),
                         Row('main two-hop', ('main',), detail_filter=('question_type', 'twohop')))
                   + tuple(Row(v, (v,)) for v in ('hard', 'cot', 'mc', 'direct', 'distractor')),
                   base_tiers=('250', '500', '1k'), paper_base=nmetrics.base_from_details,
                   cluster_keys=('entry_id',), strata_keys=('haystack',),
                   task_mean_from='1k', tier_mean='variants',
                   relation='clustered by needle entry (every prompt of one entry shares its needle and question; '
                            'one-hop and two-hop of an entry are one cluster); haystack held fixed',
                   notes="accuracy (%), contains; 1k = 1000 tokens of the model's tokenizer"),))
