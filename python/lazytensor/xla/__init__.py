"""PyTorch/XLA's Python API (``torch_xla``) over the lazytensor torch device.

Training scripts written for PyTorch/XLA run unmodified with their
``torch_xla`` imports resolved to this package::

    python3 -m lazytensor.xla train.py ARGS...              # one process
    mpirun -np 2 python3 -m lazytensor.xla train.py ARGS... # two ranks

The device is ``lazytensor.torch.device()``; ``mark_step`` compiles and runs
the step's one graph; ``xm.optimizer_step`` averages the gradients over the
ranks with the core's collective ops inside that graph (MPI; a world of one
without mpirun). Names that are not implemented raise an error naming the
torch_xla name (``_names.MissingName``).
"""
import lazytensor.torch as _ltt

from ._names import missing as _missing

__version__ = "2.0+lazytensor"


def device(index=None):
    """The lazytensor device (there is one per process: each rank is a process)."""
    return _ltt.device()


def devices():
    return [_ltt.device()]


def device_count():
    return 1


def sync(wait=False):
    """Runs the step traced so far (xm.mark_step)."""
    from .core import xla_model
    xla_model.mark_step(wait=wait)


def manual_seed(seed, device=None):
    _ltt.manual_seed(seed)


def launch(fn, args=(), start_method="spawn", debug_single_process=False):
    """Runs fn(rank, *args) on every rank (see distributed.xla_multiprocessing.spawn)."""
    from .distributed import xla_multiprocessing
    return xla_multiprocessing.spawn(fn, args=args, nprocs=1 if debug_single_process else None,
                                     start_method=start_method)


__getattr__ = _missing(__name__)
