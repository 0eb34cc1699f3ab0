"""torch_xla.runtime: ranks and the device type. Each MPI rank is one process
with one device; without mpirun the world is one rank."""
import os

from lazytensor.torch import _bridge

from ._names import missing as _missing

_world = None


def _launcher_size():
    for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"):
        if os.environ.get(k):
            return int(os.environ[k])
    return 1


def world_size():
    global _world
    if _world is None:
        _world = _bridge.dist_world_size()
        n = _launcher_size()
        if n > 1 and _world == 1:
            raise RuntimeError(f"torch_xla.runtime.world_size: launched as {n} ranks, but the lazytensor library "
                               "was built without MPI (a world of one): rebuild it with MPI (libopenmpi-dev)")
    return _world


def global_ordinal():
    return _bridge.dist_rank() if world_size() > 1 else 0


def local_ordinal():
    for k in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"):
        if os.environ.get(k):
            return int(os.environ[k])
    return global_ordinal()


def local_process_count():
    for k in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"):
        if os.environ.get(k):
            return int(os.environ[k])
    return world_size()


def local_device_count():
    return 1


def global_device_count():
    return world_size()


def addressable_device_count():
    return 1


def process_index():
    return global_ordinal()


def process_count():
    return world_size()


def using_pjrt():
    return True


def device_type():
    return "CPU"


def is_spmd():
    return False


__getattr__ = _missing(__name__)
