"""The lazytensor device of PyTorch.

Unmodified torch programs (torch.nn, torch.optim, autograd, torchvision)
run on lazytensor by moving their tensors and modules to ``device()``::

    import torch, lazytensor.torch as ltt
    dev = ltt.device()
    model = torchvision.models.resnet18().to(dev)
    ...
    loss.backward(); opt.step()
    ltt.mark_step()        # forward, backward and update: one compiled graph

Every torch op on the device records IR in the lazytensor core (the
kernels are in the ``_bridge`` extension, registered for torch's
PrivateUse1 dispatch key: the device is ``torch.device("privateuseone")``).
Values are computed at ``mark_step()`` or when read (``item()``, ``cpu()``,
``print``). Ops without a lazytensor kernel run on the CPU and are counted
in ``metrics_report()`` as ``aten::NAME``; ``LT_TORCH_FALLBACK=error``
makes them errors.
"""
import torch as _torch

import lazytensor as _lt  # noqa: F401  (loads the core library and its Python package first)
from . import _bridge

_DEVICE = _torch.device("privateuseone", 0)


def device(index=0):
    """The lazytensor device (``privateuseone:0``); there is one."""
    if index != 0:
        raise ValueError(f"lazytensor.torch.device: there is one lazytensor device (index 0), not {index}")
    return _DEVICE


def is_available():
    return True


def mark_step():
    """Compiles (or finds in the cache) and runs everything traced so far."""
    _bridge.mark_step()


def sync(tensors=None):
    """Computes the pending values (those of ``tensors``, or every one)."""
    _bridge.sync(list(tensors or []))


def metrics_report():
    """The core's metrics (PyTorch/XLA's names) plus the ``aten::`` CPU fallback counters."""
    return _bridge.metrics_report()


def metric(name):
    return _bridge.metric(name)


def metrics_reset():
    _bridge.metrics_reset()


def fallback_counts():
    """{aten op name: times it ran on the CPU} since the start (or metrics_reset)."""
    return dict(_bridge.fallback_counts())


def manual_seed(seed):
    """Seeds the device's generator (dropout, rand, bernoulli_ on the device)."""
    _bridge.manual_seed(int(seed))


def to_lt(tensor):
    """A lazytensor.Tensor sharing the device tensor's storage (no copy)."""
    if not isinstance(tensor, _torch.Tensor) or tensor.device != _DEVICE:
        raise TypeError(f"lazytensor.torch.to_lt: expected a torch tensor on {_DEVICE}, got "
                        f"{tensor.device if isinstance(tensor, _torch.Tensor) else type(tensor).__name__}")
    return _lt._C._wrap_handle(_bridge._to_lt_handle(tensor))


def from_lt(tensor):
    """A torch tensor on the device sharing the lazytensor.Tensor's storage (no copy)."""
    if not isinstance(tensor, _lt.Tensor):
        raise TypeError(f"lazytensor.torch.from_lt: expected a lazytensor.Tensor, got {type(tensor).__name__}")
    return _bridge._from_lt_handle(_lt._C._handle(tensor))


# torch.manual_seed(n) seeds the device too, as it seeds CUDA's generators.
_torch_manual_seed = _torch.manual_seed


def _manual_seed_all(seed):
    _bridge.manual_seed(int(seed) & ((1 << 64) - 1))
    return _torch_manual_seed(seed)


_torch.manual_seed = _manual_seed_all


# torch.save of a device tensor saves CPU data (torch 1.13 pickles only the
# storages of devices it knows; ours is read back as a CPU copy instead).
_torch_reduce_ex = _torch.Tensor.__reduce_ex__


def _reduce_ex(self, proto):
    if self.device.type == _DEVICE.type:
        return self.detach().cpu().requires_grad_(self.requires_grad).__reduce_ex__(proto)
    return _torch_reduce_ex(self, proto)


_torch.Tensor.__reduce_ex__ = _reduce_ex
