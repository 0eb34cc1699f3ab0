from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a Module registers as trainable (requires_grad by default).

    Unlike torch, it holds a copy of ``data``'s value rather than sharing its storage.
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.zeros(0, _C.float32)
        return _C._make_subclass(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

