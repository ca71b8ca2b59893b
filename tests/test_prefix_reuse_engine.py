"""Prefix reuse through LMDeploy 0.18's real pipeline with the engine double (tests/doubles/lmdeploy_double.py), which
keeps a block trie as LMDeploy does and counts the tokens it prefills: NoLiMa stand-in prompts issued by
LongCtxGenInferencer in reuse order prefill far fewer tokens than their prompt tokens, fewer than in dataset order
under a bounded cache, and the predictions files are the same with and without ordering."""
from types import SimpleNamespace

import pytest

from conftest import REPO

DOUBLES = str(REPO / 'tests' / 'doubles')


@pytest.fixture
def nolima_prompts(tmp_path_factory):
    from opencompass_longctx.demo import nolima_data
    from opencompass_longctx.nolima.dataset import load_nolima
    root = tmp_path_factory.mktemp('nolima')
    nolima_data.write(str(root), book_tokens=3000, books=1)
    ds = load_nolima('1k', path=str(root), pairs=24, haystacks=[0], num_proc=1)
    return list(ds['prompt'])


def _run(tmp_path, name, model_dir, prompts, reuse, cache_blocks):
    from datasets import Dataset
    from lmdeploy_double import RecordingTurboMindModel
    from opencompass.openicl import DatasetReader, PromptTemplate
    from opencompass.openicl.icl_retriever import ZeroRetriever

    from opencompass_longctx.run.inferencer import LongCtxGenInferencer
    model = RecordingTurboMindModel(path=model_dir, engine_config=dict(tp=1, max_batch_size=8), max_seq_len=4096,
                                    gpu_memory_gib=80, fake_engine=dict(cache_blocks=cache_blocks))
    data = Dataset.from_dict({'prompt': prompts, 'answer': ['x'] * len(prompts)})
    reader = DatasetReader(data, input_columns=['prompt'], output_column='answer')
    retriever = ZeroRetriever(SimpleNamespace(reader=reader, train=reader.dataset['train'], test=reader.dataset['test']))
    inf = LongCtxGenInferencer(model=model, max_out_len=8, batch_size=8, output_json_filepath=str(tmp_path / name),
                               reuse_order=reuse)
    inf.inference(retriever, prompt_template=PromptTemplate('{prompt}'))
    engine = model.pipe.pipe.async_engine.engine if hasattr(model.pipe.pipe, 'async_engine') else model.pipe.pipe.engine
    return (tmp_path / name / 'predictions').read_bytes(), engine


def test_nolima_prefills_fewer_tokens_in_reuse_order_with_the_same_predictions(tmp_path, tiny_model_dir,
                                                                                nolima_prompts, monkeypatch):
    from test_lmdeploy import real_lmdeploy
    real_lmdeploy()
    monkeypatch.syspath_prepend(DOUBLES)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    from lmdeploy_double import engine_patches
    for obj, name, value in engine_patches():
        monkeypatch.setattr(obj, name, value, raising=False)
    cache = 128     # blocks (8k tokens): a few prompts' worth, so the order decides what is still cached
    ordered, e_ordered = _run(tmp_path, 'ordered', tiny_model_dir, nolima_prompts, True, cache)
    plain, e_plain = _run(tmp_path, 'plain', tiny_model_dir, nolima_prompts, False, cache)
    assert e_ordered.engine_config.enable_prefix_caching is True      # set by models/prefix_caching.py
    assert ordered == plain                                          # predictions unchanged by the order
    assert e_ordered.prompt_tokens == e_plain.prompt_tokens > 0
    ratio = e_ordered.prompt_tokens / e_ordered.prefilled_tokens
    assert ratio >= 2.5, ratio
    assert e_ordered.prefilled_tokens < e_plain.prefilled_tokens
