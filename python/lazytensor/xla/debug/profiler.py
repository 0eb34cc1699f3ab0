"""torch_xla.debug.profiler: spans on the core's Chrome trace.

Trace(name) and StepTrace(name) are spans in the trace the core writes when
LT_TRACE_FILE is set (chrome://tracing, Perfetto); StepTrace also ends the
step (mark_step) as PyTorch/XLA's does. There is no profiler server:
start_server is accepted and says so once."""
import sys

from lazytensor.torch import _bridge

from .._names import missing as _missing

_noted = False


class Trace:
    def __init__(self, name, **kwargs):
        self.name = name

    def __enter__(self):
        _bridge.trace_begin(self.name)
        return self

    def __exit__(self, *exc):
        _bridge.trace_end()
        return False


class StepTrace(Trace):
    def __init__(self, name, step_num=None, **kwargs):
        super().__init__(name if step_num is None else f"{name} {step_num}")

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                from ..core import xla_model
                xla_model.mark_step()
        finally:
            _bridge.trace_end()
        return False


def trace_me(name):
    def wrap(fn):
        def traced(*args, **kwargs):
            with Trace(name):
                return fn(*args, **kwargs)
        return traced
    return wrap


def start_server(port, only_on_master=True):
    global _noted
    if not _noted:
        _noted = True
        print(f"lazytensor.xla: profiler server on port {port} not started: lazytensor writes a Chrome trace "
              "instead (LT_TRACE_FILE=trace.json)", file=sys.stderr, flush=True)
    return None


def trace(service_addr, logdir, duration_ms=1000, **kwargs):
    print("lazytensor.xla: torch_xla.debug.profiler.trace: no profiler server; set LT_TRACE_FILE=trace.json",
          file=sys.stderr, flush=True)


__getattr__ = _missing(__name__)
