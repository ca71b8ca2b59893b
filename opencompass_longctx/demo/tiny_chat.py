"""OpenCompass model wrapper for the project's tiny CPU chat model (demo and tests).

``TinyChatModel`` is the package's ``LongCtxHFChatModel`` (OpenCompass's ``HuggingFacewithChatTemplate`` that also
continues LongBioBench's answer prefix) with two demo-model properties:

* the model is built (offline, a few seconds, see :mod:`opencompass_longctx.demo.tiny_model`) at ``path`` when it
  is not there yet, so ``opencompass examples/eval_longctx_demo.py`` needs no preparation step;
* it writes at most ``out_len_cap`` new tokens (default 8), whatever ``max_out_len`` a benchmark asks for
  (LongBioBench asks 50 per needle, NoLiMa 192). Its weights are random, so it never stops on its own and
  would otherwise always run to the benchmark's limit; its answers are noise either way. The over-length
  check still reserves the benchmark's full ``max_out_len``. A real model always gets the benchmark's limit.
"""
import os

from opencompass_longctx.models.hf import LongCtxHFChatModel
from opencompass_longctx.demo.tiny_model import build
def ensure_tiny_model(path: str) -> str:
    if not os.path.isfile(os.path.join(path, 'config.json')):
        tmp = f'{path}.tmp-{os.getpid()}'
        build(tmp)
        try:
            os.rename(tmp, path)
        except OSError:  # built by another process meanwhile
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    return path


class TinyChatModel(LongCtxHFChatModel):

    def __init__(self, path: str, out_len_cap: int = 8, **kwargs):
        if isinstance(out_len_cap, bool) or not isinstance(out_len_cap, int) or out_len_cap < 1:
            raise ValueError(f'out_len_cap must be a positive integer (new tokens per answer), got {out_len_cap!r}')
        self.out_len_cap = out_len_cap
        super().__init__(path=ensure_tiny_model(path), **kwargs)

    def generate(self, inputs, max_out_len, min_out_len=None, **kwargs):
        cap = self.out_len_cap if max_out_len is None else min(max_out_len, self.out_len_cap)
        if min_out_len is not None:
            min_out_len = min(min_out_len, cap)
        return super().generate(inputs, cap, min_out_len=min_out_len, **kwargs)
