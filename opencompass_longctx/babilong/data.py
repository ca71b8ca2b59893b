"""Finding and reading BABILong files (no OpenCompass import).

Layouts read (all tiers 0k..1M and 10M, tier names case-insensitive):

* RMT-team/babilong (100 samples per task and tier, JSON): ``data/qaN/<LEN>.json`` (``1M``/``10M`` upper-case)
* RMT-team/babilong-1k-samples (about 1000 samples, parquet): ``<len>/qaN-*.parquet``
* OpenCompass's own data cache layout: ``$COMPASS_DATA_CACHE/data/babilong/data/qaN/<len>.json``

JSON files are read as a stream (an array of records, or JSON lines), one record at a time, so the
hundreds-of-MB files at 512k and above never sit in memory whole. A file that is empty, holds no records, is
not UTF-8, is cut short or has anything but white space after the closing ``]`` of its array is refused with
an error naming it.

Functions here take a :class:`~opencompass_longctx.tiers.Tier`, never a tier string: the loader parses the
tier once (:meth:`~opencompass_longctx.babilong.spec.BabilongOptions.parse`) and passes it inward.
:func:`locate` says where a split's records come from; :func:`file_records` reads them.
"""
import codecs
import json
import os
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from opencompass_longctx.data_files import DataNotFoundError, Source, find_file
from opencompass_longctx.tiers import Tier
from opencompass_longctx.errors import LongCtxError
MANIFEST_NAME = 'longctx_generation_manifest.json'   # written by the generator beside the files it makes
PUBLISHED_TIERS = ('0k', '1k', '2k', '4k', '8k', '16k', '32k', '64k', '128k', '256k', '512k', '1m', '10m')
SAMPLE_SOURCES = ('100', '1000', 'official', 'generated')

SOURCE_100 = Source(
    name='babilong', hub_repo='RMT-team/babilong',
    legacy_dirs=['data/babilong/data', 'data/babilong'],
    hint_template=('Get it with:\n  huggingface-cli download RMT-team/babilong --repo-type dataset '
                   '--local-dir {dir}\n(or point path= in the dataset config at a '
                'directory holding data/qaN/<LEN>.json).'))
SOURCE_1000 = Source(
    name='babilong-1k-samples', hub_repo='RMT-team/babilong-1k-samples',
    hint_template=('Get it with:\n  huggingface-cli download RMT-team/babilong-1k-samples --repo-type dataset '
                   '--local-dir {dir}\n(or point path= at a directory holding '
                '<len>/qaN-*.parquet).'))


class BabilongDataError(LongCtxError, ValueError):
    pass


def task_number(task: str) -> int:
    if not (isinstance(task, str) and task.startswith('qa') and task[2:].isdigit() and 1 <= int(task[2:]) <= 20):
        raise BabilongDataError(f'unknown BABILong task {task!r}; choose one of qa1..qa20')
    return int(task[2:])


def source_for(sample_source: str, tier: Tier) -> Source:
    """'100' -> RMT-team/babilong; '1000' -> babilong-1k-samples; 'official' -> the leaderboard's choice
    (1000 samples up to 32k, 100 from 64k on)."""
    if sample_source not in SAMPLE_SOURCES:
        raise BabilongDataError(f'unknown sample_source {sample_source!r}; choose one of {SAMPLE_SOURCES}')
    if sample_source == 'official':
        return SOURCE_1000 if tier.tokens(1000) <= 32000 else SOURCE_100
    return SOURCE_1000 if sample_source == '1000' else SOURCE_100


def check_available(task: str, tier: Tier, source: Source) -> None:
    """Clear error for a task/tier pair the published source does not have."""
    n = task_number(task)
    t = tier.name
    if source is SOURCE_1000:
        tiers = PUBLISHED_TIERS[:9]  # 0k..128k
        max_task = 20 if t == '0k' else 5
    else:
        tiers = PUBLISHED_TIERS
        max_task = 20 if t == '0k' else 5 if t == '10m' else 10
    if t not in tiers:
        raise BabilongDataError(
            f'BABILong ({source.hub_repo}) has no {t} tier; published tiers: {", ".join(tiers)}. '
            'A new tier needs generated data: give babi_dir= (the bAbI v1.2 en-10k directory with '
            'qaN_*_test.txt) and background_dir= (PG19 test books, *.txt) in the dataset config, or set '
            '$BABI_DIR and $PG19_DIR; see docs/benchmarks.md, "Add a tier: the details".')
    if n > max_task:
        raise BabilongDataError(
            f'BABILong ({source.hub_repo}) has no {task} at {t}: it holds qa1-qa{max_task} at that tier.')


def file_name(tier: Tier) -> str:
    """Published file names: lower-case k, upper-case M (``1M.json``)."""
    name = tier.name
    return (name[:-1] + 'M' if name.endswith('m') else name) + '.json'


def file_candidates(task: str, tier: Tier, source: Source) -> List[str]:
    t = tier.name
    names = sorted({t, t.upper(), t[:-1] + t[-1].upper()})
    if source is SOURCE_1000:
        return [p for n in names for p in (f'{n}/{task}-*.parquet', f'data/{n}/{task}-*.parquet')]
    return [p for n in names for p in (f'data/{task}/{n}.json', f'{task}/{n}.json')]


def _stream_json_array(f, path: str, chunk: int = 1 << 24) -> Iterator[Dict]:
    dec = json.JSONDecoder()
    buf, pos, eof, consumed = '', 0, False, 0

    def more():
        nonlocal buf, pos, eof, consumed
        data = f.read(chunk)
        if not data:
            eof = True
        consumed += pos
        buf, pos = buf[pos:] + data, 0

    more()
    while pos < len(buf) and buf[pos].isspace():
        pos += 1
    pos += 1  # '['
    while True:
        while True:
            while pos < len(buf) and (buf[pos].isspace() or buf[pos] == ','):
                pos += 1
            if pos < len(buf) or eof:
                break
            more()
        if pos >= len(buf):
            raise BabilongDataError(f'{path}: corrupt JSON (file ends inside the array)')
        if buf[pos] == ']':
            pos += 1
            while True:   # only white space may follow the array
                rest = buf[pos:].lstrip()
                if rest:
                    raise BabilongDataError(
                        f'{path}: corrupt JSON: unexpected data after the closing "]" of the array (near '
                        f'character {consumed + len(buf) - len(rest)}: {rest[:20]!r}); the file must hold one '
                        'JSON array (or JSON lines)')
                if eof:
                    return
                pos = len(buf)
                more()
        while True:
            try:
                obj, end = dec.raw_decode(buf, pos)
                break
            except json.JSONDecodeError as e:
                if eof:
                    raise BabilongDataError(f'{path}: corrupt JSON near byte {consumed + e.pos}: {e.msg}') from None
                more()
        if not isinstance(obj, dict):
            raise BabilongDataError(f'{path}: corrupt JSON: expected objects in the array, got {type(obj).__name__}')
        yield obj
        pos = end


def _check_array_end(path: str) -> None:
    """A JSON array file must end with ']' (and white space): checked before reading, so that a file cut
    short or with data after its array is refused even when only its first records are read."""
    with open(path, 'rb') as f:
        f.seek(max(0, os.path.getsize(path) - 4096))
        tail = f.read().rstrip()
    if not tail.endswith(b']'):
        raise BabilongDataError(f'{path}: corrupt JSON: the file does not end with the closing "]" of its array '
                                f'(it ends with {tail[-20:]!r}): cut short, or data after the array; download '
                                'it again')


def _bad_utf8_offset(path: str) -> int:
    """Byte offset of the first invalid UTF-8 sequence of a file (read in blocks)."""
    dec = codecs.getincrementaldecoder('utf-8')()
    done = 0
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            pending = len(dec.getstate()[0])
            try:
                dec.decode(block)
            except UnicodeDecodeError as e:
                return done - pending + e.start
            done += len(block)
    return done


def iter_records(path: str) -> Iterator[Dict]:
    """Records of a BABILong file (JSON array, JSON lines or parquet), one at a time.

    An empty file, or one without records, is an error naming the file."""
    n = 0
    try:
        for rec in _records(path):
            n += 1
            yield rec
    except UnicodeDecodeError as e:
        raise BabilongDataError(
            f'{path}: not UTF-8 text ({e.reason} at byte {_bad_utf8_offset(path)}); BABILong files are UTF-8 '
            'JSON: download the file again') from None
    if n == 0:
        what = 'is empty' if os.path.getsize(path) == 0 else 'holds no records'
        raise BabilongDataError(f'{path}: the file {what}; download it again (or remove it)')


def _records(path: str) -> Iterator[Dict]:
    if path.endswith('.parquet'):
        import pyarrow.parquet as pq
        try:
            pf = pq.ParquetFile(path)
            for batch in pf.iter_batches(batch_size=32):
                yield from batch.to_pylist()
        except Exception as e:  # noqa: BLE001
            if isinstance(e, BabilongDataError):
                raise
            raise BabilongDataError(f'{path}: corrupt parquet file ({type(e).__name__}: {e})') from None
        return
    with open(path, encoding='utf-8') as f:
        head = f.read(1)
        while head and head.isspace():
            head = f.read(1)
        f.seek(0)
        if head == '[':
            _check_array_end(path)
            yield from _stream_json_array(f, path)
            return
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise BabilongDataError(f'{path}: corrupt JSON on line {lineno}: {e.msg}') from None
                if not isinstance(obj, dict):
                    raise BabilongDataError(f'{path}: corrupt JSON on line {lineno}: expected an object')
                yield obj


def check_record(rec: Dict, path: str, i: int) -> Dict[str, str]:
    missing = [k for k in ('input', 'question', 'target') if k not in rec]
    if missing:
        raise BabilongDataError(f'{path}: record {i} lacks {missing} (expected input, question, target)')
    out = {}
    for k in ('input', 'question', 'target'):
        v = rec[k]
        if isinstance(v, list) and len(v) == 1:  # list-wrapped rows (older dumps): unwrap, never repr
            v = v[0]
        if not isinstance(v, str):
            raise BabilongDataError(f'{path}: record {i} field {k!r} is {type(v).__name__}, not a string')
        out[k] = v
    return out


def load_indices(sample_indices, task: str) -> Optional[List[int]]:
    """A list of row indices, or a JSON file holding a list or ``{task: [indices]}`` (e.g. the authors'
    ``test_100_idxs.json``)."""
    if sample_indices is None:
        return None
    if isinstance(sample_indices, str):
        with open(sample_indices, encoding='utf-8') as f:
            sample_indices = json.load(f)
    if isinstance(sample_indices, dict):
        if task not in sample_indices:
            raise BabilongDataError(f'sample_indices has no entry for {task}')
        sample_indices = sample_indices[task]
    return [int(i) for i in sample_indices]


@dataclass(frozen=True)
class SplitInput:
    """Where one split's records come from: a file (``path``, its ``label`` in the rows, the hub repository it
    belongs to, the row ``indices`` asked for) or, with ``path`` None, the generator."""
    path: Optional[str] = None
    label: str = 'generated'
    hub_repo: str = ''
    indices: Optional[List[int]] = None

    @property
    def generated(self) -> bool:
        return self.path is None


def locate(o) -> SplitInput:
    """The input of a split's checked options (:class:`~.spec.BabilongOptions`): the user's file of a published
    tier (or a generated file of another tier), else the generator when it is asked for
    (``sample_source='generated'``) or when a tier BABILong does not publish has no file and the bAbI and
    background directories are given. Raises what the user must provide otherwise."""
    task, tier = o.task, o.tier
    if o.sample_source == 'generated':
        return SplitInput()
    source = source_for(o.sample_source, tier)
    published = tier.name in PUBLISHED_TIERS
    if published:
        check_available(task, tier, source)
    candidates = file_candidates(task, tier, source)
    try:
        path = find_file(source, candidates, path=o.path,
                         download=o.download if published else False, revision=o.revision,
                         what=f'{task} at {tier.name}')
    except DataNotFoundError:
        if published:
            raise
        if o.babi_dir and o.background_dir:  # a tier BABILong does not publish: make it
            return SplitInput()
        check_available(task, tier, source)  # raises: says what to provide
        raise
    indices = load_indices(o.sample_indices, task)
    return SplitInput(path, source.hub_repo if published else _unpublished_label(path), source.hub_repo, indices)


def _unpublished_label(path: str) -> str:
    """A file for a tier BABILong does not publish: 'generated' when our generator's manifest is beside it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    return 'generated' if os.path.isfile(os.path.join(root, MANIFEST_NAME)) else 'local'


def file_records(path: str, indices: Optional[List[int]], num_samples: Optional[int]) -> Iterator[Tuple[int, Dict]]:
    """``(index, record)`` of a file's records: those of ``indices`` (all when None), at most ``num_samples``."""
    wanted = None if indices is None else set(indices)
    taken = 0
    for i, rec in enumerate(iter_records(path)):
        if num_samples is not None and taken >= num_samples:
            break
        if wanted is not None and i not in wanted:
            continue
        taken += 1
        yield i, check_record(rec, path, i)
    if wanted is not None and taken < len(wanted) and (num_samples is None or taken < num_samples):
        raise BabilongDataError(f'{path}: sample_indices ask for rows the file does not have '
                                f'({taken} of {len(wanted)} found)')
