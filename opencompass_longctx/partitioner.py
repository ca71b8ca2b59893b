"""``opencompass_longctx.partitioner`` is the import path configs written from the README before the run machinery had its own
package use; it is :mod:`opencompass_longctx.run.partitioner` itself (the same module object)."""
import sys

from opencompass_longctx.run import partitioner as _module

sys.modules[__name__] = _module
