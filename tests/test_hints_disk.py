"""Download hints that work when pasted (the directory they name is the one the loader reads), and cache builds
that hit a full disk (an error naming the cache, nothing half written)."""
import errno
import os
import re
import shlex

import pytest

from opencompass_longctx import cache
from opencompass_longctx.babilong import data as bdata
from opencompass_longctx.nolima import data as ndata
from opencompass_longctx.data_files import DataNotFoundError, find_file
from opencompass_longctx.tiers import parse_tier
def _local_dir(message: str) -> str:
    """The --local-dir of the download command in an error message, as a shell would read it."""
    (line,) = [ln for ln in message.splitlines() if 'huggingface-cli download' in ln]
    words = shlex.split(line)
    return words[words.index('--local-dir') + 1]


def _fill_babilong(directory: str, task='qa1', tier='4k'):
    os.makedirs(os.path.join(directory, 'data', task), exist_ok=True)
    with open(os.path.join(directory, 'data', task, f'{tier}.json'), 'w') as f:
        f.write('[{"input": "x", "question": "q", "target": "t"}]')


@pytest.mark.parametrize('cache_set', [False, True])
@pytest.mark.parametrize('given', [None, 'my data/babilong'])
def test_babilong_hint_names_the_directory_the_loader_reads(tmp_path, monkeypatch, cache_set, given):
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    if cache_set:
        monkeypatch.setenv('COMPASS_DATA_CACHE', str(tmp_path / 'cc'))
    path = str(tmp_path / given) if given else None
    tier = parse_tier('4k')
    cands = bdata.file_candidates('qa1', tier, bdata.SOURCE_100)
    with pytest.raises(DataNotFoundError) as e:
        find_file(bdata.SOURCE_100, cands, path=path, download=False)
    target = _local_dir(str(e.value))
    assert '$' not in target and os.path.isabs(target)
    if path:
        assert target == path
    _fill_babilong(target)  # what the pasted command would do
    assert find_file(bdata.SOURCE_100, cands, path=path, download=False).startswith(target)


def test_nolima_hint_and_manifest_command_name_the_directory_the_loader_reads(tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    rel = ndata.needle_relpath('main')
    for path in (None, str(tmp_path / 'nolima here')):
        with pytest.raises(DataNotFoundError) as e:
            ndata.locate([rel], path=path, download=False)
        msg = str(e.value)
        target = _local_dir(msg)
        assert '$' not in target and (path is None or target == path)
        (manifest,) = re.findall(r'data_files manifest (.+)', msg)
        assert shlex.split(manifest) == [target]
        os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
        open(os.path.join(target, rel), 'w').write('[]')
        assert ndata.locate([rel], path=path, download=False)[rel].startswith(target)


def test_plan_check_hint_names_path(tmp_path, monkeypatch):
    from opencompass_longctx.babilong.spec import BabilongOptions, check_files
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    given = str(tmp_path / 'mine')
    (problem,) = check_files(BabilongOptions.read(dict(task='qa1', tier='4k', path=given)))
    assert _local_dir(problem) == given


def _full_disk_mkdtemp(monkeypatch):
    """Temporary entry directories whose data.arrow is /dev/full: every write of the build fails with ENOSPC, as
    on a full disk (the real pyarrow and OS error path)."""
    real = cache.tempfile.mkdtemp

    def mkdtemp(**kw):
        d = real(**kw)
        os.symlink('/dev/full', os.path.join(d, 'data.arrow'))
        return d
    monkeypatch.setattr(cache.tempfile, 'mkdtemp', mkdtemp)


@pytest.mark.skipif(not os.path.exists('/dev/full'), reason='needs /dev/full')
def test_full_disk_during_a_build_names_the_cache_and_leaves_nothing(tmp_path, monkeypatch):
    root = tmp_path / 'cache'
    monkeypatch.setenv('LONGCTX_CACHE_DIR', str(root))
    _full_disk_mkdtemp(monkeypatch)
    c = cache.DatasetCache()
    rows = ({'prompt': 'x' * 5000, 'i': i} for i in range(3000))
    with pytest.raises(cache.CacheDiskFullError) as e:
        c.get_or_build('ns', 'k' * 64, lambda: rows)
    msg = str(e.value)
    assert e.value.errno == errno.ENOSPC and isinstance(e.value, OSError)
    assert str(root / 'ns') in msg and 'LONGCTX_CACHE_DIR' in msg and 'free there now' in msg
    assert 'nothing half written' in msg
    assert os.listdir(root / 'ns') == []  # no entry, no hidden temporary directory


def test_full_disk_before_the_build_names_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv('LONGCTX_CACHE_DIR', str(tmp_path / 'cache'))

    def full(**kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(cache.tempfile, 'mkdtemp', full)
    with pytest.raises(cache.CacheDiskFullError, match='LONGCTX_CACHE_DIR'):
        cache.DatasetCache().get_or_build('ns', 'k' * 64, lambda: [{'a': 'b'}])
