"""OpenCompass model wrapper for the project's tiny CPU chat model (demo and tests).

``TinyChatModel`` is OpenCompass's own ``HuggingFacewithChatTemplate``; the only addition is that the model
is built (offline, a few seconds, see :mod:`opencompass_longctx.tiny_model`) at ``path`` when it is not
there yet, so ``opencompass examples/eval_longctx_demo.py`` needs no preparation step.
"""
import os

from opencompass.models import HuggingFacewithChatTemplate

from ..tiny_model import build


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


class TinyChatModel(HuggingFacewithChatTemplate):

    def __init__(self, path: str, **kwargs):
        super().__init__(path=ensure_tiny_model(path), **kwargs)
