"""``opencompass_longctx.tasks`` is :mod:`opencompass_longctx.run.tasks` itself (the same module object), so that a
config may import it by either path."""
import sys

from opencompass_longctx.run import tasks as _module

sys.modules[__name__] = _module
