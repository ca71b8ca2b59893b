"""gpt-oss's answers as LMDeploy 0.18 returns them: its own harmony detokenizer (lmdeploy/tokenizer.py
GptOssTokenizer) runs the analysis channel into the final one with every marker gone, so the reasoning trace
would be scored as part of the answer. The project gives such an answer the text of its token ids with the
channel markers kept (opencompass_longctx/models/responses.py), and the row's strip_trace keeps the final channel.
LMDeploy's real pipeline, Tokenizer (GptOssTokenizer, with openai_harmony's real encoding) and detokenizer; the
engine is the double's (tests/doubles/lmdeploy_double.py), answering with a trace then the final channel."""
import glob
import json
import os

import pytest

from conftest import REPO, run_opencompass

DOUBLES = str(REPO / 'tests' / 'doubles')
CONFIG = REPO / 'tests' / 'configs' / 'lmdeploy_harmony.py'
PROMPT = 'Mary went to the kitchen. John went to the garden. Where is Mary?'
TRACE = 'Mary might be in the garden or the hallway; the story says kitchen last.'


def no_encodings_base(monkeypatch):
    """TIKTOKEN_ENCODINGS_BASE unset, and unset again after the test (the model sets it)."""
    monkeypatch.setenv('TIKTOKEN_ENCODINGS_BASE', '')
    monkeypatch.delenv('TIKTOKEN_ENCODINGS_BASE')


@pytest.fixture(scope='module')
def gpt_oss_dir(tmp_path_factory):
    import harmony_tokenizer
    from test_lmdeploy import real_lmdeploy
    real_lmdeploy()
    root = tmp_path_factory.mktemp('gpt-oss')
    base = harmony_tokenizer.harmony_env(str(root / 'encodings'))
    return harmony_tokenizer.build(str(root / 'gpt-oss-20b'), base), base


@pytest.fixture
def gpt_oss(gpt_oss_dir, monkeypatch):
    path, base = gpt_oss_dir
    no_encodings_base(monkeypatch)          # the model finds harmony's vocabulary itself
    monkeypatch.syspath_prepend(DOUBLES)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    from lmdeploy_double import RecordingTurboMindModel, engine_patches
    for obj, name, value in engine_patches():
        monkeypatch.setattr(obj, name, value, raising=False)
    from mmengine.config import Config
    (row,) = [m for m in Config.fromfile(str(REPO / 'configs' / 'models' / 'lmdeploy_longctx.py'))['models']
              if m['abbr'] == 'gpt-oss-20b']

    def build(**fake):
        model = RecordingTurboMindModel(path=path, engine_config=dict(tp=1, max_batch_size=2, session_len=4096),
                                        max_seq_len=4096, gpu_memory_gib=80, fake_engine=dict(trace=TRACE, **fake),
                                        gen_config=dict(do_sample=False), meta_template=row['meta_template'])
        return model, row['pred_postprocessor']['type']
    return build


def test_lmdeploy_runs_the_trace_into_the_answer_and_the_project_keeps_the_channels(gpt_oss):
    from lmdeploy import GenerationConfig
    from lmdeploy.tokenizer import GptOssTokenizer

    from opencompass_longctx.reasoning import strip_trace
    from opencompass_longctx.cache import cache_root
    model, postprocess = gpt_oss()
    assert postprocess is strip_trace                           # the shipped row's pred_postprocessor
    # openai_harmony would download its vocabulary: the model gave it the package's copy (offline GPU nodes)
    assert os.environ['TIKTOKEN_ENCODINGS_BASE'] == os.path.join(cache_root(), 'tiktoken_encodings')
    assert isinstance(model.pipe.async_engine.tokenizer.model, GptOssTokenizer)   # LMDeploy's own choice
    assert model.pipe.harmony
    rendered = model.tokenizer.apply_chat_template([{'role': 'user', 'content': PROMPT}], add_generation_prompt=True,
                                                   tokenize=False)
    (raw,) = model.pipe.pipe([rendered], gen_config=GenerationConfig(max_new_tokens=200), do_preprocess=False)
    # LMDeploy's text: the trace run into the final channel's text, no marker between them
    assert raw.text.startswith(TRACE) and len(raw.text) > len(TRACE) and '<|' not in raw.text
    reply = raw.text[len(TRACE):]
    assert strip_trace(raw.text) == raw.text                    # ... which no trace stripper can split

    (answer,) = model.generate([PROMPT], max_out_len=200)
    assert answer == f'<|channel|>analysis<|message|>{TRACE}<|end|><|start|>assistant<|channel|>final<|message|>{reply}'
    assert strip_trace(answer) == reply

    # the budget runs out inside the trace: no final channel, an empty prediction (counted wrong)
    (unfinished,) = model.generate([PROMPT], max_out_len=12)
    assert unfinished.startswith('<|channel|>analysis<|message|>') and '<|channel|>final' not in unfinished
    assert strip_trace(unfinished) == ''


def test_a_model_without_the_harmony_detokenizer_keeps_lmdeploys_text(tiny_model_dir, monkeypatch):
    from test_lmdeploy import real_lmdeploy
    real_lmdeploy()
    monkeypatch.syspath_prepend(DOUBLES)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    from lmdeploy_double import RecordingTurboMindModel, engine_patches
    for obj, name, value in engine_patches():
        monkeypatch.setattr(obj, name, value, raising=False)
    model = RecordingTurboMindModel(path=tiny_model_dir, engine_config=dict(tp=1, max_batch_size=1), max_seq_len=4096,
                                    gpu_memory_gib=80)
    assert not model.pipe.harmony
    from lmdeploy import GenerationConfig
    prompt = 'Mary went to the kitchen. Where is Mary?'
    rendered = model.tokenizer.apply_chat_template([{'role': 'user', 'content': prompt}], add_generation_prompt=True,
                                                   tokenize=False)
    (raw,) = model.pipe.pipe([rendered], gen_config=GenerationConfig(max_new_tokens=8), do_preprocess=False)
    assert raw.text and model.generate([prompt], max_out_len=8) == [raw.text]


@pytest.mark.e2e
def test_gpt_oss_is_scored_on_its_final_channel_through_the_real_pipeline(tmp_path, gpt_oss_dir, monkeypatch):
    """The shipped gpt-oss row through `opencompass` (LongCtxPartitioner, LongCtxInferTask on LMDeploy's pipeline,
    the eval task applying the row's strip_trace): the predictions keep the trace, the score is the answer's."""
    from opencompass_longctx.demo import babilong_data
    path, _ = gpt_oss_dir
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k',), tasks=['qa1'], samples=4)
    no_encodings_base(monkeypatch)          # the task finds harmony's vocabulary itself
    env = {'LONGCTX_GPT_OSS_DIR': path,
           'LONGCTX_TEST_DATA': str(tmp_path / 'babilong'), 'LONGCTX_CACHE_DIR': str(tmp_path / 'cache'),
           'CUDA_VISIBLE_DEVICES': '0', 'PYTHONPATH': os.pathsep.join([DOUBLES, os.environ.get('PYTHONPATH', '')])}
    proc = run_opencompass([str(CONFIG), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    preds = list(json.load(open(os.path.join(run, 'predictions', 'gpt-oss-20b', 'babilong_qa1_0k.json'))).values())
    assert len(preds) == 4
    for p in preds:
        assert p['prediction'].startswith('<|channel|>analysis<|message|>The question asks where Mary is.')
        assert '<|channel|>final<|message|>' in p['prediction']
    result = json.load(open(os.path.join(run, 'results', 'gpt-oss-20b', 'babilong_qa1_0k.json')))
    assert result['accuracy'] == 100.0, result   # the trace names wrong places: scored with it, qa1 would fail
