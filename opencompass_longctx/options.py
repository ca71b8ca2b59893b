"""A dataset's options: what its load accepts, parsed once at the boundary and passed inward typed.

Each benchmark has one frozen dataclass of options (``BabilongOptions``, ``LongBioOptions``, ``NoLiMaOptions``, in its
``spec.py``), a subclass of :class:`Options`, carried by its spec (``BenchmarkSpec.options``) and its dataset class.
The dataclass is the one place of every default. What every benchmark's load resolves alike is declared here once:

* ``tier``: parsed in the benchmark's unit (``tier_unit``) and refused unless written as its length's one name
  (:func:`~opencompass_longctx.tiers.dataset_tier`); a :class:`~opencompass_longctx.tiers.Tier` from there on;
* ``num_proc``: the processes of a build (:attr:`Options.processes`: the cores available when None);
* a field's ``env``: the environment variable that stands in for a value the config leaves empty.

Two readings of a config's load keys (``kwargs``):

* :meth:`Options.parse`, the load's: an unknown key is refused with the closest known one, each given field's check
  runs (:func:`integer`, :func:`flag`, :func:`one_of`, :func:`text`, :func:`by`), then the benchmark's own
  cross-field checks (:meth:`Options.finish`). One refusal is raised as it is; several are raised together as one
  error of the benchmark's type. The run checks call the same parse (:func:`parse_config`), so
  ``opencompass --dry-run`` lists what the load would refuse, with the load's message, before any task starts.
* :meth:`Options.read`, the planner's: the same fields and defaults, but a value its check refuses is read as the
  field's default (the run checks report it) and no cross-field check runs, so an estimate of a bad config is
  still an estimate.

A field may say which of the spec's answers it decides (``decides=(TEXT, DATA)``): :meth:`Options.key` is the
part of the options that an answer depends on, so the planner reads a sample text or checks a dataset's files
once for all the configs that share it.
"""
import difflib
import inspect
import os
from dataclasses import MISSING, dataclass, field, fields
from typing import Callable, ClassVar, Iterable, Mapping, Optional, Sequence

from opencompass_longctx.parallel import check_num_proc
from opencompass_longctx.tiers import Tier, canonical_tier, dataset_tier

Check = Callable[[str, object, type], object]
TEXT = 'text'    # in ``decides``: the field decides the spec's sample text (BenchmarkSpec.sample_text)
DATA = 'data'    # in ``decides``: the field decides the answer of the spec's data checks (BenchmarkSpec.problems)


def option(default=MISSING, check: Optional[Check] = None, decides: Sequence[str] = (), env: Optional[str] = None):
    """A field of an options dataclass, with the check its given value must pass (``check(name, value, error)``
    returns the value to keep or raises ``error``), the spec's answers it decides (:data:`TEXT`, :data:`DATA`) and
    the environment variable read when the config leaves it empty (``env``)."""
    meta = {'check': check, 'decides': tuple(decides), 'env': env}
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


@dataclass(frozen=True)
class Options:
    """Base of a benchmark's options dataclass: ``error`` is the benchmark's error type, ``owner`` the dataset
    class named in messages, ``tier_unit`` the tokens of its 'k'. Its fields are those every load takes."""
    error: ClassVar[type] = ValueError
    owner: ClassVar[str] = 'the dataset'
    tier_unit: ClassVar[int] = 1000
    tier_decides: ClassVar[tuple] = ()      # the spec's answers the tier decides (:data:`TEXT`, :data:`DATA`)
    tier: Tier = option()                   # parsed by the base (:meth:`_checked`), in ``tier_unit``
    num_proc: Optional[int] = option(None, lambda name, v, error: check_num_proc(v))

    @classmethod
    def parse(cls, kwargs: Mapping, extra_keys: Sequence[str] = ()):
        """The options of a config's load keys (``kwargs``), as the load takes them; ``extra_keys``: keys a
        subclass's own load takes."""
        own = cls._own_fields()
        problems = [cls.error(m) for m in unknown_keys(kwargs, [f.name for f in own] + list(extra_keys), cls.owner)]
        values = {}
        for f in own:
            try:
                value = cls._given(f, kwargs)
            except KeyError:
                if f.default is MISSING and f.default_factory is MISSING:
                    problems.append(cls.error(f'{cls.owner} needs {f.name}= (the dataset config has none)'))
                continue
            try:
                values[f.name] = cls._checked(f, value, strict=True)
            except ValueError as e:
                problems.append(e)
        if len(problems) == 1:
            raise problems[0]
        if problems:
            raise cls.error(f'{len(problems)} options refused: ' + '; '.join(str(e) for e in problems))
        return cls(**values).finish()

    @classmethod
    def read(cls, kwargs: Mapping):
        """The options of a config's load keys for an estimate: unknown keys and refused values are left to the
        run checks (a refused value reads as its default), the tier is read as its length's one name whatever way
        it is written, and no cross-field check runs. A missing or unreadable tier raises."""
        values = {}
        for f in cls._own_fields():
            try:
                value = cls._given(f, kwargs)
            except KeyError:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise cls.error(f'{cls.owner} needs {f.name}= (the dataset config has none)') from None
                continue
            try:
                values[f.name] = cls._checked(f, value, strict=False)
            except Exception:  # noqa: BLE001 - a refused value: the default stands in (the run checks report it)
                if f.default is MISSING and f.default_factory is MISSING:
                    raise
        return cls(**values)

    @classmethod
    def _own_fields(cls):
        return [f for f in fields(cls) if f.init]

    @classmethod
    def _given(cls, f, kwargs: Mapping):
        """The value the config gives a field, its ``env`` standing in for an empty one (KeyError: none)."""
        env = f.metadata.get('env')
        if env and kwargs.get(f.name) in (None, '') and os.environ.get(env):
            return os.environ[env]
        return None if env and kwargs.get(f.name) == '' else kwargs[f.name]

    @classmethod
    def _checked(cls, f, value, strict: bool):
        if f.name == 'tier':
            return (dataset_tier if strict else canonical_tier)(value, cls.tier_unit)
        check = f.metadata.get('check')
        return check(f.name, value, cls.error) if check else value

    def finish(self):
        """The benchmark's checks across fields and its derived values (a new instance or ``self``)."""
        return self

    @property
    def processes(self) -> int:
        """The processes of a build: ``num_proc``, or the cores available to this process."""
        return check_num_proc(self.num_proc)

    def key(self, part: str) -> tuple:
        """The values of the fields that decide ``part`` (:data:`TEXT`, :data:`DATA`), as text: what a memo of that
        answer is keyed by."""
        tier = (str(self.tier),) if part in self.tier_decides else ()
        return tier + tuple(str(getattr(self, f.name)) for f in fields(self) if part in f.metadata.get('decides', ()))


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
    class without a benchmark's options (``cls.benchmark.options``)."""
    opts = getattr(getattr(cls, 'benchmark', None), 'options', None)
    if opts is None:
        return None
    extra = load_params(cls)
    return opts.parse({k: v for k, v in kwargs.items() if k not in extra}, extra)
