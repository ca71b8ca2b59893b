"""A thinking model's trace is cut off before scoring: the shipped config of every thinks=True row carries
reasoning.strip_trace as its pred_postprocessor, and strip_trace keeps only the answer."""
from mmengine.config import Config

from conftest import REPO
from opencompass_longctx.overlength import ENGINE_TOO_SMALL, OVER_LENGTH
from opencompass_longctx.reasoning import strip_trace
def test_strip_trace_keeps_the_answer_of_each_trace_format():
    assert strip_trace('<think>the bag is in the kitchen?</think>\n\nhallway') == 'hallway'
    assert strip_trace('okay, so...</think>hallway') == 'hallway'                 # <think> was in the template
    assert strip_trace('<|channel|>analysis<|message|>Mary went...<|end|><|start|>assistant<|channel|>final'
                       '<|message|>hallway<|return|>') == 'hallway'
    assert strip_trace('analysisMary moved to the hallway.assistantfinalhallway') == 'hallway'  # specials dropped
    assert strip_trace('<think>still thinking when the budget ran out') == ''
    assert strip_trace('analysisStill thinking when the budget ran out') == ''
    assert strip_trace('hallway') == 'hallway'                                      # no trace: unchanged
    for marker in (OVER_LENGTH, ENGINE_TOO_SMALL):
        assert strip_trace(marker) == marker
    assert strip_trace(None) is None


def test_thinking_rows_strip_their_trace_before_scoring():
    models = Config.fromfile(str(REPO / 'configs' / 'models' / 'lmdeploy_longctx.py'))['lmdeploy_longctx_models']
    for m in models:
        post = m.get('pred_postprocessor')
        if m['thinks']:
            assert post is not None and post['type'] is strip_trace, m['abbr']
        else:
            assert post is None, m['abbr']
    assert any(m['thinks'] for m in models)
