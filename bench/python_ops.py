"""Per-op cost from Python, lazytensor vs PyTorch eager in one run (the
seed's measure): a loop of x.lerp_(g, 0.1) on a small tensor, the same
through a view x[0:32].lerp_(g, 0.1), and out-of-place torch.lerp.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_ops.py [ops-per-rep [repetitions]]

lazytensor only records each op (one IR node); the sync that runs the chain
is timed apart. The cases alternate between the two libraries in every
repetition; the table shows the minimum (the least disturbed run on a
shared machine) and the median of 15 repetitions. Times are the process's
CPU time (both libraries run one thread here), which other processes on a
shared machine disturb less than the wall clock."""
import statistics
import sys
import time

import lazytensor as lt

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 15


def once(loop, sync):
    t0 = time.process_time()
    loop()
    t1 = time.process_time()
    sync()
    return (t1 - t0) / N * 1e9, (time.process_time() - t1) * 1e3


def lazy_cases():
    x, g = lt.randn(64), lt.randn(64)
    xv, g32 = lt.randn(64), lt.randn(32)
    a, b = lt.randn(2, 3), lt.randn(2, 3)
    lt.mark_step()
    v = xv[0:32]

    def inplace():
        for _ in range(N):
            x.lerp_(g, 0.1)

    def view():
        for _ in range(N):
            v.lerp_(g32, 0.1)

    def view_fresh():  # the seed's spelling: a new view every time
        for _ in range(N):
            xv[0:32].lerp_(g32, 0.1)

    def outofplace():
        for _ in range(N):
            a.lerp(b, 0.5)
    return dict(inplace=inplace, view=view, view_fresh=view_fresh, outofplace=outofplace)


def torch_cases(torch):
    x, g = torch.randn(64), torch.randn(64)
    xv, g32 = torch.randn(64), torch.randn(32)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    v = xv[0:32]

    def inplace():
        for _ in range(N):
            x.lerp_(g, 0.1)

    def view():
        for _ in range(N):
            v.lerp_(g32, 0.1)

    def view_fresh():
        for _ in range(N):
            xv[0:32].lerp_(g32, 0.1)

    def outofplace():
        for _ in range(N):
            torch.lerp(a, b, 0.5)
    return dict(inplace=inplace, view=view, view_fresh=view_fresh, outofplace=outofplace)


def main():
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    lazy_f, eager_f = lazy_cases(), torch_cases(torch) if torch else {}
    lazy = {k: [] for k in lazy_f}
    eager = {k: [] for k in eager_f}
    for _ in range(REPS):
        for k in lazy_f:
            lazy[k].append(once(lazy_f[k], lt.mark_step))
            if k in eager_f:
                eager[k].append(once(eager_f[k], lambda: None)[0])
    names = {"inplace": "x.lerp_(g, 0.1), 64 floats", "view": "v.lerp_(g, 0.1), v = x[0:32] made once",
             "view_fresh": "x[0:32].lerp_(g, 0.1) (slice + lerp_)", "outofplace": "lerp(a, b, 0.5), 2x3"}
    print(f"{N} ops per repetition, {REPS} repetitions: min / median ns (CPU time) per op")
    print("| op from Python | lazytensor trace | PyTorch 1.13 eager | ratio (min) |")
    print("|---|---|---|---|")
    mins = {}
    for k, label in names.items():
        ns = [r[0] for r in lazy[k]]
        mins[k] = min(ns)
        e = eager.get(k)
        et = f"{min(e):.0f} / {statistics.median(e):.0f}" if e else "-"
        ratio = f"{min(ns) / min(e):.2f}x" if e else "-"
        print(f"| {label} | {min(ns):.0f} / {statistics.median(ns):.0f} | {et} | {ratio} |")
    print(f"lazytensor, through a view / plain in place (min): made once {mins['view'] / mins['inplace']:.2f}x, "
          f"fresh each time {mins['view_fresh'] / mins['inplace']:.2f}x")


if __name__ == "__main__":
    main()
