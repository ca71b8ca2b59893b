"""Prefix reuse: a model of LMDeploy's block trie, an issue order that uses it, and the tokens left to prefill.

Pure functions of token id lists; no engine, no tokenizer.

LMDeploy's PyTorch engine (0.18) keeps the KV cache of full 64-token blocks in a trie keyed by the exact token ids
of each block and its ancestors. A new prompt reuses the longest chain of cached blocks that ends strictly before
the prompt's last token (at least one token is always computed). A prompt's full blocks join the trie when the
prompt is admitted to a prefill batch, and admission inside one batch is sequential, so a prompt reuses the blocks
of an earlier prompt of the same batch as well as of earlier batches. Under memory pressure the engine evicts the
least recently used leaf blocks that no running sequence holds.

`reuse_order` sorts the prompts by their token ids: prompts sharing a prefix become neighbours (and so land in the
same or consecutive batches, while the shared blocks are fresh in the cache), and a prompt that is a prefix of
another comes first. Sorting is deterministic (ties keep dataset order).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Sequence

BLOCK = 64


class BlockTrie:
    """Full token blocks cached by exact prefix, with optional capacity and LRU eviction of leaves.

    A node is one full block under its parent node (the root is 0), keyed by ``(parent node, block token ids)``,
    so two blocks with equal tokens but different prefixes are different nodes, as in LMDeploy. ``capacity`` is a
    number of blocks (None: unbounded)."""

    def __init__(self, block: int = BLOCK, capacity: int | None = None):
        if block <= 0:
            raise ValueError('block must be positive')
        if capacity is not None and capacity < 0:
            raise ValueError('capacity must not be negative')
        self.block = block
        self.capacity = capacity
        self._node: dict[tuple, int] = {}          # (parent id, block tokens) -> node id
        self._key: dict[int, tuple] = {}           # node id -> its key
        self._children: dict[int, int] = {0: 0}    # node id -> number of children
        self._lru: OrderedDict[int, None] = OrderedDict()  # least recently used first
        self._next = 1

    def __len__(self) -> int:
        return len(self._lru)

    def _block(self, tokens: Sequence[int], i: int) -> tuple:
        return tuple(tokens[i * self.block:(i + 1) * self.block])

    def match(self, tokens: Sequence[int]) -> int:
        """Number of leading full blocks of ``tokens`` already cached, ending strictly before its last token.

        Touches the matched blocks (most recently used)."""
        parent, n = 0, 0
        for i in range((len(tokens) - 1) // self.block if tokens else 0):
            node = self._node.get((parent, self._block(tokens, i)))
            if node is None:
                break
            self._lru.move_to_end(node)
            parent, n = node, n + 1
        return n

    def insert(self, tokens: Sequence[int]) -> int:
        """Add every full block of ``tokens``; returns the number of new blocks.

        With a capacity, least recently used leaves off the path being inserted are evicted first; when none is
        left the rest of the sequence is not cached."""
        parent, added, path = 0, 0, set()
        for i in range(len(tokens) // self.block):
            key = (parent, self._block(tokens, i))
            node = self._node.get(key)
            if node is None:
                if self.capacity is not None:
                    while len(self._lru) >= self.capacity:
                        if not self._evict_one(path):
                            return added
                node, self._next = self._next, self._next + 1
                self._node[key], self._key[node], self._children[node] = node, key, 0
                self._children[parent] += 1
                self._lru[node] = None
                added += 1
            else:
                self._lru.move_to_end(node)
            path.add(node)
            parent = node
        return added

    def _evict_one(self, protected: set) -> bool:
        for node in self._lru:
            if self._children[node] == 0 and node not in protected:
                key = self._key.pop(node)
                del self._node[key], self._children[node], self._lru[node]
                self._children[key[0]] -= 1
                return True
        return False


def reuse_order(token_lists: Sequence[Sequence[int] | str]) -> list[int]:
    """Indices of ``token_lists`` in issue order: sorted by token ids, ties in dataset order.

    The items may also be prompt texts: prompts sharing a text prefix share a token prefix (up to the token at the
    boundary), so sorting the texts groups them the same way without a tokenizer pass."""
    def key(i):
        item = token_lists[i]
        return (item if isinstance(item, str) else tuple(item)), i
    return sorted(range(len(token_lists)), key=key)


def batches(order: Sequence[int], batch_size: int) -> Iterable[list[int]]:
    """The order cut into consecutive batches of ``batch_size`` (the inferencer's submission unit)."""
    if batch_size <= 0:
        raise ValueError('batch_size must be positive')
    for start in range(0, len(order), batch_size):
        yield list(order[start:start + batch_size])


def prefilled_tokens(token_lists: Sequence[Sequence[int]],
                     order: Sequence[int] | None = None,
                     batch_size: int = 1,
                     block: int = BLOCK,
                     capacity: int | None = None,
                     same_batch: bool = True) -> int:
    """Tokens the engine computes when the prompts are issued in ``order``, ``batch_size`` at a time.

    ``same_batch=True`` is the PyTorch engine: each admitted prompt's blocks are matchable by the next prompt of the
    same batch. ``same_batch=False`` models an engine that only reuses blocks cached by earlier batches.
    ``order=None`` is dataset order."""
    if order is None:
        order = range(len(token_lists))
    order = list(order)
    if sorted(order) != list(range(len(token_lists))):
        raise ValueError('order is not a permutation of the prompts')
    trie = BlockTrie(block=block, capacity=capacity)
    total = 0
    for batch in batches(order, batch_size):
        pending = []
        for i in batch:
            tokens = token_lists[i]
            total += len(tokens) - trie.match(tokens) * block
            if same_batch:
                trie.insert(tokens)
            else:
                pending.append(tokens)
        for tokens in pending:
            trie.insert(tokens)
    return total


def shared_prefix_tokens(token_lists: Sequence[Sequence[int]], order: Sequence[int] | None = None,
                         block: int = BLOCK) -> int:
    """Tokens saved in ``order`` with an unbounded cache: sum of block-aligned prefixes found already cached."""
    total = sum(len(t) for t in token_lists)
    return total - prefilled_tokens(token_lists, order, batch_size=1, block=block)


def common_prefix_chars(a: str, b: str) -> int:
    """Length of the common prefix of two strings (a binary search of slice comparisons, each one in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cached_share(texts: Sequence[str], tokens: Sequence[int], block: int = BLOCK) -> float:
    """The share of a dataset's prompt tokens that an unbounded prefix cache serves when its prompts are issued in
    reuse order, from the texts alone (no tokenizer pass): in sorted order a prompt's longest prefix shared with
    any earlier one is the one it shares with the previous; its length in characters is turned into tokens at the
    prompt's own characters per token and rounded down to whole blocks (the last token is always computed), as
    :func:`prefilled_tokens` counts them. ``tokens``: each prompt's token count. 0.0 for no tokens."""
    total = sum(tokens)
    if not total:
        return 0.0
    order = reuse_order(list(texts))
    served = 0
    for prev, cur in zip(order, order[1:]):
        text, n = texts[cur], tokens[cur]
        if not text or not n:
            continue
        shared = int(common_prefix_chars(texts[prev], text) * n / len(text))
        served += min(shared, n - 1) // block * block
    return served / total
