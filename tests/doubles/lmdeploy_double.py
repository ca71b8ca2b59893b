"""A test double of LMDeploy's engine, for CPU runs of the real opencompass pipeline with LMDeploy model configs.

``RecordingTurboMindModel`` is the project's ``LongCtxTurboMindModel`` (engine-key validation against LMDeploy's
real config classes, the tp == GPUs check, the KV-cache preflight, OpenCompass's real TurboMind wrapper with its
chat template and stop words); only ``lmdeploy.pipeline``, the call that would start a CUDA engine, is replaced.
The stand-in engine answers bAbI-style questions with the project's rule reader, and appends one JSON line per
engine construction and per batch it receives to ``$LONGCTX_FAKE_LMDEPLOY_LOG``. Importable in OpenCompass's
task subprocesses when this directory is on PYTHONPATH (``type='lmdeploy_double.RecordingTurboMindModel'``).
"""
import json
import os

from opencompass_longctx.models.lmdeploy import LongCtxTurboMindModel


def _log(record):
    with open(os.environ['LONGCTX_FAKE_LMDEPLOY_LOG'], 'a', encoding='utf-8') as f:  # one short append per line
        f.write(json.dumps(dict(record, pid=os.getpid())) + '\n')


def fake_pipeline(model_path, backend_config=None, **kwargs):
    from lmdeploy.messages import Response

    from opencompass_longctx.models.rule_reader import BabiRuleReader
    cfg = backend_config
    engine = {'path': model_path, 'session_len': cfg.session_len, 'max_batch_size': cfg.max_batch_size,
              'tp': cfg.tp, 'cache_max_entry_count': cfg.cache_max_entry_count,
              'cuda_visible_devices': os.environ.get('CUDA_VISIBLE_DEVICES')}
    _log(dict(engine, event='engine'))
    reader = BabiRuleReader(tokenizer='tiktoken:gpt2')

    def pipe(prompts, gen_config=None, do_preprocess=None):
        _log({'event': 'batch', 'size': len(prompts), 'session_len': cfg.session_len,
              'max_batch_size': cfg.max_batch_size, 'max_new_tokens': gen_config.max_new_tokens})
        return [Response(text=reader.answer(p), generate_token_len=8, input_token_len=len(p) // 4) for p in prompts]
    return pipe


class RecordingTurboMindModel(LongCtxTurboMindModel):

    def __init__(self, *args, **kwargs):
        import lmdeploy
        lmdeploy.pipeline = fake_pipeline  # OpenCompass's wrapper imports it when it builds the engine
        super().__init__(*args, **kwargs)
