"""lazytensor.Tensor: the C TensorBase plus what is naturally Python."""
import builtins

import numpy as np

from . import _C

Size = tuple  # torch.Size is a tuple subclass; a plain tuple compares the same

_NP = {_C.float32: np.float32, _C.float64: np.float64, _C.int32: np.int32, _C.int64: np.int64, _C.bool: np.bool_,
       _C.uint8: np.uint8}


class Tensor(_C.TensorBase):
    """A lazy tensor. Operations record IR; reading a value syncs."""

    __slots__ = ()

    def numpy(self):
        """A new NumPy array with the value (syncs what this tensor needs)."""
        if self.dtype not in _NP:
            raise TypeError(f"numpy(): NumPy has no {self.dtype!r}; convert first, e.g. .float()")
        out = np.empty(self.shape, dtype=_NP[self.dtype])
        self._to_host(out)
        return out

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def tolist(self):
        return self.numpy().tolist()

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in builtins.range(self.shape[0]))

    def __repr__(self):
        a = (self.float() if self.dtype == _C.bfloat16 else self).numpy()
        if a.dtype.kind == "f":
            body = np.array2string(a, separator=", ", prefix="tensor(", precision=4,
                                   floatmode="fixed" if a.size and np.any(a != np.round(a)) else "maxprec")
        else:
            body = np.array2string(a, separator=", ", prefix="tensor(")
        extra = ""
        if self.dtype not in (_C.float32, _C.int64, _C.bool) or a.size == 0:
            extra += f", dtype={self.dtype!r}"
        if self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    __str__ = __repr__

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        return builtins.object.__format__(self, spec)

    def type_as(self, other):
        return self.to(other.dtype)

    def view_as(self, other):
        return self.view(other.shape)

    def expand_as(self, other):
        return self.expand(other.shape)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def new_zeros(self, *size, dtype=None):
        from ._creation import zeros
        return zeros(*size, dtype=dtype or self.dtype)

    def new_ones(self, *size, dtype=None):
        from ._creation import ones
        return ones(*size, dtype=dtype or self.dtype)

    def new_full(self, size, fill_value, dtype=None):
        from ._creation import full
        return full(size, fill_value, dtype=dtype or self.dtype)


_C._set_tensor_class(Tensor)
