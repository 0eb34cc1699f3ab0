# PyTorch 1.13 DistributedDataParallel (gloo), the anchor of
# examples/xla_style_train.py on N ranks: the same torchvision model
# (10 classes), SGD with momentum, cross entropy, one fake batch of
# BATCH x 3 x SIZE x SIZE per rank (as --fake_data), N processes of NT
# threads each on this machine. Prints the global img/s of the steps after
# the first 3, as the example prints its steady rate.
#   NT=1 /usr/bin/python3 bench/pytorch_ddp_xla.py [procs] [model] [size] [batch] [steps]
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torchvision

WARM = 3


def run(rank, world, model_name, size, batch, steps, out):
    torch.set_num_threads(int(os.environ.get("NT", "1")))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29534")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    model = nn.parallel.DistributedDataParallel(getattr(torchvision.models, model_name)(num_classes=10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 10, (batch,))
    for step in range(WARM + steps):
        if step == WARM:
            dist.barrier()
            t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    dist.barrier()
    dt = time.perf_counter() - t0
    if rank == 0:
        out.put(steps * batch * world / dt)
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    model = sys.argv[2] if len(sys.argv) > 2 else "resnet18"
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 32
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 20
    q = mp.get_context("spawn").SimpleQueue()
    mp.spawn(run, args=(world, model, size, batch, steps, q), nprocs=world)
    print(f"pytorch ddp gloo: {world} procs x {os.environ.get('NT', '1')} thread x batch {batch}, {model} {size}x{size}: "
          f"{q.get():.1f} img/s")
