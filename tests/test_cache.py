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
