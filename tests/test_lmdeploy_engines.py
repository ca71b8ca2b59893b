"""The engine each model row gets, against LMDeploy 0.18's own Python: the backend LMDeploy picks for the row's
published config.json, the engine-config class and the keys that engine really reads, the PyTorch engine's
memory reserve (LMDeploy's own ``_get_runtime_size``), ``trust_remote_code`` reaching LMDeploy's real
``Tokenizer``, and the caveat marks of tiers a row runs beyond what its engine supports."""
import json
import re
import types
from pathlib import Path
from unittest import mock

import pytest

from lmdeploy_real import babilong, lmdeploy_or_skip, model_dir, published, shipped, without_zmq
from opencompass_longctx import plan as P
from opencompass_longctx.models import backend as B
from opencompass_longctx.models import engine_plan
from opencompass_longctx.models import lmdeploy as L
GIB = 1024 ** 3


EXPECTED_BACKEND = {'qwen2.5-7b-instruct': 'turbomind', 'qwen2.5-7b-instruct-1m': 'turbomind',
                    'qwen2.5-14b-instruct-1m': 'turbomind', 'internlm2_5-7b-chat-1m': 'turbomind',
                    'internlm3-8b-instruct': 'turbomind', 'llama-3.1-8b-instruct': 'turbomind',
                    'glm-4-9b-chat-1m': 'pytorch'}


@pytest.mark.parametrize('abbr', sorted(EXPECTED_BACKEND))
def test_backend_per_row_is_the_one_lmdeploy_picks(abbr, tmp_path):
    lmdeploy = lmdeploy_or_skip()
    from lmdeploy import turbomind
    from lmdeploy.archs import autoget_backend, autoget_backend_config
    path = model_dir(tmp_path, abbr)
    model = shipped()[abbr]
    # as on a GPU machine where TurboMind's library loads (here it cannot: _turbomind needs CUDA)
    with mock.patch.object(turbomind, 'is_available', return_value=True):
        theirs = autoget_backend(path)
        _, converted = autoget_backend_config(path, lmdeploy.TurbomindEngineConfig(session_len=4096))
    ours, why = B.choose_backend(L.read_model_config(path), model['backend'])
    auto, _ = B.choose_backend(L.read_model_config(path), 'auto')
    assert ours == auto == theirs == EXPECTED_BACKEND[abbr], why
    # a TurboMind config for a PyTorch model is converted by LMDeploy (keys of the other class dropped): the row
    # must name the engine it runs on
    assert type(converted).__name__ == {'turbomind': 'TurbomindEngineConfig', 'pytorch': 'PytorchEngineConfig'}[ours]
    assert model['trust_remote_code'] == ('auto_map' in published(abbr))   # code in the directory: the flag is set


def test_forced_turbomind_for_a_pytorch_model_is_an_error():
    lmdeploy_or_skip()
    with pytest.raises(L.LMDeployConfigError, match=r"ChatGLMModel is not in TurboMind's SUPPORTED_ARCHS.*"
                                                     r"backend='pytorch'"):
        B.choose_backend(published('glm-4-9b-chat-1m'), 'turbomind')
    with pytest.raises(L.LMDeployConfigError, match='backend must be one of'):
        B.choose_backend({}, 'vllm')


def engine_reads(backend):
    """Attribute names LMDeploy's engine code of ``backend`` reads from its engine config (its source, not the
    config class: a field the class has but the engine never reads is dropped silently)."""
    import lmdeploy
    root = Path(lmdeploy.__file__).parent
    files = list((root / 'turbomind').glob('*.py')) if backend == 'turbomind' else \
        list((root / 'pytorch').rglob('*.py')) + [root / 'archs.py']
    names = set()
    for f in files:
        names.update(re.findall(r'(?:engine_config|backend_config|_engine_config|cfg)\.([a-z_]+)', f.read_text()))
    return names


@pytest.mark.parametrize('abbr', sorted(EXPECTED_BACKEND))
def test_engine_config_class_per_backend_and_every_key_read(abbr):
    lmdeploy_or_skip()
    model = shipped()[abbr]
    backend, _ = B.choose_backend(published(abbr), model['backend'])
    from opencompass_longctx.models import recipe
    ec = recipe.band_engine_config(model, dict(model['engine_config']))   # the longest engine: recipe applied
    L.validate_engine_config(ec, backend, model['max_seq_len'], model['run_cfg']['num_gpus'])
    built = B.engine_config_class(backend)(**ec)
    assert {k: getattr(built, k) for k in ec} == ec
    unread = sorted(set(ec) - engine_reads(backend))
    assert not unread, f'{abbr}: {backend} never reads {unread}'


def test_rope_scaling_factor_on_turbomind_is_rejected_with_the_replacement():
    lmdeploy_or_skip()
    assert 'rope_scaling_factor' not in engine_reads('turbomind')     # TurboMind 0.18 never reads it
    with pytest.raises(L.LMDeployConfigError, match=r"never reads.*hf_overrides=dict\(rope_scaling="):
        L.validate_engine_config({'rope_scaling_factor': 2.5, 'session_len': 4096}, 'turbomind')
    with pytest.raises(L.LMDeployConfigError, match='no rope_scaling_factor'):
        L.validate_engine_config({'rope_scaling_factor': 2.0}, 'pytorch')


def test_pytorch_engine_reserve_is_lmdeploys_runtime_size():
    lmdeploy_or_skip()
    with without_zmq():
        from lmdeploy.pytorch.engine.executor.base import ExecutorBase
    glm = published('glm-4-9b-chat-1m')
    ec = {'max_batch_size': 4, 'cache_max_entry_count': 0.7}
    free = 70 * GIB
    executor = types.SimpleNamespace(
        cache_config=types.SimpleNamespace(cache_max_entry_count=0.7, max_prefill_token_num=8192, max_batches=4),
        model_config=types.SimpleNamespace(mla_index_topk=None),
        _get_rank_cache_block_sizes=ExecutorBase._get_rank_cache_block_sizes,
        _get_min_num_gpu_blocks=ExecutorBase._get_min_num_gpu_blocks)
    executor._get_dsa_score_workspace_size = lambda: ExecutorBase._get_dsa_score_workspace_size(executor)
    block = types.SimpleNamespace(total=64 * 40 * 4 * 128 * 2 * 2)   # one 64-token block of GLM-4's KV
    runtime, prefill = ExecutorBase._get_runtime_size(executor, [free], [block], glm['padded_vocab_size'])
    assert prefill == 8192 and L.engine_reserve_bytes('pytorch', glm, ec) == runtime
    assert L.engine_reserve_bytes('turbomind', glm, ec) == 0
    # the preflight's KV budget is then LMDeploy's: cache_max_entry_count x (free - runtime buffers)
    weights = 80 * GIB - free
    plan = L.kv_plan(glm, weights, 1048576, 1, 1, 0.7, 0, 80 * GIB, L.engine_reserve_bytes('pytorch', glm, ec))
    assert plan['budget'] == pytest.approx((free - runtime) * 0.7)


def test_plan_sizes_glm_for_the_pytorch_engine():
    model = shipped()['glm-4-9b-chat-1m']
    gpu = P.cost_model()['gpu_spec']
    engine = P.size_engine(model, 1048576, gpu)
    assert engine.backend == 'pytorch' and engine.engine_reserve_gib == pytest.approx(
        (8192 + 2 * P.BATCH_CAP) * 151552 * 2 / GIB)
    no_reserve = L.kv_plan(published('glm-4-9b-chat-1m'), engine.weights, 1048576, 1, 2, 0.7, 0,
                           engine.gpu_memory_gib * GIB)['budget']      # what CUDA leaves free at start
    assert engine.kv_budget_gib_per_gpu * GIB == pytest.approx(no_reserve - 0.7 * engine.engine_reserve_gib * GIB)


# ------------------------------------------------------------------------------- trust_remote_code
TOKENIZER_CODE = '''from transformers import PreTrainedTokenizerFast


class ProbeTokenizerFast(PreTrainedTokenizerFast):
    """A tokenizer class that lives in the model directory (as InternLM's and GLM-4's do)."""
'''


def remote_code_model(tmp_path):
    """A model directory whose tokenizer class is code in it (``auto_map``), with a tokenizer.json built here."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    d = tmp_path / 'remote-code-model'
    d.mkdir()
    words = ['<unk>', '<|im_start|>', '<|im_end|>', 'user', 'assistant', 'Where', 'is', 'Mary', '?', 'kitchen']
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token='<unk>'))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(d / 'tokenizer.json'))
    (d / 'tokenization_probe.py').write_text(TOKENIZER_CODE)
    (d / 'tokenizer_config.json').write_text(json.dumps({
        'tokenizer_class': 'ProbeTokenizerFast',
        'auto_map': {'AutoTokenizer': [None, 'tokenization_probe.ProbeTokenizerFast']},
        'eos_token': '<|im_end|>', 'unk_token': '<unk>',
        'chat_template': "{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }}<|im_end|>{% endfor %}"
                         "{% if add_generation_prompt %}<|im_start|>assistant{% endif %}"}))
    cfg = dict(published('qwen2.5-7b-instruct'), num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
               num_key_value_heads=2, intermediate_size=128, vocab_size=len(words))
    (d / 'config.json').write_text(json.dumps(cfg))
    return str(d)


def test_trust_remote_code_reaches_lmdeploys_tokenizer(tmp_path, monkeypatch):
    """The engine is the only double: it loads LMDeploy's real Tokenizer as AsyncEngine does first
    (lmdeploy/serve/core/async_engine.py:139), with the flag the pipeline received."""
    lmdeploy = lmdeploy_or_skip()
    from lmdeploy.tokenizer import Tokenizer
    seen = {}

    def engine(model_path, backend_config=None, trust_remote_code=False, **kwargs):
        seen['tokenizer'] = Tokenizer(model_path, trust_remote_code=trust_remote_code)
        seen['backend_config'] = backend_config
        return lambda *a, **k: []
    monkeypatch.setattr(lmdeploy, 'pipeline', engine)
    import lmdeploy.turbomind
    monkeypatch.setattr(lmdeploy.turbomind, 'is_available', lambda: True)   # as on a GPU machine (the .so loads)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    path = remote_code_model(tmp_path)
    kw = dict(path=path, engine_config=dict(tp=1, max_batch_size=1), max_seq_len=4096, gpu_memory_gib=80)
    with pytest.raises(ValueError, match='trust_remote_code'):          # transformers refuses the directory's code
        L.LongCtxTurboMindModel(**kw)
    m = L.LongCtxTurboMindModel(trust_remote_code=True, **kw)
    assert type(seen['tokenizer'].model.model).__name__ == 'ProbeTokenizerFast'
    assert seen['tokenizer'].encode('Where is Mary ?', add_bos=False) == [5, 6, 7, 8]
    assert type(seen['backend_config']).__name__ == 'TurbomindEngineConfig' and m.backend == 'turbomind'
    # the shipped configs of the code-carrying models set it
    assert {a for a, c in shipped().items() if c['trust_remote_code']} == {
        'internlm2_5-7b-chat-1m', 'internlm3-8b-instruct', 'glm-4-9b-chat-1m', 'deepseek-v2-lite-chat'}


# ------------------------------------------------------------------------------- caveats
def test_caveat_marks_in_the_plan():
    model = shipped()['qwen2.5-7b-instruct-1m']
    datasets = [babilong(t) for t in ('128k', '256k', '512k', '1m')]
    plan = P.make_plan([{'models': [model], 'datasets': datasets}])
    md = P.to_markdown(P.summarize(plan))
    row = next(line for line in md.splitlines() if line.startswith('| qwen2.5-7b-instruct-1m | 128k-1m'))
    assert '| 256k, 512k†, 1m† |' in row
    assert "† qwen2.5-7b-instruct-1m: Qwen2.5-1M needs dual-chunk attention above 256k" in md
    other = shipped()['llama-3.1-8b-instruct']
    assert '†' not in P.to_markdown(P.summarize(P.make_plan([{'models': [other], 'datasets': datasets[:1]}])))


def test_caveat_marks_in_the_tier_table(tmp_path, capsys):
    """The long-context summarizer of a run (results written here): the 512k cells of the Qwen2.5-1M model are
    marked with the reason as a footnote, its 256k cells and the other model's cells are not."""
    from mmengine.config import ConfigDict

    from opencompass_longctx import __version__
    from opencompass_longctx.summarizers.longctx import LongCtxSummarizer
    qwen = shipped()['qwen2.5-7b-instruct-1m']
    models = [dict(abbr=qwen['abbr'], max_seq_len=qwen['max_seq_len'], caveats=qwen['caveats']),
              dict(abbr='other', max_seq_len=1048576)]
    abbrs = [f'babilong_qa{i}_{t}' for t in ('256k', '512k') for i in range(1, 6)]
    for m in models:
        res = tmp_path / 'results' / m['abbr']
        res.mkdir(parents=True)
        for a in abbrs:
            (res / f'{a}.json').write_text(json.dumps({'accuracy': 40.0, 'counts': [{'n': 10, 'over_length': 0}],
                                                       'package_version': [__version__], 'details': []}))
    datasets = [dict(abbr=a, type='opencompass_longctx.babilong.dataset.BabilongDataset', tier=a.rsplit('_', 1)[1],
                     infer_cfg=dict(retriever=dict(type='ZeroRetriever'),
                                    inferencer=dict(type='opencompass_longctx.run.inferencer.LongCtxGenInferencer')))
                for a in abbrs]
    cfg = ConfigDict(dict(models=models, datasets=datasets, work_dir=str(tmp_path)))
    LongCtxSummarizer(cfg, plots=False).summarize(time_str='t')
    table = capsys.readouterr().out.split('Long-context tier table', 1)[1]
    head = next(ln for ln in table.splitlines() if ln.startswith('| model |')).split(' | ')
    i256, i512 = head.index('256k'), head.index('512k')
    rows = {ln.split(' | ')[0][2:]: ln.split(' | ') for ln in table.splitlines() if ' | babilong | qa1-qa5 |' in ln}
    assert rows[qwen['abbr']][i512] == '40.0 [27.6, 53.8]†' and rows[qwen['abbr']][i256] == '40.0 [27.6, 53.8]'   # Wilson, 50 samples
    assert not any(c.endswith('†') for c in rows['other'])
    assert ('- † qwen2.5-7b-instruct-1m at 512k: Qwen2.5-1M needs dual-chunk attention above 256k' in table)



@pytest.mark.parametrize('abbr', sorted(shipped()))
def test_every_row_runs_as_a_text_model(abbr, tmp_path):
    """LMDeploy starts a vision-language pipeline (VLAsyncEngine, the vision encoder loaded beside the engine) for
    an architecture in its check_vl_llm list, Gemma-3 among the rows, unless language_model_only is set: the
    model sets it for those (models.lmdeploy.text_only), and LMDeploy's own get_task then picks the text pipeline."""
    lmdeploy_or_skip()
    from lmdeploy.archs import check_vl_llm, get_task

    from opencompass_longctx.models import recipe
    model, cfg = shipped()[abbr], published(abbr)
    backend, _ = B.choose_backend(cfg, model['backend'])
    ec = engine_plan.text_only(cfg, backend, recipe.band_engine_config(model, dict(model['engine_config'])))
    vision = check_vl_llm(backend, cfg)
    assert ec.get('language_model_only', False) == vision
    assert (abbr == 'gemma-3-27b-it') == vision      # the one vision-language architecture among the rows today
    if vision:
        path = model_dir(tmp_path, abbr)
        assert get_task(backend, path)[0] == 'vlm'                   # without the key
        assert get_task(backend, path, backend_config=B.engine_config_class(backend)(**ec))[0] == 'llm'
        L.validate_engine_config(ec, backend, model['max_seq_len'], model['run_cfg']['num_gpus'])
