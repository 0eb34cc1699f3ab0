"""Indexing and views against NumPy's view semantics: the results alias, and
writes through one view are seen through the base and every other view."""
import numpy as np
import pytest

import lazytensor as lt

INDICES = [
    (1,), (-1,), (slice(1, 3),), (slice(None, None, 2),), (slice(-3, None),), (Ellipsis, 1), (None, 0),
    (1, slice(None), -2), (slice(None), None, slice(1, None, 3)), (Ellipsis,), (slice(5, 2),), (0, 0, 0),
    (slice(None), 1, None, Ellipsis), (slice(10, 20),),
]


@pytest.mark.parametrize("idx", INDICES, ids=str)
def test_getitem_matches_numpy(idx):
    a = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    t = lt.tensor(a)
    np.testing.assert_array_equal(t[idx].numpy(), a[idx])


@pytest.mark.parametrize("idx", INDICES, ids=str)
def test_setitem_writes_through(idx):
    a = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    t = lt.tensor(a)
    whole = t[:]  # another alias of the same storage
    a[idx] = -1
    t[idx] = -1
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(whole.numpy(), a)
    # a tensor value broadcasts
    row = np.arange(6, dtype=np.float32) * 100
    a[idx] = row if np.ndim(a[idx]) and a[idx].shape[-1] == 6 else 7
    t[idx] = lt.tensor(row) if np.ndim(a[idx]) and a[idx].shape[-1] == 6 else 7
    np.testing.assert_array_equal(t.numpy(), a)


def test_fresh_views_of_one_window_chain_writes():
    """The seed's loop, x[0:32].lerp_(g, w) with a new view per call (whose read of the window just
    written is the written value, taken at trace time), interleaved with reads and writes through
    other aliases, against NumPy."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    g = rng.standard_normal((3, 8)).astype(np.float32)
    t, tg = lt.tensor(a), lt.tensor(g)
    keep = t[1:4]
    for i in range(6):
        t[1:4].lerp_(tg, 0.25)
        a[1:4] += 0.25 * (g - a[1:4])
        if i == 2:
            t[2:5, ::2].mul_(-1)  # an overlapping window between two writes to [1:4]
            a[2:5, ::2] *= -1
        if i == 4:
            lt.mark_step()  # a sync inside the chain
        np.testing.assert_allclose(t[1:4].numpy(), a[1:4], rtol=1e-5, atol=1e-6)
    t[1:4][:, 1:3].add_(1)  # a view of a fresh view
    a[1:4][:, 1:3] += 1
    np.testing.assert_allclose(keep.numpy(), a[1:4], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t.numpy(), a, rtol=1e-5, atol=1e-6)


def test_write_through_one_view_seen_through_another():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = lt.tensor(a)
    v1, v2 = t[1:3], t[:, ::2]          # overlapping views
    n1, n2 = a[1:3], a[:, ::2]
    v1 += 100
    n1 += 100
    np.testing.assert_array_equal(v2.numpy(), n2)
    v2.mul_(2)
    n2 *= 2
    np.testing.assert_array_equal(v1.numpy(), n1)
    tt = t.t()
    tt[0, 1] = -5                        # transpose, then element write
    a.T[0, 1] = -5
    np.testing.assert_array_equal(t.numpy(), a)
    d = t[:, :4].diagonal()
    d.zero_()
    np.einsum("ii->i", a[:, :4])[:] = 0
    np.testing.assert_array_equal(t.numpy(), a)
    r = t.view(2, 12)
    r[1, 11] = 42
    a.reshape(2, 12)[1, 11] = 42
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(v1.numpy(), a[1:3])


def test_view_methods():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = lt.tensor(a)
    np.testing.assert_array_equal(t.view(6, 4).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(t.view(-1).numpy(), a.reshape(-1))
    np.testing.assert_array_equal(t.reshape((4, -1)).numpy(), a.reshape(4, -1))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.permute(1, 2, 0).numpy(), a.transpose(1, 2, 0))
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t.unsqueeze(1).numpy(), a[:, None])
    np.testing.assert_array_equal(t[:, :1].squeeze(1).numpy(), a[:, 0])
    np.testing.assert_array_equal(t[:1, :, :1].squeeze().numpy(), a[0, :, 0])
    np.testing.assert_array_equal(t[:, :1].expand(2, 3, 4).numpy(), np.broadcast_to(a[:, :1], (2, 3, 4)))
    np.testing.assert_array_equal(t.flatten().numpy(), a.reshape(-1))
    np.testing.assert_array_equal(t.flatten(1).numpy(), a.reshape(2, -1))
    np.testing.assert_array_equal(t.diagonal(0, 1, 2).numpy(), np.diagonal(a, 0, 1, 2))
    np.testing.assert_array_equal(t.narrow(2, 1, 2).numpy(), a[:, :, 1:3])
    np.testing.assert_array_equal(t.select(1, -1).numpy(), a[:, -1])
    np.testing.assert_array_equal(t.transpose(0, 1).contiguous().numpy(), a.transpose(1, 0, 2))
    c = t.clone()
    c.fill_(0)
    assert t.sum().item() == a.sum()
    assert t[0]._is_view and not c._is_view


def test_expanded_view_is_read_only():
    t = lt.zeros(3, 1)
    e = t.expand(3, 4)
    with pytest.raises((ValueError, RuntimeError), match="expanded"):
        e.add_(1)


def test_tensor_index_gathers():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    t = lt.tensor(a)
    np.testing.assert_array_equal(t[lt.tensor([2, 0])].numpy(), a[[2, 0]])
    np.testing.assert_array_equal(t[:, lt.tensor([1])].numpy(), a[:, [1]])
