"""Tensor creation with torch's signatures and default dtypes."""
import builtins

import numpy as np

from . import _C

_FROM_NP = {np.dtype(np.float32): _C.float32, np.dtype(np.float64): _C.float64, np.dtype(np.int32): _C.int32,
            np.dtype(np.int64): _C.int64, np.dtype(np.bool_): _C.bool, np.dtype(np.uint8): _C.uint8}
_TO_NP = {v: k for k, v in _FROM_NP.items()}


def _shape(size):
    if len(size) == 1 and not isinstance(size[0], builtins.int):
        try:
            return tuple(size[0])
        except TypeError:
            raise TypeError(f"size must be ints or one sequence of ints, not {type(size[0]).__name__}") from None
    return tuple(size)


def _infer(data):
    """torch.tensor's dtype for Python data: bool, int64, or float32 as soon as a float appears."""
    a = np.asarray(data)
    if a.dtype == object:
        raise TypeError("tensor: could not infer a dtype from the data (ragged or non-numeric)")
    if a.dtype.kind == "b":
        return a, _C.bool
    if a.dtype.kind in "iu":
        return a, _C.int64
    if a.dtype.kind == "f":
        return a, _C.float32
    raise TypeError(f"tensor: data of NumPy kind {a.dtype.kind!r} is not supported")


def tensor(data, dtype=None, requires_grad=False):
    """A new tensor holding a copy of data (nested lists, a number, a NumPy array or a Tensor)."""
    if isinstance(data, _C.TensorBase):
        t = data.detach().clone() if dtype is None else data.detach().to(dtype).clone()
    else:
        if isinstance(data, np.ndarray):
            if data.dtype not in _FROM_NP:
                raise TypeError(f"tensor: NumPy dtype {data.dtype} is not supported")
            a, d = data, _FROM_NP[data.dtype]
        else:
            a, d = _infer(data)
        if dtype is not None:
            d = dtype
        via = _C.float32 if d == _C.bfloat16 else d  # NumPy has no bfloat16: rounded by the library's cast
        a = np.asarray(a, dtype=_TO_NP[via], order="C")  # (ascontiguousarray would make 0-d 1-d)
        t = _C.from_buffer(a, via, a.shape)
        if via != d:
            t = t.to(d)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None):
    if isinstance(data, _C.TensorBase) and (dtype is None or data.dtype == dtype):
        return data
    return tensor(data, dtype=dtype)


def from_numpy(a):
    return tensor(a)


def _dt(dtype, default=_C.float32):
    return default if dtype is None else dtype


def _grad(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*size, dtype=None, requires_grad=False):
    return _grad(_C.zeros(*_shape(size), _dt(dtype)), requires_grad)


def ones(*size, dtype=None, requires_grad=False):
    return _grad(_C.ones(*_shape(size), _dt(dtype)), requires_grad)


def empty(*size, dtype=None, requires_grad=False):
    """As torch.empty; the values are zeros (the library has no uninitialized memory to hand out)."""
    return zeros(*size, dtype=dtype, requires_grad=requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False):
    if dtype is None:  # torch infers from the value
        dtype = _C.bool if isinstance(fill_value, builtins.bool) else \
            _C.int64 if isinstance(fill_value, builtins.int) else _C.float32
    return _grad(_C.full(tuple(size) if not isinstance(size, builtins.int) else (size,), fill_value, dtype),
                 requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, builtins.int) for v in (start, end, step))
        dtype = _C.int64 if ints else _C.float32
    return _grad(_C.arange(start, end, step, dtype), requires_grad)


def rand(*size, dtype=None, requires_grad=False):
    return _grad(_C.rand(*_shape(size), _dt(dtype)), requires_grad)


def randn(*size, dtype=None, requires_grad=False):
    return _grad(_C.randn(*_shape(size), _dt(dtype)), requires_grad)


def zeros_like(t, dtype=None, requires_grad=False):
    return zeros(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    return ones(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def empty_like(t, dtype=None, requires_grad=False):
    return zeros_like(t, dtype=dtype, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad=False):
    return full(t.shape, fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad)


def rand_like(t, dtype=None, requires_grad=False):
    return rand(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def randn_like(t, dtype=None, requires_grad=False):
    return randn(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)
