"""BABILong's spec (:mod:`opencompass_longctx.spec`): its sizes, its data checks and its tables."""
import os
from typing import Dict, List, Optional

from opencompass_longctx.spec import POSITION, TASK, TIER_PATTERN, Bench, BenchmarkSpec, Row
from opencompass_longctx.options import integer, value_or
from opencompass_longctx.tiers import parse_tier
from opencompass_longctx.tokenizer.counting import GPT2_TOKENIZER
SAMPLE_CHARS = 60000


def data_tokenizer(d: Dict) -> str:
    return GPT2_TOKENIZER            # BABILong's tiers are GPT-2 tokens (the authors' data)


def estimate_rows(d: Dict, tier_tokens: int) -> int:
    if isinstance(d.get('sample_indices'), (list, tuple)):
        return len(d['sample_indices'])
    n = value_or(integer(1), d.get('num_samples'), None)    # a bad value: the run checks report it
    if n:
        return n
    source = str(d.get('sample_source', '100'))
    if source == '1000' or (source == 'official' and tier_tokens <= 32000):
        return 1000
    return 100


def estimate_prompt_tokens(d: Dict, tier_tokens: int) -> int:
    # the tier is the whole sample; 0k holds the facts alone: a long qa3 story and the prompt stay under 2,000
    return tier_tokens or 2000


def sample_text(d: Dict) -> Optional[str]:
    """The start of the dataset's first record."""
    from opencompass_longctx.data_files import find_file
    from opencompass_longctx.babilong import data as bdata
    tier = parse_tier(d['tier'])
    src = bdata.source_for(str(d.get('sample_source', '100')), tier)
    path = find_file(src, bdata.file_candidates(d.get('task', 'qa1'), tier, src), path=d.get('path'),
                     download=False)
    return next(iter(bdata.iter_records(path)))['input'][:SAMPLE_CHARS]


def check_files(d: Dict) -> List[str]:
    """What ``load_babilong`` would miss: a generated split needs the bAbI and PG19 directories; a tier BABILong
    does not publish is read from a file written by the generator when there is one (``path=``), else made
    from those directories; a published tier needs its file."""
    from opencompass_longctx.data_files import DataNotFoundError, find_file, search_roots
    from opencompass_longctx.babilong import data as bdata
    tier = parse_tier(d['tier'])
    task = d.get('task', 'qa1')
    source = str(d.get('sample_source', '100'))
    babi = d.get('babi_dir') or os.environ.get('BABI_DIR')
    books = d.get('background_dir') or os.environ.get('PG19_DIR')
    missing = [f'{k} ({v!r} is not a directory)' if v else f'{k} (not set)'
               for k, v in (('babi_dir / $BABI_DIR', babi), ('background_dir / $PG19_DIR', books))
               if not (v and os.path.isdir(v))]
    if source == 'generated':
        return [f'BABILong {tier.name} is generated: it needs ' + ', '.join(missing)] if missing else []
    src = bdata.source_for(source, tier)
    roots = search_roots(src, d.get('path'))
    candidates = bdata.file_candidates(task, tier, src)
    what = f'{task} at {tier.name}'
    if tier.name not in bdata.PUBLISHED_TIERS:
        try:
            find_file(src, candidates, path=d.get('path'), download=False, what=what)
            return []
        except DataNotFoundError:
            if not missing:
                return []
            return [f'BABILong does not publish {tier.name}: no generated file for {task} under '
                    + ', '.join(roots) + ' (longctx-babilong-generate writes one; then path= or $BABILONG_DATA), '
                    'and making it needs ' + ', '.join(missing)]
    if not any(os.path.isdir(r) for r in roots):
        return [f'{src.name} data ({src.hub_repo}) not found: none of ' + ', '.join(roots) + ' exists.\n'
                + src.hint(d.get('path'))]
    bdata.check_available(task, tier, src)
    find_file(src, candidates, path=d.get('path'), download=False, what=what)
    return []


def _qa(n: int):
    return tuple(f'qa{i}' for i in range(1, n + 1))


BENCHMARK = BenchmarkSpec(
    name='babilong', dataset_type='BabilongDataset', tier_unit=1000, tokens_column='prompt_tokens',
    data_tokenizer=data_tokenizer, estimate_rows=estimate_rows, estimate_prompt_tokens=estimate_prompt_tokens,
    sample_text=sample_text, sample_keys=('path', 'task', 'sample_source', 'tier'),
    checks=(check_files,),
    check_keys=('path', 'task', 'tier', 'sample_source', 'babi_dir', 'background_dir'),
    summary=(Bench(name='babilong', pattern=r'^babilong_(?P<task>qa\d+)_' + TIER_PATTERN + '$',
                   rows=(Row('qa1-qa5', _qa(5)), Row('qa1-qa10', _qa(10))), base_tiers=('0k',),
                   notes='accuracy (%), official scoring; rows are means over tasks',
                   cluster_keys=(TASK, POSITION),
                   relation='independent samples within a tier; the released files put the same bAbI story at '
                            'the same position of a task in every tier, so a story is one cluster across tiers'),))
