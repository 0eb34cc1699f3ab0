"""Sync, metrics, seeding and safetensors files."""
from . import _C

mark_step = _C.mark_step
metrics_report = _C.metrics_report
metrics_reset = _C.metrics_reset
manual_seed = _C.manual_seed


def metric(name):
    """A counter or timer by PyTorch/XLA's name ('UncachedCompile', 'CompileTime.p50', ...); NaN if unknown."""
    return _C.metric(name)


def save(state_dict, path, metadata=None):
    """Writes a dict of name -> Tensor as a safetensors file (atomically: PATH.tmp, flushed, renamed)."""
    names = list(state_dict.keys())
    _C.save(str(path), names, [state_dict[n] for n in names], dict(metadata or {}))


def load(path, with_metadata=False):
    """Reads a safetensors file into a dict of name -> Tensor (and its string metadata if asked)."""
    items, meta = _C.load(str(path))
    d = dict(items)
    return (d, meta) if with_metadata else d
