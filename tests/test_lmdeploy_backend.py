"""The engine LMDeploy will really run, against LMDeploy 0.18's own Python. On this CPU machine TurboMind's compiled
library (``lmdeploy/turbomind/_turbomind*.so``) cannot load (it needs CUDA 12's libraries): that is the real
"TurboMind missing" case. Only where a test needs "TurboMind present" is the compiled module's presence a double
(``turbomind.is_available`` answering True, as on a GPU machine with the GPU install)."""
from unittest import mock

import pytest

from lmdeploy_real import lmdeploy_or_skip, model_dir, published, shipped
from opencompass_longctx.models import lmdeploy as L
from opencompass_longctx.models import sizing

GIB = 1024 ** 3


@pytest.fixture
def turbomind_missing():
    lmdeploy_or_skip()
    ok, error = L.turbomind_status()
    if ok:
        pytest.skip('TurboMind loads here (a GPU machine): the missing case is not this machine')
    return error


def turbomind_present():
    from lmdeploy import turbomind
    return mock.patch.object(turbomind, 'is_available', return_value=True)


def test_turbomind_missing_gives_lmdeploys_own_import_error(turbomind_missing):
    from lmdeploy import turbomind
    assert turbomind_missing == f'{type(turbomind._import_error).__name__}: {turbomind._import_error}'
    backend, why = L.serving_backend(published('qwen2.5-7b-instruct'))
    assert backend == 'pytorch'
    assert 'TurboMind is not available here' in why and turbomind_missing in why and 'falls back' in why


def test_a_turbomind_only_row_fails_with_the_reason(turbomind_missing):
    with pytest.raises(L.LMDeployConfigError) as e:
        L.serving_backend(published('gpt-oss-20b'))
    assert 'mxfp4' in str(e.value) and turbomind_missing in str(e.value) and 'make gpu-install' in str(e.value)
    with pytest.raises(L.LMDeployConfigError, match="backend='turbomind'"):
        L.serving_backend(published('qwen2.5-7b-instruct'), 'turbomind')
    assert L.serving_backend(published('glm-4-9b-chat-1m'))[0] == 'pytorch'      # not a TurboMind architecture


def test_turbomind_present_is_served_by_turbomind(turbomind_missing):
    with turbomind_present():
        assert L.serving_backend(published('gpt-oss-20b'))[0] == 'turbomind'
        assert L.serving_backend(published('qwen2.5-7b-instruct'))[0] == 'turbomind'


def _never_built(*args, **kwargs):
    raise AssertionError('the engine was started')


def test_gpt_oss_fails_before_the_engine_starts(turbomind_missing, tmp_path, monkeypatch):
    import lmdeploy
    monkeypatch.setattr(lmdeploy, 'pipeline', _never_built)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    path = model_dir(tmp_path, 'gpt-oss-20b')
    with pytest.raises(L.LMDeployConfigError, match='TurboMind is not available here'):
        L.LongCtxTurboMindModel(path=path, engine_config=dict(tp=1, max_batch_size=1), max_seq_len=4096,
                                gpu_memory_gib=80)


def _memory_between(path):
    """GPU memory (GiB) where one 32k sequence of Qwen2.5-7B fits TurboMind but not the PyTorch engine's reserve."""
    cfg = L.read_model_config(path)
    w = L.weight_bytes(path, cfg)
    reserve = L.engine_reserve_bytes('pytorch', cfg, dict(max_batch_size=1))
    need = L.kv_bytes_per_token(cfg) * 32768
    fits_turbomind = w + need / 0.8
    return (fits_turbomind + reserve / 2) / GIB


def test_the_preflight_sizes_the_pytorch_engine_when_turbomind_is_missing(turbomind_missing, tmp_path, monkeypatch):
    import lmdeploy
    monkeypatch.setattr(lmdeploy, 'pipeline', _never_built)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    path = model_dir(tmp_path, 'qwen2.5-7b-instruct')
    kw = dict(path=path, engine_config=dict(tp=1, max_batch_size=1, session_len=32768), max_seq_len=32768,
              gpu_memory_gib=_memory_between(path))
    with pytest.raises(L.PreflightError, match='engine buffers'):
        L.LongCtxTurboMindModel(**kw)
    monkeypatch.setattr(L.TurboMindModelwithChatTemplate, '__init__', _never_built)   # OpenCompass's load
    with turbomind_present(), pytest.raises(AssertionError, match='the engine was started'):
        L.LongCtxTurboMindModel(**kw)                  # TurboMind: no reserve, the preflight passes


def test_the_plan_sizes_the_engine_that_will_run(turbomind_missing, tmp_path, monkeypatch):
    model = dict(shipped()['qwen2.5-7b-instruct'], path=model_dir(tmp_path, 'qwen2.5-7b-instruct'))
    gpu = dict(memory_gib=80)
    # planned on a machine without a GPU (a login node): TurboMind assumed for the GPU machine, and said
    monkeypatch.setattr(sizing, '_gpu_here', lambda: False)
    e = sizing.size_engine(model, 32768, gpu)
    assert e['backend'] == 'turbomind' and 'assumed to load on the GPU machine' in e['backend_reason']
    assert e['engine_reserve_gib'] == 0
    # planned on the GPU machine where TurboMind does not load: the PyTorch engine and its reserve
    monkeypatch.setattr(sizing, '_gpu_here', lambda: True)
    e = sizing.size_engine(model, 32768, gpu)
    assert e['backend'] == 'pytorch' and turbomind_missing in e['backend_reason']
    assert e['engine_reserve_gib'] > 0
    gpt = dict(shipped()['gpt-oss-20b'], path=model_dir(tmp_path, 'gpt-oss-20b'))
    e = sizing.size_engine(gpt, 32768, gpu)
    assert e['verdict'] == 'bad backend' and 'mxfp4' in e['reason']
