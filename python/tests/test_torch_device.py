"""The PyTorch device itself (issue 27): storages, views, copies, syncs,
exchange with lazytensor.Tensor, the CPU fallback, threads, bad use."""
import io
import os
import subprocess
import sys
import threading

import pytest

from conftest import torch_device_or_skip

torch = torch_device_or_skip()
ltt = pytest.importorskip("lazytensor.torch")
import lazytensor as lt  # noqa: E402

DEV = ltt.device()
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32, torch.bool]


def sample(dtype, shape=(3, 4), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if not dtype.is_floating_point:
        return torch.randint(-50, 50, shape, generator=g, dtype=dtype)
    return torch.randn(shape, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip(dtype):
    x = sample(dtype)
    d = x.to(DEV)
    assert d.device == DEV and d.dtype == dtype and d.shape == x.shape
    assert torch.equal(d.cpu(), x)
    assert d.cpu().tolist() == x.tolist()
    assert torch.equal(d[1, 2].cpu(), x[1, 2])
    assert d[1, 2].item() == x[1, 2].item()


def test_views_alias_the_storage():
    x = torch.arange(12.0).reshape(3, 4)
    d = x.to(DEV)
    col = d[:, 1]
    assert col.stride() == (4,) and col.storage_offset() == 1
    assert torch.equal(col.cpu(), x[:, 1])
    t = d.t()
    assert torch.equal(t.cpu(), x.t())
    assert torch.equal(d.view(2, 6).cpu(), x.view(2, 6))
    assert torch.equal(d.reshape(-1).cpu(), x.reshape(-1))
    # writes through a view are seen by the base and every other alias
    col.fill_(-1.0)
    x[:, 1].fill_(-1.0)
    assert torch.equal(d.cpu(), x)
    assert torch.equal(t.cpu(), x.t())
    t[0].zero_()
    x.t()[0].zero_()
    assert torch.equal(d.cpu(), x)
    d[1:3, 2:4].copy_(torch.full((2, 2), 7.0))
    x[1:3, 2:4] = 7.0
    assert torch.equal(d.cpu(), x)


def test_copies_in_every_direction():
    x = torch.randn(4, 5)
    d = torch.empty(4, 5, device=DEV)
    d.copy_(x)
    assert torch.equal(d.cpu(), x)
    e = torch.empty(4, 5, device=DEV, dtype=torch.float64)
    e.copy_(d)  # device to device, cast
    assert torch.equal(e.cpu(), x.double())
    host = torch.empty(4, 5)
    host.copy_(d)
    assert torch.equal(host, x)
    assert torch.equal(x.to(DEV, non_blocking=True).cpu(), x)
    b = torch.empty(4, 5, device=DEV)
    b.copy_(torch.arange(5.0))  # broadcast
    assert torch.equal(b.cpu(), torch.arange(5.0).expand(4, 5))
    nc = torch.randn(5, 4).t()  # a non-contiguous CPU source
    assert torch.equal(nc.to(DEV).cpu(), nc)


def test_module_to_device_and_back():
    m = torch.nn.Linear(3, 2)
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    m.to(DEV)
    assert all(p.device == DEV for p in m.parameters())
    m.cpu()
    assert all(torch.equal(v, sd[k]) for k, v in m.state_dict().items())


def test_reading_values_syncs():
    x = torch.tensor([1.5, -2.0, 3.0])
    d = x.to(DEV)
    assert bool(d[0] > 0) if hasattr(d, "__gt__") else True
    assert float(d[2]) == 3.0
    assert d.cpu().numpy().tolist() == [1.5, -2.0, 3.0]
    assert "privateuseone" in repr(d)
    buf = io.BytesIO()
    torch.save({"w": d}, buf)
    buf.seek(0)
    loaded = torch.load(buf, map_location="cpu")
    assert torch.equal(loaded["w"], x)


def test_empty_and_resize_through_out():
    d = torch.randn(3).to(DEV)
    e = torch.empty(0, device=DEV)
    e.resize_(5)
    assert e.shape == (5,)
    e.fill_(2.0)
    assert torch.equal(e.cpu(), torch.full((5,), 2.0))
    d.resize_(6)  # grows, keeping its values in front
    assert d.shape == (6,)


def test_exchange_with_lazytensor_tensor():
    x = torch.arange(6.0).reshape(2, 3)
    d = x.to(DEV)
    a = ltt.to_lt(d)
    assert isinstance(a, lt.Tensor) and tuple(a.shape) == (2, 3)
    assert a.tolist() == x.tolist()
    a.mul_(2) if hasattr(a, "mul_") else a.__imul__(2)
    assert torch.equal(d.cpu(), x * 2)  # the same storage
    b = lt.ones(2, 2)
    t = ltt.from_lt(b)
    assert t.device == DEV and torch.equal(t.cpu(), torch.ones(2, 2))
    t.zero_()
    assert b.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(TypeError, match="to_lt"):
        ltt.to_lt(torch.ones(2))
    with pytest.raises(TypeError, match="from_lt"):
        ltt.from_lt(torch.ones(2))


def test_manual_seed_seeds_the_device():
    def draw():
        return torch.rand(64, device=DEV).cpu()
    torch.manual_seed(5)
    a = draw()
    ltt.manual_seed(5)
    b = draw()
    torch.manual_seed(6)
    c = draw()
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert 0.0 <= a.min().item() and a.max().item() < 1.0
    assert ltt.fallback_counts().get("aten::uniform_") is None


def test_mixing_a_cpu_tensor_is_torchs_device_error():
    d = torch.ones(3, device=DEV)
    with pytest.raises(RuntimeError, match="device"):
        d + torch.ones(3)
    # a CPU 0-d tensor is a scalar, as for every torch device
    assert torch.equal((d * torch.tensor(2.0)).cpu(), torch.full((3,), 2.0))


def test_bad_use_raises_and_loses_nothing():
    d = torch.ones(2, 3, device=DEV)
    with pytest.raises(RuntimeError):
        d.view(4, 2)
    with pytest.raises((RuntimeError, TypeError), match="int8|Char"):  # (uint8 is supported)
        torch.ones(2, dtype=torch.int8).to(DEV)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3, device=DEV).mm(torch.ones(2, 3, device=DEV))
    assert torch.equal(d.cpu(), torch.ones(2, 3))  # still usable


def test_backward_on_torchs_device_thread():
    """torch's autograd engine runs a device's backward on its own worker
    thread: the core's thread-local error state must not split."""
    w = torch.randn(3, 3).to(DEV).requires_grad_()
    x = torch.randn(2, 3).to(DEV)
    seen = []
    w.register_hook(lambda g: seen.append(threading.get_ident()))
    (x.mm(w)).sum().backward()
    assert seen and seen[0] != threading.get_ident()
    assert w.grad is not None and w.grad.device == DEV
    want = x.cpu().t().mm(torch.ones(2, 3))
    assert torch.allclose(w.grad.cpu(), want)
    # an error raised by a kernel on the worker thread reaches the caller,
    # and the caller's thread stays usable
    v = torch.randn(3).to(DEV).requires_grad_()
    bad = v * 2
    with pytest.raises(RuntimeError):
        bad.backward(torch.ones(4, device=DEV))
    assert torch.equal((torch.ones(2, device=DEV) + 1).cpu(), torch.full((2,), 2.0))


def run_script(code, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


def test_fallback_is_counted_warned_once_and_can_be_an_error():
    code = ("import torch, lazytensor.torch as ltt\n"
            "d = torch.ones(4, device=ltt.device())\n"
            "for _ in range(3): r = torch.cumprod(d, 0)\n"
            "print(r.cpu().tolist())\n"
            "print(ltt.fallback_counts().get('aten::cumprod'))\n"
            "print('aten::cumprod' in ltt.metrics_report())\n")
    r = run_script(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["[1.0, 1.0, 1.0, 1.0]", "3", "True"]
    assert sum("cumprod" in line for line in r.stderr.splitlines()) == 1  # warned once
    r = run_script(code, {"LT_TORCH_FALLBACK": "error"})
    assert r.returncode != 0 and "cumprod" in r.stderr and "LT_TORCH_FALLBACK" in r.stderr


def test_environment_switches_work_unchanged(tmp_path):
    code = ("import torch, lazytensor.torch as ltt\n"
            "d = torch.ones(4, device=ltt.device())\n"
            "d.fill_(3.0); ltt.mark_step(); print(d.cpu().tolist())\n")
    trace = tmp_path / "t.json"
    r = run_script(code, {"LT_TRACE_FILE": str(trace), "LT_METRICS": "1"})
    assert r.returncode == 0, r.stderr
    assert trace.exists() and "MarkStep" in r.stderr
