"""ResNet-50 training in lazytensor's Python API: the flow of PyTorch/XLA's
test_train_mp_imagenet.py (fake data by default, AdamW, one mark_step per
step, a metrics report at the end).

    PYTHONPATH=build/python /usr/bin/python3 examples/train_imagenet.py --steps 10 --image-size 64 --batch-size 8

Data-parallel over processes, as the XLA script runs one process per device:

    mpirun -np 2 env PYTHONPATH=build/python /usr/bin/python3 examples/train_imagenet.py --steps 10 ...

Each rank starts from rank 0's weights, takes every world-th batch (so
--batch-size is per process), and averages its gradients with the others'
inside the step's graph; rank 0 prints the global batch's loss.

--datadir DIR trains on Fashion-MNIST instead of fake data (the library's only
image dataset of labelled files here; the model's stem takes 1 channel then).
"""
import argparse
import time

import lazytensor as lt
from lazytensor import distributed as dist, models, nn


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50", choices=["resnet18", "resnet50"])
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--num-epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: whole epochs)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--log-steps", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--datadir", default=None, help="Fashion-MNIST directory (default: fake data)")
    p.add_argument("--fake-size", type=int, default=1281, help="fake training images per epoch")
    return p.parse_args()


def main():
    args = parse()
    rank, world = dist.get_rank(), dist.get_world_size()

    def log(*a):
        if rank == 0:
            print(*a, flush=True)

    lt.manual_seed(args.seed)
    if args.datadir:
        train_set, test_set = lt.data.FashionMNIST(args.datadir, True), lt.data.FashionMNIST(args.datadir, False)
        channels, classes = 1, 10
    else:
        train_set = lt.data.FakeData(args.fake_size, 3, args.image_size, 1000, seed=args.seed)
        test_set = lt.data.FakeData(max(args.batch_size, args.fake_size // 10), 3, args.image_size, 1000,
                                    seed=args.seed + 1)
        channels, classes = 3, 1000
    train_loader = lt.data.DataLoader(train_set, args.batch_size, shuffle=True, seed=args.seed)
    test_loader = lt.data.DataLoader(test_set, args.batch_size, shuffle=False)

    model = getattr(models, args.model)(num_classes=classes, in_channels=channels)
    if world > 1:
        with lt.no_grad():  # every rank starts from rank 0's weights
            for t in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(t, 0)
        lt.mark_step()
    optimizer = lt.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    loss_fn = nn.CrossEntropyLoss()

    def shard(loader, epoch):
        """This rank's batches: every world-th one, from its rank on (DistributedSampler's split)."""
        for b in range(rank, len(loader), world):
            yield loader.batch(epoch, b)

    def global_mean(t):
        """t's mean over the ranks, as a new tensor (t itself in a world of one)."""
        if world == 1:
            return t
        with lt.no_grad():
            m = t.clone()
            dist.all_reduce(m, dist.ReduceOp.AVG)
        return m

    def train_loop_fn(loader, epoch, budget):
        model.train()
        t0, seen, step = time.perf_counter(), 0, -1
        for step, (data, target) in enumerate(shard(loader, epoch)):
            if budget is not None and step >= budget:
                break
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            dist.average_gradients(model.parameters())  # traces nothing in a world of one
            optimizer.step()
            lt.mark_step()  # forward, backward, gradient all-reduce and update: one compiled graph
            seen += data.shape[0] * world
            if step % args.log_steps == 0:
                rate = seen / (time.perf_counter() - t0)
                log(f"epoch {epoch} step {step} loss {global_mean(loss).item():.4f} rate {rate:.1f} img/s")
        return step + 1

    @lt.no_grad()
    def test_loop_fn(loader):
        model.eval()
        correct = total = 0
        for data, target in shard(loader, 0):
            pred = model(data).argmax(1)
            correct += (pred == target).sum().item()
            total += data.shape[0]
        counts = lt.tensor([float(correct), float(total)], dtype=lt.float64)
        dist.all_reduce(counts)  # every rank's counts (the identity in a world of one)
        correct, total = counts.tolist()
        return 100.0 * correct / max(total, 1)

    steps_left = args.steps or None
    for epoch in range(1, args.num_epochs + 1):
        done = train_loop_fn(train_loader, epoch, steps_left)
        log(f"epoch {epoch}: test accuracy {test_loop_fn(test_loader):.2f}%")
        if steps_left is not None:
            steps_left -= done
            if steps_left <= 0:
                break
    log(lt.metrics_report())


if __name__ == "__main__":
    main()
