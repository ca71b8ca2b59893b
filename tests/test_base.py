"""The one contract of a benchmark (opencompass_longctx.base, .errors): each benchmark's dataset class and evaluator
are built on LongCtxDataset and LongCtxEvaluator, and every error the package defines is a LongCtxError that keeps
its built-in kind. A toy evaluator shows what the base owns: the prediction checks, the markers left out and put
back, their counts, and no accuracy when nothing was answered."""
import importlib
import inspect
import pkgutil

import pytest

import opencompass_longctx
from opencompass_longctx import overlength
from opencompass_longctx.base import LongCtxDataset, LongCtxEvaluator
from opencompass_longctx.errors import LongCtxError, ScoringError
from opencompass_longctx.spec import all_specs


def _package_modules():
    for m in pkgutil.walk_packages(opencompass_longctx.__path__, 'opencompass_longctx.'):
        if '.configs.' not in m.name:
            yield importlib.import_module(m.name)


def test_every_error_of_the_package_is_a_longctx_error_of_its_builtin_kind():
    errors = [v for mod in _package_modules() for v in vars(mod).values()
              if inspect.isclass(v) and issubclass(v, BaseException) and v.__module__ == mod.__name__]
    assert len(errors) >= 30
    assert [e.__qualname__ for e in errors if not issubclass(e, LongCtxError)] == []
    from opencompass_longctx.babilong import scoring as bs
    from opencompass_longctx.longbio import scoring as ls
    from opencompass_longctx.data_files import DataNotFoundError
    assert bs.ScoringError is ls.ScoringError is ScoringError and issubclass(ScoringError, ValueError)
    assert issubclass(DataNotFoundError, FileNotFoundError)      # `except FileNotFoundError` keeps working


def test_each_benchmark_is_built_on_the_base_classes():
    from opencompass_longctx.babilong.dataset import BabilongDataset
    from opencompass_longctx.babilong.evaluator import BabilongEvaluator
    from opencompass_longctx.longbio.dataset import LongBioDataset
    from opencompass_longctx.longbio.evaluator import LongBioEvaluator
    from opencompass_longctx.nolima.dataset import NoLiMaDataset
    from opencompass_longctx.nolima.evaluator import NoLiMaEvaluator
    pairs = {BabilongDataset: BabilongEvaluator, LongBioDataset: LongBioEvaluator, NoLiMaDataset: NoLiMaEvaluator}
    assert {cls.benchmark.name for cls in pairs} == {s.name for s in all_specs()}
    for dataset, evaluator in pairs.items():
        assert issubclass(dataset, LongCtxDataset) and issubclass(evaluator, LongCtxEvaluator)
        assert 'load' not in vars(dataset)              # the shared load: parse, build, record
        assert 'score' not in vars(evaluator)           # the shared skeleton
        assert dataset.benchmark.options is not None and callable(dataset.build)


class _Exact(LongCtxEvaluator):
    """A fourth benchmark's evaluator: only the scoring of answered samples."""

    def score_answered(self, rows, predictions, samples):
        details = [{'pred': predictions[i], 'answer': samples.references[i],
                    'correct': predictions[i] == samples.references[i]} for i in rows]
        correct = sum(d['correct'] for d in details)
        return {'accuracy': 100.0 * correct / len(rows), 'details': details, 'counts': {'correct': correct}}


def test_the_base_evaluator_owns_markers_counts_and_the_accuracy_rule():
    refs = ['a', 'b', 'c', 'd']
    preds = ['a', overlength.OVER_LENGTH, 'x', overlength.ENGINE_ERROR]
    out = _Exact().score(preds, refs, [{} for _ in refs])
    assert out['accuracy'] == 50.0                               # 1 of the 2 answered
    assert out['counts'] == {'n': 4, 'correct': 1, 'over_length': 2, 'engine_too_small': 0, 'engine_error': 1}
    assert [d.get('over_length', False) for d in out['details']] == [False, True, False, True]
    assert out['details'][1] == {'pred': None, 'answer': 'b', 'correct': False, 'over_length': True}
    assert isinstance(out['package_version'], str)
    none = _Exact().score([overlength.OVER_LENGTH] * 2, refs[:2], [{}, {}])
    assert 'accuracy' not in none and none['counts']['over_length'] == 2       # N/A, not 0
    with pytest.raises(ScoringError, match='3 predictions for 4 references'):
        _Exact().score(preds[:3], refs, [{} for _ in refs])
    with pytest.raises(ScoringError, match='no predictions'):
        _Exact().score([], [], [])
