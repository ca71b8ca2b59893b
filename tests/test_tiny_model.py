"""The demo's tiny random model writes at most out_len_cap new tokens, whatever max_out_len a benchmark asks."""
import pytest

from opencompass_longctx.demo.tiny_chat import TinyChatModel
@pytest.fixture(scope='module')
def tiny(tiny_model_dir):
    return TinyChatModel(path=tiny_model_dir, out_len_cap=3, model_kwargs=dict(device_map='cpu', torch_dtype='float32'),
                         generation_kwargs=dict(do_sample=False), max_seq_len=4096)


def spy_generate(model, monkeypatch):
    calls = []
    real = model.model.generate

    def generate(**kw):
        out = real(**kw)
        calls.append((kw['max_new_tokens'], kw.get('min_new_tokens'), out.shape[1] - kw['input_ids'].shape[1]))
        return out
    monkeypatch.setattr(model.model, 'generate', generate)
    return calls


def test_output_is_capped(tiny, monkeypatch):
    calls = spy_generate(tiny, monkeypatch)
    prompt = [[dict(role='HUMAN', prompt='Where is Mary? Answer:')]]
    tiny.generate(prompt, max_out_len=250)                  # a LongBioBench n=5 cell asks for 250
    tiny.generate(prompt, max_out_len=250, min_out_len=10)
    tiny.generate(prompt, max_out_len=2)                    # a smaller limit is kept
    assert [c[:2] for c in calls] == [(3, None), (3, 3), (2, None)]
    assert all(new <= cap for cap, _, new in calls)


@pytest.mark.parametrize('cap', [0, -1, 2.5, True, '8'])
def test_a_bad_cap_is_refused(tiny_model_dir, cap):
    with pytest.raises(ValueError, match='out_len_cap must be a positive integer'):
        TinyChatModel(path=tiny_model_dir, out_len_cap=cap)
