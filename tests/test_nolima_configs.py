"""NoLiMa config files: one per tier over one base, plain data that OpenCompass can parse and dump (that every
NoLiMa tier has its file, differing only in TIER, is checked with the other benchmarks in test_configs.py)."""
import pytest
from mmengine.config import Config

from conftest import REPO
from opencompass_longctx.tiers import parse_tier
TIERS = ['250', '500', '1k', '2k', '4k', '8k', '16k', '32k', '64k', '128k']
CFG = REPO / 'opencompass_longctx' / 'configs'


@pytest.mark.parametrize('tier', TIERS)
def test_tier_config(tier):
    cfg = Config.fromfile(str(CFG / 'datasets' / 'nolima' / f'nolima_{tier}_gen.py'))
    (main,) = cfg['nolima_datasets']
    assert main['tier'] == tier and main['abbr'] == f'nolima_main_{tier}' and main['needle_set'] == 'main'
    assert parse_tier(tier).tokens(1000) in (250, 500) or parse_tier(tier).tokens(1000) == int(tier[:-1]) * 1000
    variants = cfg['nolima_all_variants']
    assert [d['needle_set'] for d in variants] == ['main', 'hard', 'cot', 'mc', 'direct', 'distractor']
    assert len({d['abbr'] for d in variants}) == 6 and all(d['tier'] == tier for d in variants)
    infer = main['infer_cfg']
    assert infer['inferencer']['max_out_len'] == 192 and infer['inferencer']['overlength'] == 'skip'
    assert 'LongCtxGenInferencer' in str(infer['inferencer']['type'])
    (system,) = infer['prompt_template']['template']['begin']
    assert system == dict(role='SYSTEM', fallback_role='HUMAN', prompt='You are a helpful assistant')
    assert infer['prompt_template']['template']['round'] == [dict(role='HUMAN', prompt='{prompt}')]
    assert main['eval_cfg']['evaluator']['metric'] == 'contains'
    assert main['reader_cfg'] == dict(input_columns=['prompt'], output_column='answer')


def test_summarizer_config():
    cfg = Config.fromfile(str(CFG / 'summarizers' / 'nolima.py'))
    assert 'LongCtxSummarizer' in str(cfg['summarizer']['type'])
    names = [g['name'] for g in cfg['nolima_summary_groups']]
    assert 'nolima_main_avg' in names and 'nolima_32k_variants' in names and len(names) == len(set(names))
    main = next(g for g in cfg['nolima_summary_groups'] if g['name'] == 'nolima_main_avg')
    assert main['subsets'] == [(f'nolima_main_{t}', 'accuracy') for t in TIERS[2:]]   # the tiers from 1k up
    every = next(g for g in cfg['nolima_summary_groups'] if g['name'] == 'nolima_250_variants')
    assert [s[0] for s in every['subsets']] == [f'nolima_{v}_250' for v in ('main', 'hard', 'cot', 'mc', 'direct',
                                                                            'distractor')]
