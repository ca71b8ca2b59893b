"""The engine decided in one place (opencompass_longctx.models.engine_plan): for every shipped model row and every band
the planner gives it, the serving wrapper starts exactly the engine the plan decided (backend, session_len,
max_batch_size, cp, prefix caching, RoPE), and its KV preflight passes on the memory the plan sized it for; the plan
file keeps its form (plan.summary.PlanSummary.to_dict)."""
import json
from unittest import mock

import pytest

from lmdeploy_real import babilong, lmdeploy_or_skip, model_dir, shipped
from opencompass_longctx import plan as P
from opencompass_longctx.models import lmdeploy as L
from opencompass_longctx.models.backend import PREFIX_CACHING_KEY
from opencompass_longctx.models.engine_plan import Band, EnginePlan, ModelRow, plan_engine
from opencompass_longctx.tables.tier_table import TIERS

BAND_TIERS = ('4k', '128k', '1m')       # one tier of each of the tier table's bands


def _started(monkeypatch):
    """What the wrapper hands OpenCompass's TurboMind model (whose __init__ would start LMDeploy's engine)."""
    seen = {}

    def start(self, path, engine_config=None, backend=None, max_seq_len=None, tokenizer_only=False, **kwargs):
        seen.update(engine_config=engine_config, backend=backend, max_seq_len=max_seq_len)
        self.pipe = object()
    monkeypatch.setattr(L.TurboMindModelwithChatTemplate, '__init__', start)
    return seen


@pytest.mark.parametrize('abbr', sorted(shipped()))
def test_the_wrapper_starts_the_engine_the_plan_decided(abbr, tmp_path, monkeypatch):
    lmdeploy_or_skip()
    from lmdeploy import turbomind
    seen = _started(monkeypatch)
    model = dict(shipped()[abbr], path=model_dir(tmp_path, abbr))
    datasets = [babilong(t) for t in BAND_TIERS if TIERS[t] <= TIERS[model['max_tier']]]
    with mock.patch.object(turbomind, 'is_available', return_value=True):     # as on the GPU machine
        plan = P.make_plan([{'models': [model], 'datasets': datasets}])
        assert len(plan['tasks']) == len(datasets)                             # one engine per band, no more
        for task in plan['tasks']:
            e = task.engine
            assert e.verdict == 'fits', (abbr, task.band, e.reason)
            monkeypatch.setenv('CUDA_VISIBLE_DEVICES', ','.join(map(str, range(e.tp))))
            kwargs = {k: v for k, v in task.model_cfg.items() if k != 'type'}
            wrapper = L.LongCtxTurboMindModel(**dict(kwargs, gpu_memory_gib=e.gpu_memory_gib,
                                                     continue_final_message=False))   # the preflight runs
            ec = seen['engine_config']
            assert (seen['backend'], wrapper.backend) == (e.backend, e.backend), (abbr, task.band)
            assert (ec['session_len'], ec['max_batch_size'], ec.get('cp', 1)) == \
                (e.session_len, e.max_batch_size, e.cp if e.cp and e.cp > 1 else 1), (abbr, task.band)
            assert seen['max_seq_len'] == e.session_len and task.model_cfg['batch_size'] == e.max_batch_size
            assert ec[PREFIX_CACHING_KEY] == e.prefix_cached, (abbr, task.band, e.prefix_caching)
            assert wrapper.rope == e.rope, (abbr, task.band)


def test_the_1m_band_of_a_turbomind_row_plans_cp_and_the_wrapper_passes_it_on(tmp_path, monkeypatch):
    """A row with 2 KV heads at tp=4: the band of 1m takes cp=2, and the engine the wrapper starts has it."""
    lmdeploy_or_skip()
    from lmdeploy import turbomind
    seen = _started(monkeypatch)
    two_kv = dict(architectures=['Qwen2ForCausalLM'], num_hidden_layers=28, num_attention_heads=28,
                  num_key_value_heads=2, hidden_size=3584, intermediate_size=18944, vocab_size=152064)
    (tmp_path / 'config.json').write_text(json.dumps(two_kv))
    model = dict(abbr='m', path=str(tmp_path), max_seq_len=1_010_000, run_cfg=dict(num_gpus=4),
                 engine_config=dict(tp=4, session_len=1_010_000, max_batch_size=1, cache_max_entry_count=0.7))
    with mock.patch.object(turbomind, 'is_available', return_value=True):
        (task,) = P.make_plan([{'models': [model], 'datasets': [babilong('1m')]}])['tasks']
        assert task.engine.cp == 2 and task.model_cfg['engine_config']['cp'] == 2
        monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0,1,2,3')
        L.LongCtxTurboMindModel(**dict({k: v for k, v in task.model_cfg.items() if k != 'type'},
                                       gpu_memory_gib=task.engine.gpu_memory_gib, continue_final_message=False))
    assert seen['engine_config']['cp'] == 2 and seen['engine_config']['max_batch_size'] == task.engine.max_batch_size


def test_one_typed_engine_plan_per_row_and_band():
    """plan_engine decides session_len (the band's need, capped at the window; a band inside the native window stops
    there), the RoPE and the caveats; task_model writes the engine into the task's model config; the row's window
    is kept for the planner but is no field of the plan file."""
    from opencompass_longctx.plan.loads import DatasetLoad
    qwen = shipped()['qwen2.5-7b-instruct']                    # native 32k, YaRN x4 in engines beyond it
    short = DatasetLoad('babilong_qa1_32k', 'babilong', '32k', 32000, 100, 3_200_000, False, 20, 32000, ratio=1.0)
    gpu = P.cost_model()['gpu_spec']
    e = plan_engine(qwen, Band((short,)), gpu)
    assert isinstance(e, EnginePlan) and e.session_len == 32768 and e.rope == {'type': 'default'}
    assert e.window == 131072 and e.shortened and 'window' not in e.as_dict()
    cfg = e.task_model(qwen)
    assert cfg['engine_config']['session_len'] == cfg['max_seq_len'] == 32768
    assert cfg['engine_config']['max_batch_size'] == cfg['batch_size'] == e.max_batch_size
    assert qwen['engine_config']['session_len'] == 131072             # the row itself is not changed
    long = DatasetLoad('babilong_qa1_128k', 'babilong', '128k', 128000, 100, 12_800_000, False, 20, 128000)
    e = plan_engine(qwen, Band((long,)), gpu)
    assert e.session_len == 131072 and e.rope['type'] == 'yarn' and not e.shortened
    row = ModelRow.of(shipped()['qwen2.5-7b-instruct-1m'])
    assert row.tp == 2 and row.window == 1010000 and row.recipe.caveats_at(524288) and not row.recipe.caveats_at(262144)


def test_the_plan_file_is_the_typed_summary_in_its_old_form(tmp_path):
    """Keys written only where they applied stay so: an HF model has no engine keys and its bands no RoPE; an
    LMDeploy model's bands have their RoPE and only the band that considered cp has 'cp'."""
    hf = dict(type='opencompass.models.HuggingFacewithChatTemplate', abbr='hf', path='some/hub-id', max_seq_len=8192,
              run_cfg=dict(num_gpus=0))
    qwen = shipped()['qwen2.5-7b-instruct-1m']
    datasets = [babilong('4k'), babilong('1m')]
    plan = P.make_plan([{'models': [hf], 'datasets': datasets[:1]}, {'models': [qwen], 'datasets': datasets}])
    summary = P.summarize(plan)
    assert isinstance(summary, P.PlanSummary) and list(summary.models) == ['hf', 'qwen2.5-7b-instruct-1m']
    data = json.loads(P.to_json(summary, plan))
    hf_m, qwen_m = data['models']['hf'], data['models']['qwen2.5-7b-instruct-1m']
    assert not {'backend', 'prefix_caching', 'layer_types'} & set(hf_m) and 'rope' not in hf_m['bands']['<= 32k']
    assert qwen_m['backend'][0] == 'turbomind' and set(qwen_m['bands']) == {'<= 32k', '128k-1m'}
    assert 'rope' in qwen_m['bands']['<= 32k'] and 'cp' not in qwen_m['bands']['<= 32k']
    assert qwen_m['bands']['128k-1m']['cp'][1].startswith('considered, not chosen')
    assert not {'cluster_requests', 'resume', 'left_out'} & set(data)              # the partitioner's, not here
    assert data['tasks'] == summary.tasks == 3 and data['gpu_hours'] == summary.gpu_hours
    assert data['task_list'][0]['engine'] is None
    assert [t['engine'] for t in data['task_list'][1:]] == [t.engine.as_dict() for t in plan['tasks'][1:]]
    summary.cluster_requests, summary.resume = [], {'resumed': False}
    assert {'cluster_requests', 'resume'} <= set(summary.to_dict())
