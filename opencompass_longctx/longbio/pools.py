"""The project's own LongBioBench attribute pools and sentence templates (see ``pools/SOURCES.md``).

Plain text files inside the package, checked against ``pools/manifest.json`` (sha256 per file) when first
loaded. ``pools_sha256()`` (the hash of the manifest) names the exact pools a dataset was made from.

    python -m opencompass_longctx.longbio.pools check      # validate every pool, compare with the manifest
    python -m opencompass_longctx.longbio.pools manifest   # validate, then rewrite the manifest
"""
import functools
import json
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Tuple

from opencompass_longctx.util import sha256_file
from opencompass_longctx.errors import LongCtxError
POOLS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pools')
MANIFEST = 'manifest.json'

# Retrieval attributes in bio order (the authors' fixed order); 'age' replaces 'birthdate' in math tasks.
ATTRIBUTES = ('birthdate', 'birthplace', 'hobby', 'university', 'major', 'work_city')
VALUE_FILES = {
    'given': 'given_names.txt', 'middle': 'middle_names.txt', 'surname': 'surnames.txt',
    'birthplace': 'birthplaces.txt', 'work_city': 'work_cities.txt', 'university': 'universities.txt',
    'major': 'majors.txt', 'hobby': 'hobbies.txt',
}
STANDARD_FILE = 'templates/standard.tsv'
PARAPHRASE_FILES = {a: f'templates/{a}.tsv' for a in ATTRIBUTES}
SUBJECT, OBJECT, VALUE = '<This person>', '<This person-o>', '<attr>'


class PoolError(LongCtxError, RuntimeError):
    """A pool file is missing, altered (sha256 differs from the manifest) or malformed."""


@dataclass(frozen=True)
class Pools:
    values: Dict[str, Tuple[str, ...]]                     # VALUE_FILES keys -> values, in file order
    standard: Dict[str, str]                               # attribute (incl. 'age') -> template
    paraphrase: Dict[str, Tuple[Tuple[str, str], ...]]     # attribute -> ((third person, first person), ...)
    sha256: str                                            # hash of the manifest: names these exact files


def all_files() -> List[str]:
    return sorted([*VALUE_FILES.values(), STANDARD_FILE, *PARAPHRASE_FILES.values()])


def _read_lines(rel: str) -> List[str]:
    path = os.path.join(POOLS_DIR, rel)
    try:
        with open(path, encoding='utf-8') as f:
            return [line.rstrip('\n') for line in f if line.strip()]
    except OSError as e:
        raise PoolError(f'LongBioBench pool file {path} cannot be read ({e}); reinstall the package') from e


def _tsv(rel: str, ncols: int) -> List[Tuple[str, ...]]:
    rows = []
    for i, line in enumerate(_read_lines(rel), 1):
        cols = tuple(c.strip() for c in line.split('\t'))
        if len(cols) != ncols or not all(cols):
            raise PoolError(f'{rel}:{i}: expected {ncols} tab-separated non-empty columns, got {line!r}')
        rows.append(cols)
    return rows


def read_manifest() -> Dict[str, str]:
    path = os.path.join(POOLS_DIR, MANIFEST)
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)['files']
    except (OSError, ValueError, KeyError) as e:
        raise PoolError(f'LongBioBench pool manifest {path} is missing or unreadable ({e})') from e


def check_manifest() -> str:
    """Compare every pool file with the manifest; return the manifest's sha256."""
    files = read_manifest()
    if sorted(files) != all_files():
        raise PoolError(f'pool manifest lists {sorted(files)}, expected {all_files()}')
    for rel, digest in files.items():
        path = os.path.join(POOLS_DIR, rel)
        if not os.path.isfile(path):
            raise PoolError(f'LongBioBench pool file {path} is missing; reinstall the package')
        if sha256_file(path) != digest:
            raise PoolError(f'LongBioBench pool file {path} differs from its manifest hash (edited?). Run '
                            '`python -m opencompass_longctx.longbio.pools manifest` after an intended edit.')
    return sha256_file(os.path.join(POOLS_DIR, MANIFEST))


@functools.lru_cache(maxsize=1)
def load_pools() -> Pools:
    sha = check_manifest()
    values = {k: tuple(v.strip() for v in _read_lines(f)) for k, f in VALUE_FILES.items()}
    standard = dict(_tsv(STANDARD_FILE, 2))
    paraphrase = {a: tuple(_tsv(f, 2)) for a, f in PARAPHRASE_FILES.items()}
    return Pools(values=values, standard=standard, paraphrase=paraphrase, sha256=sha)


def pools_sha256() -> str:
    return load_pools().sha256


# ---------------------------------------------------------------------------------------------- validation
def substring_pairs(values, limit: int = 10) -> List[Tuple[str, str]]:
    """Pairs (a, b) with a a case-insensitive substring of b (a != b), at most ``limit``."""
    keys = {}
    for v in values:
        keys.setdefault(v.casefold(), v)
    found = []
    for v in values:
        k = v.casefold()
        n = len(k)
        for i in range(n):
            for j in range(i + 1, n + 1):
                if (i, j) != (0, n) and k[i:j] in keys:
                    found.append((keys[k[i:j]], v))
                    if len(found) >= limit:
                        return found
    return found


def validate(pools: Pools = None) -> List[str]:
    """Every rule the pools must keep; returns a list of problems (empty when valid)."""
    p = pools or Pools(values={k: tuple(_read_lines(f)) for k, f in VALUE_FILES.items()},
                       standard=dict(_tsv(STANDARD_FILE, 2)),
                       paraphrase={a: tuple(_tsv(f, 2)) for a, f in PARAPHRASE_FILES.items()}, sha256='')
    problems = []
    for name, vals in p.values.items():
        if len(set(v.casefold() for v in vals)) != len(vals):
            problems.append(f'{name}: duplicate values')
        for v in vals:
            if v != v.strip() or not v[:1].isalnum() or not v[-1:].isalnum() or '.' in v or '\t' in v:
                problems.append(f'{name}: bad value {v!r} (must start and end with a letter or digit, no period)')
        pairs = substring_pairs(vals)
        if pairs:
            problems.append(f'{name}: values that are substrings of others: {pairs}')
    names = [*p.values['given'], *p.values['middle'], *p.values['surname']]
    pairs = substring_pairs(names)
    if pairs:
        problems.append(f'name parts that are substrings of others: {pairs}')
    if set(p.standard) != {*ATTRIBUTES, 'age'}:
        problems.append(f'standard templates for {sorted(p.standard)}, expected {sorted({*ATTRIBUTES, "age"})}')
    for attr, t in p.standard.items():
        if t.count(SUBJECT) != 1 or not t.endswith(f' {VALUE}.'):
            problems.append(f'standard template for {attr} must name the person once and end with " <attr>.": {t!r}')
    for attr, rows in p.paraphrase.items():
        if not 18 <= len(rows) <= 40:
            problems.append(f'{attr}: {len(rows)} paraphrase templates (want 18-40)')
        if len(set(rows)) != len(rows):
            problems.append(f'{attr}: duplicate paraphrase templates')
        for third, first in rows:
            if third.count(VALUE) != 1 or first.count(VALUE) != 1:
                problems.append(f'{attr}: template must hold <attr> once: {third!r} / {first!r}')
            if third.count(SUBJECT) + third.count(OBJECT) != 1:
                problems.append(f'{attr}: third-person template must name the person once: {third!r}')
            if '<This person' in first:
                problems.append(f'{attr}: first-person form still has a placeholder: {first!r}')
            for t in (third, first):
                if not t.endswith('.') or t.count('.') != 1 or not (t[0].isupper() or t.startswith('<')):
                    problems.append(f'{attr}: template must be one sentence ending with a period: {t!r}')
    return problems


def write_manifest() -> str:
    files = {rel: sha256_file(os.path.join(POOLS_DIR, rel)) for rel in all_files()}
    path = os.path.join(POOLS_DIR, MANIFEST)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump({'files': files}, f, indent=1, sort_keys=True)
        f.write('\n')
    return path


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else 'check'
    problems = validate()
    for pr in problems:
        print('problem:', pr)
    if problems:
        return 1
    if cmd == 'manifest':
        print('wrote', write_manifest())
    check_manifest()
    p = load_pools()
    for k, v in p.values.items():
        print(f'{k:<11} {len(v):>6} values')
    for a, rows in p.paraphrase.items():
        print(f'{a:<11} {len(rows):>6} paraphrase templates')
    print('pools sha256', p.sha256)
    return 0


if __name__ == '__main__':
    sys.exit(main())
