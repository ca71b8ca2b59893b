"""``opencompass_longctx.inferencer`` is :mod:`opencompass_longctx.run.inferencer` itself (the same module object), so that a
config may import it by either path."""
import sys

from opencompass_longctx.run import inferencer as _module

sys.modules[__name__] = _module
