"""NumPy and PyTorch exchange: numpy(), __array__, DLPack both ways."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import torch_or_skip

NUMERIC = [np.float32, np.float64, np.int32, np.int64]


@pytest.mark.parametrize("npdt", NUMERIC)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (1, 1, 5)])
def test_dlpack_numpy_both_ways(npdt, shape):
    a = (np.arange(int(np.prod(shape))) - 3).astype(npdt).reshape(shape)
    t = lt.from_dlpack(a)
    assert t.shape == shape and t.dtype == getattr(lt, np.dtype(npdt).name)
    np.testing.assert_array_equal(t.numpy(), a)
    back = np.from_dlpack(t * 2 if t.dtype != lt.bool else t)
    np.testing.assert_array_equal(back, a * 2)
    np.testing.assert_array_equal(np.asarray(t), a)


def test_dlpack_of_a_view_and_a_lazy_value():
    t = lt.arange(12, dtype=lt.float32).view(3, 4)
    v = t.t()[1:]  # non-contiguous view: the export is materialized C-contiguous
    np.testing.assert_array_equal(np.from_dlpack(v), np.arange(12, dtype=np.float32).reshape(3, 4).T[1:])


def test_non_contiguous_producer_is_refused():
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    with pytest.raises(ValueError, match="contiguous"):
        lt.from_dlpack(a)
    with pytest.raises(TypeError):
        lt.from_dlpack([1, 2, 3])


@pytest.mark.parametrize("name", ["float32", "float64", "int32", "int64"])
def test_dlpack_torch_both_ways(name):
    torch = torch_or_skip()
    x = torch.arange(-6, 6).to(getattr(torch, name)).reshape(3, 4)
    t = lt.from_dlpack(x)
    assert t.dtype == getattr(lt, name)
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    y = torch.from_dlpack(t + 1)
    assert y.dtype == getattr(torch, name)
    assert torch.equal(y, x + 1)
    with pytest.raises(ValueError, match="contiguous"):
        lt.from_dlpack(x.t())


def test_bfloat16():
    t = lt.tensor([1.0, 2.5, 1 / 3], dtype=lt.bfloat16)
    assert t.dtype == lt.bfloat16 and t.dtype.is_floating_point and t.element_size() == 2
    np.testing.assert_array_equal(t.float().numpy(), np.float32([1.0, 2.5, 0.333984375]))  # nearest bf16
    assert (t * 2).dtype == lt.bfloat16 and (t + lt.ones(3)).dtype == lt.float32
    assert "dtype=lazytensor.bfloat16" in repr(t)
    with pytest.raises(TypeError, match="bfloat16"):
        t.numpy()


def test_bfloat16_dlpack_torch():
    torch = torch_or_skip()
    x = torch.tensor([1.0, -2.5, 3.0], dtype=torch.bfloat16)
    t = lt.from_dlpack(x)
    assert t.dtype == lt.bfloat16 and t.float().tolist() == [1.0, -2.5, 3.0]
    assert torch.equal(torch.from_dlpack(t), x)
