"""The engine LMDeploy will really run, against LMDeploy 0.18's own Python. On this CPU machine TurboMind's compiled
library (``lmdeploy/turbomind/_turbomind*.so``) cannot load (it needs CUDA 12's libraries): that is the real
"TurboMind missing" case. Only where a test needs "TurboMind present" is the compiled module's presence a double
(``turbomind.is_available`` answering True, as on a GPU machine with the GPU install)."""
from unittest import mock

import pytest

from lmdeploy_real import lmdeploy_or_skip, model_dir, published, shipped
from opencompass_longctx.models import backend as B
from opencompass_longctx.models import lmdeploy as L
from opencompass_longctx.models import engine_plan
GIB = 1024 ** 3


@pytest.fixture
def turbomind_missing():
    lmdeploy_or_skip()
    ok, error = B.turbomind_status()
    if ok:
        pytest.skip('TurboMind loads here (a GPU machine): the missing case is not this machine')
    return error


def turbomind_present():
    from lmdeploy import turbomind
    return mock.patch.object(turbomind, 'is_available', return_value=True)


def test_turbomind_missing_gives_lmdeploys_own_import_error(turbomind_missing):
    from lmdeploy import turbomind
    assert turbomind_missing == f'{type(turbomind._import_error).__name__}: {turbomind._import_error}'
    backend, why = B.serving_backend(published('qwen2.5-7b-instruct'))
    assert backend == 'pytorch'
    assert 'TurboMind is not available here' in why and turbomind_missing in why and 'falls back' in why


def test_a_turbomind_only_row_fails_with_the_reason(turbomind_missing):
    with pytest.raises(L.LMDeployConfigError) as e:
        B.serving_backend(published('gpt-oss-20b'))
    assert 'mxfp4' in str(e.value) and turbomind_missing in str(e.value) and 'make gpu-install' in str(e.value)
    with pytest.raises(L.LMDeployConfigError, match="backend='turbomind'"):
        B.serving_backend(published('qwen2.5-7b-instruct'), 'turbomind')
    assert B.serving_backend(published('glm-4-9b-chat-1m'))[0] == 'pytorch'      # not a TurboMind architecture


def test_turbomind_present_is_served_by_turbomind(turbomind_missing):
    with turbomind_present():
        assert B.serving_backend(published('gpt-oss-20b'))[0] == 'turbomind'
        assert B.serving_backend(published('qwen2.5-7b-instruct'))[0] == 'turbomind'


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
    monkeypatch.setattr(engine_plan, '_gpu_here', lambda: False)
    e = engine_plan.size_engine(model, 32768, gpu)
    assert e.backend == 'turbomind' and 'assumed to load on the GPU machine' in e.backend_reason
    assert e.engine_reserve_gib == 0
    # planned on the GPU machine where TurboMind does not load: the PyTorch engine and its reserve
    monkeypatch.setattr(engine_plan, '_gpu_here', lambda: True)
    e = engine_plan.size_engine(model, 32768, gpu)
    assert e.backend == 'pytorch' and turbomind_missing in e.backend_reason
    assert e.engine_reserve_gib > 0
    gpt = dict(shipped()['gpt-oss-20b'], path=model_dir(tmp_path, 'gpt-oss-20b'))
    e = engine_plan.size_engine(gpt, 32768, gpu)
    assert e.verdict == 'bad backend' and 'mxfp4' in e.reason


def test_ray_isolated_per_task_unless_a_cluster_is_named():
    assert B.ray_isolation('pytorch', 2, {})[0] == 'local'
    assert B.ray_isolation('pytorch', 2, {'RAY_ADDRESS': 'local'})[0] == 'local'
    value, said = B.ray_isolation('pytorch', 4, {'RAY_ADDRESS': '10.0.0.5:6379'})
    assert value is None and 'RAY_ADDRESS=10.0.0.5:6379' in said
    assert B.ray_isolation('pytorch', 1, {}) == (None, '') and B.ray_isolation('turbomind', 4, {}) == (None, '')


def test_the_pytorch_engine_at_tp2_gets_its_own_ray(turbomind_missing, tmp_path, monkeypatch):
    seen = {}

    def load(self, **kwargs):
        import os
        seen['RAY_ADDRESS'] = os.environ.get('RAY_ADDRESS')
        raise AssertionError('the engine was started')
    monkeypatch.setattr(L.TurboMindModelwithChatTemplate, '__init__', load)
    monkeypatch.setenv('RAY_ADDRESS', 'placeholder')
    monkeypatch.delenv('RAY_ADDRESS')          # unset, and restored as unset after the test
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0,1')
    path = model_dir(tmp_path, 'qwen2.5-7b-instruct')
    with pytest.raises(AssertionError, match='the engine was started'):
        L.LongCtxTurboMindModel(path=path, engine_config=dict(tp=2, max_batch_size=1), max_seq_len=4096,
                                gpu_memory_gib=80, backend='pytorch')
    assert seen['RAY_ADDRESS'] == 'local'
    model = dict(shipped()['glm-4-9b-chat-1m'], path=model_dir(tmp_path, 'glm-4-9b-chat-1m'))
    said = engine_plan.size_engine(model, 32768, dict(memory_gib=80)).backend_reason
    assert 'Ray: a private instance per task' in said
    monkeypatch.setenv('RAY_ADDRESS', 'auto')
    assert 'RAY_ADDRESS=auto' in engine_plan.size_engine(model, 32768, dict(memory_gib=80)).backend_reason


def test_sizing_from_the_memory_the_engine_sees(turbomind_missing, tmp_path, monkeypatch):
    from opencompass_longctx.tables.cost_model import CUDA_NOT_FREE_GIB, GPUS
    assert engine_plan.engine_memory_gib(GPUS['A100-80GB']) == pytest.approx(79.2 - CUDA_NOT_FREE_GIB)
    assert engine_plan.engine_memory_gib(GPUS['H200-141GB']) == pytest.approx(140.4 - CUDA_NOT_FREE_GIB)
    model = dict(shipped()['qwen2.5-7b-instruct'], path=model_dir(tmp_path, 'qwen2.5-7b-instruct'))
    assert engine_plan.size_engine(model, 32768, GPUS['A100-80GB']).gpu_memory_gib == pytest.approx(78.7)
    # at run time: what CUDA reports as free, not the card's total
    import torch
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'mem_get_info', lambda device=0: (int(78.9 * GIB), int(79.2 * GIB)))
    report = L.kv_preflight(model['path'], 32768)
    assert report['gpu_memory_gib'] == pytest.approx(78.9)
