"""A ResNet training step defined in Python (lazytensor.models) against the
same workload run by `lazytensor train` (the C models), in one run: trace
time per step and images/s, both measured as the CLI measures them (data +
trace + mark_step wall time over every step, compiles included).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_step.py [model batch image_size steps]

Defaults: resnet50, batch 8, 64x64 fake images, 20 steps, AdamW."""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("LT_CLI", os.path.join(HERE, "..", "build", "lazytensor"))


def python_run(model_name, batch, size, steps, seed=0):
    import lazytensor as lt
    import lazytensor.nn.functional as F
    lt.manual_seed(seed)
    model = getattr(lt.models, model_name)(num_classes=1000, in_channels=3)
    opt = lt.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    loader = lt.data.DataLoader(lt.data.FakeData(60000, 3, size, 1000, seed=seed), batch_size=batch, seed=seed)
    # The parameters' initialization is traced like any op: run it now, outside
    # the timed loop, as the CLI initializes its model before its step timer.
    lt.mark_step()
    data_s = trace_s = mark_s = 0.0
    compile0 = lt.metric("CompileTime")
    traces = []
    it = iter(loader)
    for _ in range(steps):
        t0 = time.perf_counter()
        x, y = next(it)
        t1 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        t2 = time.perf_counter()
        lt.mark_step()
        t3 = time.perf_counter()
        loss.item()
        data_s += t1 - t0
        trace_s += t2 - t1
        mark_s += t3 - t2
        traces.append(t2 - t1)
    wall = data_s + trace_s + mark_s
    compile_s = lt.metric("CompileTime") - compile0
    return {"images_per_sec": steps * batch / wall, "images_per_sec_run": steps * batch / (wall - compile_s),
            "trace_ms_per_step": trace_s * 1e3 / steps,
            "trace_ms_median": statistics.median(traces[2:]) * 1e3, "compiles": lt.metric("UncachedCompile")}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--python-side":
        print(json.dumps(python_run(sys.argv[2], *map(int, sys.argv[3:6]))))
        return
    model, batch, size, steps = (sys.argv[1:2] or ["resnet50"])[0], *(int(a) for a in (sys.argv[2:5] or [8, 64, 20]))
    cli = json.loads(subprocess.run([CLI, "train", "--model", model, "--data", "fake", "--image-size", str(size),
                                     "--batch-size", str(batch), "--steps", str(steps), "--lr", "0.001",
                                     "--lr-schedule", "none", "--test-size", "0", "--report", "json"],
                                    check=True, capture_output=True, text=True).stdout)
    py = json.loads(subprocess.run([sys.executable, __file__, "--python-side", model, str(batch), str(size),
                                    str(steps)], check=True, capture_output=True, text=True).stdout)
    print(f"{model}, batch {batch}, {size}x{size} fake images, {steps} steps, AdamW")
    # the CLI's img/s counts compiles; without them: data + trace + execute per step
    cli_run = batch / ((cli["data_ms_per_step"] + cli["trace_ms_per_step"] + cli["execute_ms_per_step"]) / 1e3)
    print("| | trace ms/step (mean) | img/s | img/s without compiles |")
    print("|---|---|---|---|")
    print(f"| lazytensor train (C models) | {cli['trace_ms_per_step']:.2f} | {cli['images_per_sec']:.2f} | {cli_run:.2f} |")
    print(f"| lazytensor.models (Python) | {py['trace_ms_per_step']:.2f} (median after 2 steps: "
          f"{py['trace_ms_median']:.2f}) | {py['images_per_sec']:.2f} | {py['images_per_sec_run']:.2f} |")
    print(f"Python / C img/s without compiles: {py['images_per_sec_run'] / cli_run:.3f}; "
          f"compiles: C {cli['uncached_compiles']:g}, Python {py['compiles']:g}")


if __name__ == "__main__":
    main()
