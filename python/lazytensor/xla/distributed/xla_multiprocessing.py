"""torch_xla.distributed.xla_multiprocessing: one process per rank, by MPI.

Under mpirun (or srun) each process is one rank and spawn calls
fn(rank, *args) in it. Run by hand, nprocs None or 1 calls fn(0, *args) in
this process; nprocs > 1 starts the job itself: it re-runs this process's
command line under `mpirun -np nprocs` and exits with the job's status
(this process does no training). It cannot when mpirun is not on PATH or
the library was built without MPI, and says so."""
import os
import shutil
import subprocess
import sys

from .. import runtime as _rt
from .._names import missing as _missing


def _command_line():
    """This process's command line, as `python3 -m lazytensor.xla` if run that way."""
    from .._hook import TorchXlaFinder
    hooked = any(isinstance(f, TorchXlaFinder) for f in sys.meta_path)
    return [sys.executable] + (["-m", "lazytensor.xla"] if hooked else []) + sys.argv


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    under_launcher = _rt._launcher_size() > 1
    if under_launcher or nprocs is None or nprocs == 1:
        if nprocs not in (None, 1, _rt.world_size()):
            raise ValueError(f"torch_xla.distributed.xla_multiprocessing.spawn: nprocs={nprocs}, but the job "
                             f"has {_rt.world_size()} ranks (mpirun -np): pass nprocs=None")
        r = fn(_rt.global_ordinal(), *args)
        return r
    if os.environ.get("LT_XLA_SPAWNED") == "1":
        raise RuntimeError("torch_xla.distributed.xla_multiprocessing.spawn: started by spawn through mpirun, "
                           "but mpirun reports no ranks (OMPI_COMM_WORLD_SIZE / PMI_SIZE unset)")
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise RuntimeError(f"torch_xla.distributed.xla_multiprocessing.spawn(nprocs={nprocs}): lazytensor runs "
                           "one process per rank through MPI and mpirun is not on PATH (apt-get install "
                           "openmpi-bin); or run `mpirun -np N python3 -m lazytensor.xla SCRIPT`")
    from lazytensor.torch import _bridge
    if _bridge.dist_world_size() == 1 and not _built_with_mpi():
        raise RuntimeError(f"torch_xla.distributed.xla_multiprocessing.spawn(nprocs={nprocs}): the lazytensor "
                           "library was built without MPI, so its ranks could not talk to each other")
    env = dict(os.environ, LT_XLA_SPAWNED="1")
    cmd = [mpirun, "-np", str(nprocs)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["--oversubscribe"] + _command_line()
    print(f"lazytensor.xla: spawn: {' '.join(cmd)}", file=sys.stderr, flush=True)
    rc = subprocess.call(cmd, env=env)
    sys.exit(rc)


def _built_with_mpi():
    """Whether the loaded lazytensor library links MPI (its libmpi is mapped)."""
    try:
        with open("/proc/self/maps") as f:
            return any("libmpi" in line for line in f)
    except OSError:
        return True  # cannot tell: let mpirun try


class MpModelWrapper:
    """Holds the model for the ranks (each process has its own copy)."""

    def __init__(self, model):
        self._model = model

    def to(self, device):
        return self._model.to(device)


class MpSerialExecutor:
    def run(self, fn):
        return fn()


__getattr__ = _missing(__name__)
