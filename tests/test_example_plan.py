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
    reasons = {x['reason'] for x in left}
    assert any(r.startswith('above max_tier ') for r in reasons)
    assert 'LongBioBench multihop_5 needs 1773 tokens + reserve_tokens 512 > 2048 at 2k' in reasons
    assert all(r.startswith(('above max_tier ', 'LongBioBench ')) for r in reasons)
    assert f'Left out ({len(left)} model x dataset pairs of the config' in log
    assert all(x['dataset'] not in per_model[x['model']] for x in left)
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
    from opencompass_longctx.summarizers.longctx import table_inputs
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
