"""NoLiMa as an OpenCompass dataset: one (needle-set variant, tier) split per dataset config.

``load_nolima`` builds one row per test (pair x haystack x depth) and caches the result on disk (key: every
parameter, the tokenizer fingerprint, the sha256 of the needle set and of every book, the package version),
so OpenCompass's main, inference and evaluation processes build it once.

Protocol (docs/benchmarks.md#nolima, docs/faithfulness.md#nolima), all defaults the authors':

* tier -> haystack length ``L`` in tokens, 1k = 1000 (``'250'``, ``'500'``, ``'1k'`` ... ``'32k'``, ``'64k'``,
  ``'128k'``); counted with ``tokenizer`` (the evaluated model's own tokenizer directory: canonical) or, when
  none is given, the offline default ``tiktoken:cl100k_base`` (rows are then marked ``canonical_length=False``);
* depths ``linspace(0, 1, 26)`` up to 32K and ``linspace(0, 1, 11)`` above (``depth_intervals`` overrides);
* the 5 books in sorted order (``rand_book_1`` -> haystack 0); ``haystack_tier='auto'`` uses
  ``rand_shuffle`` and switches to ``rand_shuffle_long`` only when the short books cannot hold ``L``;
* per (pair, haystack): ``RandomState(42 + int(id[:4]) + haystack_index)`` (the legacy NumPy generator the
  authors seed globally), one name drawn per depth in ascending order (and, in the distractor variant, the
  distractor depth drawn right after it);
* prompt: the entry's ``task_template`` (CoT set) or the default template, sent after one system message.

Placements: ``'standard'`` (the authors' default), ``'static'`` (needle line fixed at ``static_depth`` of the
book) and ``'last2k'`` (static, with depths 1 - k/L for k in [0, 2000]: the paper's "last-2K aligned"
analysis).
"""
import hashlib
import os
import re
import sys
import warnings
from typing import Dict, List, Optional

from opencompass_longctx.base import LongCtxDataset
from opencompass_longctx.cache import DatasetCache, make_key
from opencompass_longctx.tokenizer.counting import DEFAULT_TOKENIZER, get_tokenizer
from opencompass_longctx.nolima import data as ndata
from opencompass_longctx.nolima import haystack as hs
from opencompass_longctx.nolima.build import SplitPlan, build_rows
from opencompass_longctx.nolima.spec import BENCHMARK, NoLiMaOptions
from opencompass_longctx.nolima.needles import CHAR, NoLiMaError, load_pairs, select_pairs
from opencompass_longctx.nolima.prompts import MAX_NEW_TOKENS, SYSTEM_PROMPT, TASK_TEMPLATE, build_prompt
BUILD_VERSION = 1
CHAT_MARGIN = 64  # tokens allowed for the chat template and system message in the max_seq_len check


def _fits(books, L, depths, placement, static_depth, shift):
    """None when every window fits every book, else the first HaystackTooShortError."""
    for b in books:
        for d in depths:
            try:
                if placement == 'standard':
                    hs.window(b, L, float(d), shift)
                else:
                    hs.static_window(b, L, float(d), static_depth)
            except hs.HaystackTooShortError as e:
                return e
    return None


def _name_collisions(books, pairs) -> Dict[str, List[str]]:
    names = sorted({n for p in pairs for n in p.character_set})
    if not names:
        return {}
    rx = re.compile(r'\b(' + '|'.join(re.escape(n) for n in names) + r')\b')
    hits = {}
    for b in books:
        text = b.raw.decode('utf-8', 'replace') if b.raw is not None else open(b.path, encoding='utf-8').read()
        found = sorted(set(rx.findall(text)))
        if found:
            hits[b.name] = found
    return hits


def load_nolima(tier, **options):
    """Build (or reload from the cache) one NoLiMa split as a ``datasets.Dataset``.

    ``needle_set``: a variant ('main', 'hard', 'cot', 'mc', 'direct', 'distractor'), its file name, or a path
    to a custom needle-set JSON file. ``pairs`` (a count or pair names), ``haystacks`` (book indices 0-4) and
    ``depth_indices`` (indices into the depth grid) select a subset without changing any sample (seeds and
    name draws are those of the full grid). ``max_seq_len``: refuse a tier whose prompts (plus 192 new tokens
    and a chat-template margin) would not fit the model, instead of letting OpenCompass cut the needle out.
    ``num_proc``: processes for a build (default: the cores available; the same rows for any value). The other
    options are the fields of :class:`NoLiMaOptions`.
    """
    return load_split(NoLiMaOptions.parse(dict(options, tier=tier)))


def load_split(o: NoLiMaOptions):
    """The split of checked options: the needle set and books located, the prompts checked against
    ``max_seq_len``, the rows built through the cache."""
    parsed, L, tier = o.tier, o.tier.tokens(1000), o.tier.name
    custom, variant, placement, static_depth, shift = o.custom, o.variant, o.placement, o.static_depth, o.shift
    path, download, revision, haystack_tier, depths = o.path, o.download, o.revision, o.haystack_tier, o.depths
    tokenizer, max_seq_len, num_proc, book_indices = o.tokenizer, o.max_seq_len, o.num_proc, o.haystacks
    needle_set, depth_indices, base_seed = o.needle_set, o.depth_indices, o.base_seed
    question_types, exclude_direct, expected_pairs, pairs = o.question_types, o.exclude_direct, o.expected_pairs, \
        o.pairs

    tok = get_tokenizer(tokenizer)
    canonical = tokenizer not in (None, '', 'default', DEFAULT_TOKENIZER)
    if not canonical:
        print(f'[opencompass_longctx] NoLiMa {tier}: lengths counted with the offline default tokenizer '
              f'{DEFAULT_TOKENIZER}, not the evaluated model\'s: results are non-canonical (set tokenizer= to '
              'the model\'s tokenizer directory)', file=sys.stderr)

    if custom:
        needle_file = os.path.abspath(needle_set)
    else:
        needle_file = ndata.locate([ndata.needle_relpath(variant)], path, download, revision,
                                   what=f'the {variant} needle set')[ndata.needle_relpath(variant)]
    all_pairs = load_pairs(needle_file, variant, question_types, exclude_direct,
                           expected_pairs if not custom or expected_pairs != 'auto' else None)
    chosen = select_pairs(all_pairs, pairs)

    tiers = ['rand_shuffle', 'rand_shuffle_long'] if haystack_tier == 'auto' else [haystack_tier]
    books, used_tier, errors = None, None, []
    for t in tiers:
        rels = ndata.book_relpaths(t, book_indices)
        if t == 'rand_shuffle_long' and haystack_tier == 'auto':
            try:
                files = ndata.locate(rels, path, download, revision, what=f'{t} books for L={L}')
            except FileNotFoundError as e:
                raise hs.HaystackTooShortError(f'{errors[0]}\nThe longer tier is not available either: {e}') from e
        else:
            files = ndata.locate(rels, path, download, revision, what=f'{t} books')
        cand = [hs.load_book(files[r], tok) for r in rels]
        err = _fits(cand, L, depths, placement, static_depth, shift)
        if err is None:
            books, used_tier = cand, t
            break
        errors.append(err)
    if books is None:
        if len(errors) == 1:
            raise errors[0]
        raise hs.HaystackTooShortError('no haystack tier holds this length:\n' + '\n'.join(
            f'  {t}: {e}' for t, e in zip(tiers, errors)))
    if used_tier != tiers[0]:
        print(f'[opencompass_longctx] NoLiMa {tier}: the rand_shuffle books are too short for L={L}; using '
              f'{used_tier} (recorded in the haystack_tier column)', file=sys.stderr)

    if max_seq_len is not None:
        worst = max(tok.count(build_prompt('', p.question.replace(CHAR, 'W' * 12), p.task_template))
                    + tok.count(' ' + p.needle.replace(CHAR, 'W' * 12) + '\n')
                    + (tok.count(' ' + p.distractor + '\n') if p.distractor else 0) for p in chosen)
        need = L + worst + tok.count(SYSTEM_PROMPT) + CHAT_MARGIN + MAX_NEW_TOKENS
        if need > max_seq_len:
            raise NoLiMaError(
                f'NoLiMa {tier} does not fit max_seq_len={max_seq_len}: prompts need about {need - MAX_NEW_TOKENS}'
                f' tokens plus {MAX_NEW_TOKENS} new tokens ({need} > {max_seq_len}). OpenCompass would cut the '
                'start of the prompt (and the needle with it); raise max_seq_len or leave this tier out.')

    params = dict(build=BUILD_VERSION, tier=tier, L=L, variant=variant, needle_file=os.path.basename(needle_file),
                  haystack_tier=used_tier, books=[b.name for b in books], book_indices=book_indices,
                  depths=[float(x) for x in depths], depth_indices=depth_indices, placement=placement,
                  static_depth=static_depth, shift=shift, base_seed=base_seed, question_types=question_types,
                  exclude_direct=exclude_direct, pairs=[p.name for p in chosen], canonical=canonical,
                  template_sha256=hashlib.sha256(TASK_TEMPLATE.encode()).hexdigest())
    cache = DatasetCache()
    key = make_key('nolima', params, tok.fingerprint, [needle_file] + [b.path for b in books], cache.root)

    def rows():
        collisions = _name_collisions(books, chosen)
        if collisions:
            warnings.warn(f'NoLiMa: character names occur as whole words in the haystack: {collisions}; '
                          'the answer may then be found without the needle')
        plan = SplitPlan(chosen, [b.path for b in books], book_indices, L, parsed, [float(x) for x in depths],
                         depth_indices, placement, static_depth, shift, base_seed, variant,
                         os.path.basename(needle_file), used_tier, tok, tok.fingerprint, canonical)
        return build_rows(plan, num_proc)
    return cache.get_or_build('nolima', key, rows, params=params)


class NoLiMaDataset(LongCtxDataset):
    """``type=NoLiMaDataset`` in configs; every extra config key is a field of :class:`NoLiMaOptions`.

    Same result as OpenCompass's ``BaseDataset.__init__`` (columns ``subdivision`` = abbr and ``idx``, the set
    repeated ``n`` times), but the two columns are appended to the Arrow table instead of written by
    ``Dataset.map``, which would copy every prompt (over 1 GB at 32K) in each OpenCompass process.
    """
    benchmark = BENCHMARK
    build = staticmethod(load_split)

    def __init__(self, reader_cfg: Optional[Dict] = None, k=1, n: int = 1, **kwargs):
        from datasets import concatenate_datasets
        abbr = kwargs.pop('abbr', 'dataset')
        dataset = self.load(**kwargs)
        assert (max(k) if isinstance(k, list) else k) <= n, 'Maximum value of `k` must less than or equal to `n`'
        dataset = dataset.add_column('subdivision', [abbr] * len(dataset))
        dataset = dataset.add_column('idx', list(range(len(dataset))))
        self.dataset = concatenate_datasets([dataset] * n) if n > 1 else dataset
        self._init_reader(**(reader_cfg or {}))
