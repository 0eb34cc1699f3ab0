# PyTorch 1.13 DistributedDataParallel (gloo), the anchor of `mpirun -np N
# lazytensor train`: a CIFAR-style ResNet-20 on Fashion-MNIST (or generated
# images, as --data fake), AdamW, per-process batch B, N processes of
# NT threads each on this machine; prints the global img/s of the timed steps.
#   /usr/bin/python3 bench/pytorch_ddp.py [procs] [per-process batch] [steps] [fashion|fake]
# (Debian's python3-torch under /usr/bin/python3; NT threads per process, default 1.)
import gzip, os, sys, time
import numpy as np, torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch"))
from resnet20 import ResNet20

def images(kind):
    if kind == "fake":
        g = torch.Generator().manual_seed(0)
        return torch.randn(60000, 1, 28, 28, generator=g), torch.randint(0, 10, (60000,), generator=g)
    d = "/usr/share/datasets/fashion-mnist/"
    x = np.frombuffer(gzip.open(d + "train-images-idx3-ubyte.gz").read(), np.uint8, offset=16)
    y = np.frombuffer(gzip.open(d + "train-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
    x = (torch.tensor(x.reshape(-1, 1, 28, 28), dtype=torch.float32) / 255. - 0.2860) / 0.3530
    return x, torch.tensor(y.astype(np.int64))

def run(rank, world, batch, steps, kind, out):
    torch.set_num_threads(int(os.environ.get("NT", "1")))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    x, y = images(kind)
    model = nn.parallel.DistributedDataParallel(ResNet20())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    mine = perm[: len(x) // world * world][rank::world]          # DistributedSampler, drop_last
    warm = 3
    for step in range(warm + steps):
        if step == warm: dist.barrier(); t0 = time.perf_counter()
        idx = mine[step * batch:(step + 1) * batch]
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
    dist.barrier(); dt = time.perf_counter() - t0
    if rank == 0: out.put(steps * batch * world / dt)
    dist.destroy_process_group()

if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    kind = sys.argv[4] if len(sys.argv) > 4 else "fashion"
    q = mp.get_context("spawn").SimpleQueue()
    mp.spawn(run, args=(world, batch, steps, kind, q), nprocs=world)
    print(f"pytorch ddp gloo: {world} procs x {os.environ.get('NT', '1')} thread x batch {batch}: "
          f"{q.get():.0f} img/s (global batch {world * batch}, {steps} steps)")
