"""Small helpers shared by every part: hashing, atomic writes, JSON encoding, file modes."""
import hashlib
import os
import tempfile


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 22), b''):
            h.update(block)
    return h.hexdigest()


def current_umask() -> int:
    """The process umask (read without changing it where the system says it: Linux /proc)."""
    try:
        with open('/proc/self/status', encoding='ascii') as f:
            for line in f:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o077)  # elsewhere: set and restore (a racing thread would get the stricter mask)
    os.umask(old)
    return old


def make_like_normal_file(path: str) -> None:
    """Give a file (or directory) made by mkstemp/mkdtemp (0600/0700) the mode a normal open()/mkdir() would
    give it under the umask, so that other users can read what this one writes (shared caches)."""
    mode = 0o777 if os.path.isdir(path) else 0o666
    os.chmod(path, mode & ~current_umask())


def atomic_write_text(path: str, text: str) -> None:
    """Write a text file so that readers see the old content or the new one, never a partial file."""
    d = os.path.dirname(path) or '.'
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.tmp-', dir=d)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
        make_like_normal_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def json_default(obj):
    if isinstance(obj, (set, tuple)):
        return sorted(obj) if isinstance(obj, set) else list(obj)
    return str(obj)


def type_name(obj) -> str:
    """'BabilongDataset' from a class, a LazyObject or the dotted string a dumped config holds."""
    t = obj.get('type', '') if isinstance(obj, dict) else obj
    name = getattr(t, '__name__', None) or str(t)
    return name.rsplit('.', 1)[-1].strip("'>")


def plural(n: int, noun: str) -> str:
    """'1 cluster', '2 clusters', '0 clusters': a count and its noun, in the right number."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def counted(names, noun: str, shown: int = 3) -> str:
    """'1 dataset (a)', '14 datasets (a, b, c, ...)': a count in the right number and the first names."""
    names = list(names)
    return f"{plural(len(names), noun)} ({', '.join(names[:shown])}{', ...' if len(names) > shown else ''})"
