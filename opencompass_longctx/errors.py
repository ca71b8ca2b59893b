"""The package's one error base class.

Every error this package raises is a :class:`LongCtxError` and also the built-in kind it has always been (a
``ValueError`` for a bad option or file, a ``FileNotFoundError`` for missing data, a ``RuntimeError`` for a run
that cannot go on), so ``except LongCtxError`` catches what the harness refuses and ``except ValueError`` keeps
working. :class:`ScoringError` is the one error of the benchmarks' scoring and evaluators.
"""


class LongCtxError(Exception):
    """An error raised by opencompass-longctx (its message says what to change)."""


class ScoringError(LongCtxError, ValueError):
    """Predictions, references or a scoring option that a benchmark's scoring refuses."""
