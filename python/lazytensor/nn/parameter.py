from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a Module registers as trainable (requires_grad by default).

    It holds ``data``'s value, not its storage: writes to one are not seen through the
    other (torch shares the storage). Nothing is copied to make it: values are immutable,
    so the parameter shares ``data``'s buffer (or pending graph) until one of them changes.
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.zeros(0, _C.float32)
        return _C._make_subclass(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

