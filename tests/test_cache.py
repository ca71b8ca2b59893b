import os

import pytest

from opencompass_longctx.cache import DatasetCache, file_digest, make_key
def rows(n, tag='x'):
    for i in range(n):
        yield {'i': i, 'text': f'{tag}-{i}' * 10}


def test_second_build_comes_from_disk(tmp_path):
    cache = DatasetCache(str(tmp_path / 'c'))
    calls = []

    def build():
        calls.append(1)
        return rows(20)

    key = make_key('t', {'a': 1}, 'fp', root=cache.root)
    ds1 = cache.get_or_build('t', key, build)
    ds2 = cache.get_or_build('t', key, build)
    assert len(calls) == 1
    assert ds1.to_list() == ds2.to_list() == list(rows(20))
    # nothing temporary left behind
    assert sorted(os.listdir(os.path.join(cache.root, 't'))) == [key]


def test_key_covers_params_tokenizer_and_file_content(tmp_path):
    f = tmp_path / 'data.json'
    f.write_text('[1]')
    root = str(tmp_path / 'c')
    k = make_key('t', {'a': 1}, 'fp', [str(f)], root)
    assert k == make_key('t', {'a': 1}, 'fp', [str(f)], root)
    assert k != make_key('t', {'a': 2}, 'fp', [str(f)], root)
    assert k != make_key('t', {'a': 1}, 'other', [str(f)], root)
    assert k != make_key('u', {'a': 1}, 'fp', [str(f)], root)
    f.write_text('[2]')
    os.utime(f, ns=(1, 1))  # new content and mtime: the memoised hash must not be reused
    assert k != make_key('t', {'a': 1}, 'fp', [str(f)], root)
    assert file_digest(str(f), root) == file_digest(str(f), root)


@pytest.mark.parametrize('damage', ['truncate', 'flip', 'meta'])
def test_corrupt_entry_is_detected_and_rebuilt(tmp_path, damage, capsys):
    cache = DatasetCache(str(tmp_path / 'c'))
    key = make_key('t', {}, None, root=cache.root)
    cache.get_or_build('t', key, lambda: rows(30))
    entry = cache.entry_dir('t', key)
    data = os.path.join(entry, 'data.arrow')
    if damage == 'truncate':
        with open(data, 'r+b') as f:
            f.truncate(os.path.getsize(data) // 2)
    elif damage == 'flip':
        with open(data, 'r+b') as f:
            f.seek(os.path.getsize(data) - 100)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0xFF]))
    else:
        with open(os.path.join(entry, 'meta.json'), 'w') as f:
            f.write('{not json')
    calls = []

    def build():
        calls.append(1)
        return rows(30)

    ds = cache.get_or_build('t', key, build)
    assert calls == [1]
    assert ds.to_list() == list(rows(30))
    assert 'corrupt' in capsys.readouterr().out


def test_empty_build_is_an_error(tmp_path):
    cache = DatasetCache(str(tmp_path / 'c'))
    with pytest.raises(ValueError, match='no rows'):
        cache.get_or_build('t', 'k' * 64, lambda: iter(()))
    assert os.listdir(os.path.join(cache.root, 't')) == []


def test_cache_location_from_environment(monkeypatch, tmp_path):
    from opencompass_longctx.cache import cache_root
    monkeypatch.delenv('LONGCTX_CACHE_DIR')
    monkeypatch.setenv('COMPASS_DATA_CACHE', str(tmp_path / 'data'))
    assert cache_root() == str(tmp_path / 'data' / 'longctx_cache')
    monkeypatch.delenv('COMPASS_DATA_CACHE')
    assert cache_root() == os.path.join(str(tmp_path / 'home'), '.cache', 'opencompass_longctx')


# ---------------------------------------------------------------------------------------------- integrity
def test_damage_with_the_same_size_and_mtime_is_never_served(tmp_path, capsys):
    """A byte changed in place, size and mtime put back: the reload reads the bytes (checksum), so the damaged
    entry is rebuilt, not served as wrong rows."""
    cache = DatasetCache(str(tmp_path / 'c'))
    key = make_key('t', {}, None, root=cache.root)
    cache.get_or_build('t', key, lambda: rows(30))
    data = os.path.join(cache.entry_dir('t', key), 'data.arrow')
    st = os.stat(data)
    with open(data, 'r+b') as f:
        f.seek(st.st_size // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x01]))
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    calls = []
    ds = cache.get_or_build('t', key, lambda: calls.append(1) or rows(30))
    assert calls == [1] and ds.to_list() == list(rows(30))
    assert 'checksum mismatch' in capsys.readouterr().out


def test_empty_build_names_the_namespace_and_parameters(tmp_path):
    from opencompass_longctx.cache import EmptyBuildError
    cache = DatasetCache(str(tmp_path / 'c'))
    with pytest.raises(EmptyBuildError) as e:
        cache.get_or_build('babilong', 'k' * 64, lambda: iter(()), params={'task': 'qa1', 'tier': '1k'})
    assert "'babilong'" in str(e.value) and '"task": "qa1"' in str(e.value) and '"tier": "1k"' in str(e.value)


# ---------------------------------------------------------------------------------------------- compression
def _prompt_rows(n=200):
    """Rows shaped like the benchmarks' (long prompts made of book text, short fields)."""
    from opencompass_longctx.demo.nolima_data import book_text
    book = book_text(0, 20000)
    for i in range(n):
        a = (i * 7919) % (len(book) - 20000)
        yield {'prompt': book[a:a + 15000] + f'\nQuestion {i}: who?', 'answer': f'name {i}', 'depth': i / n,
               'tokens': 4000 + i}


@pytest.mark.parametrize('codec', ['zstd', 'lz4', 'none'])
def test_entries_are_compressed_and_reload_the_same_rows(tmp_path, monkeypatch, codec):
    import json
    import pyarrow as pa
    monkeypatch.setenv('LONGCTX_CACHE_COMPRESSION', codec)
    cache = DatasetCache(str(tmp_path / 'c'))
    ds = cache.get_or_build('t', 'k' * 64, lambda: _prompt_rows())
    expected = list(_prompt_rows())
    assert ds.to_list() == expected
    entry = cache.entry_dir('t', 'k' * 64)
    meta = json.load(open(os.path.join(entry, 'meta.json')))
    size = os.path.getsize(os.path.join(entry, 'data.arrow'))
    text_bytes = sum(len(r['prompt'].encode()) for r in expected)
    assert meta['compression'] == codec and meta['rows'] == 200 and meta['files']['data.arrow']['bytes'] == size
    assert size < 0.35 * text_bytes if codec != 'none' else size > text_bytes
    # any entry reads whatever the current setting (the codec is recorded in the file)
    monkeypatch.setenv('LONGCTX_CACHE_COMPRESSION', 'none' if codec != 'none' else 'zstd')
    assert DatasetCache(cache.root).load('t', 'k' * 64).to_list() == expected
    reader = pa.ipc.open_file(pa.memory_map(os.path.join(entry, 'data.arrow')))
    assert reader.num_record_batches >= 1
    assert sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches)) == 200


def test_bad_compression_setting_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv('LONGCTX_CACHE_COMPRESSION', 'gzip9')
    with pytest.raises(ValueError, match='LONGCTX_CACHE_COMPRESSION'):
        DatasetCache(str(tmp_path / 'c')).get_or_build('t', 'k' * 64, lambda: rows(3))


@pytest.mark.parametrize('cores', [1, 2, 5])
def test_entries_of_many_batches_reload_in_order_on_any_number_of_cores(tmp_path, monkeypatch, cores):
    """A reload reads an entry's record batches on several threads (one reader each): the rows come back in
    the order they were written, whatever the number of threads or batches."""
    import pyarrow as pa
    import opencompass_longctx.cache as C
    import opencompass_longctx.parallel as P
    monkeypatch.setattr(C, 'BATCH_ROWS', 7)
    monkeypatch.setattr(P, 'available_cores', lambda: cores)
    cache = DatasetCache(str(tmp_path / 'c'))
    want = [{'i': i, 'prompt': f'row {i} ' * (i % 13)} for i in range(100)]
    cache.write('t', 'k' * 64, iter(want))
    reader = pa.ipc.open_file(pa.memory_map(os.path.join(cache.entry_dir('t', 'k' * 64), 'data.arrow')))
    assert reader.num_record_batches == 15
    assert cache.load('t', 'k' * 64).to_list() == want


def test_format_2_stream_entries_still_load(tmp_path):
    """Entries written as an Arrow IPC stream (format 2, before random-access files) load, checksums checked."""
    import json
    import pyarrow as pa
    from opencompass_longctx.cache import checksum
    cache = DatasetCache(str(tmp_path / 'c'))
    cache.get_or_build('t', 'k' * 64, lambda: rows(5))
    entry = cache.entry_dir('t', 'k' * 64)
    data = os.path.join(entry, 'data.arrow')
    table = pa.ipc.open_file(pa.memory_map(data)).read_all()
    with pa.OSFile(data, 'wb') as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    meta_path = os.path.join(entry, 'meta.json')
    meta = json.load(open(meta_path))
    meta.update(format=2, files={'data.arrow': {'bytes': os.path.getsize(data), 'xxh3_128': checksum(data)}})
    json.dump(meta, open(meta_path, 'w'))
    assert cache.get_or_build('t', 'k' * 64, lambda: pytest.fail('rebuilt')).to_list() == list(rows(5))


@pytest.mark.parametrize('error', [ImportError("No module named 'xxhash'"), MemoryError(),
                                   OSError(5, 'Input/output error')])
def test_a_failure_of_the_machine_never_drops_a_valid_entry(tmp_path, monkeypatch, error):
    """A broken install, no memory or an I/O error is raised as it is: the entry (maybe shared with other users)
    stays and loads once the machine is fine."""
    import opencompass_longctx.cache as C
    cache = DatasetCache(str(tmp_path / 'c'))
    cache.get_or_build('t', 'k' * 64, lambda: rows(4))

    def fail(entry):
        raise error
    monkeypatch.setattr(C, 'read_table', fail)
    with pytest.raises(type(error)):
        cache.load('t', 'k' * 64)
    monkeypatch.undo()
    assert cache.get_or_build('t', 'k' * 64, lambda: pytest.fail('rebuilt')).to_list() == list(rows(4))


def test_format_1_entries_still_load(tmp_path):
    """Entries written before checksums (meta.json with one sha256) load when their sha256 matches."""
    import json
    from opencompass_longctx.util import sha256_file
    cache = DatasetCache(str(tmp_path / 'c'))
    cache.get_or_build('t', 'k' * 64, lambda: rows(5))
    entry = cache.entry_dir('t', 'k' * 64)
    data = os.path.join(entry, 'data.arrow')
    with open(os.path.join(entry, 'meta.json'), 'w') as f:
        json.dump({'rows': 5, 'sha256': sha256_file(data), 'params': None}, f)
    assert cache.get_or_build('t', 'k' * 64, lambda: pytest.fail('rebuilt')).to_list() == list(rows(5))


# ---------------------------------------------------------------------------------------------- other users
NOBODY = 65534


def _as_nobody(code, env):
    """Run ``code`` in a Python process that drops to uid/gid nobody after its imports (the interpreter lives
    where nobody cannot read, so everything is imported first)."""
    import subprocess
    import sys
    prelude = ('import os, sys, json, datasets, datasets.table, pyarrow, pyarrow.ipc, xxhash, traceback\n'
               'import opencompass_longctx.cache as C\n'
               f'os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})\n')
    return subprocess.run([sys.executable, '-c', prelude + code], capture_output=True, text=True,
                          env=dict(os.environ, **env), timeout=300)


@pytest.fixture
def shared_dir():
    """A directory every user can traverse (pytest's tmp_path lives under a 0700 directory)."""
    import shutil
    import tempfile
    if os.getuid() != 0:
        pytest.skip('needs root to act as a second user')
    d = tempfile.mkdtemp(prefix='longctx-shared-', dir='/tmp')
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.e2e
def test_entries_are_readable_by_another_user_under_the_umask(shared_dir):
    old = os.umask(0o022)
    try:
        cache = DatasetCache(os.path.join(shared_dir, 'cache'))
        cache.get_or_build('t', 'k' * 64, lambda: rows(12))
    finally:
        os.umask(old)
    entry = cache.entry_dir('t', 'k' * 64)
    assert os.stat(entry).st_mode & 0o777 == 0o755
    assert {os.stat(os.path.join(entry, f)).st_mode & 0o777 for f in os.listdir(entry)} == {0o644}
    out = _as_nobody("ds = C.DatasetCache(sys.argv[1] if len(sys.argv) > 1 else os.environ['ROOT'])"
                     ".get_or_build('t', 'k' * 64, lambda: 1 / 0)\nprint('ROWS', len(ds))",
                     {'ROOT': cache.root})
    assert 'ROWS 12' in out.stdout, out.stderr
    assert 'corrupt' not in out.stdout


@pytest.mark.e2e
def test_a_private_umask_keeps_entries_private(shared_dir):
    old = os.umask(0o077)
    try:
        cache = DatasetCache(os.path.join(shared_dir, 'cache'))
        cache.get_or_build('t', 'k' * 64, lambda: rows(3))
    finally:
        os.umask(old)
    out = _as_nobody("C.DatasetCache(os.environ['ROOT']).get_or_build('t', 'k' * 64, lambda: 1 / 0)",
                     {'ROOT': cache.root})
    assert out.returncode != 0 and 'CachePermissionError' in out.stderr and 'cannot be read by this user' in \
        out.stderr


@pytest.mark.e2e
def test_a_read_only_cache_loads_valid_entries_and_names_the_setting_for_missing_ones(shared_dir):
    """The second user cannot write the cache: a valid entry loads (nothing is written, no hash memo needed);
    a missing one fails before any build with one error naming LONGCTX_CACHE_DIR."""
    old = os.umask(0o022)
    try:
        cache = DatasetCache(os.path.join(shared_dir, 'cache'))
        cache.get_or_build('t', 'k' * 64, lambda: rows(7))
    finally:
        os.umask(old)
    data = os.path.join(shared_dir, 'input.json')
    with open(data, 'w') as f:
        f.write('[1]')
    os.chmod(data, 0o644)
    key = make_key('t', {}, None, [data], os.path.join(shared_dir, 'elsewhere'))  # no memo in this cache
    before = sorted(os.walk(cache.root))
    code = ("cache = C.DatasetCache(os.environ['ROOT'])\n"
            f"assert C.make_key('t', {{}}, None, [{data!r}], cache.root) == {key!r}  # its memo cannot be written\n"
            "print('ROWS', len(cache.get_or_build('t', 'k' * 64, lambda: 1 / 0)))\n"
            "built = []\n"
            "try:\n"
            "    cache.get_or_build('t', 'm' * 64, lambda: built.append(1) or iter([{'a': 1}]))\n"
            "except C.CachePermissionError as e:\n"
            "    print('ERROR', e, 'BUILT', built)\n")
    out = _as_nobody(code, {'ROOT': cache.root})
    assert 'ROWS 7' in out.stdout and 'corrupt' not in out.stdout, out.stdout + out.stderr
    err = out.stdout.split('ERROR', 1)[1]
    assert 'LONGCTX_CACHE_DIR' in err and 'not writable' in err and 'BUILT []' in err
    assert sorted(os.walk(cache.root)) == before  # the reader wrote nothing


# ---------------------------------------------------------------------------------------------- killed builders
@pytest.mark.e2e
def test_temp_dirs_of_killed_builders_are_removed_and_live_ones_kept(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    from opencompass_longctx.cache import STALE_UNKNOWN_S, STALE_UNLOCKED_S, clean_stale_temp_dirs
    root = str(tmp_path / 'c')
    ns = os.path.join(root, 't')
    builder = ('import sys, time\nfrom opencompass_longctx.cache import DatasetCache\n'
               'def rows():\n    yield {"a": 1}\n    print("BUILDING", flush=True)\n    time.sleep(600)\n'
               'DatasetCache(sys.argv[1]).get_or_build("t", sys.argv[2] * 64, rows)\n')

    def start(letter):
        p = subprocess.Popen([sys.executable, '-c', builder, root, letter], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == 'BUILDING'
        return p

    killed, live = start('a'), start('b')
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        temps = sorted(n for n in os.listdir(ns) if n.startswith('.'))
        assert len(temps) == 2
        # no-lock temp dir from an older version (or killed before locking): age rule only
        os.makedirs(os.path.join(ns, '.cccccccccccccccc-old'))
        later = time.time() + STALE_UNLOCKED_S + 5
        assert clean_stale_temp_dirs(ns, now=later) == 1  # the killed builder's (lock free, untouched)
        left = sorted(n for n in os.listdir(ns) if n.startswith('.'))
        assert len(left) == 2 and '.cccccccccccccccc-old' in left and any(n.startswith('.bbbb') for n in left)
        assert clean_stale_temp_dirs(ns, now=time.time() + STALE_UNKNOWN_S + 5) == 1  # old one; live one kept
        assert [n for n in os.listdir(ns) if n.startswith('.')] == [n for n in left if n.startswith('.bbbb')]
        assert clean_stale_temp_dirs(ns) == 0  # nothing removed right after a death (grace period)
    finally:
        live.kill()
        live.wait()
    # the next build in the namespace cleans up: the second builder is dead now; make its files a minute old
    (temp,) = [os.path.join(ns, n) for n in os.listdir(ns) if n.startswith('.')]
    for p in [temp] + [os.path.join(temp, n) for n in os.listdir(temp)]:
        os.utime(p, (time.time() - STALE_UNLOCKED_S - 5,) * 2)
    entry = DatasetCache(root).write('t', 'c' * 64, rows(2))
    assert os.path.isdir(entry) and sorted(os.listdir(ns)) == ['c' * 64]


def test_a_build_over_several_batches_keeps_every_value_or_fails_clearly(tmp_path):
    """Rows are written in record batches of the first batch's schema: later batches are cast without loss, and
    rows whose keys or types differ are an error, never a value silently changed, nulled or dropped."""
    from opencompass_longctx.cache import BATCH_ROWS, DatasetCache
    cache = DatasetCache(str(tmp_path / 'c'))
    n = BATCH_ROWS + 100
    ok = [{'a': f'x{i}', 'f': 1.0 if i < BATCH_ROWS else 0.75} for i in range(n)]
    ds = cache.get_or_build('t', 'ok', lambda: iter(ok))
    assert ds[BATCH_ROWS + 1]['f'] == 0.75 and ds[0]['f'] == 1.0 and len(ds) == n
    lossy = [{'a': 'x', 'f': 1 if i < BATCH_ROWS else 0.75} for i in range(n)]   # int column, then a float
    with pytest.raises(ValueError, match='differ in their types'):
        cache.get_or_build('t', 'lossy', lambda: iter(lossy))
    extra = [{'a': 'x'} if i < 50 else {'a': 'y', 'extra': 1} for i in range(100)]  # within one batch, too
    with pytest.raises(ValueError, match=r"row 50 has the keys \['a', 'extra'\]"):
        cache.get_or_build('t', 'extra', lambda: iter(extra))
    assert cache.load('t', 'lossy') is None and cache.load('t', 'extra') is None   # nothing half-written is served
