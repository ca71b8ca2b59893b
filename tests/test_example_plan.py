"""The leaderboard example as data: examples/eval_longctx.py lists models, datasets, a summarizer and runners,
and the package works out each model's datasets (opencompass_longctx.combinations). Its run is the run the example
made by hand before (tests/configs/leaderboard_by_hand.py): the same plan from two real `opencompass --dry-run`
runs, and the same datasets per model for the eval stage and the tier table."""
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mmengine.config import Config

from opencompass_longctx import combinations
REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / 'examples' / 'eval_longctx.py'
BY_HAND = REPO / 'tests' / 'configs' / 'leaderboard_by_hand.py'


def _abbrs(combos):
    from opencompass.utils import dataset_abbr_from_cfg, model_abbr_from_cfg
    return {model_abbr_from_cfg(m): [dataset_abbr_from_cfg(d) for d in c['datasets']] for c in combos
            for m in c['models']}


@pytest.fixture(scope='module')
def plans(tmp_path_factory):
    """Both configs' plan JSON, from two `opencompass --dry-run` runs side by side."""
    exe = Path(sys.executable).with_name('opencompass')
    cmd = [str(exe)] if exe.exists() else [sys.executable, '-m', 'opencompass.cli.main']
    runs = {}
    home = tmp_path_factory.mktemp('home')     # one home and cache for both: the problems name the same paths
    env = dict(os.environ, LONGCTX_CACHE_DIR=str(home / 'cache'), HOME=str(home), HF_HUB_OFFLINE='1')
    env.pop('LONGCTX_MODEL_ROOT', None)
    for name, config in (('example', EXAMPLE), ('by_hand', BY_HAND)):
        work = tmp_path_factory.mktemp(name)
        runs[name] = (work, subprocess.Popen(cmd + [str(config), '--dry-run', '-w', str(work / 'out')], cwd=work,
                                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    out = {}
    for name, (work, proc) in runs.items():
        log, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, log[-3000:]
        (path,) = glob.glob(str(work / 'out' / '*' / 'plan' / 'longctx_plan.json'))
        out[name] = (json.load(open(path)), log)
    return out


@pytest.mark.e2e
def test_the_example_plans_the_run_made_by_hand(plans):
    (new, log), (old, _) = plans['example'], plans['by_hand']
    left = new.pop('left_out')
    assert 'left_out' not in old                       # the by-hand config left them out itself
    assert new == old                                  # every figure, task and dataset of the plan
    assert new['tasks'] == len(new['task_list']) == new['engine_starts'] > 5 and new['gpu_hours'] > 100
    per_model = {}
    for t in new['task_list']:
        per_model.setdefault(t['model'], []).extend(t['datasets'])
    assert sorted(per_model) == sorted(m for m in {t['model'] for t in old['task_list']})
    # what the package left out, and the plan says so
    fitted = [x for x in left if x.get('kept')]
    left = [x for x in left if not x.get('kept')]
    reasons = {x['reason'] for x in left}
    assert any(r.startswith('above max_tier ') for r in reasons)
    assert 'LongBioBench multihop_5 needs 1773 tokens + reserve_tokens 512 > 2048 at 2k' in reasons
    assert all(r.startswith(('above max_tier ', 'LongBioBench ')) for r in reasons)
    assert f'Left out ({len(left)} model x dataset pairs of the config' in log
    assert all(x['dataset'] not in per_model[x['model']] for x in left)
    # and what it built to fit a model's window (128k LongBioBench for gpt-oss's 1,536 reasoning tokens, the n=10
    # cell's 500 new tokens in a 131,072 window), kept in the run
    assert f"Built to fit the model's window ({len(fitted)} model x dataset pairs" in log
    assert {(x['model'], x['dataset']) for x in fitted} >= {('gpt-oss-20b', 'longbio_standard_128k'),
                                                           ('llama-3.1-8b-instruct', 'longbio_multi_standard_10_128k')}
    assert all(x['dataset'] in per_model[x['model']] and x['reason'].startswith('prompts built to at most ')
               for x in fitted)
    assert all(a.startswith('nolima_') == ('@' in a) for ds in per_model.values() for a in ds)


def test_eval_stage_and_tier_table_get_the_same_datasets_per_model():
    new, old = Config.fromfile(str(EXAMPLE)), Config.fromfile(str(BY_HAND))
    expanded, _ = combinations.expand(combinations.combinations_of(new))
    by_hand = old['model_dataset_combinations']
    assert _abbrs(expanded) == _abbrs(by_hand)
    # NoLiMa in the evaluated model's own tokenizer, as by hand
    for c_new, c_old in zip(expanded, by_hand):
        tok = {d['abbr']: d.get('tokenizer') for d in c_old['datasets']}
        assert all(tok[d['abbr']] == d.get('tokenizer') for d in c_new['datasets'])
    # the summarizer's view of the run: the same datasets and the same expected (model, dataset) pairs
    from opencompass_longctx.leaderboard.runs import table_inputs
    models_n, abbrs_n, expected_n = table_inputs(combinations.resolved_config(new))
    models_o, abbrs_o, expected_o = table_inputs(old)
    assert models_n == models_o and sorted(expected_n) == sorted(expected_o)
    # the table's datasets: those some model runs (the by-hand list also names datasets no chosen model holds)
    assert sorted(abbrs_n) == sorted({a for _, a in expected_o}) and set(abbrs_n) <= set(abbrs_o)
    # OpenCompass's eval partitioner over the example: one task per the by-hand config's (model, dataset) chunks
    from opencompass.partitioners import NaivePartitioner
    from opencompass_longctx.run.partitioner import LongCtxEvalPartitioner
    tasks_n = LongCtxEvalPartitioner(out_dir='/nonexistent', n=100)(dict(new, work_dir='w'))
    tasks_o = NaivePartitioner(out_dir='/nonexistent', n=100)(dict(old, work_dir='w'))
    pairs = [sorted((m['abbr'], d['abbr']) for t in ts for m, ds in zip(t['models'], t['datasets']) for d in ds)
             for ts in (tasks_n, tasks_o)]
    assert pairs[0] == pairs[1] and len(pairs[0]) == sum(len(v) for v in _abbrs(by_hand).values())


def test_run_options_are_checked_and_kept_from_the_model():
    model = dict(abbr='m', path='/models/m', max_tier='32k', type='X')
    nolima = dict(abbr='nolima_main_4k', tier='4k', tokenizer='model')
    got, why = combinations.for_model(model, nolima)
    assert why == '' and got['tokenizer'] == '/models/m' and got['abbr'] == 'nolima_main_4k@m'
    assert combinations.for_model(model, dict(nolima, tier='64k')) == (None, 'above max_tier 32k')
    assert combinations.for_model(dict(abbr='any'), dict(abbr='b', tier='1m'))[1] == ''   # no max_tier: all tiers
    with pytest.raises(combinations.SelectionError, match="tokenizer='model' needs the model's tokenizer"):
        combinations.for_model(dict(abbr='tiny'), nolima)
    with pytest.raises(combinations.SelectionError, match="max_tier '12q'"):
        combinations.for_model(dict(model, max_tier='12q'), nolima)
    assert 'max_tier' not in combinations.without_run_options(model)


def test_every_costed_cell_of_every_model_row_is_sendable():
    """Every dataset config of the example with every model row of the table (the 1M rows too): each pair the plan
    costs has its longest prompt (the benchmark's tier arithmetic) + the chat template + max_out_len within the
    model's window; LongBioBench 1m is built to Qwen2.5-1M's 1,010,000-token window rather than left out, and a pair
    that cannot be fitted is left out with the reason."""
    from opencompass_longctx import plan as P
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    from opencompass_longctx.models.window import CHAT_TEMPLATE_TOKENS
    from opencompass_longctx.spec import spec_of
    cfg = Config.fromfile(str(EXAMPLE))
    rows = [dict(m) for m in lmdeploy_longctx_models]
    assert {m['abbr'] for m in rows} > set(cfg['RUN_MODELS'])
    combos, left = combinations.expand([dict(models=rows, datasets=cfg['datasets'])])
    plan = P.make_plan(combos)
    windows = {m['abbr']: m['max_seq_len'] for m in rows}
    costed = 0
    for t in plan['tasks']:
        assert t.engine is not None and t.seconds['costed']
        for d in t.dataset_cfgs:
            spec = spec_of(d)
            load = P.dataset_load(d, t.model_cfg.get('max_out_len'))
            longest = max(load.row_tokens_estimate, load.tokens_per_row)
            assert longest + CHAT_TEMPLATE_TOKENS + load.max_out_len <= windows[t.model], (t.model, d['abbr'])
            assert spec.estimate_prompt_tokens(d, load.tier_tokens) == load.row_tokens_estimate
            costed += 1
    assert costed > 1000
    # LongBioBench 1m for Qwen2.5-1M: built to its window, kept and costed
    qwen1m = next(c for c in combos if c['models'][0]['abbr'] == 'qwen2.5-7b-instruct-1m')
    lb1m = [d for d in qwen1m['datasets'] if d['abbr'].startswith('longbio_') and d['tier'] == '1m']
    assert len(lb1m) == 15 and all(d['max_prompt_tokens'] <= 1010000 - CHAT_TEMPLATE_TOKENS - 50 for d in lb1m)
    standard = next(d for d in lb1m if d['cell'] == 'standard')
    assert standard['max_prompt_tokens'] == 1010000 - CHAT_TEMPLATE_TOKENS - 50
    fitted = {(x['model'], x['dataset']) for x in left if x.get('kept')}
    assert ('qwen2.5-14b-instruct-1m', 'longbio_rank_5_1m') in fitted
    # a model with a 1,048,576 window keeps the tier's own budget where it fits (GLM-4-1M, 50 new tokens)
    glm = next(c for c in combos if c['models'][0]['abbr'] == 'glm-4-9b-chat-1m')
    assert 'max_prompt_tokens' not in next(d for d in glm['datasets'] if d['abbr'] == 'longbio_standard_1m')


def test_a_pair_that_cannot_be_fitted_is_left_out_with_the_reason():
    """BABILong's prompts are as long as its tier: a window below it leaves the pair out (N/A in the plan)."""
    from opencompass_longctx.configs.datasets.babilong.babilong_128k_gen import babilong_datasets
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    model = dict(next(m for m in lmdeploy_longctx_models if m['abbr'] == 'llama-3.1-8b-instruct'),
                 max_seq_len=120000)
    got, why = combinations.for_model(model, dict(babilong_datasets[0]))
    assert got is None and why.startswith('N/A: its longest prompt (128,000 tokens) + 128 for the chat template')
    assert 'exceed the window of llama-3.1-8b-instruct (120,000)' in why
    # a model the plan does not cost (no engine_config) keeps it: the run's over-length check decides there
    assert combinations.for_model(dict(abbr='hf', max_seq_len=1000), dict(babilong_datasets[0]))[1] == ''


def test_a_measured_tokenizer_ratio_that_puts_prompts_over_the_window_is_a_problem():
    """The window check without tokenizers takes model tokens as data tokens; where the plan measures the model's
    own tokenizer and its prompts come out longer than the window, the plan says so (a problem: the run does not
    start engines for prompts that would be held back)."""
    from opencompass_longctx.configs.models.lmdeploy_longctx import lmdeploy_longctx_models
    from opencompass_longctx.plan.checks import engine_problems
    from opencompass_longctx.plan.cost import cost_model
    from opencompass_longctx.plan.grouping import _task
    from opencompass_longctx.plan.loads import DatasetLoad
    model = next(dict(m) for m in lmdeploy_longctx_models if m['abbr'] == 'internlm2_5-7b-chat-1m')
    fits = DatasetLoad('longbio_standard_1m', 'longbio', '1m', 1048576, 100, 10 ** 8, False, 50, 1048064, ratio=0.99)
    over = DatasetLoad('longbio_rank_2_1m', 'longbio', '1m', 1048576, 100, 10 ** 8, False, 100, 1048064, ratio=1.04)
    task = _task(model, model['abbr'], '128k-1m', 0, 1, [({}, fits), ({}, over)], cost_model(), 64, True)
    (line,) = task.engine.over_window
    assert line.startswith('longbio_rank_2_1m (1,048,064 data tokens x 1.040 + 128 + 100 = 1,090,215 > 1,048,576)')
    (problem,) = engine_problems({'tasks': [task]})
    assert problem['where'] == ['internlm2_5-7b-chat-1m'] and 'would be held back as over-length' in problem['problem']
