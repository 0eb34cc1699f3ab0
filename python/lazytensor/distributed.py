"""Data-parallel training over several processes, with torch.distributed's names.

Launch the same script N times with ``mpirun -np N python3 script.py``: each
process is one rank. Run alone (or with a library built without MPI) the
world is one rank and every collective is the identity. Collectives are
traced ops, in place, run inside the step's compiled graph; every rank must
trace the same ops in the same order. They are not differentiable: call them
on tensors that require grad under ``lazytensor.no_grad()``.
"""
from . import _C


class ReduceOp:
    SUM = "sum"
    AVG = "mean"
    MAX = "max"
    MIN = "min"


def get_rank():
    """This process's rank, 0 .. world size - 1."""
    return _C.dist_rank()


def get_world_size():
    return _C.dist_world_size()


def all_reduce(tensor, op=ReduceOp.SUM):
    """tensor := the reduction over the ranks of each rank's tensor, in place."""
    _C.all_reduce_(tensor, op)


def broadcast(tensor, src=0):
    """tensor := rank src's tensor, in place."""
    _C.broadcast_(tensor, src)


def average_gradients(params):
    """Each parameter's accumulated .grad := its mean over the ranks (after backward, before the
    optimizer's step; what DistributedDataParallel does). Parameters without a gradient are skipped."""
    _C.average_grads(list(params))


def set_sync_batch_norm(on):
    """Batch norm in training mode with the global batch's statistics (SyncBatchNorm); every rank
    must set the same value."""
    _C.set_sync_bn(on)


def set_shard_optimizer(on):
    """ZeRO-1: optimizers made afterwards keep their state only for this rank's 1/N of each
    parameter; their step averages the gradients itself (reduce-scatter), updates this rank's
    part and all-gathers the parameters, so average_gradients does nothing meanwhile. Their
    state_dict() is collective (every rank calls it). Every rank must set the same value."""
    _C.set_shard_optimizer(on)


__all__ = ["ReduceOp", "get_rank", "get_world_size", "all_reduce", "broadcast", "average_gradients",
           "set_sync_batch_norm", "set_shard_optimizer"]
