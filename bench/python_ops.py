"""Per-op cost from Python, lazytensor vs PyTorch eager in one run (the
seed's measure): a loop of x.lerp_(g, 0.1) on a small tensor, the same
through a view x[0:32].lerp_(g, 0.1), and out-of-place torch.lerp.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_ops.py [ops-per-rep]

lazytensor only records each op (one IR node); the sync that runs the chain
is timed apart. Medians of 7 repetitions."""
import statistics
import sys
import time

import lazytensor as lt

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
REPS = 7


def timeit(loop, sync=lambda: None):
    per, syncs = [], []
    for _ in range(REPS):
        t0 = time.perf_counter()
        loop()
        t1 = time.perf_counter()
        sync()
        per.append((t1 - t0) / N * 1e9)
        syncs.append((time.perf_counter() - t1) * 1e3)
    return statistics.median(per), statistics.median(syncs)


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
    lazy = {k: timeit(f, lt.mark_step) for k, f in lazy_cases().items()}
    eager = {k: timeit(f)[0] for k, f in torch_cases(torch).items()} if torch else {}
    names = {"inplace": "x.lerp_(g, 0.1), 64 floats", "view": "v.lerp_(g, 0.1), v = x[0:32] made once",
             "view_fresh": "x[0:32].lerp_(g, 0.1) (slice + lerp_)", "outofplace": "lerp(a, b, 0.5), 2x3"}
    print(f"{N} ops per repetition, median of {REPS}")
    print(f"| op from Python | lazytensor trace | its sync | PyTorch eager | ratio |")
    print("|---|---|---|---|---|")
    for k, label in names.items():
        ns, sync = lazy[k]
        e = eager.get(k)
        ratio = f"{ns / e:.2f}x" if e else "-"
        print(f"| {label} | {ns:.0f} ns | {sync:.1f} ms | {e:.0f} ns | {ratio} |" if e else
              f"| {label} | {ns:.0f} ns | {sync:.1f} ms | - | - |")
    print(f"view / plain in place (lazytensor): {lazy['view'][0] / lazy['inplace'][0]:.2f}x; "
          f"fresh view / plain: {lazy['view_fresh'][0] / lazy['inplace'][0]:.2f}x")


if __name__ == "__main__":
    main()
