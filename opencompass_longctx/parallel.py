"""Parallel dataset builds: an ordered map over worker processes, with bounded memory and one progress bar.

Every generator of the package makes each sample from (parameters, sample index) alone, so a build can be
cut into chunks of consecutive samples, made by any number of processes and put back in order: the rows are
byte-identical for any ``num_proc``. :func:`ordered_map` does that:

* ``num_proc`` (default: the cores this process may run on, ``os.sched_getaffinity``); a build with one
  worker, or too small to repay starting workers (:func:`plan`), runs in this process with no pool at all;
* workers are *spawned* (fresh interpreters: nothing inherited but the arguments, so no state of the parent,
  such as a tokenizer's thread pool, leaks in) and each builds its own state once (``init(*initargs)``: a
  tokenizer travels as its name, is loaded again there and must have the parent's fingerprint);
* results come back in order and at most ``2 * workers`` chunks are in flight or waiting, so the parent
  holds a bounded number of rows whatever the size of the build, and streams them to the cache writer;
* one progress bar for the whole build (``LONGCTX_PROGRESS=0`` turns it off).
"""
import math
import os
from collections import deque
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple


# Defaults of parallel.plan for builds bound by tokenizer passes (LongBioBench, the BABILong generator), in
# prompt tokens: a build under MIN_PARALLEL_TOKENS in all runs in one process (starting a worker costs about a
# second with a tiktoken vocabulary, the time to make ~1-4M tokens of data, and HF_STARTUP times that with a
# Hugging Face tokenizer directory, whose worker imports transformers); a chunk holds at most CHUNK_TOKENS
# (~8 MB of text).
MIN_PARALLEL_TOKENS = 1 << 22
CHUNK_TOKENS = 1 << 21
HF_STARTUP = 8


class NumProcError(ValueError):
    """A ``num_proc`` that is not a positive integer."""


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_num_proc(num_proc) -> int:
    """``num_proc`` as a positive integer (None: the cores available to this process)."""
    if num_proc is None:
        return available_cores()
    if isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1:
        raise NumProcError(f'num_proc must be a positive integer (worker processes of a dataset build) or None '
                           f'for the cores available ({available_cores()}), got {num_proc!r}')
    return num_proc


def progress(total: Optional[int] = None, desc: Optional[str] = None, unit: str = 'sample', enabled: bool = True):
    """A tqdm bar (updated by the caller), silent when ``LONGCTX_PROGRESS=0`` or not ``enabled``."""
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit=unit, mininterval=5,
                disable=not enabled or os.environ.get('LONGCTX_PROGRESS', '1') == '0')


def startup_factor(tokenizer) -> int:
    """How much more a worker costs to start with this tokenizer than with a tiktoken vocabulary."""
    return 1 if tokenizer.kind == 'tiktoken' else HF_STARTUP


def plan(n: int, num_proc: int, item_cost: float, min_parallel_cost: float, max_chunk_cost: float,
         chunks_per_worker: int = 4) -> Tuple[int, int]:
    """``(workers, chunk_size)`` for ``n`` items of about ``item_cost`` each.

    One worker (this process) when ``num_proc`` is 1 or the whole build costs less than
    ``min_parallel_cost`` (starting workers would not pay off); otherwise about ``chunks_per_worker`` chunks
    per worker, each at most ``max_chunk_cost`` (which bounds the rows in flight)."""
    item_cost = max(float(item_cost), 1e-9)
    if num_proc <= 1 or n <= 1 or n * item_cost < min_parallel_cost:
        return 1, 1
    size = max(1, min(math.ceil(n / (num_proc * chunks_per_worker)), int(max_chunk_cost // item_cost)))
    return min(num_proc, math.ceil(n / size)), size


def chunks(items: Sequence, size: int) -> List[Sequence]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def same_tokenizer(tok, fingerprint: str):
    """In a worker: the parent's tokenizer (a Tokenizer pickles as its name and is loaded again there) must
    have the parent's fingerprint."""
    if tok.fingerprint != fingerprint:
        from .tokenization import TokenizerError
        raise TokenizerError(f'tokenizer {tok.name!r} loads differently in a build worker (fingerprint '
                             f'{tok.fingerprint[:12]}, expected {fingerprint[:12]}): did its files change during '
                             'the build?')
    return tok


_STATE = None
_END = object()


def _init_worker(init: Callable, initargs: tuple) -> None:
    global _STATE
    _STATE = init(*initargs)


def _run(fn: Callable, item):
    return fn(_STATE, item)


def ordered_map(fn: Callable, items: Iterable, init: Callable, initargs: tuple = (), workers: int = 1,
                size: Optional[Callable] = None, bar=None) -> Iterator:
    """``fn(state, item)`` for every item, in order; ``state = init(*initargs)`` once per worker process
    (once in this process when ``workers`` is 1: no pool). ``fn`` and ``init`` must be module-level functions
    or classes (they are sent to the workers by name), ``initargs`` and items picklable. ``bar``: a progress bar advanced by ``size(item)`` (default 1)
    as each result is handed on."""
    def done(item):
        if bar is not None:
            bar.update(size(item) if size else 1)

    import multiprocessing
    if workers > 1 and multiprocessing.current_process().daemon:
        workers = 1   # a daemonic process may not start children: build here
    if workers <= 1:
        state = init(*initargs)
        for item in items:
            out = fn(state, item)
            done(item)
            yield out
        return
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context('spawn'),
                               initializer=_init_worker, initargs=(init, initargs))
    pending: deque = deque()
    try:
        it = iter(items)
        while True:
            while len(pending) < 2 * workers:
                item = next(it, _END)
                if item is _END:
                    break
                pending.append((item, pool.submit(_run, fn, item)))
            if not pending:
                break
            item, fut = pending.popleft()
            try:
                out = fut.result()
            except BrokenProcessPool:
                raise RuntimeError(
                    f'a dataset build worker of {workers} stopped before it finished: out of memory, killed, or '
                    'unable to start (workers are spawned and import the main script: a script that builds '
                    "datasets must do so under `if __name__ == '__main__':`). Rerun with a smaller num_proc, or "
                    'num_proc=1 (no workers)') from None
            done(item)
            yield out
    finally:
        for _, fut in pending:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
