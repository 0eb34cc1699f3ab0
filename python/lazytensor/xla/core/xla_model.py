"""torch_xla.core.xla_model over the lazytensor device.

Collectives on device tensors (all_reduce, all_gather, optimizer_step's
gradient average, broadcast_master_param) are the core's collective ops,
one in-place node per tensor, traced into the step's graph: they run at the
step's mark_step with the forward and backward, bucketed and overlapped by
the core. Host values (mesh_reduce, rendezvous) travel as pickled bytes
through a device all-reduce and a sync, so every rank must call them in the
same order, as with PyTorch/XLA.
"""
import pickle
import sys
import time

import torch

import lazytensor.torch as _ltt
from lazytensor.torch import _bridge

from .. import runtime as _rt
from .._names import missing as _missing, not_implemented as _not_implemented

REDUCE_SUM = "sum"
REDUCE_MUL = "mul"
REDUCE_AND = "and"
REDUCE_OR = "or"
REDUCE_MIN = "min"
REDUCE_MAX = "max"

_closures = []  # (fn, args) of add_step_closure, run after the next mark_step


# ---- devices and ranks ----------------------------------------------------------------

def xla_device(n=None, devkind=None):
    return _ltt.device()


def get_xla_supported_devices(devkind=None, max_devices=None):
    return [str(_ltt.device())]


def xla_device_hw(device):
    return "CPU"


def xla_real_devices(devices=None):
    return ["CPU:0"]


def is_xla_tensor(tensor):
    return isinstance(tensor, torch.Tensor) and tensor.device == _ltt.device()


def xrt_world_size(defval=1):
    return _rt.world_size()


def get_ordinal(defval=0):
    return _rt.global_ordinal()


def get_local_ordinal(defval=0):
    return _rt.local_ordinal()


def is_master_ordinal(local=True):
    return (get_local_ordinal() if local else get_ordinal()) == 0


def master_print(*args, fd=sys.stdout, finalize=False, **kwargs):
    if is_master_ordinal(local=False):
        print(*args, file=fd, flush=True, **kwargs)


def set_rng_state(seed, device=None):
    _ltt.manual_seed(seed)


class RateTracker:
    """Samples per second: rate() since its previous call, smoothed
    exponentially (factor RATE_TRACKER_SMOOTHING, default 0.4, on the
    previous rate), and global_rate() since construction."""

    def __init__(self, smooth_factor=None):
        from ..utils.utils import getenv_as
        self._smooth = getenv_as("RATE_TRACKER_SMOOTHING", float, 0.4) if smooth_factor is None else smooth_factor
        self._start = self._last = time.time()
        self._counted = 0.0  # samples before the last rate() call
        self._pending = 0.0  # samples since
        self._last_rate = None

    def add(self, count):
        self._pending += count

    def rate(self):
        now = time.time()
        dt = now - self._last
        if dt <= 0:
            return 0.0
        r = self._pending / dt
        if self._last_rate is not None:
            r = (1 - self._smooth) * r + self._smooth * self._last_rate
        self._counted += self._pending
        self._pending, self._last, self._last_rate = 0.0, now, r
        return r

    def global_rate(self):
        dt = time.time() - self._start
        return (self._counted + self._pending) / dt if dt > 0 else 0.0


# ---- steps ----------------------------------------------------------------------------

def add_step_closure(closure, args=(), run_async=False):
    """closure(*args) runs after the next mark_step, in the order added, when
    the step's tensors hold their values (run_async runs it there too)."""
    _closures.append((closure, tuple(args)))


def _run_closures():
    while _closures:
        fn, args = _closures.pop(0)
        fn(*args)


def mark_step(wait=False, reset_scope=True):
    """Compiles (or finds cached) and runs the step traced so far, then the step closures."""
    _ltt.mark_step()
    _run_closures()


def wait_device_ops(devices=[]):
    """Nothing to wait for: a step's graph has finished when mark_step returns."""


def unlazy(tensors):
    _ltt.sync(tensors)


# ---- collectives on device tensors ----------------------------------------------------

_CORE_OP = {REDUCE_SUM: "sum", REDUCE_MIN: "min", REDUCE_MAX: "max", REDUCE_AND: "min", REDUCE_OR: "max"}


def _check_groups(groups, name):
    if groups and not (len(groups) == 1 and sorted(groups[0]) == list(range(_rt.world_size()))):
        raise _not_implemented(f"torch_xla.core.xla_model.{name}(groups={groups})",
                               "collectives over a subset of the ranks")


def _reduce_(tensors, reduce_type, scale):
    if reduce_type not in _CORE_OP:
        raise _not_implemented(f"torch_xla.core.xla_model.all_reduce(reduce_type={reduce_type!r})",
                               f"reduce types are {', '.join(_CORE_OP)}")
    if reduce_type in (REDUCE_AND, REDUCE_OR) and any(t.dtype != torch.bool for t in tensors):
        raise TypeError(f"torch_xla.core.xla_model.all_reduce: reduce_type {reduce_type!r} takes bool tensors")
    n = _rt.world_size()
    if (reduce_type == REDUCE_SUM and n > 1 and abs(scale * n - 1.0) < 1e-12
            and all(t.is_floating_point() for t in tensors)):
        _bridge.all_reduce_(tensors, "mean")  # sum * (1/n): one node
        return
    _bridge.all_reduce_(tensors, _CORE_OP[reduce_type])
    if scale != 1.0:
        for t in tensors:
            t.mul_(scale)


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """A tensor: returns a new tensor holding the reduction over the ranks
    (times scale). A list of tensors: reduces them in place and returns it."""
    _check_groups(groups, "all_reduce")
    with torch.no_grad():
        if isinstance(inputs, torch.Tensor):
            out = inputs.detach().clone()
            _reduce_([out], reduce_type, scale)
            return out
        _reduce_([t.detach() for t in inputs], reduce_type, scale)
        return inputs


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """The ranks' values concatenated along dim, in rank order: each rank
    places its value in its slot of zeros and one all-reduce sums them. The
    slot is chosen by a mask (data), not by an offset in the graph, so every
    rank traces the same graph, as collectives need."""
    _check_groups(groups, "all_gather")
    n, r = _rt.world_size(), _rt.global_ordinal()
    with torch.no_grad():
        value = value.detach()
        if value.dim() == 0:
            value = value.reshape(1)
        d = dim % value.dim()
        if n == 1:
            out = value.clone()
        else:
            mask = torch.zeros(n, dtype=torch.bool)
            mask[r] = True
            mask = mask.to(value.device).view([1] * d + [n] + [1] * (value.dim() - d))
            zero = torch.zeros((), dtype=value.dtype)
            out = torch.where(mask, value.unsqueeze(d), zero)
            shape = list(value.shape)
            shape[d] *= n
            out = out.reshape(shape)
            _bridge.all_reduce_([out], "sum" if value.dtype != torch.bool else "max")
        if output is not None:
            output.copy_(out)
            return output
        return out


def collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    _check_groups(groups, "collective_broadcast")
    with torch.no_grad():
        _bridge.broadcast_([t.detach() for t in tensors], root_ordinal)


def broadcast_master_param(model):
    """Every rank's parameters and buffers := rank 0's."""
    collective_broadcast(list(model.parameters()) + list(model.buffers()))
    mark_step()


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    """Each gradient := its mean over the ranks (traced: it runs in the step's graph)."""
    _check_groups(groups, "reduce_gradients")
    if _rt.world_size() == 1:
        return
    grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
    _bridge.all_reduce_(grads, "mean")


def optimizer_step(optimizer, barrier=False, optimizer_args={}, groups=None, pin_layout=True):
    """Averages the gradients over the ranks, then optimizer.step(**optimizer_args)."""
    reduce_gradients(optimizer, groups=groups, pin_layout=pin_layout)
    loss = optimizer.step(**optimizer_args)
    if barrier:
        mark_step()
    return loss


# ---- host values ------------------------------------------------------------------------

def _gather_bytes(payload):
    """Every rank's bytes, in rank order (two device all-reduces and syncs)."""
    n, r = _rt.world_size(), _rt.global_ordinal()
    if n == 1:
        return [bytes(payload)]
    dev = _ltt.device()
    lens = torch.zeros(n, dtype=torch.int64)
    lens[r] = len(payload)
    lens = lens.to(dev)
    _bridge.all_reduce_([lens], "sum")
    lens = lens.cpu().tolist()
    buf = torch.zeros(n, max(max(lens), 1), dtype=torch.int64)
    if payload:
        buf[r, :len(payload)] = torch.frombuffer(bytearray(payload), dtype=torch.uint8)
    buf = buf.to(dev)
    _bridge.all_reduce_([buf], "sum")
    rows = buf.cpu().to(torch.uint8)
    return [rows[i, :lens[i]].numpy().tobytes() for i in range(n)]


def rendezvous(tag, payload=b"", replicas=[]):
    """Waits for every rank; returns the ranks' payloads in rank order."""
    if replicas:
        _check_groups([replicas], "rendezvous")
    return _gather_bytes(payload)


def mesh_reduce(tag, data, reduce_fn):
    """reduce_fn([each rank's data, in rank order]) on every rank (data: any picklable host value)."""
    return reduce_fn([pickle.loads(b) for b in _gather_bytes(pickle.dumps(data))])


def _to_cpu(data):
    if isinstance(data, torch.Tensor):
        return data.detach().cpu() if data.device.type != "cpu" else data
    if isinstance(data, dict):
        return type(data)((k, _to_cpu(v)) for k, v in data.items())
    if isinstance(data, (list, tuple)) and not hasattr(data, "_fields"):
        return type(data)(_to_cpu(v) for v in data)
    return data


def save(data, file_or_path, master_only=True, global_master=False):
    """torch.save of CPU copies, by rank 0 (every rank with master_only=False)."""
    data = _to_cpu(data)
    if not master_only or is_master_ordinal(local=not global_master):
        torch.save(data, file_or_path)
    rendezvous("torch_xla.core.xla_model.save")


__getattr__ = _missing(__name__)
