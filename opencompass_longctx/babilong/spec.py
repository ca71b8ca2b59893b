"""BABILong's spec (:mod:`opencompass_longctx.spec`): its options, its sizes, its data checks and its tables."""
import os
from dataclasses import dataclass, replace
from typing import ClassVar, Dict, List, Optional

from opencompass_longctx.spec import POSITION, TASK, TIER_PATTERN, Bench, BenchmarkSpec, Row
from opencompass_longctx.options import DATA, TEXT, Options, by, flag, integer, one_of, option, text
from opencompass_longctx.tokenizer.counting import GPT2_TOKENIZER
from opencompass_longctx.babilong import data as bdata
from opencompass_longctx.babilong.prompts import VARIANTS as PROMPT_VARIANTS, prompt_parts
SAMPLE_CHARS = 60000
ANSWER_TOKENS = 20     # the authors' decoding budget (configs/datasets/babilong/babilong_base.py)


def _check_indices(value) -> None:
    """None, a JSON file of indices, ``{task: [indices]}`` or a list of row indices (>= 0)."""
    if value is None or isinstance(value, (str, dict)):
        return
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value):
        raise bdata.BabilongDataError(f'sample_indices must be a list of row indices (>= 0), a JSON file of them or '
                                      f'{{task: [indices]}}, got {value!r}')


@dataclass(frozen=True)
class BabilongOptions(Options):
    """One BABILong split's options, checked once by :meth:`Options.parse` (the tier a :class:`Tier` from there
    on): what the loader passes inward. ``babi_dir`` / ``background_dir`` default to ``$BABI_DIR`` /
    ``$PG19_DIR``; generated splits take ``num_samples`` samples (default 100), made by ``num_proc`` processes
    (default: the cores available; the same rows for any value)."""
    error: ClassVar[type] = bdata.BabilongDataError
    owner: ClassVar[str] = 'BabilongDataset'
    tier_decides: ClassVar[tuple] = (TEXT, DATA)
    task: str = option('qa1', by(bdata.task_number), decides=(TEXT, DATA))
    path: Optional[str] = option(None, text(), decides=(TEXT, DATA))
    sample_source: str = option('100', one_of(bdata.SAMPLE_SOURCES, str), decides=(TEXT, DATA))
    num_samples: Optional[int] = option(None, integer(1, optional=True))
    sample_indices: object = option(None, by(_check_indices))   # read with the file
    use_instruction: bool = option(True, flag())
    use_examples: bool = option(True, flag())
    use_post_prompt: bool = option(True, flag())
    prompt_variant: str = option('official', one_of(PROMPT_VARIANTS))
    count_tokenizer: str = option(GPT2_TOKENIZER, text(optional=False))
    download: Optional[bool] = option(None, flag(optional=True))
    revision: Optional[str] = option(None, text())
    babi_dir: Optional[str] = option(None, text(), decides=(DATA,), env='BABI_DIR')
    background_dir: Optional[str] = option(None, text(), decides=(DATA,), env='PG19_DIR')
    seed: int = option(0, integer())
    generator_tokenizer: str = option(GPT2_TOKENIZER, text(optional=False))
    fix_len_off_by_one: bool = option(False, flag())

    def finish(self) -> 'BabilongOptions':
        return replace(self, num_proc=self.processes)

    @property
    def parts(self) -> Dict[str, str]:
        """The prompt's instruction, examples and post-prompt (:func:`~.prompts.prompt_parts`)."""
        return prompt_parts(self.task, self.prompt_variant, self.use_instruction, self.use_examples,
                            self.use_post_prompt)


def estimate_rows(o: BabilongOptions) -> int:
    if isinstance(o.sample_indices, (list, tuple)):
        return len(o.sample_indices)
    if o.num_samples:
        return o.num_samples
    if o.sample_source == '1000' or (o.sample_source == 'official' and o.tier.tokens(1000) <= 32000):
        return 1000
    return 100


def estimate_prompt_tokens(o: BabilongOptions) -> int:
    # the tier is the whole sample; 0k holds the facts alone: a long qa3 story and the prompt stay under 2,000
    return o.tier.tokens(1000) or 2000


def sample_text(o: BabilongOptions) -> Optional[str]:
    """The start of the dataset's first record."""
    from opencompass_longctx.data_files import find_file
    src = bdata.source_for(o.sample_source, o.tier)
    path = find_file(src, bdata.file_candidates(o.task, o.tier, src), path=o.path, download=False)
    return next(iter(bdata.iter_records(path)))['input'][:SAMPLE_CHARS]


def check_files(o: BabilongOptions) -> List[str]:
    """What ``load_babilong`` would miss: a generated split needs the bAbI and PG19 directories; a tier BABILong
    does not publish is read from a file written by the generator when there is one (``path=``), else made
    from those directories; a published tier needs its file."""
    from opencompass_longctx.data_files import DataNotFoundError, find_file, search_roots
    tier, task = o.tier, o.task
    missing = [f'{k} ({v!r} is not a directory)' if v else f'{k} (not set)'
               for k, v in (('babi_dir / $BABI_DIR', o.babi_dir), ('background_dir / $PG19_DIR', o.background_dir))
               if not (v and os.path.isdir(v))]
    if o.sample_source == 'generated':
        return [f'BABILong {tier.name} is generated: it needs ' + ', '.join(missing)] if missing else []
    src = bdata.source_for(o.sample_source, tier)
    roots = search_roots(src, o.path)
    candidates = bdata.file_candidates(task, tier, src)
    what = f'{task} at {tier.name}'
    if tier.name not in bdata.PUBLISHED_TIERS:
        try:
            find_file(src, candidates, path=o.path, download=False, what=what)
            return []
        except DataNotFoundError:
            if not missing:
                return []
            return [f'BABILong does not publish {tier.name}: no generated file for {task} under '
                    + ', '.join(roots) + ' (longctx-babilong-generate writes one; then path= or $BABILONG_DATA), '
                    'and making it needs ' + ', '.join(missing)]
    if not any(os.path.isdir(r) for r in roots):
        return [f'{src.name} data ({src.hub_repo}) not found: none of ' + ', '.join(roots) + ' exists.\n'
                + src.hint(o.path)]
    bdata.check_available(task, tier, src)
    find_file(src, candidates, path=o.path, download=False, what=what)
    return []


def _qa(n: int):
    return tuple(f'qa{i}' for i in range(1, n + 1))


BENCHMARK = BenchmarkSpec(
    name='babilong', dataset_type='BabilongDataset', options=BabilongOptions, tokens_column='prompt_tokens',
    count_rows=estimate_rows, longest_prompt=estimate_prompt_tokens,
    tokenizer_of=lambda o: GPT2_TOKENIZER,      # BABILong's tiers are GPT-2 tokens (the authors' data)
    text_of=sample_text, checks=(check_files,), answer_tokens=ANSWER_TOKENS,
    units="BABILong 1k = 1000 tokens (GPT-2's, as the authors count them)",
    summary=(Bench(name='babilong', pattern=r'^babilong_(?P<task>qa\d+)_' + TIER_PATTERN + '$',
                   rows=(Row('qa1-qa5', _qa(5)), Row('qa1-qa10', _qa(10))), base_tiers=('0k',),
                   notes='accuracy (%), official scoring; rows are means over tasks',
                   cluster_keys=(TASK, POSITION),
                   relation='independent samples within a tier; the released files put the same bAbI story at '
                            'the same position of a task in every tier, so a story is one cluster across tiers'),))
