"""A dataset's options: what its load accepts, checked by one parse that the load and the run checks share.

Each benchmark has one frozen dataclass of options (``BabilongOptions``, ``LongBioOptions``, ``NoLiMaOptions``),
carried by its dataset class as ``options``. :meth:`Options.parse` checks a config's load keys against the
dataclass's fields (an unknown key is refused with the closest known one), runs each given field's check
(:func:`integer`, :func:`flag`, :func:`one_of`, :func:`text`, :func:`by`), then the benchmark's own
cross-field checks (:meth:`Options.finish`). One refusal is raised as it is; several are raised together as
one error of the benchmark's type. So ``opencompass --dry-run`` lists what the load would refuse, with the
load's message, before any task starts (:func:`parse_config`).
"""
import difflib
import inspect
from dataclasses import MISSING, field, fields
from typing import Callable, ClassVar, Iterable, Mapping, Optional, Sequence

Check = Callable[[str, object, type], object]


def option(default=MISSING, check: Optional[Check] = None):
    """A field of an options dataclass, with the check its given value must pass (``check(name, value, error)``
    returns the value to keep or raises ``error``)."""
    meta = {'check': check}
    return field(metadata=meta) if default is MISSING else field(default=default, metadata=meta)


def integer(low: Optional[int] = None, optional: bool = False) -> Check:
    """An int (not a bool, float or string), at least ``low``; None too when ``optional``."""
    words = {None: 'an integer', 0: 'a non-negative integer', 1: 'a positive integer'}.get(
        low, f'an integer >= {low}')

    def check(name, value, error):
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):
            raise error(f"{name} must be {words}{' or None' if optional else ''}, got {value!r}")
        return value
    return check


def flag(optional: bool = False) -> Check:
    """True or False (None too when ``optional``): not 0/1 or 'yes'."""
    def check(name, value, error):
        if value is None and optional:
            return None
        if not isinstance(value, bool):
            raise error(f"{name} must be True or False{' or None' if optional else ''}, got {value!r}")
        return value
    return check


def one_of(choices: Sequence, convert: Optional[Callable] = None) -> Check:
    """One of ``choices`` (after ``convert`` for a value that is not a bool, e.g. ``str`` for 100 -> '100')."""
    def check(name, value, error):
        got = convert(value) if convert and not isinstance(value, bool) else value
        if got not in choices:
            raise error(f"unknown {name} {value!r}; choose one of {', '.join(repr(c) for c in choices)}")
        return got
    return check


def text(optional: bool = True) -> Check:
    """A string (None too when ``optional``)."""
    def check(name, value, error):
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise error(f"{name} must be a string{' or None' if optional else ''}, got {value!r}")
        return value
    return check


def by(fn: Callable) -> Check:
    """The check a benchmark already has for one value (``fn(value)`` raises with its own message)."""
    def check(name, value, error):
        fn(value)
        return value
    return check


def value_or(check: Check, value, default):
    """``value`` when ``check`` accepts it, else ``default`` (for estimates of a config whose problem the run checks
    report anyway)."""
    try:
        return check('value', value, ValueError)
    except Exception:  # noqa: BLE001
        return default


def unknown_keys(given: Iterable[str], known: Sequence[str], owner: str) -> list:
    """A message per key of ``given`` that is not in ``known``, with the closest known key."""
    out = []
    for key in given:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
        hint = f'did you mean {close[0]}?' if close else f"its options are {', '.join(sorted(known))}"
        out.append(f'{owner} has no option {key!r}: {hint}')
    return out


class Options:
    """Base of a benchmark's options dataclass: ``error`` is the benchmark's error type, ``owner`` the dataset
    class named in messages."""
    error: ClassVar[type] = ValueError
    owner: ClassVar[str] = 'the dataset'

    @classmethod
    def parse(cls, kwargs: Mapping, extra_keys: Sequence[str] = ()):
        """The options of a config's load keys (``kwargs``); ``extra_keys``: keys a subclass's own load takes."""
        own = [f for f in fields(cls) if f.init]
        problems = [cls.error(m) for m in unknown_keys(kwargs, [f.name for f in own] + list(extra_keys), cls.owner)]
        values = {}
        for f in own:
            if f.name not in kwargs:
                if f.default is MISSING and f.default_factory is MISSING:
                    problems.append(cls.error(f'{cls.owner} needs {f.name}= (the dataset config has none)'))
                continue
            check = f.metadata.get('check')
            try:
                values[f.name] = check(f.name, kwargs[f.name], cls.error) if check else kwargs[f.name]
            except ValueError as e:
                problems.append(e)
        if len(problems) == 1:
            raise problems[0]
        if problems:
            raise cls.error(f'{len(problems)} options refused: ' + '; '.join(str(e) for e in problems))
        return cls(**values).finish()

    def finish(self):
        """The benchmark's checks across fields and its derived values (a new instance or ``self``)."""
        return self


def load_params(cls) -> tuple:
    """The named parameters of a dataset class's own ``load`` (a subclass such as the demo's may take more keys
    than its options)."""
    try:
        params = inspect.signature(cls.load).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return ()
    return tuple(p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))


def parse_config(cls, kwargs: Mapping):
    """A dataset config's load keys parsed as its class's load parses them (raises the load's error); None for a
    class without ``options``."""
    opts = getattr(cls, 'options', None)
    if opts is None:
        return None
    extra = load_params(cls)
    return opts.parse({k: v for k, v in kwargs.items() if k not in extra}, extra)
