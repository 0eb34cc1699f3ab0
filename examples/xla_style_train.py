"""A training script in PyTorch/XLA's style (xm / pl / met / xmp), run on
lazytensor with its torch_xla imports resolved to lazytensor.xla:

    python3 -m lazytensor.xla examples/xla_style_train.py --fake_data --num_steps 20
    mpirun -np 2 python3 -m lazytensor.xla examples/xla_style_train.py --model resnet18
    python3 examples/xla_style_train.py ...     # the same (installs the hook itself)

Data: fake batches (--fake_data) or Fashion-MNIST (Debian's
dataset-fashion-mnist, /usr/share/datasets/fashion-mnist; --datadir),
sharded by rank. Models: resnet18, resnet50 (torchvision, 3-channel input
and 10 classes) or mlp. Each rank prints its training updates; rank 0 the
summary and, with --metrics_debug, the metrics report."""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision

try:
    import torch_xla
except ImportError:  # run as a plain script: resolve torch_xla to lazytensor.xla
    from lazytensor.xla import _hook
    _hook.install()
    import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
import torch_xla.test.test_utils as test_utils
import torch_xla.utils.utils as xu


WARM = 3  # steps left out of the steady rate: the first two compile


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="resnet18", choices=["resnet18", "resnet50", "mlp"])
    p.add_argument("--fake_data", action="store_true")
    p.add_argument("--datadir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--img_dim", type=int, default=28, help="image side (Fashion-MNIST's 28 is upsampled)")
    p.add_argument("--num_cores", type=int, default=None, help="ranks to start (mpirun); default: the job's")
    p.add_argument("--batch_size", type=int, default=32, help="per rank")
    p.add_argument("--num_epochs", type=int, default=1)
    p.add_argument("--num_steps", type=int, default=0, help="stop each epoch after this many steps (0: all)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--log_steps", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--metrics_debug", action="store_true")
    return p.parse_args(argv)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class FashionMNIST(torch.utils.data.Dataset):
    def __init__(self, root, train, img_dim):
        split = "train" if train else "t10k"
        self.x = read_idx(os.path.join(root, f"{split}-images-idx3-ubyte.gz"))
        self.y = read_idx(os.path.join(root, f"{split}-labels-idx1-ubyte.gz")).astype(np.int64)
        self.img_dim = img_dim

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        x = torch.from_numpy(self.x[i].astype(np.float32) / 255.0 - 0.5).unsqueeze(0)
        if self.img_dim != 28:
            x = nn.functional.interpolate(x[None], size=(self.img_dim, self.img_dim), mode="bilinear",
                                          align_corners=False)[0]
        return x.expand(3, -1, -1), self.y[i]


def make_model(name, img_dim):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(3 * img_dim * img_dim, 64), nn.ReLU(), nn.Linear(64, 10))
    return getattr(torchvision.models, name)(num_classes=10)


def loaders(args):
    world, rank = xr.world_size(), xr.global_ordinal()
    if args.fake_data:
        batch = (torch.randn(args.batch_size, 3, args.img_dim, args.img_dim),
                 torch.randint(0, 10, (args.batch_size,), dtype=torch.int64))
        return (xu.SampleGenerator(batch, 60000 // args.batch_size // world),
                xu.SampleGenerator(batch, 10000 // args.batch_size // world))
    out = []
    for train in (True, False):
        ds = FashionMNIST(args.datadir, train, args.img_dim)
        sampler = torch.utils.data.distributed.DistributedSampler(ds, world, rank, shuffle=train)
        out.append(torch.utils.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler, drop_last=True))
    return out


def _train_update(device, step, loss, tracker, epoch):
    # A step closure: runs after the step's mark_step, when loss holds its value.
    test_utils.print_training_update(device, step, loss.item(), tracker.rate(), tracker.global_rate(), epoch)


def train(args):
    torch.manual_seed(args.seed)
    device = torch_xla.device()
    train_loader, test_loader = loaders(args)
    model = make_model(args.model, args.img_dim).to(device)
    xm.broadcast_master_param(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()

    def train_loop(loader, epoch):
        tracker = xm.RateTracker()
        model.train()
        steady = None  # (time, steps) when step WARM begins: the loader has synced the steps before it
        for step, (data, target) in enumerate(loader):
            if step == WARM:
                steady = (time.perf_counter(), step)
            optimizer.zero_grad()
            loss = loss_fn(model(data), target)
            loss.backward()
            xm.optimizer_step(optimizer)
            tracker.add(args.batch_size)
            if step % args.log_steps == 0:
                xm.add_step_closure(_train_update, args=(device, step, loss, tracker, epoch))
            if args.num_steps and step + 1 >= args.num_steps:
                break
        xm.mark_step()  # a loop that breaks early leaves its last step pending
        if steady:
            dt = time.perf_counter() - steady[0]
            tracker.steady_rate = (step + 1 - steady[1]) * args.batch_size / dt if dt > 0 else 0.0
        return tracker

    def test_loop(loader):
        model.eval()
        correct, total = torch.zeros((), dtype=torch.int64, device=device), 0
        with torch.no_grad():
            for step, (data, target) in enumerate(loader):
                pred = model(data).argmax(1)
                correct += pred.eq(target).sum()
                total += data.size(0)
                if args.num_steps and step + 1 >= args.num_steps:
                    break
        return xm.mesh_reduce("test_accuracy", 100.0 * correct.item() / max(total, 1), np.mean)

    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)
    accuracy = 0.0
    for epoch in range(1, args.num_epochs + 1):
        xm.master_print(f"Epoch {epoch} train begin {test_utils.now()}")
        tracker = train_loop(train_device_loader, epoch)
        steady = getattr(tracker, "steady_rate", None)
        xm.master_print(f"Epoch {epoch} train end {test_utils.now()}, "
                        f"{tracker.global_rate() * xr.world_size():.1f} img/s over {xr.world_size()} rank(s)"
                        + (f", {steady * xr.world_size():.1f} img/s after the first {WARM} steps" if steady else ""))
        accuracy = test_loop(test_device_loader)
        xm.master_print(f"Epoch {epoch} test end {test_utils.now()}, Accuracy={accuracy:.2f}")
    if args.metrics_debug:
        xm.master_print(met.metrics_report())
    fallbacks = {n: met.counter_value(n) for n in met.counter_names() if n.startswith("aten::")}
    xm.master_print(f"aten:: fallbacks: {sum(fallbacks.values())} {fallbacks or ''}")
    return accuracy


def _mp_fn(index, args):
    train(args)


if __name__ == "__main__":
    args = parse_args()
    xmp.spawn(_mp_fn, args=(args,), nprocs=args.num_cores)
