"""Finding the NoLiMa files (no OpenCompass import).

The data is the authors' Hugging Face dataset ``amodaresi/NoLiMa`` (Adobe Research Licence: non-commercial
research only; the books carry their own, mostly non-commercial, licences). The package never ships it: the
user downloads it and so accepts the licences. Layout (relative to the dataset root; the authors' download
scripts put the same tree under ``data/``, which is also accepted)::

    needlesets/needle_set.json, needle_set_hard.json, needle_set_w_CoT.json, needle_set_MC.json,
               needle_set_ONLYDirect.json, needle_set_w_Distractor.json
    haystack/rand_shuffle/rand_book_{1..5}.txt          (~100K tokens each: every length up to 32K)
    haystack/rand_shuffle_long/rand_book_{1..5}.txt     (longer books for 64K/128K)

Search order: ``path=`` (the only root when given), ``$COMPASS_DATA_CACHE/nolima``,
``~/.cache/opencompass_longctx/data/nolima``; nothing is fetched when the files are there. With
``download=True`` (or ``LONGCTX_DOWNLOAD=1``) missing files are fetched at the pinned revision and their
sha256 recorded in ``longctx_manifest.json``; every file listed in a manifest is checked before use.
"""
import os
from typing import Dict, List, Optional, Sequence

from opencompass_longctx.data_files import (DataNotFoundError, Source, default_download_root, download_enabled, fetch, search_roots,
                       verify)
from opencompass_longctx.nolima.needles import VARIANT_FILES
HUB_REPO = 'amodaresi/NoLiMa'
# The revision a third-party adapter pins (it includes rand_shuffle_long). Every download uses it unless
# revision= says otherwise, and the files' sha256 are recorded at download time.
NOLIMA_REVISION = '378115b1f136b6ba78f90f78682bc55f70ec3ddd'
HAYSTACK_TIERS = ('rand_shuffle', 'rand_shuffle_long')
NUM_BOOKS = 5
LAYOUT_PREFIXES = ('', 'data/')

SOURCE = Source(
    name='nolima', hub_repo=HUB_REPO,
    hint_template=(
        'NoLiMa is under the Adobe Research Licence (non-commercial research only; the haystack books carry '
        'their own licences, see haystack/LICENSES.md); the package does not ship it. Get it with:\n'
        f'  huggingface-cli download {HUB_REPO} --repo-type dataset --revision {NOLIMA_REVISION} '
        '--local-dir {dir}\n'
        '(or point path= in the dataset config, or $NOLIMA_DATA, at a directory in that layout), then record '
        'the files\' sha256 with:\n  python -m opencompass_longctx.data_files manifest {dir}'))


def needle_relpath(variant: str) -> str:
    return f'needlesets/{VARIANT_FILES[variant]}'


def book_relpaths(tier: str, books: Sequence[int] = range(NUM_BOOKS)) -> List[str]:
    if tier not in HAYSTACK_TIERS:
        raise ValueError(f'unknown haystack tier {tier!r}; choose one of {HAYSTACK_TIERS}')
    return [f'haystack/{tier}/rand_book_{i + 1}.txt' for i in books]


def _find_in(root: str, rel: str) -> Optional[str]:
    for prefix in LAYOUT_PREFIXES:
        p = os.path.join(root, prefix + rel)
        if os.path.isfile(p):
            return p
    return None


def locate(relpaths: Sequence[str], path: Optional[str] = None, download: Optional[bool] = None,
           revision: Optional[str] = None, what: str = 'NoLiMa files') -> Dict[str, str]:
    """Absolute paths of all ``relpaths``, all from one root, each checked against its manifest.

    A root that holds some of the files but not all is reported as incomplete (the missing files are listed);
    with no root holding any, the error lists every place searched.
    """
    roots = search_roots(SOURCE, path)
    for root in roots:
        found = {rel: _find_in(root, rel) for rel in relpaths}
        if all(found.values()):
            for p in found.values():
                verify(p, root)
            return found
        if any(found.values()) or (path and os.path.isdir(root)):
            if download_enabled(download):
                return _download(relpaths, root, revision)
            missing = '\n'.join(f'  {os.path.join(root, rel)}' for rel, p in found.items() if p is None)
            raise DataNotFoundError(
                f'NoLiMa data directory {root} is incomplete: these files of {what} are missing:\n'
                f'{missing}\n{SOURCE.hint(path)}')
    if download_enabled(download):
        return _download(relpaths, path, revision)
    searched = '\n'.join(f'  {r}' for r in roots)
    listing = '\n'.join(f'  {rel}' for rel in relpaths)
    raise DataNotFoundError(
        f'NoLiMa data not found: {what} ({len(relpaths)} file{"s" if len(relpaths) != 1 else ""}):\n{listing}\n'
        f'was looked for under each of\n{searched}\n{SOURCE.hint(path)}\n'
        f'Or set download=True in the dataset config (or LONGCTX_DOWNLOAD=1) to fetch them from the Hugging '
        f'Face hub ({HUB_REPO} at revision {revision or NOLIMA_REVISION}).')


def _download(relpaths, root, revision) -> Dict[str, str]:
    root = os.path.expanduser(root) if root else default_download_root(SOURCE)
    out = {}
    for rel in relpaths:
        local = _find_in(root, rel) if os.path.isdir(root) else None
        out[rel] = local or fetch(SOURCE, rel, revision=revision or NOLIMA_REVISION, path=root)
    for p in out.values():
        verify(p, root)
    return out
