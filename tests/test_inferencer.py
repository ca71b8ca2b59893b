"""LongCtxGenInferencer against OpenCompass's own GenInferencer: the same predictions file and return value for
every batch size and num_return_sequences, with over-length prompts marked instead of sent (issue 12 item 13)."""
import json
from types import SimpleNamespace

import pytest
from datasets import Dataset
from opencompass.models.base import BaseModel
from opencompass.openicl.icl_dataset_reader import DatasetReader
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

from opencompass_longctx.run.inferencer import LongCtxGenInferencer
from opencompass_longctx.overlength import OVER_LENGTH
class EchoModel(BaseModel):
    """Answers ``<prompt>#<k>`` for each of the ``num_return_sequences`` samples; one token per word."""

    def __init__(self, num_return_sequences=1, max_seq_len=64):
        super().__init__(path='echo', max_seq_len=max_seq_len)
        self.generation_kwargs = {'num_return_sequences': num_return_sequences}
        self.sent = []

    def get_token_len(self, prompt: str) -> int:
        return len(prompt.split())

    def generate(self, inputs, max_out_len, **kwargs):
        self.sent.extend(inputs)
        k = self.generation_kwargs['num_return_sequences']
        return [f'{p}#{i}' for p in inputs for i in range(k)]


def run(inferencer_cls, tmp_path, questions, nrs, batch_size, max_seq_len=64):
    data = Dataset.from_dict({'question': questions, 'answer': [str(i) for i in range(len(questions))]})
    reader = DatasetReader(data, input_columns=['question'], output_column='answer')
    retriever = ZeroRetriever(SimpleNamespace(reader=reader, train=reader.dataset['train'],
                                              test=reader.dataset['test']))
    model = EchoModel(nrs, max_seq_len)
    out = tmp_path / inferencer_cls.__name__
    inferencer = inferencer_cls(model=model, max_out_len=4, batch_size=batch_size, output_json_filepath=str(out))
    returned = inferencer.inference(retriever, prompt_template=PromptTemplate('{question}'))
    return returned, json.loads((out / 'predictions').read_text()), model.sent


@pytest.mark.parametrize('nrs', [1, 2, 3])
@pytest.mark.parametrize('batch_size', [1, 3, 4])
def test_item13_same_output_shape_as_gen_inferencer(tmp_path, nrs, batch_size):
    questions = [f'question number {i}' for i in range(5)]
    ours = run(LongCtxGenInferencer, tmp_path, questions, nrs, batch_size)
    theirs = run(GenInferencer, tmp_path, questions, nrs, batch_size)
    assert ours == theirs
    returned, file, _ = ours
    assert len(file) == len(returned) == 5
    if nrs > 1:
        assert file['1']['prediction'] == [f'question number 1#{k}' for k in range(nrs)]


@pytest.mark.parametrize('nrs', [1, 2])
@pytest.mark.parametrize('batch_size', [1, 3])
def test_item13_over_length_prompts_are_marked_once_per_sample(tmp_path, nrs, batch_size):
    long_q = ' '.join(['word'] * 70)   # 70 tokens + 4 new ones > 64
    questions = ['short one', long_q, 'short two', long_q, 'short three']
    returned, file, sent = run(LongCtxGenInferencer, tmp_path, questions, nrs, batch_size)
    assert sent == ['short one', 'short three', 'short two']   # the long ones never sent; issued in reuse order
    assert len(file) == len(returned) == 5
    over = [OVER_LENGTH] * nrs if nrs > 1 else OVER_LENGTH
    assert [file[str(i)]['prediction'] for i in (1, 3)] == [over, over]
    first = [f'short one#{k}' for k in range(nrs)]
    assert file['0']['prediction'] == (first if nrs > 1 else first[0])
    assert file['4']['origin_prompt'] == 'short three' and file['4']['gold'] == '4'


def test_a_prompt_the_model_holds_but_the_band_engine_does_not_is_an_engine_miss(tmp_path):
    """LongCtxPartitioner gives a tier band an engine smaller than the model's window (model_window): a prompt over
    the engine but within the window is not sent, and is marked apart from over-length prompts, so the evaluators
    and the tier table can report the sizing miss instead of a score over fewer samples."""
    from opencompass_longctx.overlength import ENGINE_TOO_SMALL, engine_misses, is_over_length
    data = Dataset.from_dict({'question': ['short one', ' '.join(['w'] * 70), ' '.join(['w'] * 200)],
                              'answer': ['0', '1', '2']})
    reader = DatasetReader(data, input_columns=['question'], output_column='answer')
    retriever = ZeroRetriever(SimpleNamespace(reader=reader, train=reader.dataset['train'],
                                              test=reader.dataset['test']))
    model = EchoModel(1, max_seq_len=64)           # the band's engine
    inferencer = LongCtxGenInferencer(model=model, max_out_len=4, batch_size=2, model_window=128,
                                      output_json_filepath=str(tmp_path))
    inferencer.inference(retriever, prompt_template=PromptTemplate('{question}'))
    preds = [p['prediction'] for p in json.loads((tmp_path / 'predictions').read_text()).values()]
    assert preds == ['short one#0', ENGINE_TOO_SMALL, OVER_LENGTH]    # 74 <= 128 window; 204 > 128
    assert model.sent == ['short one']
    assert all(is_over_length(p) for p in preds[1:]) and engine_misses(preds) == 1


def test_engine_misses_are_counted_and_make_the_tier_table_cell_missing():
    from opencompass_longctx.babilong.evaluator import BabilongEvaluator
    from opencompass_longctx.overlength import ENGINE_TOO_SMALL
    from opencompass_longctx.leaderboard.build import ModelInfo, task_cell
    from opencompass_longctx.leaderboard.benchmarks import bench_by_name
    test_set = Dataset.from_dict({'question': ['Where is Mary? '] * 3, 'task': ['qa1'] * 3})
    res = BabilongEvaluator().score(['kitchen', ENGINE_TOO_SMALL, 'garden'], ['kitchen', 'garden', 'garden'],
                                    test_set)
    assert res['counts']['engine_too_small'] == 1 and res['counts']['over_length'] == 1
    cell = task_cell(bench_by_name('babilong'), res, '4k', ModelInfo('m', 8192), [], 'babilong_qa1_4k')
    assert cell.status == 'missing' and 'fit the model but not the engine' in cell.reason
