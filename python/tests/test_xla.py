"""lazytensor.xla, PyTorch/XLA's Python API over the torch device: the
import hook of `python3 -m lazytensor.xla`, errors naming a missing
torch_xla name, metrics under PyTorch/XLA's names, the collectives in a
world of one here and on two ranks under mpirun (a 2-rank optimizer step
equals one rank's step on the whole batch; a killed rank ends the job), and
examples/xla_style_train.py on one process and on two ranks. Models are
tiny: the suite runs on 2 cores."""
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import SANITIZED, torch_device_or_skip

torch = torch_device_or_skip(heavy=True)  # subprocesses running whole scripts
pytest.importorskip("lazytensor.torch._bridge")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "xla_style_train.py")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def run_py(args, timeout=240, mpi=0):
    cmd = [sys.executable] + args
    if mpi:
        cmd = [shutil.which("mpirun"), "--oversubscribe", "-np", str(mpi)] + cmd
    return subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)


def script(tmp_path, text, name="s.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def mpirun_or_skip():
    if not shutil.which("mpirun") or SANITIZED:
        pytest.skip("needs mpirun (and no ASan runtime: MPI's plugins load outside it)")
    from lazytensor.xla.distributed.xla_multiprocessing import _built_with_mpi
    if not _built_with_mpi():
        pytest.skip("the library was built without MPI")


def test_import_hook_resolves_torch_xla(tmp_path):
    s = script(tmp_path, """
        import sys
        import torch_xla, torch_xla.core.xla_model as xm
        from torch_xla import runtime as xr
        import lazytensor.xla.core.xla_model
        assert xm is lazytensor.xla.core.xla_model and torch_xla.runtime is xr
        print("argv", sys.argv, __name__, xr.world_size(), xm.get_ordinal(), xm.xla_device())
        """)
    r = run_py(["-m", "lazytensor.xla", s, "--flag", "x"])
    assert r.returncode == 0, r.stderr
    assert f"argv ['{s}', '--flag', 'x'] __main__ 1 0 privateuseone:0" in r.stdout
    # Only in that process: importing lazytensor.xla installs no torch_xla.
    r = run_py(["-c", "import importlib.util, lazytensor.xla; s = importlib.util.find_spec('torch_xla'); "
                      "print('torch_xla:', s and s.origin)"])
    assert r.returncode == 0 and "torch_xla:" in r.stdout and "lazytensor" not in r.stdout, r.stdout + r.stderr


def test_missing_names_are_named(tmp_path):
    s = script(tmp_path, """
        import torch_xla.core.xla_model as xm
        xm.all_to_all_banana(1)
        """)
    r = run_py(["-m", "lazytensor.xla", s])
    assert r.returncode != 0 and "torch_xla.core.xla_model.all_to_all_banana is not implemented" in r.stderr
    s = script(tmp_path, "import torch_xla.experimental.banana\n", "t.py")
    r = run_py(["-m", "lazytensor.xla", s])
    assert r.returncode != 0 and "torch_xla.experimental is not implemented" in r.stderr
    import lazytensor.xla.debug.metrics as met
    assert not hasattr(met, "banana")
    with pytest.raises(AttributeError, match=r"torch_xla\.debug\.metrics\.banana is not implemented"):
        met.banana


def test_profiler_spans_in_the_chrome_trace(tmp_path):
    s = script(tmp_path, """
        import torch, torch_xla, torch_xla.debug.profiler as xp
        xp.start_server(9012)
        xp.start_server(9012)
        for step in range(2):
            with xp.StepTrace("train_loop", step_num=step):
                with xp.Trace("build_graph"):
                    y = (torch.ones(4).to(torch_xla.device()) * 2).sum()
        print(y.item())
        """)
    trace = tmp_path / "trace.json"
    r = subprocess.run([sys.executable, "-m", "lazytensor.xla", s], env=dict(ENV, LT_TRACE_FILE=str(trace)),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "8.0" in r.stdout, r.stderr
    assert r.stderr.count("profiler server on port 9012 not started") == 1
    text = trace.read_text()
    assert "build_graph" in text and "train_loop 1" in text


def test_world_of_one_and_metrics():
    import lazytensor.torch as ltt
    import lazytensor.xla as torch_xla
    import lazytensor.xla.core.xla_model as xm
    import lazytensor.xla.debug.metrics as met
    dev = torch_xla.device()
    assert xm.xrt_world_size() == 1 and xm.get_ordinal() == 0 and xm.is_master_ordinal()
    x = torch.tensor([1.0, -2.0]).to(dev)
    assert xm.all_reduce(xm.REDUCE_SUM, x, scale=0.5).cpu().tolist() == [0.5, -1.0]
    assert xm.all_gather(x).cpu().tolist() == [1.0, -2.0]
    assert xm.mesh_reduce("t", 3, sum) == 3 and xm.rendezvous("r", b"ab") == [b"ab"]
    seen = []
    xm.add_step_closure(lambda t: seen.append(t.tolist()), args=(x * 2,))
    xm.add_step_closure(lambda: seen.append("second"))
    assert not seen
    xm.mark_step()
    assert seen == [[2.0, -4.0], "second"]
    ltt.metrics_reset()
    for _ in range(2):
        (torch.ones(3).to(dev) * 3).sum().item()
    assert {"CompileTime", "ExecuteTime"} <= set(met.metric_names())
    assert {"UncachedCompile", "CachedCompile", "MarkStep"} <= set(met.counter_names())
    assert met.counter_value("UncachedCompile") >= 1 and met.counter_value("CachedCompile") >= 1
    count, acc, _ = met.metric_data("ExecuteTime")
    assert count >= 2 and acc > 0
    assert met.counter_value("aten::nonexistent") is None and met.metric_data("Nope") is None
    assert "CompileTime" in met.metrics_report() and "Metric: ExecuteTime" in met.short_metrics_report()


def test_parallel_loader_and_rate_tracker():
    import lazytensor.xla.core.xla_model as xm
    import lazytensor.xla.distributed.parallel_loader as pl
    import lazytensor.xla.utils.utils as xu
    dev = xm.xla_device()
    host = [(torch.full((2,), float(i)), torch.tensor(i)) for i in range(5)]
    got = [(a.device, a.cpu().tolist(), b.item()) for a, b in pl.MpDeviceLoader(host, dev, device_prefetch_size=2)]
    assert got == [(dev, [float(i)] * 2, i) for i in range(5)]
    assert len(list(pl.MpDeviceLoader(xu.SampleGenerator(host[0], 3), dev))) == 3

    def bad():
        yield host[0]
        raise ValueError("loader broke")
    with pytest.raises(ValueError, match="loader broke"):
        list(pl.ParallelLoader(bad(), [dev]).per_device_loader(dev))
    t = xm.RateTracker()
    t.add(10)
    time.sleep(0.01)
    assert t.rate() > 0 and t.global_rate() > 0


def test_parallel_loader_thread_holds_no_device_tensor_and_ends_before_exit(tmp_path):
    # A loop that breaks early leaves the loader's thread drawing host
    # batches. That thread must not keep the ParallelLoader (and its
    # batches already on the device) alive, and must have ended before the
    # interpreter finalizes: a daemon thread freeing a tensor then aborted
    # the process ("terminate called without an active exception").
    s = script(tmp_path, """
        import gc, os, sys, time, weakref
        import torch
        import lazytensor.xla.core.xla_model as xm
        import lazytensor.xla.distributed.parallel_loader as pl
        def slow():
            try:
                for i in range(100):
                    time.sleep(0.2)
                    yield torch.full((2,), float(i))
            finally:
                os.write(1, b"host loader closed\\n")  # one write: the two threads' lines never interleave
        dev = xm.xla_device()
        loader = pl.ParallelLoader(slow(), [dev], device_prefetch_size=1)
        for x in loader.per_device_loader(dev):
            break
        ref = weakref.ref(loader)
        del loader, x
        gc.collect()
        os.write(1, b"freed\\n" if ref() is None else b"kept alive\\n")
        again = pl.ParallelLoader(slow(), [dev])  # never closed: stopped at exit
        next(iter(again.per_device_loader(dev)))
    """)
    r = run_py([s], timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "freed" in lines and lines.count("host loader closed") == 2, r.stdout


def test_parallel_loader_dropped_mid_batch_is_joined_at_exit(tmp_path):
    # The loop breaks, the loader is freed, and the program ends while the
    # loader's thread is still drawing a batch inside torch's C++ (which
    # releases the GIL): the thread must be stopped and joined at exit,
    # not killed by finalization there (an abort, exit code 134).
    s = script(tmp_path, """
        import gc, os
        import torch
        import lazytensor.xla.core.xla_model as xm
        import lazytensor.xla.distributed.parallel_loader as pl
        torch.set_num_threads(1)
        def busy():
            a = torch.randn(800, 800)
            while True:
                for _ in range(10):
                    a = torch.mm(a, a).clamp_(-1, 1)
                yield torch.full((2,), 0.0)
        dev = xm.xla_device()
        loader = pl.ParallelLoader(busy(), [dev], device_prefetch_size=1)
        for x in loader.per_device_loader(dev):
            break
        del loader, x
        gc.collect()
        os.write(1, b"exiting\\n")
    """)
    r = run_py([s], timeout=60)
    assert r.returncode == 0 and r.stdout == "exiting\n", r.stdout + r.stderr


def test_example_one_process():
    r = run_py(["-m", "lazytensor.xla", EXAMPLE, "--fake_data", "--model", "mlp", "--img_dim", "8",
                "--batch_size", "8", "--num_steps", "3", "--log_steps", "1", "--metrics_debug"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Training Device=privateuseone:0 Epoch=1 Step=2" in r.stdout and "Accuracy=" in r.stdout
    assert "CompileTime" in r.stdout and "aten:: fallbacks: 0" in r.stdout


@pytest.mark.skipif(not os.path.exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"),
                    reason="needs Debian's dataset-fashion-mnist")
def test_example_fashion_mnist_resnet18():
    r = run_py(["-m", "lazytensor.xla", EXAMPLE, "--model", "resnet18", "--img_dim", "28", "--batch_size", "4",
                "--num_steps", "2", "--log_steps", "1"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Step=1" in r.stdout and "aten:: fallbacks: 0" in r.stdout


def test_example_two_ranks():
    mpirun_or_skip()
    r = run_py(["-m", "lazytensor.xla", EXAMPLE, "--fake_data", "--model", "mlp", "--img_dim", "8",
                "--batch_size", "8", "--num_steps", "3", "--log_steps", "1"], mpi=2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("Training Device=privateuseone:0 Epoch=1 Step=2") == 2  # each rank's update
    assert r.stdout.count("Accuracy=") == 1 and "over 2 rank(s)" in r.stdout  # rank 0 prints


def test_spawn_starts_the_ranks_through_mpirun():
    mpirun_or_skip()
    r = run_py(["-m", "lazytensor.xla", EXAMPLE, "--fake_data", "--model", "mlp", "--img_dim", "8",
                "--batch_size", "8", "--num_steps", "2", "--num_cores", "2"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "spawn: " in r.stderr and "over 2 rank(s)" in r.stdout


STEP = """
    import sys, torch, torch.nn as nn
    import torch_xla, torch_xla.core.xla_model as xm, torch_xla.runtime as xr
    dev = torch_xla.device()
    rank, world = xr.global_ordinal(), xr.world_size()
    assert world == 2, world
    torch.manual_seed(rank)  # each rank starts from other weights: broadcast_master_param fixes that
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).to(dev)
    ref = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).to(dev)
    xm.broadcast_master_param(model)
    ref.load_state_dict(model.state_dict())
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 5, generator=g), torch.randint(0, 3, (8,), generator=g)
    B = 4
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    nn.CrossEntropyLoss()(model(x[rank * B:(rank + 1) * B].to(dev)), y[rank * B:(rank + 1) * B].to(dev)).backward()
    xm.optimizer_step(opt)
    xm.mark_step()
    ropt = torch.optim.SGD(ref.parameters(), lr=0.5, momentum=0.9)
    nn.CrossEntropyLoss()(ref(x.to(dev)), y.to(dev)).backward()
    ropt.step()  # this rank alone, the whole batch
    xm.mark_step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.cpu(), q.cpu(), rtol=1e-5, atol=1e-6)
    s = xm.all_reduce(xm.REDUCE_SUM, torch.tensor([rank + 1.0]).to(dev))
    m = xm.all_reduce(xm.REDUCE_MAX, [torch.tensor([rank * 1.0]).to(dev)])[0]
    a = xm.all_gather(torch.tensor([[rank * 1.0, 5.0]]).to(dev))
    assert s.cpu().tolist() == [3.0] and m.cpu().tolist() == [1.0], (s, m)
    assert a.cpu().tolist() == [[0.0, 5.0], [1.0, 5.0]], a
    assert xm.mesh_reduce("t", {"r": rank}, lambda v: [d["r"] for d in v]) == [0, 1]
    xm.save(model.state_dict(), sys.argv[1])
    print(f"rank {rank} ok", flush=True)
"""


def test_two_rank_step_equals_one_rank_on_the_whole_batch(tmp_path):
    mpirun_or_skip()
    s = script(tmp_path, STEP)
    out = tmp_path / "model.pt"
    r = run_py(["-m", "lazytensor.xla", s, str(out)], mpi=2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0 ok" in r.stdout and "rank 1 ok" in r.stdout
    sd = torch.load(out)
    assert all(v.device.type == "cpu" for v in sd.values()) and len(sd) == 4


def test_a_killed_rank_ends_the_job(tmp_path):
    mpirun_or_skip()
    s = script(tmp_path, """
        import os, signal, torch
        import torch_xla, torch_xla.core.xla_model as xm
        dev = torch_xla.device()
        for step in range(100000):
            if step == 3 and xm.get_ordinal() == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            t = xm.all_reduce(xm.REDUCE_SUM, torch.ones(4).to(dev))
            t.cpu()
        """)
    t0 = time.time()
    r = run_py(["-m", "lazytensor.xla", s], mpi=2, timeout=120)
    assert r.returncode != 0 and time.time() - t0 < 60, (r.returncode, r.stderr[-2000:])
