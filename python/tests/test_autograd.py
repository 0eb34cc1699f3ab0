"""Autograd through the Python layer against central finite differences in float64."""
import numpy as np
import pytest

import lazytensor as lt


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


FUNCS = {
    "poly": lambda t: ((t * t + 3 * t) / 2).sum(),
    "exp_log": lambda t: (t.exp() + (t * t + 1).log()).mean(),
    "tanh_sigmoid": lambda t: (t.tanh() * t.sigmoid()).sum(),
    "softmax": lambda t: (t.log_softmax(1) * lt.arange(4, dtype=lt.float64)).sum(),
    "views": lambda t: (t[1:, ::2] * t.t()[::2, :2].t()).sum() + t.transpose(0, 1).reshape(-1)[3],
    "matmul": lambda t: (t @ t.t()).pow(2).sum(),
    "reduce": lambda t: t.amax(1).sum() + t.mean(0).sum(),
    "lerp": lambda t: t.lerp(t * t, 0.3).sum(),
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_grad_matches_finite_differences(name, rng):
    f = FUNCS[name]
    x = rng.standard_normal((3, 4))
    t = lt.tensor(x, requires_grad=True)
    f(t).backward()
    got = t.grad.numpy()
    want = numeric_grad(lambda v: f(lt.tensor(v)).item(), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_grad_accumulates_and_resets():
    t = lt.ones(3, dtype=lt.float64, requires_grad=True)
    (t * 2).sum().backward()
    (t * 3).sum().backward()
    assert t.grad.tolist() == [5, 5, 5]
    t.grad = None
    assert t.grad is None
    assert t.requires_grad and t.is_floating_point()


def test_in_place_and_views_under_autograd():
    w = lt.tensor([1.0, 2.0, 3.0], dtype=lt.float64, requires_grad=True)
    y = w * 1
    y[1:] *= w[:2]           # in place through a view of a non-leaf
    y.sum().backward()
    # y = [w0, w1*w0, w2*w1] -> d/dw = [1 + w1, w0 + w2, w1]
    assert w.grad.tolist() == [3.0, 4.0, 2.0]
    with pytest.raises(RuntimeError):
        w.add_(1)            # in place on a leaf that requires grad


def test_no_grad_context_and_decorator():
    w = lt.ones(2, requires_grad=True)
    with lt.no_grad():
        assert not lt.is_grad_enabled()
        y = w * 2
        w.add_(1)            # allowed in no-grad mode
    assert lt.is_grad_enabled()
    assert not y.requires_grad

    @lt.no_grad()
    def f(x):
        return x * 3
    assert not f(w).requires_grad
    assert (w * 3).requires_grad
    d = w.detach()
    assert not d.requires_grad
    with pytest.raises((TypeError, RuntimeError)):
        lt.ones(2, dtype=lt.int64).requires_grad_()
