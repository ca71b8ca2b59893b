"""NoLiMa split rows: one (pair, haystack) block at a time, in one process or several (no OpenCompass import,
so a build worker starts quickly). :func:`..dataset.load_nolima` validates the parameters into a
:class:`SplitPlan` and caches what :func:`build_rows` yields."""
import json
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional

import numpy as np

from opencompass_longctx import parallel
from opencompass_longctx.tiers import Tier
from opencompass_longctx.nolima import haystack as hs
from opencompass_longctx.nolima.needles import CHAR, Pair
from opencompass_longctx.nolima.prompts import TASK_TEMPLATE, build_prompt
# Parallel builds (parallel.plan), in haystack tokens. A row is a slice of a tokenised book, as cheap to make as
# it is for the calling process to receive and write to the cache (measured: a 32K tier with a pool forced is
# no faster in the calling process and 2-4x slower overall), so splits up to MIN_PARALLEL_TOKENS in all (a 128k
# tier is 0.4G) are built in one process whatever num_proc. A chunk holds at most CHUNK_TOKENS.
MIN_PARALLEL_TOKENS = 2_000_000_000
CHUNK_TOKENS = 4_000_000


@dataclass
class SplitPlan:
    """Everything one NoLiMa split is made of, validated by :func:`load_nolima`. Picklable: a build worker
    gets the books as paths (tokenised once, in the book cache) and the tokenizer by name."""
    pairs: List[Pair]
    book_paths: List[str]
    book_indices: List[int]
    L: int
    tier: Tier             # parsed once, by the loader
    depths: List[float]
    depth_indices: Optional[List[int]]
    placement: str
    static_depth: Optional[float]
    shift: int
    base_seed: int
    variant: str
    needle_file: str
    haystack_tier: str
    tokenizer: object      # a Tokenizer (travels to a worker as its name)
    fingerprint: str
    canonical: bool

    @property
    def blocks(self) -> int:
        """(pair, haystack) blocks, in row order: every depth of one pair in one book."""
        return len(self.pairs) * len(self.book_paths)


class _Blocks:
    """The rows of a plan's (pair, haystack) blocks, in one process."""

    def __init__(self, plan: SplitPlan):
        self.plan = plan
        self.tok = parallel.same_tokenizer(plan.tokenizer, plan.fingerprint)
        self.books = [hs.load_book(p, self.tok) for p in plan.book_paths]
        self.memo: Dict[str, int] = {}

    def count(self, text: str) -> int:
        if text not in self.memo:
            self.memo[text] = self.tok.count(text)
        return self.memo[text]

    def rows(self, block: int) -> Iterator[Dict]:
        P, count = self.plan, self.count
        pair = P.pairs[block // len(self.books)]
        h, book = P.book_indices[block % len(self.books)], self.books[block % len(self.books)]
        L = P.L
        wanted_depths = None if P.depth_indices is None else set(P.depth_indices)
        template = pair.task_template or TASK_TEMPLATE
        seed = P.base_seed + pair.group + h
        rng = np.random.RandomState(seed)  # = np.random.seed(seed) + the global legacy generator
        for di, d in enumerate(P.depths):
            d = float(d)
            name = str(rng.choice(pair.character_set)) if pair.has_char else ''
            needle = pair.needle.replace(CHAR, name) if pair.has_char else pair.needle
            question = pair.question.replace(CHAR, name) if pair.has_char else pair.question
            dd = -1.0
            if pair.distractor is not None:
                dd = hs.draw_distractor_depth(rng, d, L)  # drawn even when the depth is not emitted
            if wanted_depths is not None and di not in wanted_depths:
                continue
            if P.placement == 'standard':
                pl = hs.place(book, needle, L, d, P.shift)
            else:
                pl = hs.place_static(book, needle, L, d, P.static_depth)
            text, anchored = pl.text, True
            if pair.distractor is not None:
                ins = hs.insert_distractor(book, pl, needle, pair.distractor, dd, P.shift)
                text, anchored = ins.text, ins.anchored
            prompt = build_prompt(text, question, pair.task_template)
            gold = [name] if pair.has_char else list(pair.gold_answers)
            approx = (L + count(template.format(haystack='', question=question)) + count(' ' + needle + '\n')
                      + (count(' ' + pair.distractor + '\n') if pair.distractor is not None else 0))
            yield {
                'prompt': prompt, 'answer': gold[0], 'gold_answers': json.dumps(gold, ensure_ascii=False),
                'question': question, 'needle': needle, 'character': name,
                'pair': pair.name, 'entry_id': pair.entry_id, 'group': pair.group, 'test_id': pair.test_id,
                'question_type': pair.question_type, 'order': pair.order,
                'reasoning_type': pair.reasoning_type, 'variant': P.variant, 'needle_set': P.needle_file,
                'haystack': book.name, 'haystack_index': h, 'haystack_tier': P.haystack_tier,
                'context_length': L, 'tier': P.tier.name, 'depth': d, 'depth_index': di,
                'needle_token_depth': pl.needle_depth, 'window_start': pl.start, 'line_break': pl.line_break,
                'placement': P.placement, 'distractor': pair.distractor or '', 'distractor_depth': dd,
                'distractor_anchored': anchored,
                'seed': seed, 'length_tokenizer': self.tok.name, 'length_engine': self.tok.engine,
                'canonical_length': P.canonical,
                'prompt_tokens_approx': approx,
            }


def _rows_of_blocks(blocks: _Blocks, span: range) -> List[Dict]:
    return [row for b in span for row in blocks.rows(b)]


def build_rows(plan: SplitPlan, num_proc: int = 1) -> Iterator[Dict]:
    """The split's rows in (pair, haystack, depth) order, made by up to ``num_proc`` processes (the same rows
    for any ``num_proc``)."""
    rows_per_block = len(plan.depths) if plan.depth_indices is None else len(plan.depth_indices)
    for rows in parallel.map_chunks(_rows_of_blocks, range(plan.blocks), _Blocks, (plan,), num_proc,
                                    rows_per_block * plan.L, parallel.startup_factor(plan.tokenizer),
                                    f'NoLiMa {plan.tier}', rows_per_block, MIN_PARALLEL_TOKENS, CHUNK_TOKENS):
        yield from rows
