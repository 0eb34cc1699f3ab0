"""torch_xla.distributed.parallel_loader: MpDeviceLoader and ParallelLoader.

A background thread draws the host batches from the loader (its workers'
collation, decoding, ...) up to loader_prefetch_size ahead. The copy to the
device and the step's mark_step happen on the consuming thread, up to
device_prefetch_size batches ahead: the lazytensor core is not thread-safe
(one thread at a time), and a device copy from the background thread would
race with the step being traced on the training thread. A lock around every
device call of the process would serialize the two anyway (the copy into a
device tensor is a memcpy into the core's data leaf, cheap next to a step),
so the thread does what can overlap: everything before the copy.

As PyTorch/XLA's, iterating calls mark_step before each batch after the
first and once at the end, so a training loop needs no mark_step of its own.

The thread holds host objects only (the loader, the queue, the stop flag),
never the ParallelLoader: whatever a thread drops last it frees, and a device
tensor freed there would call the core beside the training thread. It is a
daemon (a loop that breaks early must not keep the program alive), so every
loader thread still running is stopped and joined at exit, before the
interpreter finalizes, whether or not its ParallelLoader still exists (a
loop that broke early drops it while the thread finishes drawing a batch):
a daemon thread still running then is killed when it next takes the GIL,
which aborts the process when that happens inside torch's C++ (a torch op
or a tensor's dealloc releases the GIL).
"""
import atexit
import collections
import queue
import threading

import torch

from .._names import missing as _missing

_END = object()
_EXIT_JOIN_S = 30.0  # at exit, how long a loader may take to finish the batch it is drawing
_running = {}  # every loader thread not yet seen ended, with its stop event


class _Failure:
    def __init__(self, exc):
        self.exc = exc


def _to_device(data, device):
    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, dict):
        return type(data)((k, _to_device(v, device)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_to_device(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_to_device(v, device) for v in data)
    return data


class PerDeviceLoader:
    def __init__(self, loader, device):
        self._loader = loader
        self._device = device
        self._started = False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        from ..core import xla_model as xm
        if self._started:
            xm.mark_step()
        self._started = True
        item = self._loader._next_item(self._device)
        if item is _END:
            xm.mark_step()
            self._loader.close()
            raise StopIteration
        return item

    next = __next__

    def __del__(self):  # a loop that breaks early stops the loader's thread
        self._loader.close()


class ParallelLoader:
    """Wraps a host loader; per_device_loader(device) yields its batches on the device."""

    def __init__(self, loader, devices, batchdim=0, batches_per_execution=1, loader_prefetch_size=16,
                 device_prefetch_size=8, host_to_device_transfer_threads=1, input_sharding=None):
        self._loader = loader
        self._devices = [torch.device(d) if isinstance(d, str) else d for d in devices]
        self._host = queue.Queue(maxsize=max(1, loader_prefetch_size))
        self._ahead = collections.deque()  # batches already on the device
        self._device_prefetch = max(1, device_prefetch_size)
        self._done = False
        self._closed = threading.Event()
        self._thread = threading.Thread(target=_produce, args=(loader, self._host, self._closed),
                                        name="lazytensor.xla loader", daemon=True)
        for ended in [t for t in _running if not t.is_alive()]:
            del _running[ended]
        _running[self._thread] = self._closed
        self._thread.start()

    def __len__(self):
        return len(self._loader)

    def per_device_loader(self, device):
        return PerDeviceLoader(self, device)

    def per_device_samples(self):
        return len(self._loader)

    def close(self):
        """Stops the thread after the batch it is drawing (without waiting for it)."""
        self._closed.set()

    def _take(self):
        item = self._host.get()
        if isinstance(item, _Failure):
            self._done = True
            raise item.exc
        if item is _END:
            self._done = True
        return item

    def _next_item(self, device):
        while not self._done and len(self._ahead) < self._device_prefetch:
            item = self._take()
            if item is not _END:
                self._ahead.append(_to_device(item, device))
        return self._ahead.popleft() if self._ahead else _END

    def __del__(self):
        self._closed.set()


def _produce(loader, host, closed):
    # Host (CPU) work only, and no reference to the ParallelLoader: see the module's comment.
    def put(item):
        while not closed.is_set():
            try:
                host.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    try:
        for batch in loader:
            if not put(batch):
                return
        put(_END)
    except BaseException as e:  # re-raised on the consuming thread
        put(_Failure(e))


@atexit.register
def _stop_all():
    for closed in _running.values():
        closed.set()
    for t in list(_running):
        t.join(_EXIT_JOIN_S)


class MpDeviceLoader:
    """Each iteration: a ParallelLoader over loader, yielding on device."""

    def __init__(self, loader, device, **kwargs):
        self._loader = loader
        self._device = device
        self._kwargs = kwargs

    def __iter__(self):
        return iter(ParallelLoader(self._loader, [self._device], **self._kwargs).per_device_loader(self._device))

    def __len__(self):
        return len(self._loader)


__getattr__ = _missing(__name__)
