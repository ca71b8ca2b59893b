"""NoLiMa's spec (:mod:`opencompass_longctx.spec`): its options, its sizes, its data checks and its tables."""
import os
from dataclasses import dataclass, replace
from functools import cached_property
from typing import ClassVar, List, Optional

from opencompass_longctx.spec import TIER_PATTERN, Bench, BenchmarkSpec, Row
from opencompass_longctx.options import DATA, TEXT, Options, by, flag, integer, one_of, option, text
from opencompass_longctx.reasoning import OWN_MODE
from opencompass_longctx.tokenizer.counting import DEFAULT_TOKENIZER
from opencompass_longctx.nolima import data as ndata
from opencompass_longctx.nolima import haystack as hs
from opencompass_longctx.nolima import metrics as nmetrics
from opencompass_longctx.nolima.haystack import default_depth_intervals
from opencompass_longctx.nolima.needles import EXPECTED_PAIRS, VARIANTS, NoLiMaError, resolve_variant
from opencompass_longctx.nolima.prompts import MAX_NEW_TOKENS, REASONING_MAX_NEW_TOKENS
from opencompass_longctx.nolima.summary import NOLIMA_REPORT
FAITHFUL_THINKING_MODE = 'nolima-reasoning'     # the paper's budget for reasoning models
SAMPLE_CHARS = 60000
PROMPT_EXTRA_TOKENS = 150     # besides the haystack of L tokens: needle, template and question
PLACEMENTS = ('standard', 'static', 'last2k')


def _check_int_list(name, value, upper):
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value or \
            not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < upper for v in value):
        raise NoLiMaError(f'{name} must be a non-empty list of indices in [0, {upper}), got {value!r}')
    return sorted(set(value))


def _check_pairs(value) -> None:
    if value is None or (isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)):
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NoLiMaError(f'pairs must be None, a positive count or a list of pair names, got {value!r}')


def _check_question_types(value) -> None:
    if value is not None and (isinstance(value, str) or not isinstance(value, (list, tuple))
                              or not all(isinstance(v, str) for v in value)):
        raise NoLiMaError(f'question_types must be a list of names, got {value!r}')


def _check_expected(value) -> None:
    if value not in ('auto', None) and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise NoLiMaError(f"expected_pairs must be 'auto', None or a positive count, got {value!r}")


def _check_needle_set(value) -> None:
    """A variant, its file name, or the path of a needle-set file that exists."""
    if isinstance(value, str) and value.endswith('.json') and os.path.isfile(value):
        return
    try:
        resolve_variant(value)
    except NoLiMaError:
        if isinstance(value, str) and value.endswith('.json'):
            raise NoLiMaError(f'needle set {value!r} does not exist (a needle-set file, or a variant: '
                              f'{", ".join(VARIANTS)})') from None
        raise


@dataclass(frozen=True)
class NoLiMaOptions(Options):
    """One NoLiMa split's options (see :func:`~.dataset.load_nolima`), checked once by :meth:`Options.parse`."""
    error: ClassVar[type] = NoLiMaError
    owner: ClassVar[str] = 'NoLiMaDataset'
    tier_decides: ClassVar[tuple] = (DATA,)
    needle_set: str = option('main', by(_check_needle_set), decides=(DATA,))
    path: Optional[str] = option(None, text(), decides=(TEXT, DATA))
    tokenizer: Optional[str] = option(None, text())
    haystack_tier: str = option('auto', one_of(('auto',) + ndata.HAYSTACK_TIERS), decides=(DATA,))
    depth_intervals: Optional[int] = option(None, integer(1, optional=True))
    placement: str = option('standard', one_of(PLACEMENTS))
    static_depth: Optional[float] = option(None)
    aligned_tokens: int = option(2000, integer(1))
    base_seed: int = option(42, integer())
    shift: int = option(0, integer(0))
    question_types: object = option(None, by(_check_question_types))
    exclude_direct: Optional[bool] = option(None, flag(optional=True))
    expected_pairs: object = option('auto', by(_check_expected))
    pairs: object = option(None, by(_check_pairs))
    haystacks: object = option(None, lambda name, v, error: _check_int_list(name, v, ndata.NUM_BOOKS),
                               decides=(DATA,))
    depth_indices: object = option(None)
    max_seq_len: Optional[int] = option(None, integer(1, optional=True))
    download: Optional[bool] = option(None, flag(optional=True))
    revision: Optional[str] = option(None, text())

    @property
    def custom(self) -> bool:
        return isinstance(self.needle_set, str) and self.needle_set.endswith('.json') and \
            os.path.isfile(self.needle_set)

    @property
    def variant(self) -> str:
        return 'custom' if self.custom else resolve_variant(self.needle_set)

    def finish(self) -> 'NoLiMaOptions':
        L = self.tier.tokens(1000)
        if L < 1:
            raise NoLiMaError(f'NoLiMa tier {self.tier.name!r} has no haystack tokens; use 250, 500, 1k ... 128k')
        static_depth = 0.5 if self.placement == 'last2k' and self.static_depth is None else self.static_depth
        if self.placement != 'standard':
            if static_depth is None or isinstance(static_depth, bool) or not isinstance(static_depth, (int, float)):
                raise NoLiMaError(f"placement={self.placement!r} needs static_depth, a number in [0, 1]")
            if self.shift:
                raise NoLiMaError('shift is not allowed with a static placement (as in the authors\' code)')
        if self.variant == 'distractor' and self.placement != 'standard':
            raise NoLiMaError('the distractor variant needs the standard placement (the authors\' code silently '
                              'returns nothing for a distractor with a static depth)')
        return replace(self, static_depth=static_depth,
                       depth_indices=_check_int_list('depth_indices', self.depth_indices, len(self.depths)),
                       haystacks=self.haystacks or list(range(ndata.NUM_BOOKS)), num_proc=self.processes)

    @property
    def depth_intervals_or_default(self) -> int:
        """The depths of the grid: ``depth_intervals``, else the authors' (26 up to 32K, 11 above)."""
        return default_depth_intervals(self.tier.tokens(1000)) if self.depth_intervals is None else self.depth_intervals

    @cached_property
    def depths(self):
        """The needle depths of the grid (``last2k``: aligned to the end of the haystack)."""
        L = self.tier.tokens(1000)
        if self.placement == 'last2k':
            return hs.aligned_depths(self.depth_intervals_or_default, L, self.aligned_tokens)
        return hs.depth_grid(self.depth_intervals_or_default)



def estimate_rows(o: NoLiMaOptions) -> int:
    """Pairs x haystacks x depths."""
    if isinstance(o.pairs, int):
        n_pairs = o.pairs
    elif isinstance(o.pairs, (list, tuple)):
        n_pairs = len(o.pairs)
    else:
        try:
            n_pairs = EXPECTED_PAIRS.get(resolve_variant(o.needle_set), EXPECTED_PAIRS['main'])
        except NoLiMaError:      # a custom needle set: the main set's size as the estimate
            n_pairs = EXPECTED_PAIRS['main']
    haystacks = len(o.haystacks) if o.haystacks else ndata.NUM_BOOKS
    depths = len(o.depth_indices) if o.depth_indices else o.depth_intervals_or_default
    return n_pairs * haystacks * depths


def thinking_budget(max_out_len: int):
    """The paper's rule for reasoning models: 1536 new tokens for trace plus answer (the paper's decoding settings; docs/benchmarks.md#nolima),
    the trace stripped before scoring (``strip_think``, the default). A budget other than the authors' 192 is
    kept as it is, in the package's named mode (not the paper's protocol)."""
    if int(max_out_len) != MAX_NEW_TOKENS:
        return int(max_out_len), OWN_MODE
    return max(REASONING_MAX_NEW_TOKENS, int(max_out_len)), FAITHFUL_THINKING_MODE


def estimate_prompt_tokens(o: NoLiMaOptions) -> int:
    return o.tier.tokens(1000) + PROMPT_EXTRA_TOKENS


def sample_text(o: NoLiMaOptions) -> Optional[str]:
    """The start of the first book."""
    rel = ndata.book_relpaths('rand_shuffle', [0])[0]
    with open(ndata.locate([rel], o.path, False, None)[rel], encoding='utf-8') as f:
        return f.read(SAMPLE_CHARS)


def check_files(o: NoLiMaOptions) -> List[str]:
    """The needle set and the books the loader reads (raises the loader's DataNotFoundError when missing)."""
    if not o.custom:
        ndata.locate([ndata.needle_relpath(o.variant)], o.path, False, None, what='the needle set')
    # 'auto' reads the short books first (the long ones only where those cannot hold L): both layouts need them
    books = list(o.haystacks or range(ndata.NUM_BOOKS))
    ndata.locate(ndata.book_relpaths('rand_shuffle' if o.haystack_tier == 'auto' else o.haystack_tier, books), o.path,
                 False, None, what='the books')
    return []


BENCHMARK = BenchmarkSpec(
    name='nolima', dataset_type='NoLiMaDataset', options=NoLiMaOptions, tokens_column='prompt_tokens_approx',
    count_rows=estimate_rows, longest_prompt=estimate_prompt_tokens,
    tokenizer_of=lambda o: o.tokenizer or DEFAULT_TOKENIZER, text_of=sample_text,
    thinking_budget=thinking_budget, report=NOLIMA_REPORT, answer_tokens=MAX_NEW_TOKENS,
    units="NoLiMa 1k = 1000 tokens of the model's own tokenizer, and 250 and 500 are its short lengths",
    # one book's prompts share its text up to each needle, and a needle's questions the text up to the question:
    # 63% (1k) to 68% (32k) of the prompt tokens are served from cached blocks (bench/bench_prefix.py, 58 pairs)
    prefix_reuse=0.65,
    checks=(check_files,),
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
