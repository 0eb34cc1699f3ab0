"""lazytensor.distributed: a world of one in this process, and two ranks under
mpirun -np 2 (skipped without mpirun, without MPI in the library, and under
ASan): the collectives' values, and a data-parallel SGD step whose averaged
gradients give one process's step on the whole batch."""
import os
import shutil
import subprocess
import sys

import pytest

import lazytensor as lt
from lazytensor import distributed as dist
from conftest import SANITIZED


def test_world_of_one_is_the_identity():
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    t = lt.tensor([1.0, -2.0])
    dist.all_reduce(t)
    dist.all_reduce(t, dist.ReduceOp.AVG)
    dist.broadcast(t, 0)
    assert t.tolist() == [1.0, -2.0]
    with pytest.raises(ValueError, match="'op' = 'prod'"):
        dist.all_reduce(t, "prod")
    with pytest.raises(TypeError, match="average_gradients: argument 'params'"):
        dist.average_gradients([t, 3])


TWO_RANKS = r"""
import numpy as np
import lazytensor as lt
from lazytensor import distributed as dist, nn

rank, world = dist.get_rank(), dist.get_world_size()
if world == 1:  # the library was built without MPI: each process is alone
    print("world 1")
    raise SystemExit(0)
t = lt.tensor([float(rank + 1), 10.0 * rank])
dist.all_reduce(t)
assert t.tolist() == [3.0, 10.0], t.tolist()
m = lt.tensor([float(rank)])
dist.all_reduce(m, dist.ReduceOp.MAX)
assert m.item() == 1.0
b = lt.tensor([float(rank + 5)])
dist.broadcast(b, 1)
assert b.item() == 6.0

# Rank r takes rows r::2 of one batch, from rank 0's weights (each rank
# initialized its own from another seed).
lt.manual_seed(rank)
model = nn.Linear(3, 2)
with lt.no_grad():
    for p in model.parameters():
        dist.broadcast(p, 0)
x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
y = np.array([0, 1, 1, 0])
w0, b0 = model.weight.numpy(), model.bias.numpy()
nn.CrossEntropyLoss()(model(lt.tensor(x[rank::2])), lt.tensor(y[rank::2])).backward()
dist.average_gradients(model.parameters())
lt.optim.SGD(model.parameters(), lr=0.5).step()
lt.mark_step()
# The same step in this process alone, on the whole batch.
ref = nn.Linear(3, 2)
with lt.no_grad():
    ref.weight.copy_(lt.tensor(w0))
    ref.bias.copy_(lt.tensor(b0))
nn.CrossEntropyLoss()(ref(lt.tensor(x)), lt.tensor(y)).backward()
lt.optim.SGD(ref.parameters(), lr=0.5).step()
lt.mark_step()
assert not np.allclose(ref.weight.numpy(), w0)
np.testing.assert_allclose(model.weight.numpy(), ref.weight.numpy(), rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(model.bias.numpy(), ref.bias.numpy(), rtol=1e-5, atol=1e-6)
# Again with the optimizer sharded (ZeRO-1): each rank keeps the momentum of
# half of each parameter; the step averages the gradients itself.
dist.set_shard_optimizer(True)
zero = nn.Linear(3, 2)
with lt.no_grad():
    zero.weight.copy_(lt.tensor(w0))
    zero.bias.copy_(lt.tensor(b0))
opt = lt.optim.SGD(zero.parameters(), lr=0.5, momentum=0.9)  # its first step: plain SGD
nn.CrossEntropyLoss()(zero(lt.tensor(x[rank::2])), lt.tensor(y[rank::2])).backward()
dist.average_gradients(zero.parameters())  # nothing while sharded
opt.step()
lt.mark_step()
dist.set_shard_optimizer(False)
np.testing.assert_allclose(zero.weight.numpy(), ref.weight.numpy(), rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(zero.bias.numpy(), ref.bias.numpy(), rtol=1e-5, atol=1e-6)
print(f"rank {rank} of {world} ok", flush=True)
"""


def test_two_ranks_under_mpirun():
    mpirun = shutil.which("mpirun")
    if not mpirun or SANITIZED:
        pytest.skip("needs mpirun (and no ASan runtime: MPI's plugins load outside it)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    r = subprocess.run([mpirun, "--oversubscribe", "-np", "2", sys.executable, "-c", TWO_RANKS], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    if "world 1" in r.stdout:
        pytest.skip("the library was built without MPI")
    assert "rank 0 of 2 ok" in r.stdout and "rank 1 of 2 ok" in r.stdout, r.stdout + r.stderr
