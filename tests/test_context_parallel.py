"""TurboMind's context parallelism in the plan (opencompass_longctx/models/engine_plan.py): the KV and weight
arithmetic with cp, the band of 1m sizing it, the choice and its note, and LMDeploy's own config classes (cp is a
TurbomindEngineConfig field and its parallel layout splits attention into tp / cp, the PyTorch engine has none)."""
import pytest

from opencompass_longctx.models import backend as B
from opencompass_longctx.models import engine as E
from opencompass_longctx.models import geometry
from opencompass_longctx.models.engine_plan import size_engine
from opencompass_longctx.tables.cost_model import GPUS
GIB = 1024 ** 3
# a TurboMind architecture with 2 KV heads: at tp=4 tensor parallelism replicates each of them on two GPUs
TWO_KV = dict(architectures=['Qwen2ForCausalLM'], num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=2,
              hidden_size=3584, intermediate_size=18944, vocab_size=152064, params=7.62e9)


def _model(arch, tp, backend='turbomind'):
    return dict(abbr='m', path='/nonexistent', backend=backend, declared_geometry=dict(arch=arch),
                engine_config=dict(tp=tp, cache_max_entry_count=0.7), run_cfg=dict(num_gpus=tp))


def test_cp_splits_the_replicated_kv_and_copies_the_attention_weights():
    w = 15.2e9
    one = E.kv_plan(TWO_KV, w, 1_000_000, 1, 4, 0.7, 0, 80 * GIB)
    cp2 = E.kv_plan(TWO_KV, w, 1_000_000, 1, 4, 0.7, 0, 80 * GIB, cp=2)
    # tp=4 over 2 KV heads keeps one head per GPU (half the KV); cp=2 keeps one head for half the tokens
    assert cp2['need'] == pytest.approx(one['need'] / 2)
    extra = geometry.attention_weight_bytes(TWO_KV) / 4          # (cp - 1) / tp of the attention weights
    assert one['budget'] - cp2['budget'] == pytest.approx(0.7 * extra)
    # 8 KV heads at tp=4: nothing replicated, so cp only costs weight memory
    eight = dict(TWO_KV, num_key_value_heads=8)
    assert E.kv_plan(eight, w, 10 ** 6, 1, 4, 0.7, 0, 80 * GIB, cp=2)['need'] == \
        pytest.approx(E.kv_plan(eight, w, 10 ** 6, 1, 4, 0.7, 0, 80 * GIB)['need'])
    with pytest.raises(E.LMDeployConfigError, match='cp=3 must divide tp=4'):
        E.kv_plan(TWO_KV, w, 10 ** 6, 1, 4, 0.7, 0, 80 * GIB, cp=3)


def test_the_1m_band_takes_cp_where_it_holds_more_and_says_why_otherwise():
    a100 = dict(GPUS['A100-80GB'], name='A100-80GB')
    chosen = size_engine(_model(TWO_KV, 4), 1_010_000, a100, consider_cp=True)
    plain = size_engine(_model(TWO_KV, 4), 1_010_000, a100)
    assert chosen.cp == 2 and chosen.max_batch_size > plain.max_batch_size >= 1 and plain.cp is None
    assert chosen.cp_note.startswith('cp=2 chosen:') and '2 KV heads' in chosen.cp_note
    qwen7b = dict(TWO_KV, num_key_value_heads=4)
    kept = size_engine(_model(qwen7b, 2), 1_010_000, a100, consider_cp=True)
    assert kept.cp == 1 and kept.cp_note.startswith('considered, not chosen: 4 KV heads >= tp=2')
    pytorch = size_engine(_model(TWO_KV, 4, 'pytorch'), 1_010_000, a100, consider_cp=True)
    assert pytorch.cp == 1 and 'PytorchEngineConfig' in pytorch.cp_note and 'has no cp' in pytorch.cp_note
    # on an H200 one 1M sequence of Qwen2.5-7B-1M fits on one GPU: the plan says so
    h200 = dict(GPUS['H200-141GB'], name='H200-141GB')
    assert 'one sequence also fits on 1 GPU(s)' in size_engine(_model(qwen7b, 2), 1_010_000, h200,
                                                               consider_cp=True).cp_note


def test_lmdeploys_own_classes_have_cp_in_turbomind_only():
    lmdeploy = pytest.importorskip('lmdeploy')
    from lmdeploy.turbomind.parallel_config import derive_parallel_config
    assert B.cp_available('turbomind') == (True, '')
    ok, why = B.cp_available('pytorch')
    assert not ok and 'PytorchEngineConfig of LMDeploy 0.18.0 has no cp' in why
    lmdeploy.TurbomindEngineConfig(tp=4, cp=2)                   # the engine key the plan writes is accepted
    layout = derive_parallel_config(dp=1, tp=4, ep=1, cp=2, device_num=None, available_devices=4)
    assert (layout.device_num, layout.attn_tp_size, layout.attn_cp_size, layout.mlp_tp_size) == (4, 2, 2, 4)


def test_the_plan_writes_cp_into_the_band_engine_and_the_runtime_preflight_reads_it(tmp_path):
    from opencompass_longctx.plan.grouping import _task
    from opencompass_longctx.plan.cost import cost_model
    from opencompass_longctx.plan.loads import DatasetLoad
    model = dict(_model(TWO_KV, 4), max_seq_len=1_010_000, max_out_len=32)
    load = DatasetLoad('babilong_qa1_1m', 'babilong', '1m', 1_000_000, 10, 10 ** 7, False, 32, 1_000_000)
    task = _task(model, 'm', '128k-1m', 0, 1, [(dict(abbr='babilong_qa1_1m'), load)], cost_model(), 64, True)
    assert task.model_cfg['engine_config']['cp'] == 2 and task.engine.cp == 2
    short = _task(model, 'm', '<= 32k', 0, 1, [(dict(abbr='babilong_qa1_1m'), load)], cost_model(), 64, False)
    assert 'cp' not in short.model_cfg['engine_config'] and short.engine.cp is None
    # the wrapper's preflight (models/lmdeploy.py passes engine_config['cp']) sizes the same engine
    import json
    (tmp_path / 'config.json').write_text(json.dumps(TWO_KV))
    free = 15 * GIB
    need_cp1 = E.kv_plan(TWO_KV, E.weight_bytes(str(tmp_path), TWO_KV), 1_010_000, 1, 4, 0.7, 0, free)
    assert not need_cp1['fits']
    with pytest.raises(E.PreflightError):
        E.kv_preflight(str(tmp_path), 1_010_000, 1, 4, 0.7, 0, free)
    assert E.kv_preflight(str(tmp_path), 1_010_000, 1, 4, 0.7, 0, free, cp=2)['cp'] == 2
