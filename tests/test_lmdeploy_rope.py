"""RoPE per model row and tier band, as LMDeploy 0.18 itself would compute it: the partitioner plans each band's
engine, LongCtxTurboMindModel's rule gives the engine keys, and LMDeploy's own code (``get_model_arch``,
``override_hf_config`` as its TurboMind converter applies ``hf_overrides``, TurboMind's ``parse_rope_param``; the
PyTorch engine's ``build_rotary_params`` for GLM) reads the row's published config.json with them. The factor,
type and original length it finds must be the recipe the row states (and the plan prints)."""
import importlib.util
import json
import math
import sys
import types
from pathlib import Path
from unittest import mock

import pytest

from lmdeploy_real import DATA, babilong, lmdeploy_or_skip, model_dir, shipped, without_zmq
from opencompass_longctx import plan as P
from opencompass_longctx.models import recipe
def turbomind_parse_rope_param():
    """TurboMind's parse_rope_param from lmdeploy/turbomind/models/utils.py. Its module imports TurboMind's CUDA
    builders, which cannot load without a GPU: those two imports get empty stand-ins, the function is LMDeploy's."""
    lmdeploy = lmdeploy_or_skip()
    import lmdeploy.turbomind  # noqa: F401 (the package imports on CPU; its _tm is None there)
    tm = Path(lmdeploy.__file__).parent / 'turbomind'
    models = types.ModuleType('lmdeploy.turbomind.models')
    models.__path__ = [str(tm / 'models')]
    builders = types.ModuleType('lmdeploy.turbomind.builders')
    builders._act_type_id = None
    linear = types.ModuleType('lmdeploy.turbomind.builders.linear')
    linear.Linear = linear._build_linear = linear._dequant_linear = None
    stubs = {'lmdeploy.turbomind.models': models, 'lmdeploy.turbomind.builders': builders,
             'lmdeploy.turbomind.builders.linear': linear}
    with mock.patch.dict(sys.modules, stubs):
        spec = importlib.util.spec_from_file_location('lmdeploy.turbomind.models.utils', tm / 'models' / 'utils.py')
        utils = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(utils)
    return utils


def lmdeploy_rope(path, engine_config, backend):
    """{'type', 'factor', 'original'} as LMDeploy's engine of ``backend`` derives it for this model directory."""
    from lmdeploy.archs import get_model_arch
    from lmdeploy.pytorch.config import override_hf_config
    _, cfg = get_model_arch(path)
    if engine_config.get('hf_overrides'):
        override_hf_config(cfg, engine_config['hf_overrides'])     # as turbomind/converter.py:253-255 does
    if backend == 'pytorch':
        with without_zmq():
            from lmdeploy.pytorch.nn.rotary_embedding import build_rotary_params
        params = build_rotary_params(cfg)
        out = {'type': params['emb_type'].name.lower(), 'factor': params.get('scaling_factor', 1.0)}
        if getattr(cfg, 'rope_ratio', None):               # ChatGLMModel: base 10000 x rope_ratio (chatglm2.py:564)
            out['base'] = 10000 * cfg.rope_ratio
        return out
    utils = turbomind_parse_rope_param()
    head_dim = getattr(cfg, 'head_dim', None) or cfg.hidden_size // cfg.num_attention_heads
    rope, _ = utils.parse_rope_param(utils.source_model_config(cfg), head_dim)
    original = (rope.original_max_position_embeddings if rope.type == 'llama3'
                else rope.max_position_embeddings if rope.type in ('yarn', 'dynamic') else None)
    return {'type': rope.type, 'factor': rope.factor, 'original': original, 'attention_factor': rope.attention_factor}


# each row's bands: the tiers planned, and what LMDeploy must apply in each band's engine (the row's recipe)
EXPECTED = {
    'qwen2.5-7b-instruct': {'32k': ('default', 1.0, None), '128k': ('yarn', 4.0, 32768)},
    'qwen2.5-7b-instruct-1m': {'32k': ('default', 1.0, None), '128k': ('default', 1.0, None),
                               '1m': ('default', 1.0, None)},
    'qwen2.5-14b-instruct-1m': {'32k': ('default', 1.0, None), '1m': ('default', 1.0, None)},
    'internlm2_5-7b-chat-1m': {'32k': ('dynamic', 2.5, 262144), '1m': ('dynamic', 2.5, 262144)},
    'internlm3-8b-instruct': {'32k': ('dynamic', 6.0, 32768), '128k': ('dynamic', 6.0, 32768)},
    'llama-3.1-8b-instruct': {'32k': ('llama3', 8.0, 8192), '128k': ('llama3', 8.0, 8192)},
    'glm-4-9b-chat-1m': {'32k': ('default', 1.0, None), '1m': ('default', 1.0, None)},
}


@pytest.mark.parametrize('abbr', sorted(EXPECTED))
def test_rope_per_row_and_band_is_what_lmdeploy_computes(abbr, tmp_path):
    lmdeploy_or_skip()
    model = shipped()[abbr]
    path = model_dir(tmp_path, abbr)
    tiers = EXPECTED[abbr]
    plan = P.make_plan([{'models': [model], 'datasets': [babilong(t) for t in tiers]}])
    assert len(plan['tasks']) == len(tiers)                       # one band per tier here
    from opencompass_longctx.models.backend import choose_backend
    from opencompass_longctx.models.engine import read_model_config
    backend, _ = choose_backend(read_model_config(path), model['backend'])
    for task, (tier, (kind, factor, original)) in zip(plan['tasks'], tiers.items()):
        assert task.tiers == [tier]
        cfg = task.model_cfg
        # the engine keys LongCtxTurboMindModel builds for this band's session_len
        engine = recipe.band_engine_config(cfg, cfg['engine_config'])
        got = lmdeploy_rope(path, engine, backend)
        assert (got['type'], pytest.approx(got['factor']), got.get('original')) == (kind, factor, original), tier
        stated = task.engine.rope                              # what the plan prints for the band
        assert stated['type'] == kind and stated.get('factor', 1.0) == factor and stated.get('original') == original
        if kind == 'yarn':                                         # TurboMind's YaRN attention scale for x4
            assert got['attention_factor'] == pytest.approx(0.1 * math.log(4.0) + 1.0)
        if backend == 'pytorch':
            assert got['base'] == stated['base'] == 1e8


def test_qwen_recipe_also_as_transformers_5_shapes_the_config():
    """transformers 5 keeps RoPE in rope_parameters (with rope_theta), which LMDeploy reads before rope_scaling:
    the row's override gives YaRN x4 at the model's own base either way (config as a dict: LMDeploy accepts both)."""
    lmdeploy_or_skip()
    from lmdeploy.pytorch.config import override_hf_config
    row = shipped()['qwen2.5-7b-instruct']
    cfg = json.loads((DATA / 'qwen2.5-7b-instruct.json').read_text())
    v5 = dict(cfg, rope_parameters={'rope_type': 'default', 'rope_theta': cfg.pop('rope_theta')})
    override_hf_config(v5, row['long_context']['hf_overrides'])
    rope, _ = turbomind_parse_rope_param().parse_rope_param(v5, 128)
    assert (rope.type, rope.factor, rope.max_position_embeddings, rope.base) == ('yarn', 4.0, 32768, 1e6)


def test_the_old_qwen_override_gave_factor_one(tmp_path):
    """The defect this guards: the override without max_position_embeddings, as LMDeploy reads it."""
    lmdeploy_or_skip()
    path = model_dir(tmp_path, 'qwen2.5-7b-instruct')
    old = {'hf_overrides': {'rope_scaling': {'rope_type': 'yarn', 'factor': 4.0,
                                             'original_max_position_embeddings': 32768}}}
    got = lmdeploy_rope(path, old, 'turbomind')
    assert (got['type'], got['factor']) == ('yarn', 1.0) and got['attention_factor'] == pytest.approx(1.1386, abs=1e-4)


def test_long_context_recipe_only_beyond_the_native_window():
    row = shipped()['qwen2.5-7b-instruct']
    short = recipe.band_engine_config(row, dict(row['engine_config'], session_len=32768))
    long = recipe.band_engine_config(row, dict(row['engine_config'], session_len=32769))
    assert 'hf_overrides' not in short and long['hf_overrides']['max_position_embeddings'] == 131072
    assert recipe.rope_text(recipe.effective_rope(row, 131072)) == 'yarn x4 (original 32768)'
    assert recipe.rope_text(recipe.effective_rope(row, 32768)) == 'none'


def test_published_configs_match_the_rows_geometry():
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    for row in LONGCTX_LMDEPLOY_MODELS:
        published = json.loads((DATA / f"{row['abbr']}.json").read_text())
        assert {k: v for k, v in row['arch'].items() if k != 'params'} == \
            {k: published[k] for k in row['arch'] if k != 'params'}, row['abbr']


def test_a_band_within_the_native_window_stops_at_it():
    """The <= 32k band of a 32k model: its engine would be longer than 32768 only for tokenizer headroom; it gets no
    static scaling, so it must not serve past the native window unscaled: session_len is the native window, and the
    inferencer is told the model's window (a longer prompt is ENGINE_TOO_SMALL, reported, not sent)."""
    model = shipped()['qwen2.5-7b-instruct']
    (task,) = P.make_plan([{'models': [model], 'datasets': [babilong('32k')]}])['tasks']
    assert task.model_cfg['engine_config']['session_len'] == task.model_cfg['max_seq_len'] == 32768
    assert task.engine.rope == {'type': 'default'}
    assert 'hf_overrides' not in recipe.band_engine_config(task.model_cfg, task.model_cfg['engine_config'])
    (d,) = task.dataset_cfgs
    assert d['infer_cfg']['inferencer']['model_window'] == model['max_seq_len'] > 32768


def test_turbomind_drops_gpt_oss_yarn_truncate_and_every_tier_is_marked():
    """gpt-oss's config.json asks for YaRN without rounding the correction range (truncate: false); TurboMind 0.18's
    parse_rope_param has no such field (its rope setup rounds, as the original YaRN). The row marks every tier.
    When LMDeploy reads the field this test fails: drop the caveat then."""
    published = json.loads((DATA / 'gpt-oss-20b.json').read_text())
    assert published['rope_scaling']['truncate'] is False
    utils = turbomind_parse_rope_param()
    cfg = types.SimpleNamespace(**published)
    rope, _ = utils.parse_rope_param(utils.source_model_config(cfg), published['head_dim'])
    assert (rope.type, rope.factor) == ('yarn', 32.0)
    assert not any('truncate' in name for name in vars(rope))
    row = shipped()['gpt-oss-20b']
    for tier_tokens in (0, 4096, 131072):
        assert any('truncate=false' in r for r in recipe.caveats(row, tier_tokens))
