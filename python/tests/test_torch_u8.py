"""uint8 on the PyTorch device (issue 27): the dtype of images. Each case
against torch's CPU result: the round trip, arithmetic that wraps modulo
256, comparisons, promotion with the other dtypes, casts both ways (float
to uint8 truncates toward zero, then wraps), sums (int64) and the
normalisation of torchvision's ToTensor (x.float() / 255), with no CPU
fallback."""
import pytest

from conftest import torch_device_or_skip

torch = torch_device_or_skip()
ltt = pytest.importorskip("lazytensor.torch")

DEV = ltt.device()
U8 = torch.uint8


def image(shape=(2, 3, 5, 4), seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, shape, generator=g, dtype=U8)
    x.view(-1)[:4] = torch.tensor([0, 1, 254, 255], dtype=U8)  # both ends, always
    return x


def same(got, want, tol=0.0):
    assert got.device == DEV, got.device
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    g = got.cpu()
    if want.dtype.is_floating_point:
        torch.testing.assert_close(g, want, rtol=tol, atol=tol, equal_nan=True)
    else:
        assert torch.equal(g, want), (g, want)


@pytest.fixture(autouse=True)
def no_fallback():
    ltt.metrics_reset()
    yield
    assert ltt.fallback_counts() == {}, ltt.fallback_counts()


def test_round_trip():
    x = image()
    d = x.to(DEV)
    assert d.dtype == U8 and d.device == DEV
    same(d, x)
    same(d[:, 1, ::2].transpose(-1, -2), x[:, 1, ::2].transpose(-1, -2))  # a view reads through
    z = torch.zeros(3, dtype=U8, device=DEV)
    same(z, torch.zeros(3, dtype=U8))
    same(torch.full((2,), 200, dtype=U8, device=DEV), torch.full((2,), 200, dtype=U8))


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_arithmetic_wraps(op):
    a, b = image(seed=1), image(seed=2)
    f = getattr(torch, op)
    same(f(a.to(DEV), b.to(DEV)), f(a, b))
    same(f(a.to(DEV), b[0, 0, 0].to(DEV)), f(a, b[0, 0, 0]))  # broadcast from 1-d
    same(f(a.to(DEV), 200), f(a, 200))  # an integral Python scalar stays uint8
    same(f(a.to(DEV), torch.tensor(7)), f(a, torch.tensor(7)))  # a 0-d int64 (CPU) too
    d = a.to(DEV)
    getattr(d, op + "_")(b.to(DEV))
    same(d, getattr(a.clone(), op + "_")(b))


def test_other_integer_ops():
    a, b = image(seed=3), image(seed=4)
    da, db = a.to(DEV), b.to(DEV)
    same(-da, -a)
    same(torch.maximum(da, db), torch.maximum(a, b))
    same(torch.minimum(da, db), torch.minimum(a, b))
    same(da.abs(), a.abs())
    same(da / db, a / b, tol=1e-6)  # true division: float32


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons(op):
    a, b = image(seed=5), image(seed=6)
    f = getattr(torch, op)
    same(f(a.to(DEV), b.to(DEV)), f(a, b))
    same(f(a.to(DEV), 128), f(a, 128))
    same(f(a.to(DEV), b.to(DEV).long()), f(a, b.long()))


@pytest.mark.parametrize("other", [torch.int64, torch.int32, torch.bool, torch.float32, torch.float64,
                                   torch.bfloat16])
def test_promotion(other):
    a = image(seed=7)
    b = (image(seed=8) > 100).to(other) if other == torch.bool else image(seed=8).to(other) - 100
    for x, y in ((a, b), (b, a)):
        want = x + y
        same(x.to(DEV) + y.to(DEV), want, tol=1e-2 if other == torch.bfloat16 else 0)


@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.int32, torch.int64, torch.bool,
                                torch.bfloat16])
def test_casts(dt):
    x = image(seed=9)
    same(x.to(DEV).to(dt), x.to(dt))
    # to uint8: floats truncate toward zero then wrap; out of range as torch's CPU
    if dt.is_floating_point:
        v = torch.tensor([0.0, 0.9, -0.9, 1.5, -1.5, 255.9, 256.0, 300.5, -1.0, -129.7, 70000.7, 3e9, -3e9,
                          1e10], dtype=dt)
    elif dt == torch.bool:
        v = torch.tensor([True, False, True])
    else:
        v = torch.tensor([0, 1, -1, 255, 256, -256, 1000, -129, 2**31 - 1], dtype=dt)
    same(v.to(DEV).to(U8), v.to(U8))


def test_sum_is_int64():
    x = image(seed=10)
    d = x.to(DEV)
    same(d.sum(), x.sum())
    same(d.sum(dim=(2, 3)), x.sum(dim=(2, 3)))
    same(d.sum(dim=1, keepdim=True), x.sum(dim=1, keepdim=True))


def test_to_tensor_normalisation():
    """torchvision's ToTensor: HWC uint8 -> CHW float in [0, 1]; then Normalize."""
    hwc = image((8, 6, 3), seed=11)
    want = hwc.permute(2, 0, 1).contiguous().float().div(255)
    got = hwc.to(DEV).permute(2, 0, 1).contiguous().float().div(255)
    same(got, want)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    same((got - mean.to(DEV)) / std.to(DEV), (want - mean) / std, tol=1e-6)
    same(hwc.to(DEV).float() / 255, hwc.float() / 255)


# ---- integer convolution (torch's CPU kernel sums exactly and wraps) ----------------

@pytest.mark.parametrize("dt", [torch.int64, torch.int32, U8])
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(padding=(1, 2), dilation=(2, 1), groups=2)])
def test_integer_conv2d(dt, kw):
    g = torch.Generator().manual_seed(12)
    hi = 256 if dt == U8 else 2**31 - 1 if dt == torch.int32 else 2**62
    lo = 0 if dt == U8 else -hi
    x = torch.randint(lo, hi, (2, 4, 7, 6), generator=g, dtype=torch.int64).to(dt)  # products wrap
    w = torch.randint(lo, hi, (6, 4 // kw.get("groups", 1), 3, 2), generator=g, dtype=torch.int64).to(dt)
    b = torch.randint(lo, hi, (6,), generator=g, dtype=torch.int64).to(dt)
    F = torch.nn.functional
    if kw.get("dilation") and dt != torch.int64:  # torch's CPU has no dilated int32 / uint8 kernel
        with pytest.raises(RuntimeError, match="slow_conv_dilated"):
            F.conv2d(x, w, b, **kw)
        with pytest.raises(RuntimeError, match="slow_conv_dilated"):
            F.conv2d(x.to(DEV), w.to(DEV), b.to(DEV), **kw)
        return
    same(F.conv2d(x.to(DEV), w.to(DEV), b.to(DEV), **kw), F.conv2d(x, w, b, **kw))
    same(F.conv2d(x.to(DEV), w.to(DEV), None, **kw), F.conv2d(x, w, None, **kw))
    x1, w1 = x[:, :, 0], w[:, :, 0]  # 1-d
    kw1 = {k: (v[1] if isinstance(v, tuple) else v) for k, v in kw.items()}
    same(F.conv1d(x1.to(DEV), w1.to(DEV), b.to(DEV), **kw1), F.conv1d(x1, w1, b, **kw1))
