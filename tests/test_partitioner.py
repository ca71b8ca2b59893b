"""LongCtxPartitioner and the run plan, in process: bands, engine sizing, shards, costs and the GPU-free checks,
on the shipped leaderboard example and on small hand-made runs. (The real opencompass run through the
partitioner, with a test double of LMDeploy's engine, is tests/test_leaderboard.py.)"""
import json
import os
import sys

import pytest
from mmengine.config import Config

from conftest import REPO, run_opencompass
from opencompass_longctx import plan as P
from opencompass_longctx import combinations
from opencompass_longctx.models.lmdeploy import kv_bytes_per_token
from opencompass_longctx.run.partitioner import LongCtxPartitioner, RunCheckError
EXAMPLE = REPO / 'examples' / 'eval_longctx.py'


@pytest.fixture(scope='module')
def example():
    cfg = Config.fromfile(str(EXAMPLE))
    return cfg, combinations.expand(combinations.combinations_of(cfg))[0]   # each model's datasets, as the partitioner


def models_of(cfg):
    return {m['abbr']: m for m in cfg['models']}


def test_leaderboard_example_loads_each_model_at_most_three_times(example):
    cfg, combos = example
    plan = P.make_plan(combos)
    pairs = sum(len(c['models']) * len(c['datasets']) for c in combos)
    assert pairs > 700                                     # one task each with NaivePartitioner
    by_model = {}
    for t in plan['tasks']:
        by_model.setdefault(t.model, []).append(t)
    assert set(by_model) == set(cfg['RUN_MODELS'])
    for m, tasks in by_model.items():
        assert len(tasks) <= 3, m                          # one engine per band: <= 32k, 64k-128k, 256k-1m
        max_tier = P.parse_tier(models_of(cfg)[m]['max_tier']).sort_key
        assert 'max_tier' not in tasks[0].model_cfg        # a run option, not the model's
        assert len(tasks) == (3 if max_tier > 128000 else 2)
    # every model x dataset pair is in exactly one task, and nothing else is
    planned = sorted((t.model, d) for t in plan['tasks'] for d in t.datasets)
    wanted = sorted((c['models'][0]['abbr'], d['abbr']) for c in combos for d in c['datasets'])
    assert planned == wanted


def test_engines_are_sized_per_band(example):
    _, combos = example
    models = {c['models'][0]['abbr']: c['models'][0] for c in combos}
    for t in P.make_plan(combos)['tasks']:
        m, ec = models[t.model], t.model_cfg['engine_config']
        assert t.model_cfg['abbr'] == t.model                         # same abbr: same predictions and results
        assert ec['session_len'] == t.model_cfg['max_seq_len'] <= m['max_seq_len']
        assert ec['tp'] == t.model_cfg['run_cfg']['num_gpus'] == m['run_cfg']['num_gpus']
        assert t.model_cfg['batch_size'] == ec['max_batch_size'] >= 1
        # the batch fits the KV budget of the declared GPU (80 GB), by the preflight's own arithmetic
        e = t.engine
        arch = P.model_geometry(m)['config']
        assert e.kv_bytes_per_token == kv_bytes_per_token(arch)
        need = kv_bytes_per_token(arch, tp=ec['tp']) * ec['session_len'] * ec['max_batch_size']   # per GPU
        assert need <= e.kv_budget_gib_per_gpu * P.GIB and e.verdict == 'fits'
        # the longest prompt of the band (tier x headroom + template + answer) fits the engine, unless the model's
        # own window is the limit
        assert ec['session_len'] == min(m['max_seq_len'], max(P.dataset_load(d, m['max_out_len']).need_tokens
                                                              for d in t.dataset_cfgs))
        # datasets run shortest tier first
        sizes = [(P.parse_tier(d['tier']).sort_key, P.dataset_load(d).tokens_per_row) for d in t.dataset_cfgs]
        assert sizes == sorted(sizes)
    short = [t for t in P.make_plan(combos)['tasks'] if t.band == '<= 32k']
    long_ = [t for t in P.make_plan(combos)['tasks'] if t.band == '128k-1m']
    # the short band of every model runs many sequences at once; the long band fewer (the hybrid model, whose
    # KV is a quarter of a dense one's, most: models.geometry)
    assert min(t.engine.max_batch_size for t in short) >= 4
    batch = {(t.model, t.band): t.engine.max_batch_size for t in P.make_plan(combos)['tasks']}
    assert long_ and all(batch[(t.model, t.band)] <= batch[(t.model, '<= 32k')] for t in long_)
    assert max(long_, key=lambda t: t.engine.max_batch_size).model == 'qwen3-next-80b-a3b-instruct'


def test_cost_and_overhead_share(example):
    _, combos = example
    s = P.summarize(P.make_plan(combos))
    assert s.costed and s.gpu_hours > 0
    assert s.overhead_share < 0.05                         # engine starts + imports: well under 5% of the GPU time
    assert s.engine_starts == s.tasks == 12
    # every band's GPU-hours are the sum of its task's seconds x GPUs
    cm = P.cost_model()
    assert cm['gpu'] == 'A100-80GB' and cm['gpu_spec']['bf16_tflops'] == 312
    faster = P.summarize(P.make_plan(combos, cost=dict(gpu='H100-80GB')))
    assert faster.gpu_hours < s.gpu_hours
    with pytest.raises(P.PlanError, match='unknown gpu'):
        P.cost_model(dict(gpu='TPU'))
    with pytest.raises(P.PlanError, match='unknown cost-model entries'):
        P.cost_model(dict(prefil_mfu=0.5))


def _combo(models, datasets):
    return [{'models': models, 'datasets': datasets}]


def _babilong(tier, task='qa1', **kw):
    from opencompass_longctx.babilong.dataset import BabilongDataset
    return dict(type=BabilongDataset, abbr=f'babilong_{task}_{tier}', tier=tier, task=task,
                infer_cfg=dict(inferencer=dict(max_out_len=20)), **kw)


def _lmdeploy_model(abbr='m', tp=1, max_seq_len=140000, path='no-such-dir', **kw):
    return dict(type='opencompass_longctx.models.lmdeploy.LongCtxTurboMindModel', abbr=abbr, path=path,
                engine_config=dict(tp=tp, session_len=max_seq_len, max_batch_size=1, cache_max_entry_count=0.8),
                max_seq_len=max_seq_len, max_out_len=20, batch_size=1, run_cfg=dict(num_gpus=tp), **kw)


def test_bands_from_the_tier_table_or_given():
    edges = P.band_edges()
    assert [P.band_name(i, edges) for i in range(4)] == ['<= 32k', '32k-128k', '128k-1m', '> 1m']
    assert [P.band_of(t, edges) for t in ('0k', '250', '32k', '64k', '192k', '1m', '2m', '10m')] == \
        [0, 0, 0, 1, 2, 2, 3, 3]
    assert P.band_edges(['2k', '8k']) == [2000, 8000]
    for bad in (['8k', '2k'], ['4k', '4k'], ['4q'], []):
        with pytest.raises(P.PlanError):
            P.band_edges(bad)
    with pytest.raises(P.PlanError):
        LongCtxPartitioner(out_dir='x', bands=['1m', '32k'])


def test_shards_split_a_band_into_balanced_engines():
    datasets = [_babilong(t, q) for t in ('1k', '2k', '4k', '8k') for q in ('qa1', 'qa2', 'qa3')]
    model = _lmdeploy_model()
    plan = P.make_plan(_combo([model], datasets), bands=['8k'], shards=2)
    assert [(t.band, t.shard, t.shards) for t in plan['tasks']] == [('<= 8k', 0, 2), ('<= 8k', 1, 2)]
    a, b = plan['tasks']
    assert sorted(a.datasets + b.datasets) == sorted(d['abbr'] for d in datasets)
    assert abs(a.prompt_tokens - b.prompt_tokens) <= 8000 * 100   # balanced to within one dataset
    for t in plan['tasks']:
        sizes = [P.parse_tier(d['tier']).sort_key for d in t.dataset_cfgs]
        assert sizes == sorted(sizes)
    per_model = P.make_plan(_combo([model], datasets), bands=['8k'], shards={'m': {'<= 8k': 3}})
    assert len(per_model['tasks']) == 3
    with pytest.raises(P.PlanError, match='shards'):
        P.make_plan(_combo([model], datasets), shards=0)


def test_hugging_spec_models_are_only_grouped():
    hf = dict(type='opencompass.models.HuggingFacewithChatTemplate', abbr='hf', path='some/hub-id', max_seq_len=8192,
              max_out_len=20, batch_size=4, run_cfg=dict(num_gpus=0))
    plan = P.make_plan(_combo([hf], [_babilong('0k'), _babilong('64k'), _babilong('1k')]))
    assert [(t.band, t.datasets) for t in plan['tasks']] == [('<= 32k', ['babilong_qa1_0k', 'babilong_qa1_1k']),
                                                            ('32k-128k', ['babilong_qa1_64k'])]
    for t in plan['tasks']:
        assert t.engine is None and t.model_cfg == hf         # unchanged: no engine to size


def test_hub_ids_are_not_missing_directories_and_every_model_has_a_plan_row(monkeypatch):
    monkeypatch.delenv('LONGCTX_MODEL_ROOT', raising=False)
    hf = dict(type='opencompass_longctx.models.hf.LongCtxHFChatModel', abbr='qwen-hub', path='Qwen/Qwen2.5-7B-Instruct',
              max_seq_len=32768, max_out_len=20, batch_size=4, run_cfg=dict(num_gpus=0))
    from opencompass_longctx.demo.datasets import DemoNoLiMaDataset
    nolima = dict(type=DemoNoLiMaDataset, abbr='nolima_main_1k', tier='1k', tokenizer='Qwen/Qwen2.5-7B-Instruct',
                  path='somewhere')   # writes its stand-in data itself: no data problem
    assert P.check_run([hf], [nolima]) == []               # a hub id: resolved from the Hugging Face cache
    lmd = _lmdeploy_model(abbr='lmd', path='Qwen/Qwen2.5-7B-Instruct')  # LMDeploy's preflight needs a directory
    assert [p['where'] for p in P.check_run([lmd], [])] == [['lmd']]
    md = P.to_markdown(P.summarize(P.make_plan(_combo([hf], [_babilong('1k'), _babilong('64k')]))))
    rows = [line for line in md.splitlines() if line.startswith('| qwen-hub |')]
    assert rows == ['| qwen-hub | <= 32k | 1k | 1 | 1 | 0 | 1 | 100 | 100.0k (est.) | - | - | - | - |',
                    '| qwen-hub | 32k-128k | 64k | 1 | 1 | 0 | 1 | 100 | 6.4M (est.) | - | - | - | - |']
    assert 'GPU cost not estimated' in md


def test_band_engines_below_the_model_window_pass_it_to_the_inferencer(example):
    """A prompt the model holds but its band's engine does not is reported as an engine miss (see
    tests/test_inferencer.py), so each task of a band smaller than the model's window carries that window."""
    _, combos = example
    models = {c['models'][0]['abbr']: c['models'][0] for c in combos}
    for t in P.make_plan(combos)['tasks']:
        window = models[t.model]['max_seq_len']
        got = {d['infer_cfg']['inferencer'].get('model_window') for d in t.dataset_cfgs}
        assert got == ({window} if t.model_cfg['max_seq_len'] < window else {None}), (t.model, t.band)
    originals = [d for c in combos for d in c['datasets']]
    assert all('model_window' not in d['infer_cfg']['inferencer'] for d in originals)   # copies, not the run's


def test_a_dataset_built_before_is_planned_exactly(tmp_path):
    """The plan never builds a dataset; one built before (by any run: OpenCompass builds each dataset in its
    processes) left a record of its rows and prompt tokens, so the plan of a later run counts it exactly."""
    from opencompass.utils import build_dataset_from_cfg
    from opencompass_longctx.longbio.dataset import LongBioDataset
    d = dict(type=LongBioDataset, abbr='longbio_standard_1k', tier='1k', cell='standard', num_samples=3,
             reader_cfg=dict(input_columns=['system', 'user', 'prefix'], output_column='answer'),
             infer_cfg=dict(inferencer=dict(max_out_len=50)))
    before = P.dataset_load(d)
    assert not before.exact and before.rows == 3
    built = build_dataset_from_cfg(Config(d)).test          # as OpenCompass builds it in its processes
    after = P.dataset_load(d)
    assert after.exact and after.rows == len(built) == 3
    assert after.prompt_tokens == sum(built['prompt_tokens'])
    assert P.dataset_load(dict(d, num_samples=2)).exact is False    # other load arguments: another dataset


def test_predicted_datasets_are_not_planned_again(tmp_path):
    from opencompass.utils import get_infer_output_path
    model, ds = _lmdeploy_model(), [_babilong('1k'), _babilong('2k')]
    out = tmp_path / 'predictions'
    done = get_infer_output_path(model, ds[0], str(out))
    os.makedirs(os.path.dirname(done))
    open(done, 'w').write('{}')
    plan = P.make_plan(_combo([model], ds), out_dir=str(out))
    assert [t.datasets for t in plan['tasks']] == [['babilong_qa1_2k']] and len(plan['skipped']) == 1


def test_a_nested_config_json_is_sized_and_costed(tmp_path):
    """A multimodal-style config.json (the language model under text_config) gives the same layers and width as
    the KV-cache preflight reads, so the band is costed, not left out of the GPU-hours."""
    text = dict(num_hidden_layers=28, hidden_size=3584, num_attention_heads=28, num_key_value_heads=4,
                intermediate_size=18944, vocab_size=152064)
    d = tmp_path / 'nested'
    d.mkdir()
    (d / 'config.json').write_text(json.dumps({'architectures': ['X'], 'text_config': text}))
    model = _lmdeploy_model(path=str(d))
    cm = P.cost_model()
    engine = P.size_engine(model, 32768, cm['gpu_spec'])
    assert engine.verdict == 'fits' and (engine.layers, engine.hidden) == (28, 3584)
    load = P.DatasetLoad('b', 'babilong', '32k', 32000, 10, 320000, False, 20, 32000)
    assert P.task_seconds([load], engine, cm)['costed']


def test_a_band_the_gpu_cannot_hold_says_so():
    from opencompass_longctx.tables.lmdeploy_models import LONGCTX_LMDEPLOY_MODELS
    (row,) = [r for r in LONGCTX_LMDEPLOY_MODELS if r['abbr'] == 'qwen2.5-7b-instruct']
    model = _lmdeploy_model(abbr='qwen2.5-7b-instruct', max_seq_len=1100000,
                            declared_geometry=dict(arch=row['arch']))   # the table's geometry, as the config carries it
    assert P.size_engine(dict(model, declared_geometry=None), 1100000, dict(memory_gib=80)).verdict == 'unchecked'
    plan = P.make_plan(_combo([model], [_babilong('1m')]), cost=dict(gpu='A100-80GB'))
    (t,) = plan['tasks']
    assert t.engine.verdict == 'does not fit' and 'raise tp' in t.engine.reason
    assert t.engine.geometry == 'model table'
    md = P.to_markdown(P.summarize(plan))
    assert 'does not fit' in md and 'raise tp or quantise the KV cache' in md
    # a real run stops before any task (the preflight would stop this one after minutes of loading)
    (problem,) = P.engine_problems(plan)
    assert problem['where'] == ['qwen2.5-7b-instruct'] and 'does not fit the GPU' in problem['problem']


def test_checks_find_every_problem_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.delenv('LONGCTX_MODEL_ROOT', raising=False)
    from opencompass_longctx.nolima.dataset import NoLiMaDataset
    monkeypatch.chdir(tmp_path)
    model = _lmdeploy_model(abbr='m1', path='models/m1')     # where the shipped configs look without the root
    empty = tmp_path / 'empty-model'
    empty.mkdir()
    model2 = _lmdeploy_model(abbr='m2', path=str(empty))
    nolima = [dict(type=NoLiMaDataset, abbr=f'nolima_main_{t}', tier=t, tokenizer=str(tmp_path / 'no-tokenizer'),
                   path=str(tmp_path / 'nolima')) for t in ('1k', '2k')]
    babilong = [_babilong(t, path=str(tmp_path / 'babilong')) for t in ('0k', '1k')]
    from opencompass_longctx.demo.datasets import DemoBabilongDataset
    babilong_demo = [dict(_babilong('2k', path=str(tmp_path / 'demo')), type=DemoBabilongDataset)]
    unknown = [_babilong('4k', path=str(tmp_path / 'demo'), num_sample=3)]     # a misspelt option
    problems = P.check_run([model, model2], nolima + babilong + babilong_demo + unknown)
    text = {p['problem'].split('\n')[0]: p['where'] for p in problems}
    assert text["model directory 'models/m1' does not exist"] == ['m1']
    assert any(k.startswith('$LONGCTX_MODEL_ROOT is not set') for k in text)
    assert text[f"model directory {str(empty)!r} has no config.json (not a Hugging Face model directory)"] == ['m2']
    tok = [w for k, w in text.items() if 'no-tokenizer' in k and 'does not exist' in k]
    assert tok == [['nolima_main_1k', 'nolima_main_2k']]          # one problem, every dataset it affects
    nolima_data = [w for k, w in text.items() if k.startswith('DataNotFoundError: NoLiMa data')]
    assert nolima_data == [['nolima_main_1k', 'nolima_main_2k']]
    bab = [w for k, w in text.items() if 'babilong' in k.lower() and 'not found' in k]
    assert sorted(bab) == [['babilong_qa1_0k', 'babilong_qa1_1k'], ['babilong_qa1_4k']]   # not the demo type's 2k
    assert text["BabilongDataError: BabilongDataset has no option 'num_sample': did you mean num_samples?"] == [
        'babilong_qa1_4k']
    # the report says how to get the data
    md = P.to_markdown(P.summarize(P.make_plan(_combo([model], babilong)), problems))
    assert 'huggingface-cli download RMT-team/babilong' in md and 'export LONGCTX_MODEL_ROOT' in md


def test_a_tier_babilong_does_not_publish_is_a_problem_only_when_it_can_be_neither_read_nor_made(tmp_path,
                                                                                                   monkeypatch):
    """As the loader: a generated file under path= is read (no bAbI/PG19 needed); without one, the tier is made
    from $BABI_DIR and $PG19_DIR; only with neither is it a problem (which stops a real run)."""
    from opencompass_longctx.demo import babilong_data
    monkeypatch.delenv('BABI_DIR', raising=False)
    monkeypatch.delenv('PG19_DIR', raising=False)
    written = tmp_path / 'generated'
    babilong_data.write(str(written), tiers=['3k'], tasks=['qa1'])   # the layout longctx-babilong-generate writes
    assert P.check_run([], [_babilong('3k', path=str(written))]) == []
    nothing = _babilong('3k', path=str(tmp_path / 'nothing'))
    problems = P.check_run([], [nothing])
    assert [p['where'] for p in problems] == [['babilong_qa1_3k']]
    text = problems[0]['problem']
    assert 'does not publish 3k' in text and '$BABI_DIR (not set)' in text and '$PG19_DIR (not set)' in text
    monkeypatch.setenv('BABI_DIR', str(written / 'inputs' / 'babi'))
    monkeypatch.setenv('PG19_DIR', str(written / 'inputs' / 'books'))
    assert P.check_run([], [nothing]) == []
    generated = _babilong('3k', sample_source='generated', path=str(tmp_path / 'nothing'))
    assert P.check_run([], [generated]) == []
    monkeypatch.delenv('PG19_DIR')
    assert 'is generated: it needs background_dir / $PG19_DIR (not set)' in P.check_run([], [generated])[0]['problem']


def test_a_real_run_stops_before_any_task_a_dry_run_reports(tmp_path, monkeypatch):
    model = _lmdeploy_model(path=str(tmp_path / 'missing'))
    cfg = Config(dict(models=[model], datasets=[_babilong('1k', path=str(tmp_path / 'babilong'))],
                      work_dir=str(tmp_path / 'run')))
    part = LongCtxPartitioner(out_dir=str(tmp_path / 'run' / 'predictions'))
    monkeypatch.setattr(sys, 'argv', ['opencompass', 'eval.py'])
    with pytest.raises(RunCheckError, match=r"problem\(s\) found before any task started"):
        part(cfg)
    monkeypatch.setattr(sys, 'argv', ['opencompass', 'eval.py', '--dry-run'])
    assert len(part(cfg)) == 1
    plan = json.load(open(tmp_path / 'run' / 'plan' / 'longctx_plan.json'))
    assert len(plan['problems']) >= 2 and plan['tasks'] == 1
    warn = LongCtxPartitioner(out_dir=str(tmp_path / 'run' / 'predictions'), on_problem='warn')
    monkeypatch.setattr(sys, 'argv', ['opencompass', 'eval.py'])
    assert len(warn(cfg)) == 1


@pytest.mark.e2e
def test_dry_run_of_the_leaderboard_example_prints_the_plan(tmp_path):
    proc = run_opencompass([str(EXAMPLE), '--dry-run'], tmp_path, {'LONGCTX_MODEL_ROOT': str(tmp_path / 'models')})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert 'Partitioned into 12 tasks.' in out
    assert '12 inference tasks, 12 model loads (engine starts)' in out and 'GPU-hours' in out
    (plan,) = [os.path.join(dp, f) for dp, _, fs in os.walk(tmp_path / 'outputs') for f in fs
               if f == 'longctx_plan.json']
    data = json.load(open(plan))
    assert data['engine_starts'] == 12 and data['overhead_share'] < 0.05
    assert all(m['engine_starts'] <= 3 for m in data['models'].values())
    # no data and no models here: every problem is listed, none is a traceback
    assert any('does not exist' in p['problem'] for p in data['problems'])
    assert 'Traceback' not in out
