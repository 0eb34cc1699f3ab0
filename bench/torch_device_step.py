"""Step speed of the PyTorch device (issue 27, check 4).

torchvision's ResNet (torch autograd + torch.optim.SGD with momentum and
weight decay, a StepLR schedule running) on the lazytensor device against
the same program on PyTorch's CPU eager, in one run:

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_device_step.py \
        [--model resnet50] [--batch 32] [--size 224] [--steps 6] [--threads 2] [--eager | --cli PATH]

Prints per step: the Python side of the step (forward, backward, optimizer
calls, before mark_step), the whole step, and the uncached compiles; then
the steady-step median and the peak RSS of the process. --eager runs
PyTorch CPU eager instead (run it as a separate process: peak RSS is per
process). --cli PATH runs `PATH train` (the lazytensor CLI) with the same
model and settings instead and reads its per-step times; the peak RSS is
then the CLI process's. bench/run_all.sh's torch section runs all three.
"""
import argparse
import re
import resource
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
import torchvision

# The process's memory before any model: Python, torch and torchvision's own
# (~260 MB here), which a torch program carries and the CLI does not.
RUNTIME_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eager", action="store_true", help="PyTorch CPU eager instead of the lazytensor device")
    ap.add_argument("--cli", metavar="PATH", help="the lazytensor CLI (lazytensor train) instead of the device")
    a = ap.parse_args()
    if a.cli:
        return cli(a)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.eager:
        dev, mark_step, metric = "cpu", (lambda: None), (lambda name: float("nan"))
    else:
        import lazytensor.torch as ltt
        dev, mark_step, metric = ltt.device(), ltt.mark_step, ltt.metric
    model = getattr(torchvision.models, a.model)(num_classes=1000).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)  # a new lr every step
    x = torch.randn(a.batch, 3, a.size, a.size).to(dev)
    y = torch.randint(0, 1000, (a.batch,)).to(dev)
    steps, pys = [], []
    for i in range(a.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        t1 = time.perf_counter()
        mark_step()
        v = loss.item()
        t2 = time.perf_counter()
        steps.append(t2 - t0)
        pys.append(t1 - t0)
        print(f"step {i + 1}: loss {v:.4f}  python {1e3 * (t1 - t0):.1f} ms  step {1e3 * (t2 - t0):.0f} ms  "
              f"uncached compiles {metric('UncachedCompile'):.0f}", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    summary("PyTorch CPU eager" if a.eager else "lazytensor device", a, steps,
            f", python side {1e3 * statistics.median(pys[2:] or pys):.1f} ms", rss,
            f" (torch's runtime at import {RUNTIME_MB:.0f} MB)")


def summary(side, a, steps, extra, rss, rss_extra=""):
    steady = steps[2:] if len(steps) > 3 else steps[1:]
    print(f"{side}: {a.model} batch {a.batch} {a.size}x{a.size}, {a.threads} threads: steady step "
          f"{1e3 * statistics.median(steady):.0f} ms (median of {len(steady)}){extra}, peak RSS {rss:.0f} MB{rss_extra}")


def cli(a):
    """The same training on `lazytensor train`: SGD with momentum and weight
    decay, a schedule changing the learning rate, fake data. A step's time
    is its trace and execution (the data is generated outside the step)."""
    cmd = [a.cli, "train", "--model", a.model, "--data", "fake", "--batch-size", str(a.batch),
           "--image-size", str(a.size), "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9",
           "--weight-decay", "1e-4", "--lr-schedule", "cosine", "--steps", str(a.steps),
           "--threads", str(a.threads), "--test-size", "0", "--log-every", "1", "--seed", "0"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr}")
    steps = []
    for m in re.finditer(r"^step (\d+)/\d+ loss (\S+) .*trace_ms (\S+) execute_ms (\S+)", run.stderr, re.M):
        ms = float(m.group(3)) + float(m.group(4))
        steps.append(ms / 1e3)
        print(f"step {m.group(1)}: loss {float(m.group(2)):.4f}  step {ms:.0f} ms", flush=True)
    if len(steps) != a.steps:
        sys.exit(f"{' '.join(cmd)}: {len(steps)} step lines, expected {a.steps}:\n{run.stderr}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    summary("lazytensor train (CLI)", a, steps, "", rss)


if __name__ == "__main__":
    main()
