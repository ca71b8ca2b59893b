"""Parallel dataset builds: an ordered map over worker processes, with bounded memory and one progress bar.

Every generator of the package makes each sample from (parameters, sample index) alone, so a build can be
cut into chunks of consecutive samples, made by any number of processes and put back in order: the rows are
byte-identical for any ``num_proc``. :func:`ordered_map` does that:

* ``num_proc`` (default: the cores this process may run on, ``os.sched_getaffinity``); a build with one
  worker, or too small to repay starting workers (:func:`plan`), runs in this process with no pool at all;
* workers are *spawned* (fresh interpreters: nothing inherited but the arguments, so no state of the parent,
  such as a tokenizer's thread pool, leaks in) and each builds its own state once (``init(*initargs)``: a
  tokenizer travels as its name, is loaded again there and must have the parent's fingerprint);
* the pool is kept for the next build of the same process (OpenCompass builds a tier's datasets one after
  another, so workers start, import and load their tokenizer once per tier, not once per dataset) and shut
  down after ``IDLE_SECONDS`` without a build;
* results come back in order and at most ``2 * workers`` chunks are in flight or waiting, so the parent
  holds a bounded number of rows whatever the size of the build, and streams them to the cache writer;
* one progress bar for the whole build (``LONGCTX_PROGRESS=0`` turns it off).
"""
import hashlib
import math
import os
import pickle
import threading
from collections import OrderedDict, deque
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple
from opencompass_longctx.errors import LongCtxError


# Defaults of parallel.plan for builds bound by tokenizer passes (LongBioBench, the BABILong generator), in
# prompt tokens: a build under MIN_PARALLEL_TOKENS in all runs in one process (starting a worker costs about a
# second with a tiktoken vocabulary, the time to make ~1-4M tokens of data, and HF_STARTUP times that with a
# Hugging Face tokenizer directory, whose worker imports transformers); a chunk holds at most CHUNK_TOKENS
# (~8 MB of text).
MIN_PARALLEL_TOKENS = 1 << 22
CHUNK_TOKENS = 1 << 21
HF_STARTUP = 8


class NumProcError(LongCtxError, ValueError):
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


def with_progress(items: Iterable, total: Optional[int], desc: str) -> Iterator:
    """``items`` passed through, a :func:`progress` bar counting them."""
    bar = progress(total, desc)
    try:
        for x in items:
            yield x
            bar.update(1)
    finally:
        bar.close()


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
        from opencompass_longctx.tokenizer.counting import TokenizerError
        raise TokenizerError(f'tokenizer {tok.name!r} loads differently in a build worker (fingerprint '
                             f'{tok.fingerprint[:12]}, expected {fingerprint[:12]}): did its files change during '
                             'the build?')
    return tok


_END = object()
IDLE_SECONDS = 30   # a pool left idle this long after a build is shut down (its workers' memory freed)
_POOL = {'executor': None, 'workers': 0, 'env': None, 'timer': None}
_POOL_LOCK = threading.Lock()
_STATES: 'OrderedDict[str, object]' = OrderedDict()   # in a worker: the states of recent builds
_STATES_KEPT = 2


def _run(fn: Callable, init: Callable, initargs: tuple, key: str, item):
    """In a worker: ``fn(state, item)``, the build's state made once per worker (and kept for the next
    chunks; a worker serves the builds of one process one after another)."""
    state = _STATES.get(key)
    if state is None:
        state = _STATES[key] = init(*initargs)
        while len(_STATES) > _STATES_KEPT:
            _STATES.popitem(last=False)
    return fn(state, item)


def _release(executor) -> None:
    with _POOL_LOCK:
        if _POOL['executor'] is executor:
            _POOL.update(executor=None, workers=0, env=None, timer=None)
    executor.shutdown(wait=False, cancel_futures=True)


def _executor(workers: int):
    """The process's pool of ``workers`` spawned workers, reused by consecutive builds (OpenCompass builds a
    tier's datasets one after another) while the environment the workers started with (cache directory,
    tokenizer switches...) is unchanged; shut down after IDLE_SECONDS without a build."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    env = sorted(os.environ.items())
    with _POOL_LOCK:
        if _POOL['timer'] is not None:
            _POOL['timer'].cancel()
            _POOL['timer'] = None
        old = _POOL['executor']
        if old is not None and (_POOL['workers'], _POOL['env']) == (workers, env) and \
                not getattr(old, '_broken', False):
            return old
        _POOL.update(executor=ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context('spawn')),
                     workers=workers, env=env)
        new = _POOL['executor']
    if old is not None:
        old.shutdown(wait=False, cancel_futures=True)
    return new


def _idle(executor) -> None:
    with _POOL_LOCK:
        if _POOL['executor'] is executor and IDLE_SECONDS >= 0:
            timer = threading.Timer(IDLE_SECONDS, _release, (executor,))
            timer.daemon = True
            _POOL['timer'] = timer
            timer.start()


def ordered_map(fn: Callable, items: Iterable, init: Callable, initargs: tuple = (), workers: int = 1,
                size: Optional[Callable] = None, bar=None) -> Iterator:
    """``fn(state, item)`` for every item, in order; ``state = init(*initargs)`` once per worker process
    (once in this process when ``workers`` is 1: no pool). ``fn`` and ``init`` must be module-level functions
    or classes (they are sent to the workers by name), ``initargs`` and items picklable. ``bar``: a progress
    bar advanced by ``size(item)`` (default 1) as each result is handed on."""
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
    from concurrent.futures.process import BrokenProcessPool
    key = hashlib.sha256(pickle.dumps((fn, init, initargs))).hexdigest()
    pool = _executor(workers)
    pending: deque = deque()
    try:
        it = iter(items)
        while True:
            while len(pending) < 2 * workers:
                item = next(it, _END)
                if item is _END:
                    break
                pending.append((item, pool.submit(_run, fn, init, initargs, key, item)))
            if not pending:
                break
            item, fut = pending.popleft()
            try:
                out = fut.result()
            except BrokenProcessPool:
                _release(pool)
                raise RuntimeError(
                    f'a dataset build worker of {workers} stopped before it finished: out of memory, killed, or '
                    'unable to start (workers are spawned and import the main script: a script that builds '
                    "datasets must do so under `if __name__ == '__main__':`). Rerun with a smaller num_proc, or "
                    'num_proc=1 (no workers)') from None
            done(item)
            yield out
    except BaseException:
        for _, fut in pending:
            fut.cancel()
        if any(not fut.done() for _, fut in pending):   # chunks still running: this pool is not reused
            _release(pool)
        raise
    _idle(pool)


def map_chunks(work: Callable, items: Sequence, init: Callable, initargs: tuple, num_proc: int, item_tokens: float,
               startup: int, what: str, rows_per_item: int = 1, min_parallel_tokens: Optional[float] = None,
               chunk_tokens: Optional[float] = None, enabled: bool = True) -> Iterator:
    """``work(state, chunk)`` for consecutive chunks of ``items`` (slices of it), in order, on up to ``num_proc``
    processes: :func:`plan` decides how many from the tokens of one item and the workers' start-up factor
    (``min_parallel_tokens`` and ``chunk_tokens`` default to this module's), and one progress bar, ``what (N
    processes)``, counts ``rows_per_item`` per item."""
    min_parallel = MIN_PARALLEL_TOKENS if min_parallel_tokens is None else min_parallel_tokens
    workers, size = plan(len(items), num_proc, item_tokens, min_parallel * startup,
                         CHUNK_TOKENS if chunk_tokens is None else chunk_tokens)
    bar = progress(len(items) * rows_per_item, f'{what} ({workers} process{"es" * (workers > 1)})', enabled=enabled)
    try:
        yield from ordered_map(work, chunks(items, size), init, initargs, workers,
                               size=lambda chunk: len(chunk) * rows_per_item, bar=bar)
    finally:
        bar.close()
