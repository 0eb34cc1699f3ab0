"""Structure, indexing and matrix products on the PyTorch device (issue 27):
cat, clone, flip, index_select / index_add, gather / scatter_add, embedding,
mm / bmm / addmm / baddbmm / dot / mv (and F.linear, torch.matmul, multi-head
attention above them), each against torch's CPU result, with gradients
through torch's autograd; none of them may fall back to the CPU."""
import pytest

from conftest import torch_device_or_skip

torch = torch_device_or_skip()
ltt = pytest.importorskip("lazytensor.torch")
F = torch.nn.functional

DEV = ltt.device()
OURS = {
    "cat", "clone", "flip", "index_select", "index_add", "index_add_", "gather", "scatter_add", "scatter_add_", "embedding",
    "embedding_dense_backward", "mm", "bmm", "addmm", "addmm_", "baddbmm", "baddbmm_", "dot", "mv", "_softmax",
    "_softmax_backward_data", "sum", "mean",
}


@pytest.fixture(autouse=True)
def no_fallback_of_ours():
    ltt.metrics_reset()
    yield
    fell = {k: v for k, v in ltt.fallback_counts().items() if k.split("::")[-1] in OURS}
    assert not fell, f"fell back to the CPU: {fell}"


def sample(dtype, shape, seed=0):
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


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_cat(dtype):
    a, b = sample(dtype, (2, 3)), sample(dtype, (4, 3), seed=1)
    da, db = a.to(DEV), b.to(DEV)
    same(torch.cat([da, db]), torch.cat([a, b]))
    same(torch.cat([da.t(), db.t()], 1), torch.cat([a.t(), b.t()], 1))  # views
    same(torch.cat([da[:, 1:], db[::2, 1:]], 0), torch.cat([a[:, 1:], b[::2, 1:]], 0))
    same(torch.cat([da, da], -1), torch.cat([a, a], -1))
    # legacy: 1-D empty tensors are skipped wherever they are
    e = torch.empty(0, dtype=dtype)
    same(torch.cat([e.to(DEV), da, e.to(DEV)]), torch.cat([e, a, e]))
    out = torch.empty(0, dtype=dtype).to(DEV)
    torch.cat([da, db], out=out)
    same(out, torch.cat([a, b]))


def test_cat_promotes_and_stack():
    a, b, c = sample(torch.float32, (2, 3)), sample(torch.int64, (1, 3)), sample(torch.float64, (2, 3))
    same(torch.cat([a.to(DEV), b.to(DEV)]), torch.cat([a, b]))
    same(torch.cat([b.to(DEV), c.to(DEV), a.to(DEV)]), torch.cat([b, c, a]))
    same(torch.cat([b.to(DEV), sample(torch.bool, (2, 3)).to(DEV)]), torch.cat([b, sample(torch.bool, (2, 3))]))
    same(torch.stack([a.to(DEV), a.to(DEV) * 0]), torch.stack([a, a * 0]))
    x = sample(torch.float64, (2, 3))
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    torch.cat([xc, xc * 2], 1).sum().backward()
    torch.cat([xd, xd * 2], 1).sum().backward()
    same(xd.grad, xc.grad)
    with pytest.raises(RuntimeError):
        torch.cat([a.to(DEV), sample(torch.float32, (2, 4)).to(DEV)])


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_clone(dtype):
    x = sample(dtype, (3, 4))
    d = x.to(DEV)
    c = d.clone()
    same(c, x)
    same(d.t().clone(), x.t().clone())
    c.zero_() if dtype != torch.bool else c.fill_(False)
    same(d, x)  # a copy, not an alias
    cl = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    dcl = cl.to(DEV)
    r = dcl.clone()
    assert r.stride() == cl.clone().stride()
    same(r, cl.clone())
    same(dcl.clone(memory_format=torch.contiguous_format), cl.clone(memory_format=torch.contiguous_format))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_flip(dtype):
    x = sample(dtype, (3, 4, 5), 2)
    d = x.to(DEV)
    for dims in ((0,), (-1,), (0, 2), (0, 1, 2), ()):
        same(torch.flip(d, dims), torch.flip(x, dims))
        same(torch.flip(d.transpose(0, 2)[1:], dims), torch.flip(x.transpose(0, 2)[1:], dims))
    same(torch.flip(d[0, 0, 0], (0,)), torch.flip(x[0, 0, 0], (0,)))
    same(torch.fliplr(d[0]), torch.fliplr(x[0]))
    if dtype.is_floating_point:  # cumsum's backward in torch: flip, cumsum, flip
        xg, dg = x.clone().requires_grad_(), d.clone().requires_grad_()
        (torch.cumsum(xg, 1) ** 2).sum().backward()
        (torch.cumsum(dg, 1) ** 2).sum().backward()
        same(dg.grad, xg.grad)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_index_select_gather_scatter(dtype):
    x = sample(dtype, (4, 5))
    d = x.to(DEV)
    i = torch.tensor([3, 0, 3, 1])
    for dim in (0, 1, -1):
        same(d.index_select(dim, i.to(DEV)), x.index_select(dim, i))
        same(d.t().index_select(dim, i.to(DEV)), x.t().index_select(dim, i))
    same(d.index_select(0, torch.tensor(2).to(DEV)), x.index_select(0, torch.tensor(2)))
    g = torch.tensor([[0, 4, 4], [1, 1, 0]])
    same(d.gather(1, g.to(DEV)), x.gather(1, g))
    g0 = torch.tensor([[0, 3], [1, 1]])
    same(d.gather(0, g0.to(DEV)), x.gather(0, g0))
    if dtype != torch.bool:
        src = sample(dtype, (2, 3), seed=2)
        same(d.scatter_add(1, g.to(DEV), src.to(DEV)), x.scatter_add(1, g, src))
        dd, xx = d.clone(), x.clone()
        dd[1:3].scatter_add_(1, g.to(DEV), src.to(DEV))  # in place, through a view
        xx[1:3].scatter_add_(1, g, src)
        same(dd, xx)
        rows = sample(dtype, (4, 5), seed=3)
        same(d.index_add(0, i.to(DEV), rows.to(DEV)), x.index_add(0, i, rows))
    out = torch.empty(0, dtype=dtype).to(DEV)
    torch.index_select(d, 1, i.to(DEV), out=out)
    same(out, torch.index_select(x, 1, i))
    out = torch.empty(0, dtype=dtype).to(DEV)
    torch.gather(d, 1, g.to(DEV), out=out)
    same(out, torch.gather(x, 1, g))


def test_indexing_grads():
    x = sample(torch.float64, (4, 5))
    i, g = torch.tensor([3, 0, 3]), torch.tensor([[0, 4, 4], [1, 1, 0]])
    for f in (lambda t, ii, gg: t.index_select(0, ii).pow(2).sum(), lambda t, ii, gg: (t.gather(1, gg) * 3).sum()):
        xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
        f(xc, i, g).backward()
        f(xd, i.to(DEV), g.to(DEV)).backward()
        same(xd.grad, xc.grad)


def test_embedding():
    emb = torch.nn.Embedding(10, 4)
    demb = torch.nn.Embedding(10, 4)
    demb.load_state_dict(emb.state_dict())
    demb.to(DEV)
    idx = torch.tensor([[1, 2, 2], [9, 0, 1]])
    yc, yd = emb(idx), demb(idx.to(DEV))
    same(yd, yc.detach())
    g = sample(torch.float32, (2, 3, 4), seed=5)
    yc.backward(g)
    yd.backward(g.to(DEV))
    same(demb.weight.grad, emb.weight.grad)
    same(demb(idx.int().to(DEV)), emb(idx.int()).detach())


MM_DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32]


@pytest.mark.parametrize("dtype", MM_DTYPES, ids=str)
def test_mm_family(dtype):
    a, b = sample(dtype, (3, 4)), sample(dtype, (4, 5), seed=1)
    da, db = a.to(DEV), b.to(DEV)
    same(torch.mm(da, db), torch.mm(a, b))
    same(torch.mm(da, db.t().contiguous().t()), torch.mm(a, b))  # a transposed right operand
    same(torch.mm(db.t(), da.t()), torch.mm(b.t(), a.t()))
    same(torch.matmul(da, db), torch.matmul(a, b))
    c = sample(dtype, (5,), seed=2)
    same(torch.addmm(c.to(DEV), da, db), torch.addmm(c, a, b))
    same(torch.addmm(c.to(DEV), da, db.t().contiguous().t()), torch.addmm(c, a, b))
    s = sample(dtype, (3, 5), seed=3)
    same(torch.addmm(s.to(DEV), da, db), torch.addmm(s, a, b))
    if dtype.is_floating_point:
        same(torch.addmm(s.to(DEV), da, db, beta=0.5, alpha=-2.0), torch.addmm(s, a, b, beta=0.5, alpha=-2.0))
        nan = torch.full((3, 5), float("nan"), dtype=dtype)
        same(torch.addmm(nan.to(DEV), da, db, beta=0), torch.addmm(nan, a, b, beta=0))
    ba, bb = sample(dtype, (2, 3, 4), seed=4), sample(dtype, (2, 4, 5), seed=5)
    same(torch.bmm(ba.to(DEV), bb.to(DEV)), torch.bmm(ba, bb))
    same(torch.bmm(ba.to(DEV), bb.to(DEV).transpose(1, 2).contiguous().transpose(1, 2)), torch.bmm(ba, bb))
    m = sample(dtype, (3, 5), seed=6)
    same(torch.baddbmm(m.to(DEV), ba.to(DEV), bb.to(DEV)), torch.baddbmm(m, ba, bb))
    v, w = sample(dtype, (4,), seed=7), sample(dtype, (4,), seed=8)
    same(torch.dot(v.to(DEV), w.to(DEV)), torch.dot(v, w))
    same(torch.mv(da, v.to(DEV)), torch.mv(a, v))
    same(torch.matmul(sample(dtype, (2, 3, 4)).to(DEV), db), torch.matmul(sample(dtype, (2, 3, 4)), b))
    out = torch.empty(0, dtype=dtype).to(DEV)
    torch.mm(da, db, out=out)
    same(out, torch.mm(a, b))
    torch.addmm(c.to(DEV), da, db, out=out)
    same(out, torch.addmm(c, a, b))
    out = torch.empty(0, dtype=dtype).to(DEV)
    torch.bmm(ba.to(DEV), bb.to(DEV), out=out)
    same(out, torch.bmm(ba, bb))
    dm = m.to(DEV).expand(2, 3, 5).clone()
    dm.baddbmm_(ba.to(DEV), bb.to(DEV))
    same(dm, m.expand(2, 3, 5).clone().baddbmm_(ba, bb))


def test_integer_mm_is_exact():
    """int64 products past float's 2^53: torch's CPU kernels are exact (wrapping) int64."""
    a = torch.tensor([[2**40 + 1, 3], [5, -(2**41) + 7]])
    b = torch.tensor([[2**20 + 3, 1], [-7, 2**22]])
    same(torch.mm(a.to(DEV), b.to(DEV)), torch.mm(a, b))
    same(F.linear(a.to(DEV), b.to(DEV)), F.linear(a, b))


def test_mm_errors():
    with pytest.raises(RuntimeError):
        torch.mm(sample(torch.float32, (2, 3)).to(DEV), sample(torch.float32, (4, 2)).to(DEV))
    with pytest.raises(RuntimeError):
        torch.mm(sample(torch.float32, (2, 3)).to(DEV), sample(torch.float64, (3, 2)).to(DEV))
    with pytest.raises(RuntimeError):
        torch.bmm(sample(torch.float32, (2, 2, 3)).to(DEV), sample(torch.float32, (3, 3, 2)).to(DEV))


@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 6), (6,)], ids=str)
def test_linear_and_grads(shape):
    """F.linear: addmm(bias, x, w.t()) for 2-D x, matmul + add otherwise; gradients through mm."""
    lin = torch.nn.Linear(6, 5).double()
    dlin = torch.nn.Linear(6, 5).double()
    dlin.load_state_dict(lin.state_dict())
    dlin.to(DEV)
    x = sample(torch.float64, shape)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    yc, yd = lin(xc), dlin(xd)
    same(yd, yc.detach())
    g = sample(torch.float64, yc.shape, seed=9)
    yc.backward(g)
    yd.backward(g.to(DEV))
    same(xd.grad, xc.grad)
    same(dlin.weight.grad, lin.weight.grad)
    same(dlin.bias.grad, lin.bias.grad)


def test_matmul_grads():
    a, b = sample(torch.float64, (2, 3, 4)), sample(torch.float64, (2, 4, 5), seed=1)
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    ad, bd = a.to(DEV).requires_grad_(), b.to(DEV).requires_grad_()
    torch.bmm(ac, bc).pow(2).sum().backward()
    torch.bmm(ad, bd).pow(2).sum().backward()
    same(ad.grad, ac.grad)
    same(bd.grad, bc.grad)


def run_module(make, x, tol=1e-4):
    torch.manual_seed(0)
    m = make().eval()
    md = make().eval()
    md.load_state_dict(m.state_dict())
    md.to(DEV)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    yc, yd = m(xc), md(xd)
    yc = yc[0] if isinstance(yc, tuple) else yc
    yd = yd[0] if isinstance(yd, tuple) else yd
    same(yd, yc.detach(), tol)
    yc.sum().backward()
    yd.sum().backward()
    same(xd.grad, xc.grad, tol)
    for (n, p), (_, q) in zip(m.named_parameters(), md.named_parameters()):
        same(q.grad, p.grad, tol)
    return ltt.fallback_counts()


class SelfAttention(torch.nn.Module):
    def __init__(self, mask=None):
        super().__init__()
        self.a = torch.nn.MultiheadAttention(8, 2)
        self.mask = mask

    def forward(self, t):
        return self.a(t, t, t, attn_mask=None if self.mask is None else self.mask.to(t.device))[0]


def test_multihead_attention():
    x = sample(torch.float32, (5, 2, 8))
    counts = run_module(SelfAttention, x)
    print("MultiheadAttention fallbacks:", counts)
    assert counts == {}
    mask = torch.triu(torch.full((5, 5), float("-inf")), 1)
    counts = run_module(lambda: SelfAttention(mask), x)
    print("masked MultiheadAttention (baddbmm) fallbacks:", counts)
    assert counts == {}


def test_vit_block():
    torchvision = pytest.importorskip("torchvision")
    from torchvision.models.vision_transformer import EncoderBlock

    x = sample(torch.float32, (2, 5, 16))
    counts = run_module(lambda: EncoderBlock(2, 16, 32, 0.0, 0.0), x, tol=2e-4)
    print("ViT encoder block fallbacks:", counts)
    assert counts == {}


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_index_tensor(dtype):
    """a[index] with one integer tensor (negatives count from the end), on the device or the CPU."""
    x = sample(dtype, (4, 5, 3))
    d = x.to(DEV)
    i = torch.tensor([[3, -1], [0, -4]])
    same(d[i.to(DEV)], x[i])
    same(d[:, i.to(DEV)], x[:, i])
    same(d[:, :, torch.tensor([2, -3, 0]).to(DEV)], x[:, :, torch.tensor([2, -3, 0])])
    same(d[i], x[i])  # a CPU index tensor
    same(d.transpose(0, 2)[torch.tensor([1, 0])], x.transpose(0, 2)[torch.tensor([1, 0])])
    with pytest.raises(IndexError):  # torch 1.13 takes long, byte or bool indices only
        d[torch.tensor([1, 3]).int().to(DEV)]
    # a mask: a data-dependent shape, the counted fallback
    m = x.reshape(-1)[:4] > 0 if dtype != torch.bool else x.reshape(-1)[:4]
    same(d[m.to(DEV)], x[m])


def test_index_grad_and_put():
    x = sample(torch.float64, (5, 3))
    i = torch.tensor([4, -1, 0, 4])
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    (xc[i] * torch.arange(3.0, dtype=torch.float64)).sum().backward()
    (xd[i.to(DEV)] * torch.arange(3.0, dtype=torch.float64).to(DEV)).sum().backward()
    same(xd.grad, xc.grad)
    v = sample(torch.float64, (4, 3), seed=1)
    same(x.to(DEV).index_put((i.to(DEV),), v.to(DEV), accumulate=True), x.index_put((i,), v, accumulate=True))
    dd, xx = x.to(DEV), x.clone()
    dd.index_put_((i.to(DEV),), torch.tensor(2.0, dtype=torch.float64).to(DEV), accumulate=True)
    xx.index_put_((i,), torch.tensor(2.0, dtype=torch.float64), accumulate=True)
    same(dd, xx)
    with pytest.raises(Exception):
        x.to(DEV)[torch.tensor([5]).to(DEV)].cpu()
