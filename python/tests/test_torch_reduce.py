"""Reductions, softmax and losses on the PyTorch device (issue 27): each
registered kernel against torch's CPU result (float32, float64, int64, bool
where the op takes them; 0-d; non-contiguous views; out=; gradients through
torch's autograd), and none of them may fall back to the CPU."""
import math

import pytest

from conftest import torch_device_or_skip

torch = torch_device_or_skip()
ltt = pytest.importorskip("lazytensor.torch")
F = torch.nn.functional

DEV = ltt.device()
# the aten ops this family registers: none may reach the CPU fallback
OURS = {
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "_softmax", "_log_softmax",
    "_softmax_backward_data", "_log_softmax_backward_data", "nll_loss_forward", "nll_loss_backward", "mse_loss",
    "mse_loss_backward", "var", "std", "var_mean", "std_mean", "cumsum", "cumsum_", "flip",
}


@pytest.fixture(autouse=True)
def no_fallback_of_ours():
    ltt.metrics_reset()
    yield
    fell = {k: v for k, v in ltt.fallback_counts().items() if k.split("::")[-1] in OURS}
    assert not fell, f"fell back to the CPU: {fell}"


def sample(dtype, shape=(3, 4), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if not dtype.is_floating_point:
        return torch.randint(-20, 20, shape, generator=g, dtype=dtype)
    return torch.randn(shape, generator=g).to(dtype)


def same(dev, ref, tol=1e-5):
    got = dev.cpu()
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if ref.dtype.is_floating_point:
        torch.testing.assert_close(got, ref, rtol=tol, atol=tol, equal_nan=True)
    else:
        assert torch.equal(got, ref), (got, ref)


ALL = [torch.float32, torch.float64, torch.int64, torch.bool]
FLOATS = [torch.float32, torch.float64]


def views(x):
    """x itself, a transposed view, a strided slice (same values in torch and on the device)."""
    yield x
    if x.dim() >= 2:
        yield x.t() if x.dim() == 2 else x.transpose(0, -1)
        yield x[:, ::2]


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_sum(dtype):
    x = sample(dtype, (3, 4, 5))
    d = x.to(DEV)
    for xv, dv in zip(views(x), views(d)):
        same(dv.sum(), xv.sum())
        same(dv.sum(0), xv.sum(0))
        same(dv.sum((0, -1), keepdim=True), xv.sum((0, -1), keepdim=True))
        same(dv.sum(dim=[]), xv.sum(dim=[]))
        same(dv.sum(1, dtype=torch.float64), xv.sum(1, dtype=torch.float64))
    same(torch.tensor(3.5).to(DEV).sum(), torch.tensor(3.5).sum())
    same(d[:0].sum(0), x[:0].sum(0))
    out = torch.empty(0, dtype=torch.float64).to(DEV)
    torch.sum(d, 1, out=out)
    same(out, torch.sum(x, 1, out=torch.empty(0, dtype=torch.float64)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_mean(dtype):
    x = sample(dtype, (3, 4, 5))
    d = x.to(DEV)
    for xv, dv in zip(views(x), views(d)):
        same(dv.mean(), xv.mean())
        same(dv.mean(1), xv.mean(1))
        same(dv.mean((0, 2), keepdim=True), xv.mean((0, 2), keepdim=True))
    out = torch.empty(0, dtype=dtype).to(DEV)
    torch.mean(d, -1, out=out)
    same(out, x.mean(-1))
    i = sample(torch.int64)
    same(i.to(DEV).mean(dtype=torch.float32), i.mean(dtype=torch.float32))
    with pytest.raises(RuntimeError):
        i.to(DEV).mean()


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_max_min(dtype):
    x = sample(dtype, (4, 6))
    d = x.to(DEV)
    for xv, dv in zip(views(x), views(d)):
        same(dv.max(), xv.max())
        same(dv.min(), xv.min())
        same(dv.amax(1), xv.amax(1))
        same(dv.amin((0, 1), keepdim=True), xv.amin((0, 1), keepdim=True))
        for dim in (0, 1, -1):
            for keep in (False, True):
                for a, b in zip(dv.max(dim, keep), xv.max(dim, keep)):
                    same(a, b)
                for a, b in zip(dv.min(dim, keep), xv.min(dim, keep)):
                    same(a, b)
    z = torch.tensor(2.0)
    for a, b in zip(z.to(DEV).max(0), z.max(0)):
        same(a, b)
    with pytest.raises(RuntimeError):
        torch.empty(0).to(DEV).max()


def test_max_nan_and_out():
    x = torch.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, -1.0]])
    d = x.to(DEV)
    for a, b in zip(d.max(1), x.max(1)):
        same(a, b)
    same(d.argmax(1), x.argmax(1))
    same(d.amax(1), x.amax(1))
    v, i = torch.empty(0).to(DEV), torch.empty(0, dtype=torch.long).to(DEV)
    torch.max(d, 0, out=(v, i))
    rv, ri = torch.max(x, 0)
    same(v, rv)
    same(i, ri)
    out = torch.empty(0).to(DEV)
    torch.amax(d, 0, out=out)
    same(out, x.amax(0))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_argmax_argmin(dtype):
    x = sample(dtype, (4, 5))
    if dtype == torch.bool:  # torch has no bool kernel; neither has the device
        with pytest.raises(RuntimeError):
            x.argmax()
        with pytest.raises(RuntimeError):
            x.to(DEV).argmax(1).cpu()
        return
    d = x.to(DEV)
    for xv, dv in zip(views(x), views(d)):
        same(dv.argmax(), xv.argmax())
        same(dv.argmin(), xv.argmin())
        same(dv.argmax(0), xv.argmax(0))
        same(dv.argmin(1, keepdim=True), xv.argmin(1, keepdim=True))
        same(dv.argmax(None, True), xv.argmax(None, True))
    out = torch.empty(0, dtype=torch.long).to(DEV)
    torch.argmax(d, 1, out=out)
    same(out, x.argmax(1))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_and_grad(dtype, log):
    f = F.log_softmax if log else F.softmax
    x = sample(dtype, (3, 4, 5)) * 3
    for dim in (0, 1, -1):
        xc = x.clone().requires_grad_()
        xd = x.to(DEV).requires_grad_()
        g = sample(dtype, (3, 4, 5), seed=1)
        yc, yd = f(xc, dim), f(xd, dim)
        same(yd, yc.detach())
        yc.backward(g)
        yd.backward(g.to(DEV))
        same(xd.grad, xc.grad)
    # a non-contiguous input, a 0-d one, torch.softmax's dtype argument
    d = x.to(DEV)
    same(f(d.transpose(0, 2), 1), f(x.transpose(0, 2), 1))
    same(f(torch.tensor(1.5, dtype=dtype).to(DEV), 0), f(torch.tensor(1.5, dtype=dtype), 0))
    same(f(d, 1, dtype=torch.float64), f(x, 1, dtype=torch.float64))
    op = torch.ops.aten._log_softmax_backward_data if log else torch.ops.aten._softmax_backward_data
    y, g = f(x, 2), sample(dtype, (3, 4, 5), seed=2)
    out = torch.empty(0, dtype=dtype).to(DEV)
    if log:
        op.out(g.to(DEV), y.to(DEV), 2, dtype, out=out)
    else:
        op.out(g.to(DEV), y.to(DEV), 2, dtype, grad_input=out)
    same(out, op(g, y, 2, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(dtype, reduction):
    lp = F.log_softmax(sample(dtype, (6, 5)), 1)
    for ignore in (-100, 2):
        t = torch.tensor([0, 4, ignore, 2, 2, 1])
        lc = lp.clone().requires_grad_()
        ld = lp.to(DEV).requires_grad_()
        rc = F.nll_loss(lc, t, reduction=reduction, ignore_index=ignore)
        rd = F.nll_loss(ld, t.to(DEV), reduction=reduction, ignore_index=ignore)
        same(rd, rc.detach())
        g = sample(dtype, rc.shape, seed=3)
        rc.backward(g)
        rd.backward(g.to(DEV))
        same(ld.grad, lc.grad)
    # unbatched (C) with a 0-d target
    same(F.nll_loss(lp[1].to(DEV), t[1].to(DEV), reduction=reduction), F.nll_loss(lp[1], t[1], reduction=reduction))


def test_nll_loss_forward_total_weight_and_out():
    lp = F.log_softmax(sample(torch.float32, (4, 3)), 1)
    t = torch.tensor([0, -100, 2, 1])
    for red in (0, 1, 2):
        for a, b in zip(torch.ops.aten.nll_loss_forward(lp.to(DEV), t.to(DEV), None, red, -100),
                        torch.ops.aten.nll_loss_forward(lp, t, None, red, -100)):
            same(a, b)
    # every target ignored: a NaN mean, a 0 gradient
    tt = torch.full((4,), -100)
    for a, b in zip(torch.ops.aten.nll_loss_forward(lp.to(DEV), tt.to(DEV), None, 1, -100),
                    torch.ops.aten.nll_loss_forward(lp, tt, None, 1, -100)):
        same(a, b)
    # the backward divides by the total_weight it is given
    g, tw = torch.tensor(1.0), torch.tensor(7.0)
    same(torch.ops.aten.nll_loss_backward(g.to(DEV), lp.to(DEV), t.to(DEV), None, 1, -100, tw.to(DEV)),
         torch.ops.aten.nll_loss_backward(g, lp, t, None, 1, -100, tw))
    out, w = torch.empty(0).to(DEV), torch.empty(0).to(DEV)
    torch.ops.aten.nll_loss_forward.output(lp.to(DEV), t.to(DEV), None, 1, -100, output=out, total_weight=w)
    ro, rw = torch.ops.aten.nll_loss_forward(lp, t, None, 1, -100)
    same(out, ro)
    same(w, rw)


def test_nll_loss_bad_target():
    lp = F.log_softmax(sample(torch.float32, (2, 3)), 1).to(DEV)
    with pytest.raises(Exception):
        F.nll_loss(lp, torch.tensor([0, 3]).to(DEV)).item()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_grad(dtype, smoothing):
    """F.cross_entropy = log_softmax + nll_loss; torch's autograd calls both backward kernels."""
    x = sample(dtype, (5, 7)) * 2
    t = torch.tensor([1, 6, -100, 0, 3])
    xc = x.clone().requires_grad_()
    xd = x.to(DEV).requires_grad_()
    lc = F.cross_entropy(xc, t, label_smoothing=smoothing)
    ld = F.cross_entropy(xd, t.to(DEV), label_smoothing=smoothing)
    same(ld, lc.detach())
    lc.backward()
    ld.backward()
    same(xd.grad, xc.grad)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(dtype, reduction):
    a, b = sample(dtype, (3, 4)), sample(dtype, (3, 4), seed=1)
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    ad, bd = a.to(DEV).requires_grad_(), b.to(DEV).requires_grad_()
    rc = F.mse_loss(ac, bc, reduction=reduction)
    rd = F.mse_loss(ad, bd, reduction=reduction)
    same(rd, rc.detach())
    g = sample(dtype, rc.shape, seed=4)
    rc.backward(g)
    rd.backward(g.to(DEV))
    same(ad.grad, ac.grad)
    same(bd.grad, bc.grad)
    # a transposed view, out=
    same(F.mse_loss(a.to(DEV).t(), b.to(DEV).t(), reduction=reduction), F.mse_loss(a.t(), b.t(), reduction=reduction))
    red = {"none": 0, "mean": 1, "sum": 2}[reduction]
    out = torch.empty(0, dtype=dtype).to(DEV)
    torch.ops.aten.mse_loss.out(a.to(DEV), b.to(DEV), red, out=out)
    same(out, torch.ops.aten.mse_loss(a, b, red))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_var_std(dtype):
    x = sample(dtype, (3, 4, 5), 3) * 3 + 1
    d = x.to(DEV)
    for xv, dv in zip(views(x), views(d)):
        for fn in (torch.var, torch.std):
            same(fn(dv), fn(xv))
            same(fn(dv, 0), fn(xv, 0))
            same(fn(dv, (0, -1), keepdim=True), fn(xv, (0, -1), keepdim=True))
            same(fn(dv, 1, unbiased=False), fn(xv, 1, unbiased=False))
            same(fn(dv, -1, correction=2), fn(xv, -1, correction=2))
            same(fn(dv[:, :1], 1), fn(xv[:, :1], 1))  # one element, dof 0: NaN as torch
    for fn in (torch.var_mean, torch.std_mean):
        for args in ((), (1,), ((0, 2), True)):
            got, want = fn(d, *args), fn(x, *args)
            same(got[0], want[0])
            same(got[1], want[1])
    same(torch.var(d, 1, out=torch.empty(0, dtype=dtype).to(DEV)), torch.var(x, 1))
    same(torch.std(d, (0, 1), out=torch.empty(0, dtype=dtype).to(DEV)), torch.std(x, (0, 1)))
    with pytest.raises(RuntimeError):
        torch.var(torch.tensor([1, 2]).to(DEV))
    # gradients through torch's autograd (its var_backward calls native ops)
    xg, dg = x.clone().requires_grad_(), d.clone().requires_grad_()
    (torch.std(xg, 1).sum() + torch.var(xg, (0, 2)).sum()).backward()
    (torch.std(dg, 1).sum() + torch.var(dg, (0, 2)).sum()).backward()
    same(dg.grad, xg.grad)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_cumsum(dtype):
    x = sample(dtype, (3, 4, 5), 5)
    d = x.to(DEV)
    for xv, dv in zip(views(x), views(d)):
        for dim in (0, 1, -1):
            same(torch.cumsum(dv, dim), torch.cumsum(xv, dim))
    same(torch.cumsum(d, 1, dtype=torch.float64), torch.cumsum(x, 1, dtype=torch.float64))
    same(torch.cumsum(d[0, 0, 0], 0), torch.cumsum(x[0, 0, 0], 0))  # 0-d
    same(torch.cumsum(d, 2, out=torch.empty(0, dtype=torch.cumsum(x, 2).dtype).to(DEV)), torch.cumsum(x, 2))
    if dtype.is_floating_point:
        y, dy = x.clone(), d.clone()
        y.cumsum_(1)
        dy.cumsum_(1)
        same(dy, y)
        xg, dg = x.clone().requires_grad_(), d.clone().requires_grad_()
        (torch.cumsum(xg, 1) * torch.arange(4.0).to(dtype).view(4, 1)).sum().backward()
        (torch.cumsum(dg, 1) * torch.arange(4.0).to(dtype).view(4, 1).to(DEV)).sum().backward()
        same(dg.grad, xg.grad)


def test_batch_statistics_without_batchnorm():
    """Normalization code as written by hand: (x - mean) / sqrt(var + eps)."""
    x = sample(torch.float32, (8, 16), 4)
    d = x.to(DEV)
    f = lambda t: (t - t.mean(0)) / torch.sqrt(t.var(0, unbiased=False) + 1e-5)
    same(f(d), f(x))


def test_reduction_grads():
    x = sample(torch.float64, (3, 4))
    for f in (lambda t: t.sum(), lambda t: t.sum(1).pow(2).sum(), lambda t: t.amax(1).sum(),
              lambda t: t.max(), lambda t: t.max(0)[0].sum()):
        xc = x.clone().requires_grad_()
        xd = x.to(DEV).requires_grad_()
        f(xc).backward()
        f(xd).backward()
        same(xd.grad, xc.grad)


def test_no_recompile_across_steps():
    """A cross-entropy step traced twice with the same shapes compiles once."""
    x = sample(torch.float32, (4, 3)).to(DEV)
    t = torch.tensor([0, 2, 1, 1]).to(DEV)
    for _ in range(3):
        loss = F.cross_entropy(x * 1.5, t)
        ltt.mark_step()
        assert math.isfinite(loss.item())
