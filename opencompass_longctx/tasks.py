"""``opencompass_longctx.tasks`` is the import path configs written from the README before the run machinery had its own
package use; it is :mod:`opencompass_longctx.run.tasks` itself (the same module object)."""
import sys

from opencompass_longctx.run import tasks as _module

sys.modules[__name__] = _module
