"""lazytensor.nn: Module behaviour and each layer against a NumPy computation."""
import numpy as np
import pytest

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor import nn
from conftest import torch_or_skip


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 5))
        self.register_buffer("scale", lt.ones(1))
        self.plain = 7

    def forward(self, x):
        return self.head(self.bn(self.conv(x)).relu() * self.scale)


def test_module_registration_and_state_dict_keys():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                                    "head.1.weight", "head.1.bias"]
    assert list(m.state_dict()) == ["scale", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
                                    "bn.running_var", "bn.num_batches_tracked", "head.1.weight", "head.1.bias"]
    assert [n for n, _ in m.named_buffers()][0] == "scale" and m.plain == 7
    assert all(p.requires_grad for p in m.parameters())
    assert isinstance(m.head[1], nn.Linear) and len(m.head) == 2
    assert [n for n, _ in m.named_modules()] == ["", "conv", "bn", "head", "head.0", "head.1"]
    m.eval()
    assert not m.training and not m.bn.training
    m.train()
    assert m.head[0].training
    assert "Linear(in_features=48, out_features=5, bias=True)" in repr(m)
    with pytest.raises(TypeError, match="as parameter 'weight'"):
        m.conv.weight = lt.zeros(3, 2, 3, 3)  # a plain tensor onto a parameter, as torch refuses
    m.conv.bias = None
    assert "conv.bias" not in m.state_dict()


def test_state_dict_keys_match_torch():
    torch = torch_or_skip()
    tnn = torch.nn
    tm = tnn.Sequential(tnn.Conv2d(2, 3, 3, padding=1), tnn.BatchNorm2d(3), tnn.ReLU(), tnn.Flatten(),
                        tnn.Linear(48, 5), tnn.Embedding(4, 2))
    m = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(48, 5),
                      nn.Embedding(4, 2))
    assert list(m.state_dict()) == list(tm.state_dict())
    assert [tuple(v.shape) for v in m.state_dict().values()] == [tuple(v.shape) for v in tm.state_dict().values()]


def test_load_state_dict_and_safetensors_round_trip(tmp_path):
    lt.manual_seed(0)
    a, b = Net(), Net()
    x = lt.randn(2, 2, 4, 4)
    a(x)  # one training forward: running stats and num_batches_tracked move
    path = tmp_path / "net.safetensors"
    lt.save(a.state_dict(), path)
    sd = lt.load(path)
    assert list(sd) == list(a.state_dict())
    b.load_state_dict(sd)
    for (k, u), (_, v) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(u.numpy(), v.numpy(), err_msg=k)
    assert b.bn.num_batches_tracked.item() == 1
    a.eval(), b.eval()
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    with pytest.raises(RuntimeError, match="missing"):
        b.load_state_dict({"scale": lt.ones(1)})
    with pytest.raises(RuntimeError, match="size mismatch"):
        b.load_state_dict({**sd, "scale": lt.ones(2)})


def conv2d_np(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + (b[None, :, None, None] if b is not None else 0)


def test_layers_against_numpy(rng):
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    t = lt.tensor(x)
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
    np.testing.assert_allclose(conv(t).numpy(), conv2d_np(x, conv.weight.numpy(), conv.bias.numpy(), 2, 1),
                               rtol=1e-4, atol=1e-5)
    lin = nn.Linear(6, 5)
    np.testing.assert_allclose(lin(t).numpy(), x @ lin.weight.numpy().T + lin.bias.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nn.ReLU()(t).numpy(), np.maximum(x, 0))
    mp = nn.MaxPool2d(2)(t).numpy()
    np.testing.assert_allclose(mp, x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    ap = nn.AvgPool2d(2)(t).numpy()
    np.testing.assert_allclose(ap, x.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(t).numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d((3, 3))(t).numpy(), ap, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(nn.Flatten()(t).numpy(), x.reshape(2, -1))
    emb = nn.Embedding(10, 4)
    idx = np.array([[1, 9], [0, 1]])
    np.testing.assert_array_equal(emb(lt.tensor(idx)).numpy(), emb.weight.numpy()[idx])
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    target = np.array([0, 4, 2, 2])
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ce = nn.CrossEntropyLoss()(lt.tensor(logits), lt.tensor(target)).item()
    assert ce == pytest.approx(-lp[np.arange(4), target].mean(), rel=1e-5)
    assert F.nll_loss(lt.tensor(lp), lt.tensor(target)).item() == pytest.approx(-lp[np.arange(4), target].mean(),
                                                                              rel=1e-5)
    other = rng.standard_normal((4, 5)).astype(np.float32)
    assert nn.MSELoss()(lt.tensor(logits), lt.tensor(other)).item() == pytest.approx(((logits - other) ** 2).mean(),
                                                                                   rel=1e-5)


def test_batchnorm_train_and_eval(rng):
    x = (rng.standard_normal((4, 3, 5, 5)) * 2 + 1).astype(np.float32)
    bn = nn.BatchNorm2d(3, momentum=0.2)
    y = bn(lt.tensor(x)).numpy()
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    np.testing.assert_allclose(y, (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-4)
    n = x.size / 3
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.8 + 0.2 * var * n / (n - 1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    np.testing.assert_allclose(bn(lt.tensor(x)).numpy(),
                               (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-4)
    assert bn.num_batches_tracked.item() == 1


def test_dropout():
    lt.manual_seed(3)
    x = lt.ones(100, 100)
    d = nn.Dropout(0.25)
    y = d(x).numpy()
    kept = y != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x.numpy())
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_layer_gradients_flow():
    lt.manual_seed(1)
    m = Net()
    loss = F.cross_entropy(m(lt.randn(4, 2, 4, 4)), lt.tensor([0, 1, 2, 3]))
    loss.backward()
    for n, p in m.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, n
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_parameter_copies_no_data():
    """nn.Parameter(t) is a new leaf holding t's value: a materialized value's buffer is shared (values
    are immutable), so making it allocates nothing; writes to one are not seen through the other."""
    t = lt.randn(256, 1024)  # 1 MiB
    lt.mark_step()
    lt.metrics_reset()  # PeakBytes := the bytes live now
    live = lt.metric("PeakBytes")
    p = nn.Parameter(t)
    lt.mark_step()
    assert lt.metric("PeakBytes") == live
    assert p.requires_grad and not t.requires_grad and type(p) is nn.Parameter
    a = t.numpy()
    np.testing.assert_array_equal(p.numpy(), a)
    with lt.no_grad():
        p.mul_(2)
    np.testing.assert_array_equal(p.numpy(), 2 * a)
    np.testing.assert_array_equal(t.numpy(), a)
    # a pending value: one node for both, computed once
    q = nn.Parameter(lt.full((3,), 2.0) * 3)
    assert q.tolist() == [6.0, 6.0, 6.0] and q.requires_grad
