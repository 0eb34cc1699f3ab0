"""Tensor ops against NumPy: values, PyTorch's result dtypes, broadcasting, empty and size-1 dims."""
import itertools
import operator

import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, NP, rand_np

# PyTorch's promotion for two tensors (float32 < float64; int32 < int64; bool lowest), with its
# dimension categories: a 0-d tensor against one with dims may raise the category, never the width
_RANK = {lt.bool: 0, lt.int32: 1, lt.int64: 2, lt.float32: 3, lt.float64: 4}
_CAT = {lt.bool: 0, lt.int32: 1, lt.int64: 1, lt.float32: 2, lt.float64: 2}


def promote(a, b, sa=(1,), sb=(1,)):
    if (len(sa) == 0) != (len(sb) == 0):
        d, z = (a, b) if len(sa) else (b, a)
        if _CAT[z] <= _CAT[d]:
            return d
    return a if _RANK[a] >= _RANK[b] else b


SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), (3,)), ((0, 3), (1, 3)), ((2, 0), (2, 1)),
          ((1,), ()), ((2, 1, 3), (4, 1))]

ARITH = [("add", operator.add, np.add), ("sub", operator.sub, np.subtract), ("mul", operator.mul, np.multiply)]


@pytest.mark.parametrize("sa,sb", SHAPES)
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_arithmetic_promotion_broadcast(sa, sb, da, db, rng):
    a, b = rand_np(sa, da, rng), rand_np(sb, db, rng)
    ta, tb = lt.tensor(a), lt.tensor(b)
    rd = promote(da, db, sa, sb)
    for name, op, nop in ARITH:
        if lt.bool in (da, db) and name == "sub":  # PyTorch: subtraction with a bool tensor is an error
            with pytest.raises((TypeError, RuntimeError)):
                op(ta, tb).numpy()
            continue
        r = op(ta, tb)
        want = nop(a.astype(NP[rd]), b.astype(NP[rd])) if rd != lt.bool else \
            (np.logical_or if name == "add" else np.logical_and)(a, b)
        assert r.dtype == rd, (name, da, db)
        assert r.shape == np.broadcast_shapes(sa, sb)
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-6, err_msg=name)
    # true division: integers give float32
    r = ta / tb
    fd = rd if rd in (lt.float32, lt.float64) else lt.float32
    assert r.dtype == fd
    with np.errstate(divide="ignore", invalid="ignore"):
        want = a.astype(NP[fd]) / b.astype(NP[fd])
    np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)
    # comparisons give bool
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        r = op(ta, tb)
        assert r.dtype == lt.bool
        np.testing.assert_array_equal(r.numpy(), op(a.astype(NP[rd]), b.astype(NP[rd])))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("s", [2, -3, 0.5, True])
def test_python_scalars(dt, s, rng):
    a = rand_np((3, 4), dt, rng)
    t = lt.tensor(a)
    # torch's rule: a Python number does not widen a tensor of the same category
    is_f = dt in (lt.float32, lt.float64)
    if isinstance(s, bool):
        rd = dt
    elif isinstance(s, int):
        rd = lt.int64 if dt == lt.bool else dt
    else:
        rd = dt if is_f else lt.float32
    for op, nop in ((operator.add, np.add), (operator.mul, np.multiply)):
        if rd == lt.bool:
            continue
        for r in (op(t, s), op(s, t)):
            assert r.dtype == rd
            np.testing.assert_allclose(r.numpy(), nop(a.astype(NP[rd]), NP[rd](s)), rtol=1e-6)
    if dt == lt.bool:  # PyTorch: subtraction with a bool tensor is an error
        with pytest.raises((TypeError, RuntimeError)):
            (t - s).numpy()
    elif rd != lt.bool:
        r = t - s
        assert r.dtype == rd
        np.testing.assert_allclose(r.numpy(), a.astype(NP[rd]) - NP[rd](s), rtol=1e-6)
        r = s - t
        np.testing.assert_allclose(r.numpy(), NP[rd](s) - a.astype(NP[rd]), rtol=1e-6)
    r = t < s
    assert r.dtype == lt.bool
    np.testing.assert_array_equal(r.numpy(), a < s)


def test_inplace_operators_are_in_place():
    t = lt.tensor([1.0, 2.0, 3.0])
    alias = t[:]
    before = id(t)
    t += 1
    t *= lt.tensor([2.0, 2.0, 2.0])
    t -= 0.5
    t /= 2
    assert id(t) == before
    np.testing.assert_allclose(alias.numpy(), ((np.array([1, 2, 3.0]) + 1) * 2 - 0.5) / 2)
    i = lt.tensor([1, 2, 3])
    with pytest.raises((TypeError, RuntimeError)):
        i += 0.5  # float into an integer tensor, as torch
    i += 2
    assert i.dtype == lt.int64 and i.tolist() == [3, 4, 5]


UNARY = [("neg", np.negative), ("exp", np.exp), ("abs", np.abs), ("tanh", np.tanh), ("relu", lambda x: np.maximum(x, 0)),
         ("sigmoid", lambda x: 1 / (1 + np.exp(-x)))]


@pytest.mark.parametrize("name,ref", UNARY)
@pytest.mark.parametrize("shape", [(3, 4), (0,), ()])
def test_unary(name, ref, shape, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    t = lt.tensor(a)
    np.testing.assert_allclose(getattr(t, name)().numpy(), ref(a), rtol=1e-5, atol=1e-6)
    u = t.clone()
    assert getattr(u, name + "_")() is u
    np.testing.assert_allclose(u.numpy(), ref(a), rtol=1e-5, atol=1e-6)
    p = np.abs(a) + 0.1
    tp = lt.tensor(p)
    np.testing.assert_allclose(tp.log().numpy(), np.log(p), rtol=1e-5)
    np.testing.assert_allclose(tp.sqrt().numpy(), np.sqrt(p), rtol=1e-5)
    np.testing.assert_allclose(tp.rsqrt().numpy(), 1 / np.sqrt(p), rtol=1e-5)
    np.testing.assert_allclose((tp ** 2).numpy(), p ** 2, rtol=1e-5)
    np.testing.assert_allclose((tp ** tp).numpy(), p ** p, rtol=1e-5)
    np.testing.assert_allclose(t.clamp(-0.5, 0.5).numpy(), np.clip(a, -0.5, 0.5))
    np.testing.assert_allclose(t.clamp(min=0).numpy(), np.maximum(a, 0))


def test_ternary(rng):
    a, b, c = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3))
    ta, tb, tc = lt.tensor(a), lt.tensor(b), lt.tensor(c)
    np.testing.assert_allclose(ta.lerp(tb, 0.3).numpy(), a + 0.3 * (b - a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ta.addcmul(tb, tc, value=0.5).numpy(), a + 0.5 * b * c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ta.addcdiv(tb, tc + 3, value=2).numpy(), a + 2 * b / (c + 3), rtol=1e-5, atol=1e-5)
    x = ta.clone()
    assert x.lerp_(tb, 0.1) is x
    np.testing.assert_allclose(x.numpy(), a + 0.1 * (b - a), rtol=1e-5, atol=1e-6)
    x.addcmul_(tb, tc, value=2)
    np.testing.assert_allclose(x.numpy(), a + 0.1 * (b - a) + 2 * b * c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lt.where(ta > 0, ta, tb).numpy(), np.where(a > 0, a, b))
    np.testing.assert_allclose(lt.maximum(ta, tb).numpy(), np.maximum(a, b))
    np.testing.assert_allclose(ta.minimum(tb).numpy(), np.minimum(a, b))


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(dim, keepdim, rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    t = lt.tensor(a)
    ax = dim if not isinstance(dim, list) else tuple(dim)
    kw = {} if dim is None else {"dim": dim}
    for name, ref in (("sum", np.sum), ("mean", np.mean), ("amax", np.max), ("amin", np.min)):
        r = getattr(t, name)(keepdim=keepdim, **kw)
        want = ref(a, axis=ax, keepdims=keepdim)
        assert r.shape == np.shape(want)
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-5, atol=1e-5)
    if isinstance(dim, int):
        v, i = t.max(dim, keepdim=keepdim)
        np.testing.assert_allclose(v.numpy(), a.max(axis=dim, keepdims=keepdim))
        np.testing.assert_array_equal(i.numpy(), np.argmax(a, axis=dim) if not keepdim else
                                      np.expand_dims(np.argmax(a, axis=dim), dim))
        np.testing.assert_allclose(t.softmax(dim).numpy(), np.exp(a) / np.exp(a).sum(dim, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(t.log_softmax(dim).numpy(),
                                   a - np.log(np.exp(a).sum(dim, keepdims=True)), rtol=1e-5, atol=1e-5)
    assert t.argmax().item() == np.argmax(a)
    assert t.argmin().item() == np.argmin(a)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim_named_result(name, rng):
    """max(dim)/min(dim) return torch's named tuple: .values, .indices, and unpacking."""
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    a[1, 2, :] = a[1, 2, 0]  # ties: the first index wins, as torch and NumPy
    t = lt.tensor(a)
    npv, npi = (a.max, np.argmax) if name == "max" else (a.min, np.argmin)
    for dim, keepdim in ((1, False), (-1, True), (0, False)):
        for r in (getattr(t, name)(dim, keepdim=keepdim), getattr(lt, name)(t, dim=dim, keepdim=keepdim)):
            assert type(r) is getattr(lt.return_types, name)
            assert type(r).__name__ == name and type(r).__module__ == "lazytensor.return_types"
            assert isinstance(r, tuple) and len(r) == 2
            assert r.values is r[0] and r.indices is r[1]
            v, i = r
            want_i = npi(a, axis=dim)
            np.testing.assert_array_equal(v.numpy(), npv(axis=dim, keepdims=keepdim))
            np.testing.assert_array_equal(i.numpy(), np.expand_dims(want_i, dim) if keepdim else want_i)
            assert i.dtype == lt.int64
            assert repr(r).startswith(f"lazytensor.return_types.{name}(values=tensor(")
    assert getattr(t, name)().item() == npv()  # no dim: one tensor, as torch
    with pytest.raises(ValueError, match=f"lt_{name}: argument"):
        getattr(t, name)(3)


def test_integer_sum_and_empty():
    t = lt.tensor([[1, 2], [3, 4]], dtype=lt.int32)
    s = t.sum()
    assert s.dtype == lt.int64 and s.item() == 10
    assert lt.tensor([True, True, False]).sum().item() == 2
    e = lt.zeros(0, 3)
    assert e.sum().item() == 0
    assert e.sum(0).shape == (3,)
    assert e.numpy().shape == (0, 3)


def test_matmul_cat_casts(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose((lt.tensor(a) @ lt.tensor(b)).numpy(), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lt.cat([lt.tensor(a), lt.tensor(a)], 1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_allclose(lt.stack([lt.tensor(b), lt.tensor(b)]).numpy(), np.stack([b, b]))
    t = lt.tensor(a)
    assert t.to(lt.int32).dtype == lt.int32
    np.testing.assert_array_equal(t.to(lt.int32).numpy(), a.astype(np.int32))
    assert t.double().dtype == lt.float64 and t.long().dtype == lt.int64 and t.bool().dtype == lt.bool
    assert t.float() is t
    b2 = lt.tensor(b)
    assert t.view_as(lt.zeros(6, 4)).shape == (6, 4) and t.reshape_as(lt.zeros(24)).shape == (24,)
    assert lt.ones(1).expand_as(b2).shape == (4, 5) and t.type_as(lt.zeros(1, dtype=lt.int64)).dtype == lt.int64
    assert t.new_zeros(2).dtype == lt.float32 and t.new_ones((1, 2)).shape == (1, 2)
    assert t.new_full((2,), 3.0).tolist() == [3.0, 3.0]


def test_creation():
    lt.manual_seed(1)
    a = lt.randn(3, 4)
    lt.manual_seed(1)
    b = lt.randn((3, 4))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert lt.zeros(2, 3).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert lt.ones(2, dtype=lt.int32).dtype == lt.int32
    assert lt.full((2,), 7).dtype == lt.int64 and lt.full((2,), 7.0).dtype == lt.float32
    np.testing.assert_allclose(lt.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25, dtype=np.float32))
    assert lt.arange(5).tolist() == [0, 1, 2, 3, 4] and lt.arange(5).dtype == lt.int64
    r = lt.rand(1000)
    assert 0 <= r.amin().item() and r.amax().item() < 1
    assert lt.zeros_like(a).shape == (3, 4) and lt.ones_like(a, dtype=lt.int64).dtype == lt.int64
    assert lt.tensor(3.5).item() == 3.5 and lt.tensor(3.5).ndim == 0
    assert lt.tensor([[1, 2]]).dtype == lt.int64 and lt.tensor([1.0, 2]).dtype == lt.float32
    assert lt.tensor(np.arange(3, dtype=np.float64)).dtype == lt.float64
    assert lt.tensor([True]).dtype == lt.bool
    assert lt.tensor([]).shape == (0,)
    assert a.numel() == 12 and a.ndim == 2 and a.size() == (3, 4) and a.size(-1) == 4 and a.dim() == 2
    assert int(lt.tensor(3)) == 3 and float(lt.tensor(2.5)) == 2.5 and bool(lt.tensor([1.0]))
    assert len(a) == 3 and [x.shape for x in a] == [(4,)] * 3


def test_repr():
    assert repr(lt.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(lt.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(lt.tensor([1.0], dtype=lt.float64)) == "tensor([1.], dtype=lazytensor.float64)"
    assert "requires_grad=True" in repr(lt.ones(2, requires_grad=True))
