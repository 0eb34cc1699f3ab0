"""The neural-network kernels of the PyTorch device (issue 27): convolution,
batch norm, layer norm, pooling and the random fills, each against torch's
CPU result on random shapes (odd sizes included), gradients through torch's
autograd, and none of them may fall back to the CPU."""
import pytest

from conftest import torch_device_or_skip

torch = torch_device_or_skip()
ltt = pytest.importorskip("lazytensor.torch")
F = torch.nn.functional

DEV = ltt.device()
# the aten ops this family registers: none may reach the CPU fallback
OURS = {
    "convolution", "convolution_backward", "native_batch_norm", "native_batch_norm_backward", "native_layer_norm",
    "native_layer_norm_backward", "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
    "avg_pool2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward", "uniform_", "normal_",
    "bernoulli_",
}


@pytest.fixture(autouse=True)
def no_fallback_of_ours():
    ltt.metrics_reset()
    yield
    fell = {k: v for k, v in ltt.fallback_counts().items() if k.split("::")[-1] in OURS}
    assert not fell, f"fell back to the CPU: {fell}"


def randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def close(dev, ref, tol=1e-5):
    got = dev.detach().cpu()
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.dtype, ref.shape)
    if ref.dtype.is_floating_point:
        torch.testing.assert_close(got, ref.detach(), rtol=tol, atol=tol)
    else:
        assert torch.equal(got, ref), (got, ref)


def both(f, *inputs, grad=True, tol=1e-5, seed=1):
    """f on CPU copies and on device copies of inputs; outputs and (grad) input gradients compared."""
    cpu = [t.clone().requires_grad_(grad and t.is_floating_point()) for t in inputs]
    dev = [t.to(DEV).requires_grad_(grad and t.is_floating_point()) for t in inputs]
    rc, rd = f(*cpu), f(*dev)
    rc, rd = (rc, rd) if isinstance(rc, tuple) else ((rc,), (rd,))
    for a, b in zip(rd, rc):
        close(a, b, tol)
    if grad:
        g = randn(*rc[0].shape, dtype=rc[0].dtype, seed=seed)
        rc[0].backward(g)
        rd[0].backward(g.to(DEV))
        for a, b in zip(dev, cpu):
            if b.grad is not None:
                close(a.grad, b.grad, tol)


# ---- convolution -----------------------------------------------------------------

CONV = [  # (N, C, H, W), (O, C/g, kH, kW), stride, padding, dilation, groups, bias
    ((2, 3, 7, 9), (4, 3, 3, 3), 1, 1, 1, 1, True),
    ((1, 4, 8, 5), (6, 2, 3, 2), (2, 1), (1, 0), 1, 2, False),
    ((2, 6, 9, 7), (6, 1, 3, 3), 2, 1, 1, 6, True),  # depthwise, stride 2 on odd sizes
    ((2, 3, 11, 10), (5, 3, 3, 3), 1, 2, 2, 1, True),  # dilated
    ((3, 8, 5, 5), (8, 2, 1, 1), 1, 0, 1, 4, False),  # grouped 1x1
    ((1, 2, 6, 6), (3, 2, 5, 5), 3, 2, 1, 1, True),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(CONV)))
def test_conv2d(case, dtype):
    xs, ws, s, p, d, g, bias = CONV[case]
    inputs = [randn(*xs, dtype=dtype), randn(*ws, dtype=dtype, seed=2)]
    if bias:
        inputs.append(randn(ws[0], dtype=dtype, seed=3))
    both(lambda x, w, *b: F.conv2d(x, w, b[0] if b else None, s, p, d, g), *inputs, tol=1e-4)


def test_conv2d_noncontiguous_input_and_module():
    x = randn(2, 9, 6, 3).permute(0, 3, 1, 2)  # (2, 3, 9, 6), channels-last strides
    conv = torch.nn.Conv2d(3, 5, 3, padding=1)
    cd = torch.nn.Conv2d(3, 5, 3, padding=1).to(DEV)
    cd.load_state_dict(conv.state_dict())
    close(cd(x.to(DEV)), conv(x), 1e-4)


def test_conv1d():
    both(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2),
         randn(2, 4, 13), randn(6, 2, 3, seed=2), randn(6, seed=3), tol=1e-4)


def test_conv_backward_output_mask():
    # only the weight needs a gradient: convolution_backward's mask [False, True, False]
    x, w = randn(2, 3, 6, 6), randn(4, 3, 3, 3, seed=2)
    wc, wd = w.clone().requires_grad_(), w.to(DEV).requires_grad_()
    F.conv2d(x, wc).sum().backward()
    F.conv2d(x.to(DEV), wd).sum().backward()
    close(wd.grad, wc.grad, 1e-4)


# ---- batch norm ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(4, 3, 5, 7), (2, 5, 3, 1), (6, 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_train_and_eval(shape, affine, dtype):
    cls = torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d
    bc = cls(shape[1], affine=affine, momentum=0.3).to(dtype)
    if affine:
        with torch.no_grad():
            bc.weight.copy_(randn(shape[1], seed=4))
            bc.bias.copy_(randn(shape[1], seed=5))
    bd = cls(shape[1], affine=affine, momentum=0.3).to(dtype).to(DEV)
    bd.load_state_dict(bc.state_dict())
    x = randn(*shape, dtype=dtype) * 3 + 1
    for step in range(2):  # training: batch statistics, running stats updated in place
        xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
        yc, yd = bc(xc), bd(xd)
        close(yd, yc, 1e-5)
        g = randn(*shape, dtype=dtype, seed=7 + step)
        yc.backward(g)
        yd.backward(g.to(DEV))
        close(xd.grad, xc.grad, 1e-4)
        if affine:
            close(bd.weight.grad, bc.weight.grad, 1e-4)
            close(bd.bias.grad, bc.bias.grad, 1e-4)
        close(bd.running_mean, bc.running_mean)
        close(bd.running_var, bc.running_var)
        close(bd.num_batches_tracked, bc.num_batches_tracked)
        x = x * 0.5 - 2
    bc.eval(), bd.eval()  # evaluation: running statistics, and their gradient
    both(lambda t: (bc if t.device.type == "cpu" else bd)(t), x, tol=1e-5)


def test_batch_norm_without_running_stats_in_eval():
    # nn.BatchNorm2d(track_running_stats=False): batch statistics in eval mode too
    bc = torch.nn.BatchNorm2d(3, track_running_stats=False).eval()
    bd = torch.nn.BatchNorm2d(3, track_running_stats=False).to(DEV).eval()
    both(lambda t: (bc if t.device.type == "cpu" else bd)(t), randn(2, 3, 4, 5) * 2, tol=1e-5)


def test_native_batch_norm_outputs():
    x, w, b = randn(3, 4, 5, 2), randn(4, seed=2), randn(4, seed=3)
    rm, rv = torch.zeros(4), torch.ones(4)
    rc = torch.native_batch_norm(x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-3)
    rd = torch.native_batch_norm(*(t.to(DEV) for t in (x, w, b, rm, rv)), True, 0.1, 1e-3)
    for a, c in zip(rd, rc):  # y, save_mean, save_invstd = 1/sqrt(biased var + eps)
        close(a, c, 1e-5)
    rc = torch.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-3)
    rd = torch.native_batch_norm(*(t.to(DEV) for t in (x, w, b, rm, rv)), False, 0.1, 1e-3)
    for a, c in zip(rd, rc):  # eval: empty save_mean / save_invstd, as torch's CPU kernel
        close(a, c, 1e-5)


# ---- layer norm ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,nnorm", [((4, 7), 1), ((2, 3, 5), 2), ((3, 1, 9), 1), ((2, 2, 3, 4), 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(shape, nnorm, affine, dtype):
    ns = shape[-nnorm:]
    inputs = [randn(*shape, dtype=dtype) * 2 + 0.5]
    if affine:
        inputs += [randn(*ns, dtype=dtype, seed=2), randn(*ns, dtype=dtype, seed=3)]
    both(lambda x, *wb: F.layer_norm(x, ns, *wb, eps=1e-4), *inputs, tol=1e-4)


def test_layer_norm_permuted_input():
    # ConvNeXt's: (N, C, H, W) permuted to (N, H, W, C), normalized over C
    w, b = randn(6, seed=2), randn(6, seed=3)
    both(lambda x, w, b: F.layer_norm(x.permute(0, 2, 3, 1), (6,), w, b, 1e-6).permute(0, 3, 1, 2),
         randn(2, 6, 5, 3), w, b, tol=1e-4)


def test_native_layer_norm_outputs():
    x = randn(3, 4, 5)
    rc = torch.native_layer_norm(x, [5], None, None, 1e-5)
    rd = torch.native_layer_norm(x.to(DEV), [5], None, None, 1e-5)
    for a, c in zip(rd, rc):  # y, mean and rstd of shape (3, 4, 1)
        close(a, c, 1e-5)


# ---- pooling ---------------------------------------------------------------------

POOL = [  # (N, C, H, W), kernel, stride, padding, ceil_mode
    ((2, 3, 7, 9), 3, 2, 1, False),
    ((2, 3, 7, 9), 3, 2, 1, True),
    ((1, 2, 6, 5), 2, 2, 0, True),  # squeezenet's MaxPool2d(ceil_mode=True) on odd sizes
    ((2, 4, 10, 11), (3, 2), (2, 3), (1, 0), True),
    ((1, 1, 5, 5), 3, 1, 1, False),
    ((2, 3, 8, 8), 2, None, 0, False),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(POOL)))
def test_max_pool2d_with_indices(case, dtype):
    xs, k, s, p, ceil = POOL[case]
    both(lambda x: F.max_pool2d(x, k, s, p, ceil_mode=ceil, return_indices=True), randn(*xs, dtype=dtype))


def test_max_pool2d_ties_and_unbatched():
    x = torch.tensor([[[1.0, 3.0, 3.0], [3.0, 0.0, 2.0], [1.0, 3.0, 3.0]]])  # (1, 3, 3) unbatched, ties
    both(lambda t: F.max_pool2d(t, 2, 1, ceil_mode=True, return_indices=True), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", range(len(POOL)))
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d(case, count_include_pad, dtype):
    xs, k, s, p, ceil = POOL[case]
    both(lambda x: F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=count_include_pad),
         randn(*xs, dtype=dtype))


def test_avg_pool2d_divisor_override_and_unbatched():
    both(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, divisor_override=5), randn(2, 3, 7, 8))
    both(lambda x: F.avg_pool2d(x, 2, ceil_mode=True), randn(3, 5, 7))


def test_avg_pool2d_integer():
    # torch's CPU kernel: the integer sum divided with truncation
    x = torch.randint(-50, 50, (2, 3, 7, 6))
    close(F.avg_pool2d(x.to(DEV), 3, 2, 1, ceil_mode=True), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True))


@pytest.mark.parametrize("out", [(1, 1), (3, 3), (4, 2), (5, 7), (7, 6)])
def test_adaptive_avg_pool2d(out):
    # sizes that do not divide the input: torch's start/end index formula
    both(lambda x: F.adaptive_avg_pool2d(x, out), randn(2, 3, 7, 6), tol=1e-5)


def test_adaptive_avg_pool2d_1x1_is_the_pooling_op():
    # torch's composite makes a 1x1 output a mean over H, W (backward: expand
    # and div, plain-layout kernels); the device keeps the pooling op, whose
    # backward is one kernel, as the CLI's ResNets have it (pool.cpp)
    x = randn(2, 3, 7, 6).to(DEV).requires_grad_()
    assert type(F.adaptive_avg_pool2d(x, 1).grad_fn).__name__.startswith("AdaptiveAvgPool2DBackward")


def test_adaptive_avg_pool2d_unbatched_float64():
    both(lambda x: F.adaptive_avg_pool2d(x, (3, 4)), randn(3, 8, 5, dtype=torch.float64))


# ---- random --------------------------------------------------------------------------


def test_rand_and_normal_statistics():
    torch.manual_seed(5)
    u = torch.rand(200, 300, device=DEV).cpu()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    n = torch.randn(200, 300, device=DEV, dtype=torch.float64).cpu()
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
    t = torch.empty(1000, device=DEV).uniform_(-2, 3).cpu()
    assert t.min() >= -2 and t.max() < 3
    m = torch.empty(20000, device=DEV).normal_(1.5, 0.5).cpu()
    assert abs(m.mean() - 1.5) < 0.02 and abs(m.std() - 0.5) < 0.02


def test_manual_seed_repeats_and_steps_differ():
    torch.manual_seed(3)
    a = torch.rand(5, device=DEV).cpu()
    b = torch.rand(5, device=DEV).cpu()
    torch.manual_seed(3)
    assert torch.equal(torch.rand(5, device=DEV).cpu(), a)
    assert not torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_bernoulli_(dtype):
    m = torch.empty(100, 100, device=DEV, dtype=dtype).bernoulli_(0.3).cpu()
    assert m.dtype == dtype and set(m.unique().tolist()) <= {0, 1}
    assert abs(m.double().mean() - 0.3) < 0.02
    v = torch.zeros(6, 8, device=DEV)[:, ::2].bernoulli_(1.0)  # through a view
    assert torch.equal(v.cpu(), torch.ones(6, 4))


def test_dropout_and_stochastic_depth():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    x = torch.ones(400, 50, device=DEV, requires_grad=True)
    y = F.dropout(x, 0.2, training=True)  # torch 1.13: empty_like(x).bernoulli_(0.8).div_(0.8) * x
    kept = (y.detach().cpu() != 0)
    assert abs(kept.double().mean() - 0.8) < 0.02
    torch.testing.assert_close(y.detach().cpu()[kept], torch.full((int(kept.sum()),), 1.25))
    y.sum().backward()
    assert torch.equal(x.grad.cpu() != 0, kept)
    s = torchvision.ops.stochastic_depth(torch.ones(64, 3, 2, 2, device=DEV), 0.5, "row", training=True).cpu()
    rows = s.flatten(1)
    assert ((rows == 0).all(1) | (rows == 2).all(1)).all()
