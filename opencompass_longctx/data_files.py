"""Where data comes from.

Search order for a benchmark's files (first hit wins, no network access when files are present):

1. the directory the user gives (``path=`` in the dataset config);
2. ``$COMPASS_DATA_CACHE/<name>`` (and the layout of OpenCompass's own data cache, ``$COMPASS_DATA_CACHE/data/<dir>``);
3. an opt-in download from the Hugging Face hub (``download=True`` in the config or ``LONGCTX_DOWNLOAD=1``)
   into ``$COMPASS_DATA_CACHE/<name>`` (or ``~/.cache/opencompass_longctx/data/<name>``), at the revision
   given (``revision=``) or the one recorded by an earlier download.

A directory may hold ``longctx_manifest.json`` (``{"revision": ..., "files": {relpath: sha256}}``), written by
downloads or by ``python -m opencompass_longctx.data_files manifest DIR``; every file listed there is checked
against its sha256 before use (read in full every time); an invalid manifest is an error naming it. A missing
file raises :class:`DataNotFoundError` naming what was searched and how to get it.
"""
import argparse
import glob
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.util import atomic_write_text, sha256_file
from opencompass_longctx.errors import LongCtxError
MANIFEST = 'longctx_manifest.json'


class DataNotFoundError(LongCtxError, FileNotFoundError):
    pass


class DataIntegrityError(LongCtxError, ValueError):
    pass


@dataclass
class Source:
    """One downloadable data set: a name, a hub repo and how to get it by hand.

    ``hint_template`` is the how-to-get text shown in errors, with ``{dir}`` where the directory goes: the
    directory the loader will read (:func:`download_dir`), spelled out, so that the command works when pasted."""
    name: str                    # directory name under $COMPASS_DATA_CACHE
    hub_repo: Optional[str]      # Hugging Face dataset repo, or None
    hint_template: str
    legacy_dirs: List[str] = field(default_factory=list)  # relative to $COMPASS_DATA_CACHE

    def hint(self, path: Optional[str] = None) -> str:
        """How to get the data into the directory a load with ``path=`` (None: the default) reads."""
        return self.hint_template.format(dir=shlex.quote(download_dir(self, path)))

    @property
    def how_to_get(self) -> str:
        """The hint for a load without ``path=``."""
        return self.hint(None)


def download_enabled(flag: Optional[bool]) -> bool:
    if flag is not None:
        return bool(flag)
    return os.environ.get('LONGCTX_DOWNLOAD', '').lower() in ('1', 'true', 'yes')


def default_download_root(source: Source) -> str:
    base = os.environ.get('COMPASS_DATA_CACHE') or os.path.join(
        os.path.expanduser('~'), '.cache', 'opencompass_longctx', 'data')
    return os.path.join(base, source.name)


def download_dir(source: Source, path: Optional[str] = None) -> str:
    """The absolute directory a download goes to and a load then reads first: ``path`` when given, else
    ``$COMPASS_DATA_CACHE/<name>``, else ``~/.cache/opencompass_longctx/data/<name>``."""
    return os.path.abspath(os.path.expanduser(path) if path else default_download_root(source))


def search_roots(source: Source, path: Optional[str] = None) -> List[str]:
    """Directories to search, in order; a user-given path is the only root when set."""
    if path:
        return [os.path.expanduser(path)]
    roots = []
    cache = os.environ.get('COMPASS_DATA_CACHE')
    if cache:
        roots.append(os.path.join(cache, source.name))
        roots += [os.path.join(cache, d) for d in source.legacy_dirs]
    roots.append(os.path.join(os.path.expanduser('~'), '.cache', 'opencompass_longctx', 'data', source.name))
    return roots


def read_manifest(path: str) -> dict:
    """A manifest file, checked: a JSON object whose ``files`` (if any) maps relative paths to sha256 hex
    strings. Anything else is a DataIntegrityError that names the file and says how to write it again."""
    def bad(reason: str) -> DataIntegrityError:
        return DataIntegrityError(
            f'{path} is not a valid data manifest ({reason}). Write it again from the files with:\n'
            f'  python -m opencompass_longctx.data_files manifest {os.path.dirname(os.path.abspath(path))}\n'
            '(after checking or downloading the data files again), or delete it.')
    try:
        with open(path, encoding='utf-8') as f:
            manifest = json.load(f)
    except UnicodeDecodeError as e:
        raise bad(f'not UTF-8: {e}') from e
    except ValueError as e:
        raise bad(f'not JSON: {e}') from e
    if not isinstance(manifest, dict):
        raise bad(f'a JSON {type(manifest).__name__}, not an object')
    files = manifest.get('files', {})
    if not isinstance(files, dict):
        raise bad(f'"files" is a JSON {type(files).__name__}, not an object of path: sha256')
    for rel, digest in files.items():
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in '0123456789abcdef' for c in digest)):
            raise bad(f'"files" entry {rel!r} is {digest!r}, not a sha256 hex digest')
    if not isinstance(manifest.get('revision'), (str, type(None))):
        raise bad(f'"revision" is {manifest.get("revision")!r}, not a string')
    return manifest


def _manifest_for(file_path: str, root: str):
    """(manifest dict, relpath) of the nearest manifest between the file and the root, if any."""
    d = os.path.dirname(os.path.abspath(file_path))
    root = os.path.abspath(root)
    while True:
        m = os.path.join(d, MANIFEST)
        if os.path.isfile(m):
            return read_manifest(m), os.path.relpath(file_path, d)
        if d == root or os.path.dirname(d) == d or not d.startswith(root):
            return None, None
        d = os.path.dirname(d)


_VERIFIED: Dict[tuple, str] = {}


def verify(file_path: str, root: str) -> None:
    """Check a file against the manifest that lists it (if any). Raises DataIntegrityError on mismatch.

    The file is hashed (the cache's on-disk (path, size, mtime) memo is not trusted here: a file changed in place
    with its mtime restored must still fail), once per process: a process that checks the same unchanged file
    again (same size, mtime, ctime and inode: any write changes the ctime) reuses its own hash."""
    from opencompass_longctx.cache import file_digest
    manifest, rel = _manifest_for(file_path, root)
    if not manifest or rel not in manifest.get('files', {}):
        return
    st = os.stat(file_path)
    seen = (os.path.abspath(file_path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    got = _VERIFIED.get(seen)
    if got is None:
        got = _VERIFIED[seen] = file_digest(file_path, fresh=True)
    want = manifest['files'][rel]
    if got != want:
        raise DataIntegrityError(
            f'{file_path} does not match its manifest ({MANIFEST}): sha256 {got[:16]}... expected '
            f'{want[:16]}... The file is corrupt or was changed; delete it and download it again.')


def find_file(source: Source, candidates: Sequence[str], path: Optional[str] = None,
              download: Optional[bool] = None, revision: Optional[str] = None,
              what: str = 'file') -> str:
    """First existing file among ``candidates`` (relative glob patterns) under the search roots.

    With download enabled and nothing found locally, the first candidate is fetched from the hub.
    """
    roots = search_roots(source, path)
    for root in roots:
        for pattern in candidates:
            hits = sorted(glob.glob(os.path.join(root, pattern)))
            if hits:
                verify(hits[0], root)
                return hits[0]
    if download_enabled(download) and source.hub_repo:
        return fetch(source, candidates[0], revision=revision, path=path)
    searched = '\n'.join(f'  {os.path.join(r, c)}' for r in roots for c in candidates)
    raise DataNotFoundError(
        f'{source.name}: {what} not found. Searched:\n{searched}\n{source.hint(path)}\n'
        f'Or set download=True in the dataset config (or LONGCTX_DOWNLOAD=1) to fetch it from the '
        f'Hugging Face hub ({source.hub_repo}).')


def fetch(source: Source, relpath: str, revision: Optional[str] = None, path: Optional[str] = None) -> str:
    """Download one file from the hub into the data root and record its sha256 and revision."""
    from huggingface_hub import HfApi, hf_hub_download
    root = os.path.expanduser(path) if path else default_download_root(source)
    manifest_path = os.path.join(root, MANIFEST)
    manifest = {'repo': source.hub_repo, 'revision': None, 'files': {}}
    if os.path.isfile(manifest_path):
        manifest = read_manifest(manifest_path)
        manifest.setdefault('files', {})
    rev = revision or manifest.get('revision')
    if rev is None:  # pin the revision on first download so later files come from the same commit
        rev = HfApi().dataset_info(source.hub_repo).sha
    local = hf_hub_download(source.hub_repo, relpath, repo_type='dataset', revision=rev, local_dir=root)
    manifest['revision'] = rev
    manifest['files'][relpath] = sha256_file(local)
    atomic_write_text(manifest_path, json.dumps(manifest, indent=1, sort_keys=True))
    return local


def write_manifest(root: str, patterns: Sequence[str] = ('**/*.json', '**/*.parquet', '**/*.txt')) -> str:
    """Record the sha256 of every data file under ``root`` (for data downloaded by hand)."""
    files = {}
    for pattern in patterns:
        for p in glob.glob(os.path.join(root, pattern), recursive=True):
            if os.path.basename(p) != MANIFEST and os.path.isfile(p):
                files[os.path.relpath(p, root)] = sha256_file(p)
    out = os.path.join(root, MANIFEST)
    old = {}
    if os.path.isfile(out):
        try:
            old = read_manifest(out)
        except DataIntegrityError as e:  # this command is the repair: write it again from the files
            print(f'replacing an invalid manifest: {e}'.splitlines()[0], file=sys.stderr)
    old['files'] = dict(sorted(files.items()))
    atomic_write_text(out, json.dumps(old, indent=1, sort_keys=True))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description='Data-source tools.')
    sub = ap.add_subparsers(dest='cmd', required=True)
    m = sub.add_parser('manifest', help='write longctx_manifest.json (sha256 of every data file) in DIR')
    m.add_argument('directory')
    args = ap.parse_args(argv)
    print(write_manifest(args.directory))
    return 0


if __name__ == '__main__':
    sys.exit(main())
