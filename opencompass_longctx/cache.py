"""Content-addressed on-disk cache of built datasets.

OpenCompass builds every dataset in the main process and again in each inference and evaluation
subprocess, so a dataset is built once, written as a compressed Arrow file, and reloaded from it afterwards.

* Key: sha256 over the namespace, every build parameter, the tokenizer fingerprint, the sha256 of every
  input data file and the package version. Anything that changes the data changes the key.
* Location: ``$LONGCTX_CACHE_DIR``, else ``$COMPASS_DATA_CACHE/longctx_cache``, else
  ``~/.cache/opencompass_longctx``.
* Entry: ``<root>/<namespace>/<key>/{data.arrow, meta.json}``. ``data.arrow`` is an Arrow IPC file whose
  record batches (up to 1,024 rows or 32 MiB of text each) are compressed with zstd (level 3; or
  ``$LONGCTX_CACHE_COMPRESSION`` = ``lz4`` / ``none``); ``meta.json`` records the parameters, the row count,
  the sizes and the xxh3-128 checksum of every file of the entry. The file format (not a stream) gives random
  access, so a reload decompresses the batches on all the cores the process may use (NoLiMa 32K, 1.1 GB of
  prompts in 35 batches: 0.69 s -> 0.38 s on 2 cores). Entries of format 2 (an IPC stream) still load.
* Every reload checks the whole file against its checksum (xxh3 reads about 10 GB/s, a small part of the
  reload) before it reads a row: a damaged entry is never served, it is removed (where the cache is writable)
  and rebuilt. A reload needs read access only: a read-only cache with a valid entry loads.
* Entries are built in a hidden temporary directory, locked by the builder (``flock``), and renamed into place
  (atomic); files get the modes a normal write would (the umask decides who else may read them). Temporary
  directories of killed builders (lock free, untouched for a minute; a day where locks are not available)
  are removed by the next build in the same namespace.
* The sha256 of input data files (for keys) is memoised by (path, size, mtime) under the root, so a reload
  does not re-read them. The memo only names data; manifest checks (``sources.verify``) always read the file.
"""
import errno
import hashlib
import json
import mmap
import os
import shutil
import tempfile
import time
from typing import Callable, Dict, Iterable, Iterator, Optional

from opencompass_longctx import __version__
from opencompass_longctx.util import atomic_write_text, json_default, make_like_normal_file, sha256_file
from opencompass_longctx.errors import LongCtxError
try:
    import fcntl
except ImportError:  # not a POSIX system: stale temporary directories are recognised by age only
    fcntl = None

META = 'meta.json'
LOCK = '.building'
FORMAT = 3                        # 3: an Arrow IPC file; 2: an IPC stream; 1: one sha256 in meta.json
COMPRESSIONS = ('zstd', 'lz4', 'none')
ZSTD_LEVEL = 3
BATCH_ROWS = 1024                 # rows per record batch at most ...
BATCH_CHARS = 32 << 20            # ... and about this much text (bounded memory while writing)
STALE_UNLOCKED_S = 60             # a temp dir whose builder's lock is free and untouched this long is removed
STALE_UNKNOWN_S = 24 * 3600       # the same where the lock cannot be tested (no lock file, no flock)
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


class CachePermissionError(LongCtxError, PermissionError):
    """The cache cannot be written (an entry must be built) or an entry cannot be read by this user."""


class CacheDiskFullError(LongCtxError, OSError):
    """The disk (or quota) of the cache filled up while an entry was built; the entry's files were removed."""


class EntryDamaged(LongCtxError, ValueError):
    """A cache entry whose files do not match its meta.json."""


class EmptyBuildError(LongCtxError, ValueError):
    """A dataset build that produced no rows."""


def cache_root() -> str:
    if os.environ.get('LONGCTX_CACHE_DIR'):
        return os.environ['LONGCTX_CACHE_DIR']
    if os.environ.get('COMPASS_DATA_CACHE'):
        return os.path.join(os.environ['COMPASS_DATA_CACHE'], 'longctx_cache')
    return os.path.join(os.path.expanduser('~'), '.cache', 'opencompass_longctx')


def file_digest(path: str, root: Optional[str] = None, fresh: bool = False) -> str:
    """sha256 of a data file, memoised by (absolute path, size, mtime_ns) under the cache root.

    ``fresh``: hash the file now (and update the memo); for checks that must not trust the memo."""
    st = os.stat(path)
    memo_key = hashlib.sha256(f'{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}'.encode()).hexdigest()
    memo = os.path.join(root or cache_root(), 'file_hashes', memo_key[:2], memo_key)
    if not fresh:
        try:
            with open(memo, encoding='utf-8') as f:
                digest = f.read().strip()
            if len(digest) == 64:
                return digest
        except OSError:
            pass
    digest = sha256_file(path)
    try:
        atomic_write_text(memo, digest)
    except OSError:  # a read-only cache: no memo, the hash is simply computed again next time
        pass
    return digest


def make_key(namespace: str, params: Dict, tokenizer_fingerprint: Optional[str] = None,
             files: Iterable[str] = (), root: Optional[str] = None) -> str:
    payload = {
        'namespace': namespace,
        'params': params,
        'tokenizer': tokenizer_fingerprint,
        'files': sorted(file_digest(p, root) for p in files),
        'version': __version__,
    }
    blob = json.dumps(payload, sort_keys=True, default=json_default).encode()
    return hashlib.sha256(blob).hexdigest()


# ------------------------------------------------------------------------------------------ entries
def checksum(path: str) -> str:
    """xxh3-128 of a file's bytes, read through a memory map."""
    import xxhash
    with open(path, 'rb') as f:
        if os.fstat(f.fileno()).st_size == 0:
            return xxhash.xxh3_128(b'').hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return xxhash.xxh3_128(m).hexdigest()


def read_entry(entry: str) -> Dict:
    """The entry's meta.json after checking every file it lists (size and checksum): EntryDamaged if any
    differs. Needs read access only."""
    try:
        with open(os.path.join(entry, META), encoding='utf-8') as f:
            meta = json.load(f)
    except ValueError as e:
        raise EntryDamaged(f'{META} is not valid JSON ({e})') from e
    files = meta.get('files') if isinstance(meta, dict) else None
    if not isinstance(files, dict) or not files:
        if isinstance(meta, dict) and isinstance(meta.get('sha256'), str):  # format 1: one sha256
            if sha256_file(os.path.join(entry, 'data.arrow')) != meta['sha256']:
                raise EntryDamaged('data.arrow: sha256 mismatch')
            return meta
        raise EntryDamaged(f'{META} lists no files')
    for name, want in files.items():
        p = os.path.join(entry, name)
        size = os.path.getsize(p)
        if size != want.get('bytes'):
            raise EntryDamaged(f'{name}: {size} bytes, {want.get("bytes")} expected')
        if checksum(p) != want.get('xxh3_128'):
            raise EntryDamaged(f'{name}: checksum mismatch')
    return meta


def drop_entry(entry: str, reason: str) -> None:
    print(f'[opencompass_longctx] cache entry {entry} is corrupt ({reason}); rebuilding')
    shutil.rmtree(entry, ignore_errors=True)


def _not_writable(what: str, where: str, e: OSError) -> CachePermissionError:
    return CachePermissionError(
        f'cannot build {what}: the cache directory {where} is not writable ({e.strerror or e}). The entry is '
        'missing or damaged, so it must be built: set LONGCTX_CACHE_DIR to a writable directory, or build it '
        'once as a user who can write there (other users then need read access only).')


def _not_readable(entry: str, e: OSError) -> CachePermissionError:
    return CachePermissionError(
        f'cache entry {entry} cannot be read by this user ({e.strerror or e}): its owner can make it readable '
        "(chmod -R a+rX, or g+rX for a group), or set LONGCTX_CACHE_DIR to a directory of your own.")


_FULL = (errno.ENOSPC, getattr(errno, 'EDQUOT', errno.ENOSPC))


def _mib(n: int) -> str:
    return f'{n / (1 << 20):.1f} MiB'


def _disk_full(what: str, where: str, tmp: Optional[str], e: OSError) -> CacheDiskFullError:
    """The error for a cache build that ran out of space: what, where, how much it had written, what is free."""
    written = 0
    for dirpath, _, names in os.walk(tmp or ''):
        for n in names:
            try:
                written += os.path.getsize(os.path.join(dirpath, n))
            except OSError:
                pass
    try:
        free = _mib(shutil.disk_usage(where).free)
    except OSError:
        free = 'unknown'
    return CacheDiskFullError(e.errno, (
        f'cannot build {what}: no space left in the cache directory {where} ({e.strerror or e}); '
        f'{_mib(written)} of the entry had been written (removed again, nothing half written is kept), '
        f'{free} free there now. Free space there, or set LONGCTX_CACHE_DIR to a directory on a disk with room '
        'for the dataset (its size is about its prompts\' text, compressed).'))


def _lock(path: str):
    """Create ``path`` and hold an exclusive lock on it until the returned fd is closed (None: no locks)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a filesystem without flock: cleaners fall back to the age rule
            pass
    return fd


def _newest_mtime(d: str) -> float:
    t = os.stat(d).st_mtime
    for name in os.listdir(d):
        try:
            t = max(t, os.stat(os.path.join(d, name)).st_mtime)
        except OSError:
            pass
    return t


def _builder_alive(d: str) -> Optional[bool]:
    """True: a live builder holds the temp dir's lock; False: its lock is free; None: cannot tell."""
    if fcntl is None:
        return None
    try:
        fd = os.open(os.path.join(d, LOCK), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)


def clean_stale_temp_dirs(parent: str, now: Optional[float] = None) -> int:
    """Remove the hidden temporary directories of builders that died (see the module doc); return how many."""
    now = time.time() if now is None else now
    removed = 0
    try:
        names = [n for n in os.listdir(parent) if n.startswith('.')]
    except OSError:
        return 0
    for name in names:
        d = os.path.join(parent, name)
        try:
            if not os.path.isdir(d):
                continue
            alive = _builder_alive(d)
            age = now - _newest_mtime(d)
        except OSError:
            continue
        if alive is False and age > STALE_UNLOCKED_S or alive is None and age > STALE_UNKNOWN_S:
            shutil.rmtree(d, ignore_errors=True)
            removed += not os.path.isdir(d)
    return removed


def write_entry(entry: str, fill: Callable[[str], Optional[Dict]], what: str) -> str:
    """Build a cache entry directory atomically.

    ``fill(tmp)`` writes the entry's files into ``tmp`` and returns extra meta.json fields; the sizes and
    checksums of the files are added here. The directory is created (and permissions checked) before ``fill``
    runs, so an unwritable cache fails before any work. Another builder that finished the same entry first
    wins; its entry is kept."""
    parent = os.path.dirname(entry)
    try:
        os.makedirs(parent, exist_ok=True)
        clean_stale_temp_dirs(parent)
        tmp = tempfile.mkdtemp(prefix=f'.{os.path.basename(entry)[:16]}-', dir=parent)
    except OSError as e:
        if e.errno in _DENIED:
            raise _not_writable(what, parent, e) from e
        if e.errno in _FULL:
            raise _disk_full(what, parent, None, e) from e
        raise
    fd = None
    try:
        fd = _lock(os.path.join(tmp, LOCK))
        meta = dict(fill(tmp) or {})
        names = sorted(n for n in os.listdir(tmp) if n not in (LOCK, META))
        meta.update(format=FORMAT, version=__version__, created=time.strftime('%Y-%m-%dT%H:%M:%S'),
                    files={n: {'bytes': os.path.getsize(os.path.join(tmp, n)),
                               'xxh3_128': checksum(os.path.join(tmp, n))} for n in names})
        atomic_write_text(os.path.join(tmp, META), json.dumps(meta, indent=1, sort_keys=True, default=json_default))
        make_like_normal_file(tmp)  # mkdtemp made it 0700
        try:
            os.rename(tmp, entry)
        except OSError:  # another process finished the same entry first: keep theirs
            if not os.path.isdir(entry):
                raise
        else:
            os.unlink(os.path.join(entry, LOCK))
        return entry
    except OSError as e:
        if e.errno in _FULL:
            raise _disk_full(what, parent, tmp, e) from e
        raise
    finally:
        if fd is not None:
            os.close(fd)
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------ datasets
def _compression() -> Optional[str]:
    c = os.environ.get('LONGCTX_CACHE_COMPRESSION', 'zstd').lower()
    if c not in COMPRESSIONS:
        raise ValueError(f'LONGCTX_CACHE_COMPRESSION={c!r}; choose one of {", ".join(COMPRESSIONS)}')
    return None if c == 'none' else c


def _defer(build: Callable[[], Iterable[Dict]]) -> Iterator[Dict]:
    yield from build()  # build() runs on the first row asked for, i.e. once the entry's directory exists


def _conform(rb, schema, namespace: str, rows_so_far: int):
    """A later batch in the first batch's schema: the same columns, types cast without loss; anything else is an
    error (a build whose rows differ in their columns or types), never a silently changed or dropped value."""
    import pyarrow as pa
    if rb.schema.names != schema.names:
        raise ValueError(f'cache namespace {namespace!r}: the rows of this build differ in their columns (rows up to '
                         f'{rows_so_far}: {schema.names} vs {rb.schema.names}); every row must have the same keys')
    try:
        return pa.RecordBatch.from_arrays([col.cast(field.type, safe=True) for col, field in zip(rb.columns, schema)],
                                          schema=schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValueError(f'cache namespace {namespace!r}: the rows of this build differ in their types (rows up to '
                         f'{rows_so_far}: {schema} vs {rb.schema}): {e}') from None


def read_table(path: str):
    """The table in an entry's ``data.arrow``: an IPC file's batches are read by one thread per core (each
    thread with its own reader, over a contiguous range of batches, so the order is kept); a stream (format 2)
    is read in order."""
    import pyarrow as pa
    from concurrent.futures import ThreadPoolExecutor
    from opencompass_longctx.parallel import available_cores
    with open(path, 'rb') as f:
        is_file = f.read(6) == b'ARROW1'
    if not is_file:
        return pa.ipc.open_stream(pa.memory_map(path)).read_all()
    reader = pa.ipc.open_file(pa.memory_map(path))
    n = reader.num_record_batches
    threads = min(n, available_cores())
    if threads <= 1:
        return reader.read_all()

    def read_range(i: int):
        own = pa.ipc.open_file(pa.memory_map(path))
        return [own.get_batch(b) for b in range(i * n // threads, (i + 1) * n // threads)]

    with ThreadPoolExecutor(threads) as pool:
        batches = [b for part in pool.map(read_range, range(threads)) for b in part]
    return pa.Table.from_batches(batches, schema=reader.schema)


class DatasetCache:
    """``get_or_build`` returns a ``datasets.Dataset`` built at most once per key."""

    def __init__(self, root: Optional[str] = None):
        self.root = root or cache_root()

    def entry_dir(self, namespace: str, key: str) -> str:
        return os.path.join(self.root, namespace, key)

    def _load(self, entry: str):
        import datasets
        from datasets.table import InMemoryTable
        meta = read_entry(entry)
        # Read through a memory map (uncompressed batches stay mapped, compressed ones are decompressed), not
        # file-backed for `datasets` (so OpenCompass's map writes no cache files next to the entry); the entry's
        # key is the fingerprint, so `datasets` does not hash the whole table.
        table = read_table(os.path.join(entry, 'data.arrow'))
        ds = datasets.Dataset(InMemoryTable(table), fingerprint=os.path.basename(entry)[:32])
        if len(ds) != meta['rows']:
            raise EntryDamaged(f'{len(ds)} rows, {meta["rows"]} expected')
        return ds

    def load(self, namespace: str, key: str):
        """The cached dataset, or None when there is no valid entry (a damaged one is removed)."""
        entry = self.entry_dir(namespace, key)
        try:
            os.stat(entry)  # PermissionError: a directory on the way is not searchable by this user
        except FileNotFoundError:
            return None
        except PermissionError as e:
            raise _not_readable(entry, e) from e
        import datasets  # noqa: F401 - imported here, so that a broken install is an ImportError, never damage
        import pyarrow  # noqa: F401
        import xxhash  # noqa: F401
        try:
            return self._load(entry)
        except PermissionError as e:
            raise _not_readable(entry, e) from e
        except (MemoryError, InterruptedError, ImportError):  # the machine, not the entry: never drop it
            raise
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EIO, errno.EAGAIN):
                raise
            drop_entry(entry, f'{type(e).__name__}: {e}')
            return None
        except Exception as e:  # noqa: BLE001 - any damage (bad checksum, truncated Arrow, bad meta) means: rebuild
            drop_entry(entry, f'{type(e).__name__}: {e}')
            return None

    def get_or_build(self, namespace: str, key: str, build: Callable[[], Iterable[Dict]],
                     params: Optional[Dict] = None):
        ds = self.load(namespace, key)
        if ds is not None:
            return ds
        self.write(namespace, key, _defer(build), params)
        ds = self.load(namespace, key)
        if ds is None:
            raise RuntimeError(f'cache entry {self.entry_dir(namespace, key)} could not be read back')
        return ds

    def write(self, namespace: str, key: str, rows: Iterable[Dict], params: Optional[Dict] = None) -> str:
        """Stream rows into a compressed Arrow file (bounded memory), then move the entry into place atomically."""
        import pyarrow as pa
        codec = _compression()
        options = pa.ipc.IpcWriteOptions(
            compression=pa.Codec('zstd', compression_level=ZSTD_LEVEL) if codec == 'zstd' else codec)

        def fill(tmp: str) -> Dict:
            t0 = time.perf_counter()
            n, arrow_bytes, writer, schema, batch, chars = 0, 0, None, None, [], 0
            with pa.OSFile(os.path.join(tmp, 'data.arrow'), 'wb') as sink:
                def flush():
                    nonlocal writer, schema, arrow_bytes, chars
                    if not batch:
                        return
                    rb = pa.RecordBatch.from_pylist(batch)
                    if writer is None:
                        schema = rb.schema
                        writer = pa.ipc.new_file(sink, schema, options=options)
                    elif rb.schema != schema:
                        rb = _conform(rb, schema, namespace, n)
                    writer.write_batch(rb)
                    arrow_bytes += rb.nbytes
                    batch.clear()
                    chars = 0
                keys = None
                for row in rows:
                    if keys is None:
                        keys = set(row)
                    elif row.keys() != keys:   # Arrow would keep the first row's keys and drop or null the others
                        raise ValueError(f'cache namespace {namespace!r}: row {n} has the keys {sorted(row)}, the '
                                         f'first row {sorted(keys)}; every row of a build must have the same keys')
                    batch.append(row)
                    n += 1
                    chars += sum(len(v) for v in row.values() if isinstance(v, str))
                    if len(batch) >= BATCH_ROWS or chars >= BATCH_CHARS:
                        flush()
                flush()
                if writer is None:
                    raise EmptyBuildError(
                        f'the dataset build produced no rows (cache namespace {namespace!r}, parameters '
                        f'{json.dumps(params, sort_keys=True, default=json_default)}): the inputs hold no sample '
                        'for this selection; check the data files and the parameters')
                writer.close()
            return {'rows': n, 'params': params, 'compression': codec or 'none', 'arrow_bytes': arrow_bytes,
                    'build_seconds': round(time.perf_counter() - t0, 3)}

        return write_entry(self.entry_dir(namespace, key), fill, f'the dataset cache entry {namespace}/{key}')


# ---------------------------------------------------------------------------------------------- build records
# A build record remembers the rows and prompt tokens of a built dataset, keyed by its load arguments, so that
# the plan of a later run with the same dataset is exact (``<root>/build_records/<sha256>.json``). The loaders
# write one after each load; the planner reads them.
def build_record_path(kind: str, kwargs: Dict) -> str:
    blob = json.dumps({'kind': kind, 'kwargs': kwargs}, sort_keys=True, default=str)
    return os.path.join(cache_root(), 'build_records', f'{hashlib.sha256(blob.encode()).hexdigest()}.json')


SHARE_MAX_TOKENS = 64_000_000   # ~256 MB of prompt text: NoLiMa up to 32k (48M tokens a tier), not the 1m tiers


def record_build(kind: str, kwargs: Dict, ds, tokens_column: str, prompt_columns: Iterable[str] = ()):
    """Remember the rows and the sum of ``tokens_column`` of ``ds`` (a built dataset of loader ``kind`` with
    load arguments ``kwargs``) and, from the texts of ``prompt_columns``, the share of those tokens a prefix cache
    serves in reuse order (``prefix_share``, :func:`opencompass_longctx.prefix_reuse.cached_share`; measured once
    per record, for datasets of at most :data:`SHARE_MAX_TOKENS`: the texts are read into memory); returns ``ds``.
    Never fails a build."""
    try:
        tokens = (int(sum(ds[tokens_column])) if tokens_column in ds.column_names else None)
        record = {'rows': len(ds), 'prompt_tokens': tokens, 'tokens_column': tokens_column}
        old = read_build_record(kind, kwargs) or {}
        columns = list(prompt_columns)
        if (tokens is not None and tokens <= SHARE_MAX_TOKENS and columns
                and all(c in ds.column_names for c in columns)):
            if {k: old.get(k) for k in record} == record and 'prefix_share' in old:
                return ds
            from opencompass_longctx.prefix_reuse import cached_share
            texts = ['\n'.join(parts) for parts in zip(*(ds[c] for c in columns))]
            record['prefix_share'] = round(cached_share(texts, list(ds[tokens_column])), 4)
        if old != record:
            atomic_write_text(build_record_path(kind, kwargs), json.dumps(record))
    except Exception:  # noqa: BLE001 - a record is an optimisation of the plan, never a reason to fail
        pass
    return ds


def read_build_record(kind: str, kwargs: Dict) -> Optional[Dict]:
    """The record of an earlier build with these load arguments, or None."""
    try:
        with open(build_record_path(kind, kwargs), encoding='utf-8') as f:
            rec = json.load(f)
        return rec if isinstance(rec, dict) and isinstance(rec.get('rows'), int) else None
    except (OSError, ValueError):
        return None
