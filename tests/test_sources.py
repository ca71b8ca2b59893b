import json

import pytest

from opencompass_longctx.data_files import (MANIFEST, DataIntegrityError, DataNotFoundError, Source, find_file,
                                         write_manifest)

SRC = Source(name='bench', hub_repo='someone/bench', hint_template='Run: get-bench --here',
             legacy_dirs=['data/bench_legacy'])


def test_user_path_first_then_data_cache_then_legacy(tmp_path, monkeypatch):
    user = tmp_path / 'user'
    (user / 'x').mkdir(parents=True)
    (user / 'x' / 'a.json').write_text('[]')
    assert find_file(SRC, ['x/a.json'], path=str(user)) == str(user / 'x' / 'a.json')

    cache = tmp_path / 'cache'
    monkeypatch.setenv('COMPASS_DATA_CACHE', str(cache))
    legacy = cache / 'data' / 'bench_legacy' / 'x'
    legacy.mkdir(parents=True)
    (legacy / 'a.json').write_text('[]')
    assert find_file(SRC, ['x/a.json']) == str(legacy / 'a.json')
    main = cache / 'bench' / 'x'
    main.mkdir(parents=True)
    (main / 'a.json').write_text('[]')
    assert find_file(SRC, ['x/a.json']) == str(main / 'a.json')


def test_missing_file_names_what_was_searched_and_how_to_get_it(tmp_path):
    with pytest.raises(DataNotFoundError) as e:
        find_file(SRC, ['x/a.json', 'y/a.json'], path=str(tmp_path / 'nowhere'), what='a at 1k')
    msg = str(e.value)
    assert 'a at 1k' in msg and 'x/a.json' in msg and 'y/a.json' in msg
    assert 'get-bench --here' in msg and 'download=True' in msg


def test_no_download_unless_asked(tmp_path, monkeypatch):
    import opencompass_longctx.data_files as sources
    monkeypatch.setattr(sources, 'fetch', lambda *a, **k: pytest.fail('network used without opt-in'))
    with pytest.raises(DataNotFoundError):
        find_file(SRC, ['x/a.json'], path=str(tmp_path))


def test_opt_in_download_goes_through_fetch(tmp_path, monkeypatch):
    import opencompass_longctx.data_files as sources
    seen = {}

    def fake_fetch(source, relpath, revision=None, path=None):
        seen.update(source=source.name, relpath=relpath, revision=revision)
        return 'fetched'
    monkeypatch.setattr(sources, 'fetch', fake_fetch)
    monkeypatch.setenv('LONGCTX_DOWNLOAD', '1')
    assert find_file(SRC, ['x/a.json'], path=str(tmp_path), revision='abc') == 'fetched'
    assert seen == {'source': 'bench', 'relpath': 'x/a.json', 'revision': 'abc'}


def test_manifest_detects_a_changed_file(tmp_path):
    (tmp_path / 'x').mkdir()
    f = tmp_path / 'x' / 'a.json'
    f.write_text('[1, 2, 3]')
    write_manifest(str(tmp_path))
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert list(manifest['files']) == ['x/a.json']
    assert find_file(SRC, ['x/a.json'], path=str(tmp_path)) == str(f)
    f.write_text('[1, 2, 4]')
    with pytest.raises(DataIntegrityError, match='corrupt or was changed'):
        find_file(SRC, ['x/a.json'], path=str(tmp_path))


def test_manifest_check_reads_the_file_even_with_size_and_mtime_restored(tmp_path):
    """A file changed in place after its manifest, with its size and mtime put back, still fails: the hash
    memo of the dataset cache (keyed by path, size, mtime) does not stand in for the manifest check."""
    import os
    (tmp_path / 'x').mkdir()
    f = tmp_path / 'x' / 'a.json'
    f.write_text('[1, 2, 3]')
    write_manifest(str(tmp_path))
    assert find_file(SRC, ['x/a.json'], path=str(tmp_path)) == str(f)  # verified once (the memo is now warm)
    st = os.stat(f)
    f.write_text('[1, 2, 4]')
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(f).st_size == st.st_size and os.stat(f).st_mtime_ns == st.st_mtime_ns
    with pytest.raises(DataIntegrityError, match='corrupt or was changed'):
        find_file(SRC, ['x/a.json'], path=str(tmp_path))


@pytest.mark.parametrize('content, reason', [
    ('{"files": {"x/a.json": "ab', 'not JSON'),
    ('{"files": ["x/a.json"]}', '"files" is a JSON list'),
    ('[]', 'a JSON list, not an object'),
    ('{"files": {"x/a.json": 12}}', 'not a sha256 hex digest'),
])
def test_a_corrupt_manifest_is_a_clear_error_naming_it(tmp_path, content, reason):
    (tmp_path / 'x').mkdir()
    (tmp_path / 'x' / 'a.json').write_text('[]')
    (tmp_path / MANIFEST).write_text(content)
    with pytest.raises(DataIntegrityError) as e:
        find_file(SRC, ['x/a.json'], path=str(tmp_path))
    msg = str(e.value)
    assert str(tmp_path / MANIFEST) in msg and reason in msg
    assert f'python -m opencompass_longctx.data_files manifest {tmp_path}' in msg
    # the command it names repairs it
    write_manifest(str(tmp_path))
    assert find_file(SRC, ['x/a.json'], path=str(tmp_path)) == str(tmp_path / 'x' / 'a.json')
