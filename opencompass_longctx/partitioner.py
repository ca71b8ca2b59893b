"""``opencompass_longctx.partitioner`` is :mod:`opencompass_longctx.run.partitioner` itself (the same module object), so that a
config may import it by either path."""
import sys

from opencompass_longctx.run import partitioner as _module

sys.modules[__name__] = _module
