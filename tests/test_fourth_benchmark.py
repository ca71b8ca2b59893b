"""A fourth benchmark is one folder plus its configs: a toy benchmark written into a temporary folder (no file of the
package edited), named by ``$LONGCTX_BENCHMARKS``, is planned, run, put in the tier table with its own legend line,
gives the model configs its longer answer budget and takes its place in the leaderboard example.

The toy's folder holds what docs/development.md ("Add a benchmark") lists: ``spec.py`` (its options and
``BENCHMARK``), ``dataset.py``, ``evaluator.py`` and ``configs/`` (a base, one file per tier, its part of the
leaderboard example). Files it needs outside its folder: none (every test checks that the package's files, the
examples and the docs are as they were)."""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass

TOY = {
    '__init__.py': '',
    'spec.py': '''
"""The toy benchmark's spec: its options and what the planner, the checks and the tier table read."""
import os
from dataclasses import dataclass
from typing import ClassVar

from opencompass_longctx.options import Options, integer, option
from opencompass_longctx.spec import TIER_PATTERN, Bench, BenchmarkSpec, Row


@dataclass(frozen=True)
class ToyOptions(Options):
    owner: ClassVar[str] = 'ToyDataset'
    task: str = option('echo')
    num_samples: int = option(3, integer(1))


BENCHMARK = BenchmarkSpec(
    name='toy', dataset_type='ToyDataset', options=ToyOptions, tokens_column='prompt_tokens',
    count_rows=lambda o: o.num_samples, longest_prompt=lambda o: o.tier.tokens(1000) // 100,
    tokenizer_of=lambda o: 'tiktoken:cl100k_base', answer_tokens=300, units='Toy 1k = 10 words',
    configs=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configs'),
    summary=(Bench(name='toy', pattern=r'^toy_(?P<task>[a-z]+)_' + TIER_PATTERN + '$', rows=(Row('echo', ('echo',)),),
                   base_tiers=('1k',), notes='accuracy (%), the word echoed'),))
''',
    'dataset.py': '''
"""The toy dataset: the prompt asks to echo a word, among tier/100 filler words."""
from datasets import Dataset

from opencompass_longctx.base import LongCtxDataset
from toybench.spec import BENCHMARK


def build(o):
    n = o.tier.tokens(1000) // 100
    prompts = [' '.join(['filler'] * n) + f' Echo the word w{i}.' for i in range(o.num_samples)]
    return Dataset.from_dict({'prompt': prompts, 'target': [f'w{i}' for i in range(o.num_samples)],
                              'prompt_tokens': [len(p.split()) for p in prompts]})


class ToyDataset(LongCtxDataset):
    benchmark = BENCHMARK
    build = staticmethod(build)
''',
    'evaluator.py': '''
"""The toy evaluator: a prediction is right when it holds the word."""
from opencompass_longctx.base import LongCtxEvaluator


class ToyEvaluator(LongCtxEvaluator):
    def score_answered(self, rows, predictions, samples):
        right = [samples.references[i] in str(predictions[i]) for i in rows]
        return {'accuracy': 100 * sum(right) / len(rows), 'counts': {'correct': sum(right)},
                'details': [{'pred': predictions[i], 'answer': samples.references[i], 'correct': r}
                            for i, r in zip(rows, right)]}
''',
    'configs/toy_base.py': '''
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

from opencompass_longctx.run.inferencer import LongCtxGenInferencer
from toybench.dataset import ToyDataset
from toybench.evaluator import ToyEvaluator
TOY_BASE = [dict(type=ToyDataset, abbr='toy_echo', task='echo', num_samples=2,
                 reader_cfg=dict(input_columns=['prompt'], output_column='target'),
                 infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template=dict(round=[
                     dict(role='HUMAN', prompt='{prompt}')])), retriever=dict(type=ZeroRetriever),
                     inferencer=dict(type=LongCtxGenInferencer, max_out_len=300, overlength='skip')),
                 eval_cfg=dict(evaluator=dict(type=ToyEvaluator)))]
''',
    'configs/toy_1k_gen.py': '''
from mmengine.config import read_base

with read_base():
    from .toy_base import TOY_BASE
TIER = '1k'
toy_datasets = [dict(d, tier=TIER, abbr=f"{d['abbr']}_{TIER}") for d in TOY_BASE]
''',
    'configs/toy_leaderboard.py': '''
from mmengine.config import read_base

with read_base():
    from .toy_1k_gen import toy_datasets as toy_1k
    from .toy_2k_gen import toy_datasets as toy_2k
datasets = [*toy_1k, *toy_2k]
dataset_abbrs = ['toy_echo_1k']
''',
}
TOY['configs/toy_2k_gen.py'] = TOY['configs/toy_1k_gen.py'].replace("'1k'", "'2k'")

RUN = '''
from mmengine.config import read_base
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner

from opencompass_longctx.run.partitioner import LongCtxPartitioner
from opencompass_longctx.run.tasks import LongCtxEvalTask, LongCtxInferTask
with read_base():
    from opencompass_longctx.configs.models.longctx_tiny_chat import models
    from opencompass_longctx.configs.summarizers.longctx import summarizer
TOY = __import__('opencompass_longctx.spec', fromlist=['example']).example('leaderboard')
datasets = [d for d in TOY['datasets'] if d['abbr'].startswith('toy_')]
infer = dict(partitioner=dict(type=LongCtxPartitioner),
             runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxInferTask)))
eval = dict(partitioner=dict(type=NaivePartitioner, n=1000),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=LongCtxEvalTask)))
'''


def _repository_files():
    """The package's, the examples' and the docs' files with their contents' digests."""
    import hashlib
    paths = [p for d in ('opencompass_longctx', 'examples', 'docs') for p in glob.glob(str(REPO / d / '**' / '*'),
                                                                                        recursive=True)
             if os.path.isfile(p) and '__pycache__' not in p]
    return {p: hashlib.sha256(open(p, 'rb').read()).hexdigest() for p in paths}


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy benchmark written under ``tmp_path/toybench`` and named by ``$LONGCTX_BENCHMARKS``, importable here
    and in the subprocesses (``PYTHONPATH``); the specs are read again in this process. Afterwards no file of the
    repository has changed: the toy needed nothing outside its folder."""
    from opencompass_longctx import spec
    before = _repository_files()
    for name, text in TOY.items():
        path = tmp_path / 'toybench' / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip(), encoding='utf-8')
    monkeypatch.setenv('LONGCTX_BENCHMARKS', 'toybench.spec')
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(p for p in (str(tmp_path), os.environ.get('PYTHONPATH')) if p))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(spec, '_SPECS', [])
    yield tmp_path
    for name in [m for m in sys.modules if m == 'toybench' or m.startswith('toybench.')]:
        del sys.modules[name]
    assert _repository_files() == before


def test_the_toy_is_a_benchmark_of_its_own_folder(toy):
    from opencompass_longctx.spec import all_specs, example, longest_answer, spec_of
    from opencompass_longctx.writers.formats import _units
    specs = {s.name: s for s in all_specs()}
    assert list(specs) == ['babilong', 'longbio', 'nolima', 'toy']
    from toybench.dataset import ToyDataset
    d = dict(type=ToyDataset, abbr='toy_echo_2k', tier='2k', num_samples=-1)
    assert spec_of(d) is specs['toy']
    size = specs['toy'].size(d)                 # a refused num_samples reads as its default
    assert (size.rows, size.row_tokens, size.exact) == (3, 20, False)
    assert longest_answer() == 300              # its answer budget reaches the model configs
    parts = example('leaderboard')
    assert [d['abbr'] for d in parts['datasets'][-2:]] == ['toy_echo_1k', 'toy_echo_2k']
    assert parts['dataset_abbrs'][-1] == 'toy_echo_1k'
    assert _units(['toy']) == 'Toy 1k = 10 words'


@pytest.mark.e2e
def test_the_toy_is_planned_run_and_tabled(toy, tiny_model_dir):
    (toy / 'run.py').write_text(RUN, encoding='utf-8')
    env = {'LONGCTX_CACHE_DIR': str(toy / 'cache'), 'LONGCTX_TINY_MODEL': tiny_model_dir}
    proc = run_opencompass([str(toy / 'run.py'), '-w', str(toy / 'out')], toy, env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (run,) = glob.glob(str(toy / 'out' / '*'))
    assert_clean_logs(run)
    plan = json.load(open(os.path.join(run, 'plan', 'longctx_plan.json')))
    planned = json.dumps(plan)
    assert 'toy_echo_1k' in planned and 'toy_echo_2k' in planned
    (table,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))
    report = json.load(open(table))
    assert report['bench_tiers'] == {'toy': ['1k', '2k']}
    (md,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.md'))
    text = open(md, encoding='utf-8').read()
    assert 'A tier is a token budget: Toy 1k = 10 words.' in text
    assert '| tiny-chat | toy | echo | 0.0 [0.0, 65.8] | 0.0 [0.0, 65.8] |' in text
    # the leaderboard page of the finished run shows it too
    out = toy / 'report'
    proc = subprocess.run([sys.executable, '-m', 'opencompass_longctx.report', run, '-o', str(out), '--no-plots'],
                          capture_output=True, text=True, env=dict(os.environ, **env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (out / 'longctx_leaderboard.html').read_text(encoding='utf-8')
    assert '>toy<' in page and '>echo<' in page, page[:3000]


@pytest.mark.e2e
def test_the_toy_takes_its_place_in_the_leaderboard_example(toy):
    proc = run_opencompass([str(REPO / 'examples' / 'eval_longctx.py'), '--dry-run', '-w', str(toy / 'dry')], toy,
                           {'LONGCTX_CACHE_DIR': str(toy / 'cache')})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (plan,) = glob.glob(str(toy / 'dry' / '*' / 'plan' / 'longctx_plan.json'))
    planned = json.dumps(json.load(open(plan)))
    assert 'toy_echo_1k' in planned and 'toy_echo_2k' in planned and 'babilong_qa1_0k' in planned
