"""Tracing cost of the PyTorch device, the seed's complaint (issue 27, check 3).

From Python, one thread, the sync excluded: x.lerp_(g, 0.1) on 2x3 tensors
on the lazytensor device, on CPU eager tensors, and on PyTorch's lazy tensor
core (the TorchScript backend: at::functionalization, the design of the
seed); the same call through a view (x[0:2].lerp_); and chains of 10 and
10,000 in-place ops through views (the per-op cost must not grow).

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_device_ops.py [rounds]

Prints one table: median and range over the rounds, in microseconds per op.
"""
import statistics
import sys
import time

import torch

import lazytensor.torch as ltt

torch.set_num_threads(1)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
N = 2000


def per_op(fn, sync, n=N):
    """Microseconds per call of fn, traced n times; sync() excluded."""
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    sync()
    return 1e6 * (t1 - t0) / n


def plain(dev, sync):
    x = torch.randn(2, 3).to(dev)
    g = torch.randn(2, 3).to(dev)
    sync()
    return per_op(lambda: x.lerp_(g, 0.1), sync)


def through_view(dev, sync):
    x = torch.randn(4, 3).to(dev)
    g = torch.randn(2, 3).to(dev)
    sync()
    return per_op(lambda: x[0:2].lerp_(g, 0.1), sync)


def on_view(dev, sync):
    """The in-place op alone on a view made once: what the device adds."""
    x = torch.randn(4, 3).to(dev)
    g = torch.randn(2, 3).to(dev)
    v = x[0:2]
    sync()
    return per_op(lambda: v.lerp_(g, 0.1), sync)


def slicing(dev, sync):
    """torch's x[0:2] alone (Python indexing, the dispatcher, a new TensorImpl)."""
    x = torch.randn(4, 3).to(dev)
    sync()
    return per_op(lambda: x[0:2], sync)


def chain(dev, sync, length, total=10000):
    """Chains of length in-place ops through views of one tensor, each
    before one sync, repeated to total ops: the trace time per op (the
    syncs excluded), so a short chain is timed over as many ops as a long one."""
    g = torch.randn(2, 3).to(dev)
    traced = 0.0
    for _ in range(max(1, total // length)):
        x = torch.randn(4, 3).to(dev)
        sync()
        t0 = time.perf_counter()
        for _ in range(length):
            x[0:2].lerp_(g, 0.1)
        traced += time.perf_counter() - t0
        sync()
    return 1e6 * traced / (max(1, total // length) * length)


def lazy_core():
    """PyTorch's lazy tensor core, or None where this build lacks it."""
    try:
        import torch._lazy
        import torch._lazy.ts_backend
        torch._lazy.ts_backend.init()
        return "lazy", torch._lazy.mark_step
    except Exception as e:  # noqa: BLE001 (any failure means: not available)
        print(f"# PyTorch's lazy tensor core is not available here: {e}")
        return None


def main():
    ours = (ltt.device(), ltt.mark_step)
    cpu = ("cpu", lambda: None)
    ltc = lazy_core()
    rows = {}

    def add(name, fn):
        rows.setdefault(name, []).append(fn())

    for _ in range(ROUNDS):
        add("x.lerp_(g, 0.1), CPU eager", lambda: plain(*cpu))
        add("x.lerp_(g, 0.1), lazytensor", lambda: plain(*ours))
        if ltc:
            add("x.lerp_(g, 0.1), PyTorch lazy tensor core", lambda: plain(*ltc))
        add("x[0:2].lerp_(g, 0.1), CPU eager", lambda: through_view(*cpu))
        add("x[0:2].lerp_(g, 0.1), lazytensor", lambda: through_view(*ours))
        add("x[0:2] alone (torch's slicing), CPU eager", lambda: slicing(*cpu))
        add("x[0:2] alone (torch's slicing), lazytensor", lambda: slicing(*ours))
        add("v.lerp_(g, 0.1), v = x[0:2] made once, CPU eager", lambda: on_view(*cpu))
        add("v.lerp_(g, 0.1), v = x[0:2] made once, lazytensor", lambda: on_view(*ours))
        add("chains of 10 through views, lazytensor", lambda: chain(*ours, 10))
        add("chain of 10,000 through views, lazytensor", lambda: chain(*ours, 10000))
        if ltc:
            add("chain of 200 through views, PyTorch lazy tensor core", lambda: chain(*ltc, 200, 200))

    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"| per op, 1 thread, {ROUNDS} rounds | median us | range |")
    print("|---|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {med[k]:.2f} | {min(v):.2f}-{max(v):.2f} |")
    ratio = med["x.lerp_(g, 0.1), lazytensor"] / med["x.lerp_(g, 0.1), CPU eager"]
    print(f"\nlazytensor / CPU eager: {ratio:.2f}x (goal <= 1.0)")
    if ltc:
        r = med["x.lerp_(g, 0.1), lazytensor"] / med["x.lerp_(g, 0.1), PyTorch lazy tensor core"]
        print(f"lazytensor / PyTorch lazy tensor core: {r:.3f}x (goal <= 0.2)")
    r = med["x[0:2].lerp_(g, 0.1), lazytensor"] / med["x.lerp_(g, 0.1), lazytensor"]
    print(f"through a view / plain, lazytensor: {r:.2f}x (goal <= 2)")
    r = med["x[0:2] alone (torch's slicing), lazytensor"] / med["x.lerp_(g, 0.1), lazytensor"]
    print(f"  of which torch's slicing alone / plain: {r:.2f}x")
    r = med["v.lerp_(g, 0.1), v = x[0:2] made once, lazytensor"] / med["x.lerp_(g, 0.1), lazytensor"]
    print(f"the op on a view / plain (what the device adds for a view), lazytensor: {r:.2f}x")
    r = med["chain of 10,000 through views, lazytensor"] / med["chains of 10 through views, lazytensor"]
    print(f"chain of 10,000 / chain of 10, per op: {r:.2f}x (goal: 1, constant per op)")


if __name__ == "__main__":
    main()
