"""Content-addressed on-disk cache of built datasets.

OpenCompass builds every dataset in the main process and again in each inference and evaluation
subprocess, so a dataset is built once, written as an Arrow file, and reloaded from it afterwards.

* Key: sha256 over the namespace, every build parameter, the tokenizer fingerprint, the sha256 of every
  input data file and the package version. Anything that changes the data changes the key.
* Location: ``$LONGCTX_CACHE_DIR``, else ``$COMPASS_DATA_CACHE/longctx_cache``, else
  ``~/.cache/opencompass_longctx``.
* Entry: ``<root>/<namespace>/<key>/{data.arrow, meta.json}``; ``meta.json`` records the parameters, the
  row count and the sha256 of ``data.arrow``. Entries are built in a temporary directory and renamed into
  place (atomic); a corrupt or partial entry (bad hash, unreadable file) is detected, removed and rebuilt.
* Hashes of large files (inputs and the entries themselves) are memoised by (path, size, mtime), so a reload
  does not re-read them; a file that is damaged or rewritten gets a new size or mtime and is hashed again.
"""
import hashlib
import json
import os
import shutil
import tempfile
import time
import uuid
from typing import Callable, Dict, Iterable, Optional

from . import __version__
from .util import atomic_write_text, json_default, sha256_file

ROWS_PER_BATCH = 8


def cache_root() -> str:
    if os.environ.get('LONGCTX_CACHE_DIR'):
        return os.environ['LONGCTX_CACHE_DIR']
    if os.environ.get('COMPASS_DATA_CACHE'):
        return os.path.join(os.environ['COMPASS_DATA_CACHE'], 'longctx_cache')
    return os.path.join(os.path.expanduser('~'), '.cache', 'opencompass_longctx')


def file_digest(path: str, root: Optional[str] = None) -> str:
    """sha256 of a file, memoised by (absolute path, size, mtime_ns) under the cache root."""
    st = os.stat(path)
    memo_key = hashlib.sha256(f'{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}'.encode()).hexdigest()
    memo = os.path.join(root or cache_root(), 'file_hashes', memo_key[:2], memo_key)
    try:
        with open(memo, encoding='utf-8') as f:
            digest = f.read().strip()
        if len(digest) == 64:
            return digest
    except OSError:
        pass
    digest = sha256_file(path)
    atomic_write_text(memo, digest)
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


class DatasetCache:
    """``get_or_build`` returns a ``datasets.Dataset`` built at most once per key."""

    def __init__(self, root: Optional[str] = None):
        self.root = root or cache_root()

    def entry_dir(self, namespace: str, key: str) -> str:
        return os.path.join(self.root, namespace, key)

    def _load(self, entry: str):
        import datasets
        import pyarrow as pa
        from datasets.table import InMemoryTable
        with open(os.path.join(entry, 'meta.json'), encoding='utf-8') as f:
            meta = json.load(f)
        data = os.path.join(entry, 'data.arrow')
        # memoised by (path, size, mtime): a damaged or rewritten file has a new size or mtime and is re-hashed
        if file_digest(data, self.root) != meta['sha256']:
            raise ValueError('sha256 mismatch')
        # Memory-mapped and not file-backed for `datasets` (so OpenCompass's map writes no cache files next
        # to the entry); the entry's key is the fingerprint, so `datasets` does not hash the whole table.
        table = pa.ipc.open_stream(pa.memory_map(data)).read_all()
        ds = datasets.Dataset(InMemoryTable(table), fingerprint=os.path.basename(entry)[:32])
        if len(ds) != meta['rows']:
            raise ValueError('row count mismatch')
        return ds

    def load(self, namespace: str, key: str):
        """The cached dataset, or None when there is no valid entry (a corrupt one is removed)."""
        entry = self.entry_dir(namespace, key)
        if not os.path.isdir(entry):
            return None
        try:
            return self._load(entry)
        except Exception as e:  # noqa: BLE001 - any damage means: rebuild
            print(f'[opencompass_longctx] cache entry {entry} is corrupt ({type(e).__name__}: {e}); rebuilding')
            shutil.rmtree(entry, ignore_errors=True)
            return None

    def get_or_build(self, namespace: str, key: str, build: Callable[[], Iterable[Dict]],
                     params: Optional[Dict] = None):
        ds = self.load(namespace, key)
        if ds is not None:
            return ds
        self.write(namespace, key, build(), params)
        ds = self.load(namespace, key)
        if ds is None:
            raise RuntimeError(f'cache entry {self.entry_dir(namespace, key)} could not be read back')
        return ds

    def write(self, namespace: str, key: str, rows: Iterable[Dict], params: Optional[Dict] = None) -> str:
        """Stream rows into an Arrow file (bounded memory), then move the entry into place atomically."""
        import pyarrow as pa
        parent = os.path.join(self.root, namespace)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f'.{key[:16]}-{uuid.uuid4().hex[:8]}-', dir=parent)
        try:
            data = os.path.join(tmp, 'data.arrow')
            n, writer, schema, batch = 0, None, None, []
            with pa.OSFile(data, 'wb') as sink:
                def flush():
                    nonlocal writer, schema
                    if not batch:
                        return
                    rb = pa.RecordBatch.from_pylist(batch, schema=schema)
                    if writer is None:
                        schema = rb.schema
                        writer = pa.ipc.new_stream(sink, schema)
                    writer.write_batch(rb)
                    batch.clear()
                for row in rows:
                    batch.append(row)
                    n += 1
                    if len(batch) >= ROWS_PER_BATCH:
                        flush()
                flush()
                if writer is None:
                    raise ValueError('the dataset build produced no rows')
                writer.close()
            meta = {'rows': n, 'sha256': sha256_file(data), 'params': params, 'version': __version__,
                    'created': time.strftime('%Y-%m-%dT%H:%M:%S')}
            atomic_write_text(os.path.join(tmp, 'meta.json'),
                              json.dumps(meta, indent=1, sort_keys=True, default=json_default))
            final = self.entry_dir(namespace, key)
            try:
                os.rename(tmp, final)
            except OSError:  # another process finished the same entry first: keep theirs
                if not os.path.isdir(final):
                    raise
            return final
        finally:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)

