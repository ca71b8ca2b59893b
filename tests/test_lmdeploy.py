"""LMDeploy configs without a GPU: every shipped model config checked against LMDeploy's real engine-config
classes (the lmdeploy wheel imports on CPU: `pip install --no-deps --target .lmdeploy lmdeploy==0.18.0 pybase64 openai-harmony==0.0.8`), the KV-cache preflight
arithmetic on real config.json values, and bad input. Nothing here runs LMDeploy itself."""
import json
import os
import shutil
import sys

import pytest
from mmengine.config import Config

from conftest import REPO
from opencompass_longctx.models import backend as B
from opencompass_longctx.models import lmdeploy as L
DATA = REPO / 'tests' / 'data' / 'model_configs'
GIB = 1024 ** 3


def real_lmdeploy():
    try:
        import lmdeploy  # noqa: F401
    except ImportError:
        if os.environ.get('CI'):
            pytest.fail("CI must unpack LMDeploy's config classes: pip install --no-deps --target .lmdeploy lmdeploy==0.18.0 pybase64 openai-harmony==0.0.8")
        pytest.skip('lmdeploy not importable here')


def shipped_models():
    return Config.fromfile(str(REPO / 'configs' / 'models' / 'lmdeploy_longctx.py'))['lmdeploy_longctx_models']


@pytest.mark.parametrize('model', shipped_models(), ids=lambda m: m['abbr'])
def test_shipped_model_configs_are_valid_for_lmdeploy(model):
    """Each config against the class of the engine LMDeploy serves it with; that every key is one the engine
    reads (not only a field of its class) and the backend itself: tests/test_lmdeploy_engines.py."""
    real_lmdeploy()
    ec = dict(model['engine_config'])
    assert ec['tp'] == model['run_cfg']['num_gpus']
    assert ec['session_len'] >= model['max_seq_len'] > model['max_out_len']
    backend, _ = B.choose_backend(load(model['abbr']), model['backend'])
    L.validate_engine_config(ec, backend, model['max_seq_len'], model['run_cfg']['num_gpus'])
    assert 'rope_scaling_factor' not in ec        # TurboMind 0.18 ignores it; the PyTorch engine has no such field


def load(name):
    return json.loads((DATA / f'{name}.json').read_text())


def test_kv_arithmetic_on_real_configs():
    qwen, llama = load('qwen2.5-7b-instruct'), load('llama-3.1-8b-instruct')
    assert L.kv_geometry(qwen) == {'layers': 28, 'kv_heads': 4, 'head_dim': 128}
    assert L.kv_bytes_per_token(qwen) == 2 * 28 * 4 * 128 * 2 == 57344           # 56 KiB / token
    assert L.kv_bytes_per_token(llama) == 2 * 32 * 8 * 128 * 2 == 131072         # 128 KiB / token
    assert L.kv_bytes_per_token(llama, quant_policy=8) == 65536
    assert L.kv_bytes_per_token(llama, quant_policy=4) == 32768
    # estimated weights (no safetensors here): 7.62e9 and 8.03e9 parameters in bf16
    assert L.weight_bytes(str(DATA), qwen) / 2 == pytest.approx(7.62e9, rel=0.01)
    assert L.weight_bytes(str(DATA), llama) / 2 == pytest.approx(8.03e9, rel=0.01)


def model_dir(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(DATA / f'{name}.json', d / 'config.json')
    return str(d)


def test_preflight_fits_and_fails_with_a_suggestion(tmp_path):
    llama = model_dir(tmp_path, 'llama-3.1-8b-instruct')
    # 128k on one 80 GiB GPU: 16 GiB of KV vs 0.8 x (80 - 15) GiB free
    r = L.kv_preflight(llama, 131072, 1, 1, 0.8, 0, 80 * GIB)
    assert r['kv_need_gib_per_gpu'] == pytest.approx(16.0) and r['weights_gib'] == pytest.approx(14.96, rel=0.01)
    # 1M on one 80 GiB GPU: 122 GiB of KV cannot fit; tp=4 can (30.5 vs 0.8 x (80 - 3.7))
    with pytest.raises(L.PreflightError) as e:
        L.kv_preflight(llama, 1000000, 1, 1, 0.8, 0, 80 * GIB)
    msg = str(e.value)
    assert '122.1 GiB per GPU at tp=1' in msg and 'Would fit: tp=4' in msg and 'quant_policy=8' in msg
    # qwen at 1M: 53 GiB of KV; one 80 GiB GPU with 0.7 of free memory is too small, tp=2 fits
    qwen = model_dir(tmp_path, 'qwen2.5-7b-instruct')
    with pytest.raises(L.PreflightError, match='Would fit: tp=2'):
        L.kv_preflight(qwen, 1000000, 1, 1, 0.7, 0, 80 * GIB)
    assert L.kv_preflight(qwen, 1000000, 1, 2, 0.7, 0, 80 * GIB)['kv_need_gib_per_gpu'] == pytest.approx(26.7, rel=0.01)
    # nothing fits a 1 GiB GPU
    with pytest.raises(L.PreflightError, match='lower session_len'):
        L.kv_preflight(qwen, 1000000, 1, 1, 0.7, 0, 1 * GIB)


def test_bad_engine_configs():
    real_lmdeploy()
    with pytest.raises(L.LMDeployConfigError, match=r"unknown to TurbomindEngineConfig: \['sesion_len'\]"):
        L.validate_engine_config({'sesion_len': 4096})
    with pytest.raises(L.LMDeployConfigError, match='no rope_scaling_factor'):
        L.validate_engine_config({'rope_scaling_factor': 2.0}, 'pytorch')
    with pytest.raises(L.LMDeployConfigError, match=r'tp=4 but the task has 2 GPU\(s\)'):
        L.validate_engine_config({'tp': 4, 'session_len': 1000}, num_gpus=2)
    with pytest.raises(L.LMDeployConfigError, match='session_len 1000 < max_seq_len 2000'):
        L.validate_engine_config({'session_len': 1000}, max_seq_len=2000)
    with pytest.raises(L.LMDeployConfigError, match='backend'):
        L.validate_engine_config({}, 'vllm')


def test_missing_config_json_and_missing_lmdeploy(tmp_path, monkeypatch):
    with pytest.raises(L.LMDeployConfigError, match='has no config.json'):
        L.read_model_config(str(tmp_path))
    monkeypatch.setitem(sys.modules, 'lmdeploy', None)  # as on a machine without LMDeploy
    with pytest.raises(L.LMDeployConfigError, match=r"pip install -e '\.\[lmdeploy\]'"):
        L.validate_engine_config({'session_len': 10})


def test_plumbing_with_a_fake_lmdeploy_pipeline(tiny_model_dir, monkeypatch):
    """Plumbing only (a test double of lmdeploy.pipeline; LMDeploy itself does not run): the wrapper validates,
    preflights, then OpenCompass's real TurboMind wrapper builds the engine config and calls the pipeline."""
    real_lmdeploy()
    import lmdeploy
    from lmdeploy.messages import Response
    seen = {}

    def fake_pipeline(path, backend_config=None, **kw):
        seen['config'] = backend_config

        def pipe(messages, gen_config=None, do_preprocess=None):
            seen['gen'], seen['messages'] = gen_config, messages
            return [Response(text='kitchen<|im_end|>', generate_token_len=2, input_token_len=9) for _ in messages]
        return pipe
    monkeypatch.setattr(lmdeploy, 'pipeline', fake_pipeline)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0,1')
    m = L.LongCtxTurboMindModel(path=tiny_model_dir, engine_config=dict(tp=2, max_batch_size=1),
                                max_seq_len=4096, gpu_memory_gib=80)
    assert m.generate(['Where is Mary?'], max_out_len=8) == ['kitchen']
    assert seen['config'].tp == 2 and seen['config'].session_len == 4096
    assert seen['gen'].max_new_tokens == 8 and seen['gen'].do_sample is False  # greedy
    assert seen['messages'][0].startswith('<|im_start|>user\nWhere is Mary?')  # the model's chat template
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    with pytest.raises(L.LMDeployConfigError, match='tp=2 but the task has 1 GPU'):
        L.LongCtxTurboMindModel(path=tiny_model_dir, engine_config=dict(tp=2), max_seq_len=4096, gpu_memory_gib=80)
