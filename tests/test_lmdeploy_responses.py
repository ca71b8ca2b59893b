"""LMDeploy's error responses become the markers they mean (opencompass_longctx/models/responses.py), never empty
answers that are scored: LMDeploy 0.18's real pipeline (backend choice, AsyncEngine with the real Tokenizer on the
model directory, its session_len check, Pipeline._infer's error responses) with a test double of the engine only
(tests/doubles/lmdeploy_double.py), in process and through the real `opencompass` command."""
import glob
import json
import os

import pytest

from conftest import REPO, run_opencompass
from opencompass_longctx.overlength import ENGINE_ERROR, ENGINE_TOO_SMALL, OVER_LENGTH
from opencompass_longctx.models.responses import PromptCheck
DOUBLES = str(REPO / 'tests' / 'doubles')
CONFIG = REPO / 'tests' / 'configs' / 'lmdeploy_responses.py'
SHORT = 'Mary went to the kitchen. Where is Mary?'
LONG = 'Mary went to the kitchen. John went to the garden. ' * 6 + 'Where is Mary?'


@pytest.fixture
def double(tiny_model_dir, monkeypatch):
    from test_lmdeploy import real_lmdeploy
    real_lmdeploy()
    monkeypatch.syspath_prepend(DOUBLES)
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')
    from lmdeploy_double import RecordingTurboMindModel, engine_patches
    for obj, name, value in engine_patches():      # undone after the test: other tests see LMDeploy as it is
        monkeypatch.setattr(obj, name, value, raising=False)

    def build(fake_engine, **kw):
        return RecordingTurboMindModel(path=tiny_model_dir, engine_config=dict(tp=1, max_batch_size=2),
                                       max_seq_len=4096, gpu_memory_gib=80, fake_engine=fake_engine, **kw)
    return build


def raw(model, prompt):
    """LMDeploy's own response (the pipeline under the wrapper's ResponsePipe) to one rendered prompt."""
    from lmdeploy import GenerationConfig
    (out,) = model.pipe.pipe([prompt], gen_config=GenerationConfig(max_new_tokens=8), do_preprocess=False)
    return out


def test_each_lmdeploy_error_response_becomes_the_marker_it_means(double):
    from lmdeploy import GenerationConfig
    from lmdeploy.serve.core.exceptions import ERROR_MESSAGES, ErrorCode

    from opencompass_longctx.models.responses import KV_FULL
    # the engine's session_len (40) is below the configured one: LMDeploy's own check refuses the long prompt
    m = double(dict(session_len=40))
    refused = raw(m, LONG)
    n = len(m.pipe.async_engine.tokenizer.encode(LONG))       # the engine's own count, with the real tokenizer
    assert (refused.finish_reason, refused.error_code, refused.text) == ('error', 'context_length_exceeded', '')
    assert refused.error_message == f'Input length ({n}) must be smaller than the model context length (40).'
    answer, marker = m.generate([SHORT, LONG], max_out_len=8)
    assert answer and not answer.startswith('[opencompass-longctx') and marker == OVER_LENGTH   # no larger window
    m.expect_prompts(PromptCheck(window=8192))   # as LongCtxGenInferencer hands it for a band's engine smaller than the model
    assert m.generate([SHORT, LONG], max_out_len=8)[1] == ENGINE_TOO_SMALL
    m.expect_prompts(PromptCheck(window=n + 7))  # the model's window cannot hold the prompt and 8 new tokens
    assert m.generate([SHORT, LONG], max_out_len=8)[1] == OVER_LENGTH

    # TurboMind's KV cache cannot admit the sequence even alone (OUT_OF_MEMORY, reported as internal_error)
    m = double(dict(kv_tokens=40))
    assert m.pipe.async_engine.backend == 'turbomind'
    refused = raw(m, LONG)
    assert (refused.finish_reason, refused.error_code, refused.error_message) == ('error', 'internal_error', KV_FULL)
    assert m.generate([SHORT, LONG], max_out_len=8)[1] == ENGINE_TOO_SMALL

    # the PyTorch engine refuses an input longer than its KV cache (min(session_len, KV tokens - one block))
    m = double(dict(kv_tokens=40 + 64), backend='pytorch')
    assert m.pipe.async_engine.backend == 'pytorch'
    refused = raw(m, LONG)
    assert (refused.error_code, refused.error_message) == (
        'context_length_exceeded', ERROR_MESSAGES[ErrorCode.CONTEXT_LENGTH_EXCEEDED])
    assert m.generate([SHORT, LONG], max_out_len=8)[1] == ENGINE_TOO_SMALL
    # ... and admits a prompt whose answer does not fit, lowering max_new_tokens: the cut answer is not scored
    n = raw(m, SHORT).input_token_len
    m = double(dict(kv_tokens=n + 3 + 64), backend='pytorch')
    cut = raw(m, SHORT)
    assert (cut.finish_reason, cut.generate_token_len, cut.error_code) == ('length', 3, None) and cut.text
    assert m.pipe([SHORT], gen_config=GenerationConfig(max_new_tokens=8), do_preprocess=False)[0].text == \
        ENGINE_TOO_SMALL

    # any other error: the engine-error marker, counted
    m = double(dict(error_every=1))
    assert raw(m, SHORT).error_code == 'internal_error'
    assert m.generate([SHORT, LONG], max_out_len=8) == [ENGINE_ERROR, ENGINE_ERROR]
    assert m.pipe.counts == {ENGINE_ERROR: 2}


def test_the_engines_token_counts_are_compared_with_the_checks(double, caplog, monkeypatch):
    import logging

    from lmdeploy import GenerationConfig

    from opencompass_longctx.models import responses
    monkeypatch.setattr(responses, 'get_logger', lambda: logging.getLogger('longctx-test'))   # caplog sees it
    m = double(None)
    rendered = [m.tokenizer.apply_chat_template([{'role': 'user', 'content': p}], add_generation_prompt=True,
                                                tokenize=False) for p in (SHORT, LONG)]
    exact = [m.get_token_len(p) for p in (SHORT, LONG)]      # the wrapper's count, as the over-length check takes it
    m.expect_prompts(PromptCheck(counts=exact))
    outs = m.pipe(rendered, gen_config=GenerationConfig(max_new_tokens=8), do_preprocess=False)
    assert [o.input_token_len for o in outs] == exact and not m.pipe.counts_differ     # one tokenizer layer
    assert 'token counts differ' not in caplog.text
    m.expect_prompts(PromptCheck(counts=[exact[0] - 2, exact[1]]))   # a check that counted two tokens fewer
    m.pipe(rendered, gen_config=GenerationConfig(max_new_tokens=8), do_preprocess=False)
    assert m.pipe.counts_differ == {2: 1}
    assert 'token counts differ between the engine and the over-length check for 1 of 2 prompts (engine minus ' \
           'check: +2 x1)' in caplog.text


def test_engine_errors_are_counted_left_out_and_make_the_tier_table_cell_missing():
    from datasets import Dataset

    from opencompass_longctx.babilong.evaluator import BabilongEvaluator
    from opencompass_longctx.leaderboard.build import ModelInfo, task_cell
    from opencompass_longctx.leaderboard.benchmarks import bench_by_name
    test_set = Dataset.from_dict({'question': ['Where is Mary? '] * 4, 'task': ['qa1'] * 4})
    res = BabilongEvaluator().score(['kitchen', ENGINE_ERROR, ENGINE_TOO_SMALL, ''],
                                    ['kitchen', 'garden', 'garden', 'garden'], test_set)
    assert res['counts']['engine_error'] == 1 and res['counts']['engine_too_small'] == 1
    assert res['counts']['over_length'] == 2 and res['accuracy'] == 50.0      # 'kitchen' right, '' wrong
    cell = task_cell(bench_by_name('babilong'), res, '4k', ModelInfo('m', 8192), [], 'babilong_qa1_4k')
    assert cell.status == 'missing'
    assert '1 of 4 samples got an error response from the engine' in cell.reason
    assert '1 of 4 samples fit the model but not the engine' in cell.reason


@pytest.mark.e2e
def test_error_responses_through_the_real_pipeline(tmp_path, tiny_model_dir):
    """Two LMDeploy models of one band (0k-1k) on LMDeploy's real pipeline with the engine double: one whose engine
    refuses some prompts (LMDeploy's session_len check, its KV cache), one whose engine fails every request. Each
    refused prompt is a marker in the predictions (never an empty answer), counted by the three evaluators, and
    the tier table shows the dataset as missing with the reason."""
    from opencompass_longctx.demo import babilong_data
    from opencompass_longctx.models.responses import KV_FULL
    babilong_data.write(str(tmp_path / 'babilong'), tiers=('0k', '1k'), tasks=['qa1'], samples=2)
    log = tmp_path / 'lmdeploy.jsonl'
    env = {'LONGCTX_TINY_MODEL': tiny_model_dir, 'LONGCTX_TEST_DATA': str(tmp_path / 'babilong'),
           'NOLIMA_TEST_DATA': str(tmp_path / 'nolima'), 'LONGCTX_FAKE_LMDEPLOY_LOG': str(log),
           'LONGCTX_CACHE_DIR': str(tmp_path / 'cache'), 'CUDA_VISIBLE_DEVICES': '0,1',
           'PYTHONPATH': os.pathsep.join([DOUBLES, os.environ.get('PYTHONPATH', '')])}
    proc = run_opencompass([str(CONFIG), '-w', 'out'], tmp_path, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / 'out' / '*'))

    def predictions(model, abbr):
        path = os.path.join(run, 'predictions', model, f'{abbr}.json')
        return [p['prediction'] for p in json.load(open(path)).values()]

    def counts(model, abbr):   # OpenCompass writes a non-numeric result field as a one-element list
        (c,) = json.load(open(os.path.join(run, 'results', model, f'{abbr}.json')))['counts']
        return c

    engines = [r for r in map(json.loads, open(log)) if r['event'] == 'engine']
    assert sorted(e['backend'] for e in engines) == ['turbomind'] * 2             # LMDeploy's own choice
    abbrs = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(run, 'predictions', 'double-errors', '*')))
    assert abbrs == ['babilong_qa1_0k', 'babilong_qa1_1k', 'longbio_standard_0k', 'nolima_main_250']

    # LMDeploy's session_len check refuses the 1k prompts; the model's window (8192, given by the inferencer as
    # LongCtxPartitioner sized this band's engine below it) holds them: engine too small, not over-length
    assert predictions('double-refusing', 'babilong_qa1_1k') == [ENGINE_TOO_SMALL] * 2
    # the KV cache cannot admit the LongBioBench prompt (TurboMind's OUT_OF_MEMORY)
    assert predictions('double-refusing', 'longbio_standard_0k') == [ENGINE_TOO_SMALL]
    assert counts('double-refusing', 'babilong_qa1_1k')['engine_too_small'] == 2
    assert counts('double-refusing', 'longbio_standard_0k')['engine_too_small'] == 1
    for abbr in ('babilong_qa1_0k', 'nolima_main_250'):                            # the others are answered
        assert not any(p.startswith('[opencompass-longctx') for p in predictions('double-refusing', abbr))
        assert counts('double-refusing', abbr)['over_length'] == 0
    (refusing_log,) = glob.glob(os.path.join(run, 'logs', 'infer', 'double-refusing', '*.out'))
    text = open(refusing_log).read()
    assert "error_code='context_length_exceeded'" in text and 'must be smaller than the model context length (1500)' \
        in text and KV_FULL in text
    # every answered prompt: the engine counted the tokens the over-length check counted (BABILong, LongBioBench's
    # continued answer prefix, NoLiMa), through the real pipeline
    assert 'token counts differ' not in text

    # every request failing: the engine-error marker in every prediction, counted by each of the three evaluators
    for abbr in abbrs:
        assert set(predictions('double-errors', abbr)) == {ENGINE_ERROR}, abbr
        c = counts('double-errors', abbr)
        assert c['engine_error'] == c['n'] == c['over_length'] > 0, (abbr, c)
    (errors_log,) = glob.glob(os.path.join(run, 'logs', 'infer', 'double-errors', '*.out'))
    expected = "longctx: engine error response (finish_reason='error', error_code='internal_error'"
    assert expected in open(errors_log).read()

    # the tier table: each such dataset missing, with the reason; the answered one scored
    (js,) = glob.glob(os.path.join(run, 'summary', 'longctx_*.json'))
    cells = {(r['model'], r['bench'], r['row'], t): c
             for r in json.load(open(js))['rows'] for t, c in r['cells'].items()}
    for bench, row, tier in (('longbio', 'understanding', '0k'), ('nolima', 'main', '250')):
        c = cells[('double-errors', bench, row, tier)]
        assert c['status'] == 'missing' and 'got an error response from the engine' in c['reason'], c
    c = cells[('double-refusing', 'longbio', 'understanding', '0k')]
    assert c['status'] == 'missing' and '1 of 1 samples fit the model but not the engine' in c['reason'], c
    assert cells[('double-refusing', 'nolima', 'main', '250')]['status'] == 'ok'


def test_lmdeploy_log_settings_from_the_environment_do_not_break_requests(double, monkeypatch):
    """LMDEPLOY_MAX_LOG_LEN comes from the environment as a string; LMDeploy slices each prompt with it when it logs
    requests (level REQUEST, 15: lmdeploy/logger.py RequestLogger, with LMDEPLOY_LOG_LEVEL=DEBUG or REQUEST): the
    model hands it on as an int, or every request would be an engine error."""
    monkeypatch.setenv('LMDEPLOY_MAX_LOG_LEN', '100')
    monkeypatch.setenv('LMDEPLOY_LOG_LEVEL', 'REQUEST')
    m = double(None)
    assert m.pipe.async_engine is not None
    (answer,) = m.generate([SHORT], max_out_len=8)
    assert answer and not answer.startswith('[opencompass-longctx'), answer
