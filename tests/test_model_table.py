"""Every row of the model table, validated without downloading a model: its published config.json (and the
checkpoint size, as a safetensors index) is written into a temporary directory, and LMDeploy 0.18's own Python
(.lmdeploy) chooses the backend, converts the config into the PyTorch engine's ModelConfig and cache layout,
and the real preflight checks the row's tp for its largest tier on 80 GB cards."""
import json
import math
from unittest import mock

import pytest

from lmdeploy_real import DATA, lmdeploy_or_skip, published, shipped, without_zmq
from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
from opencompass_longctx.models import geometry as G
from opencompass_longctx.models import backend as B
from opencompass_longctx.models import lmdeploy as L
GIB = 1024 ** 3
ROWS = {r['abbr']: r for r in LONGCTX_LMDEPLOY_MODELS}
NEW = ['qwen3-30b-a3b-instruct-2507', 'gpt-oss-20b', 'qwen3-next-80b-a3b-instruct', 'gemma-3-27b-it',
       'deepseek-v2-lite-chat']
# the engine LMDeploy 0.18 gives each new architecture, and the layer kinds of the model
KIND = {'qwen3-30b-a3b-instruct-2507': ('turbomind', {'full'}), 'gpt-oss-20b': ('turbomind', {'full', 'sliding'}),
        'qwen3-next-80b-a3b-instruct': ('pytorch', {'full', 'linear'}),
        'gemma-3-27b-it': ('pytorch', {'full', 'sliding'}), 'deepseek-v2-lite-chat': ('pytorch', {'mla'})}


def row_dir(tmp_path, abbr):
    """A model directory as downloaded, without weights: config.json and the index with the checkpoint size."""
    row = ROWS[abbr]
    d = tmp_path / abbr
    d.mkdir()
    (d / 'config.json').write_text((DATA / f'{abbr}.json').read_text())
    size = row.get('checkpoint_bytes') or 2 * row['arch']['params']
    (d / 'model.safetensors.index.json').write_text(json.dumps({'metadata': {'total_size': size}}))
    return str(d)


def test_every_row_has_its_published_config_and_a_source():
    assert set(NEW) <= set(ROWS)
    for abbr, row in ROWS.items():
        assert (DATA / f'{abbr}.json').is_file(), abbr
        assert abbr in (DATA / 'SOURCES.md').read_text(), abbr
    for abbr in NEW:
        assert ROWS[abbr]['source'] and isinstance(ROWS[abbr]['thinks'], bool)
        assert 0 < ROWS[abbr]['active_params'] <= ROWS[abbr]['arch']['params']


@pytest.mark.parametrize('abbr', NEW)
def test_backend_is_the_one_lmdeploy_picks_from_its_own_tables(abbr, tmp_path):
    lmdeploy = lmdeploy_or_skip()
    from lmdeploy import turbomind
    from lmdeploy.archs import autoget_backend
    from lmdeploy.turbomind.supported_models import SUPPORTED_ARCHS
    with without_zmq():
        from lmdeploy.pytorch.models.module_map import MODULE_MAP
    arch = published(abbr)['architectures'][0]
    path = row_dir(tmp_path, abbr)
    with mock.patch.object(turbomind, 'is_available', return_value=True):
        theirs = autoget_backend(path)
    ours, why = B.choose_backend(L.read_model_config(path), ROWS[abbr].get('backend', 'auto'))
    assert ours == theirs == KIND[abbr][0], why
    assert (arch in SUPPORTED_ARCHS) == (ours == 'turbomind')
    assert arch in MODULE_MAP          # the PyTorch engine serves every one of them
    assert shipped()[abbr]['trust_remote_code'] == ('auto_map' in published(abbr))   # code in the directory
    assert lmdeploy.__version__ == '0.18.0'


def lmdeploy_cache(path, tp):
    """(KV bytes per token per GPU, state bytes per sequence slot per GPU) as the PyTorch engine lays out its cache:
    its own ModelConfig conversion and its own cache descriptors (lmdeploy/pytorch/engine/cache_engine/schema.py)."""
    import torch
    from transformers import AutoConfig
    with without_zmq():
        from lmdeploy.pytorch.config import CacheConfig, DistConfig, ModelConfig
        from lmdeploy.pytorch.engine.cache_engine import StateCacheEngine, schema
    hf = AutoConfig.from_pretrained(path)
    with mock.patch('lmdeploy.pytorch.configurations.deepseek_v2.flash_mla_available', return_value=False):
        mc = ModelConfig.from_hf_config(hf, path, dtype='bfloat16', dist_config=DistConfig(tp=tp), device_type='cpu')
    cc = CacheConfig(max_batches=1, block_size=64, num_cpu_blocks=0, num_gpu_blocks=0)

    def nbytes(desc):
        return math.prod(desc.shape) * torch.empty(0, dtype=desc.dtype).element_size()
    block = nbytes(schema.build_k_cache_desc(mc, cc, tp)) + nbytes(schema.build_v_cache_desc(mc, cc, tp))
    state = StateCacheEngine.get_state_slot_nbytes(mc.states_shapes) if mc.states_shapes else 0
    return mc.num_layers * block / 64, state, mc.sliding_window


@pytest.mark.parametrize('abbr', NEW + ['llama-3.1-8b-instruct', 'qwen2.5-7b-instruct-1m'])
@pytest.mark.parametrize('tp', [1, 4])
def test_kv_per_token_and_state_are_lmdeploys_own_cache_layout(abbr, tp, tmp_path):
    lmdeploy_or_skip()
    path = row_dir(tmp_path, abbr)
    kv, state, sliding = lmdeploy_cache(path, tp)
    cfg = L.read_model_config(path)
    assert G.kv_bytes_per_token(cfg, tp=tp) == kv
    assert G.state_bytes_per_seq(cfg, tp=tp) == state
    assert sliding == -1          # no layer's cache is capped at a window in LMDeploy 0.18
    assert {g['kind'] for g in G.layer_groups(cfg)} == KIND.get(abbr, ('', {'full'}))[1]


@pytest.mark.parametrize('abbr', sorted(ROWS))
def test_row_tp_fits_its_largest_tier_on_80gb_by_the_real_preflight(abbr, tmp_path):
    """The shipped config (its longest engine, recipe applied) through the real preflight on an 80 GB card, and
    one GPU fewer does not fit (tp is the smallest that does) where tp > 1."""
    lmdeploy_or_skip()
    from opencompass_longctx.models import recipe
    model = shipped()[abbr]
    path = row_dir(tmp_path, abbr)
    cfg = L.read_model_config(path)
    backend, _ = B.choose_backend(cfg, model['backend'])
    ec = recipe.band_engine_config(model, dict(model['engine_config']))
    L.validate_engine_config(ec, backend, model['max_seq_len'], model['run_cfg']['num_gpus'])

    def preflight(tp):
        return L.kv_preflight(path, ec['session_len'], ec['max_batch_size'], tp, ec['cache_max_entry_count'],
                              ec.get('quant_policy', 0), 80 * GIB, cfg,
                              L.engine_reserve_bytes(backend, cfg, ec))
    report = preflight(ec['tp'])
    assert report['kv_need_gib_per_gpu'] <= report['kv_budget_gib_per_gpu']
    assert report['layer_types'] == G.describe(cfg)
    if ec['tp'] > 1 and abbr in NEW:
        with pytest.raises(L.PreflightError, match='Would fit: tp='):
            preflight(ec['tp'] // 2)


def test_thinking_rows_get_the_benchmarks_reasoning_budgets():
    """gpt-oss thinks: NoLiMa gets the paper's 1536 tokens (faithful mode), BABILong and LongBioBench their own
    budget + 1536 in the named longctx-reasoning mode; a model that does not think keeps the authors' budgets."""
    from mmengine.config import Config

    from conftest import REPO
    from opencompass_longctx import reasoning
    from opencompass_longctx import combinations
    from opencompass_longctx.nolima.spec import FAITHFUL_THINKING_MODE
    assert [a for a, r in ROWS.items() if r.get('thinks')] == ['gpt-oss-20b']
    datasets = REPO / 'configs' / 'datasets'
    nolima = Config.fromfile(str(datasets / 'nolima' / 'nolima_4k_gen.py'))['nolima_datasets'][0]
    babilong = Config.fromfile(str(datasets / 'babilong' / 'babilong_4k_gen.py'))['babilong_datasets'][0]
    longbio = Config.fromfile(str(datasets / 'longbio' / 'longbio_8k_gen.py'))['longbio_datasets'][0]
    models = shipped()
    for d, thinking, mode in [(nolima, 1536, FAITHFUL_THINKING_MODE),
                              (babilong, 20 + 1536, reasoning.OWN_MODE),
                              (longbio, longbio['infer_cfg']['inferencer']['max_out_len'] + 1536, reasoning.OWN_MODE)]:
        own = d['infer_cfg']['inferencer']['max_out_len']
        got, why = combinations.for_model(models['gpt-oss-20b'], d)
        assert not why and got['infer_cfg']['inferencer']['max_out_len'] == thinking
        assert got['infer_cfg']['decoding_mode'] == mode
        plain, _ = combinations.for_model(models['qwen3-30b-a3b-instruct-2507'], d)
        assert plain['infer_cfg']['inferencer']['max_out_len'] == own and 'decoding_mode' not in plain['infer_cfg']
    assert 'thinks' not in combinations.without_run_options(models['gpt-oss-20b'])   # never reaches the model class
