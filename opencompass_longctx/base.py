"""What every benchmark of this package is built on: one dataset class and one evaluator.

A benchmark's dataset class names its spec (:mod:`opencompass_longctx.spec`, which carries its options dataclass,
:mod:`opencompass_longctx.options`) and the function that builds a split from checked options; the shared
:meth:`LongCtxDataset.load` parses a config's keys (the same parse the plan's checks run), builds and records
the build for the planner. A benchmark's evaluator scores only the samples that were answered; the shared
:meth:`LongCtxEvaluator.score` checks the predictions, leaves out the samples marked by
:mod:`opencompass_longctx.overlength` (never sent to the model), puts their details back, counts them and reports
``accuracy`` only when something was answered. A fourth benchmark is one folder with the same files
(``spec.py``, ``dataset.py``, ``evaluator.py``, ``scoring.py``) and its configs (docs/development.md, "Add a benchmark").
"""
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Dict, List, Optional, Sequence

from opencompass_longctx import __version__, overlength
from opencompass_longctx.cache import record_build
from opencompass_longctx.errors import ScoringError
try:
    from opencompass.datasets.base import BaseDataset
    from opencompass.openicl.icl_evaluator import BaseEvaluator
except ImportError:  # stand-alone use of the loaders and the scoring without OpenCompass
    BaseDataset = BaseEvaluator = object


class LongCtxDataset(BaseDataset):
    """``type=<Benchmark>Dataset`` in configs; every extra config key is a field of its spec's ``options``."""
    benchmark: ClassVar = None     # the BenchmarkSpec the planner, the run checks and the summarizer read
    build: ClassVar[Callable] = None   # staticmethod: checked options -> datasets.Dataset (through the cache)

    @classmethod
    def load(cls, **kwargs):
        spec = cls.benchmark
        return record_build(spec.dataset_type, kwargs, cls.build(spec.options.parse(kwargs)), spec.tokens_column,
                            spec.prompt_columns)


@dataclass
class Samples:
    """What one :meth:`LongCtxEvaluator.score` call scores, read once: the references, the test set, the prompts
    OpenCompass sent (None from a direct call) and the columns the benchmark read (:meth:`LongCtxEvaluator.read`)."""
    references: list
    test_set: object
    origin_prompt: Optional[list] = None
    columns: Dict[str, list] = field(default_factory=dict)


class LongCtxEvaluator(BaseEvaluator):
    """The evaluator skeleton. A benchmark implements :meth:`score_answered` (and may extend :meth:`read`,
    :meth:`marker_detail`, :meth:`left_out`, :meth:`nothing_answered`, :meth:`marker_counts`, :meth:`finish`)."""
    error: ClassVar[type] = ScoringError   # raised for predictions that cannot be scored (not a list, lengths)

    def score(self, predictions, references, test_set, origin_prompt=None):
        predictions = overlength.check_predictions(predictions, len(references), len(test_set), self.error)
        samples = Samples(list(references), test_set, origin_prompt)
        self.read(samples)
        out_rows = self.left_out(predictions, samples)
        answered = [i for i in range(len(predictions)) if i not in out_rows]
        result = (self.score_answered(answered, predictions, samples) if answered else self.nothing_answered(samples))
        scored = iter(result.pop('details', []))
        details = [self.marker_detail(i, samples) if i in out_rows else next(scored) for i in range(len(predictions))]
        accuracy = result.pop('accuracy', None)
        counts = {'n': len(predictions), **{k: v for k, v in result.pop('counts', {}).items() if k != 'n'},
                  **self.marker_counts(predictions, samples)}
        # Only 'accuracy' is numeric at the top level, so OpenCompass's summary shows one row per dataset; a
        # dataset with nothing answered has none (the tier table shows N/A).
        out = dict(result, package_version=__version__, counts=counts, details=details)
        if answered:
            out['accuracy'] = accuracy
        self.finish(out, samples)
        return out

    def read(self, samples: Samples) -> None:
        """Read the test set's columns the scoring needs into ``samples.columns`` (once per call)."""

    def score_answered(self, rows: List[int], predictions: Sequence, samples: Samples) -> Dict:
        """Score the answered ``rows``: ``{'accuracy': ..., 'details': [one per row], 'counts': {...}, ...}``;
        other keys go to the results as they are (non-numeric, so the summary keeps one row per dataset)."""
        raise NotImplementedError

    def left_out(self, predictions: Sequence, samples: Samples) -> set:
        """The rows left out of the score: those whose prediction is a marker."""
        return {i for i, p in enumerate(predictions) if overlength.is_over_length(p)}

    def marker_detail(self, i: int, samples: Samples) -> Dict:
        """The detail of a row left out of the score."""
        return {'pred': None, 'answer': samples.references[i], 'correct': False, 'over_length': True}

    def nothing_answered(self, samples: Samples) -> Dict:
        """The result's fields when every row was left out."""
        return {'counts': {'correct': 0}}

    def marker_counts(self, predictions: Sequence, samples: Samples) -> Dict:
        """'over_length', 'engine_too_small' and 'engine_error' (:func:`overlength.marker_counts`); any other
        count given here replaces the one of the same name (``n`` is the number of predictions otherwise)."""
        return overlength.marker_counts(predictions)

    def finish(self, out: Dict, samples: Samples) -> None:
        """A last look at the whole result (every detail in place)."""


def column(test_set, name: str, default=None) -> Optional[list]:
    """A test set's column as a list (``default`` when it has none)."""
    names = getattr(test_set, 'column_names', None) or list(test_set)
    return list(test_set[name]) if name in names else default
