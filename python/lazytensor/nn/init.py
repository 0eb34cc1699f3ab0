"""Initializations as torch.nn.init, drawn from the manual_seed generator.

Values are drawn in float64 and rounded once to the parameter's dtype, the
same arithmetic as the C library's models (src/nn/init.c), so a model built
here from a seed holds exactly the C model's weights."""
import math

from .. import _C
from .._autograd import no_grad


_deferred = 0


class deferred:
    """Inside, uniform_ and normal_ draw nothing: a model that initializes its
    parameters in one pass afterwards (as torchvision's ResNet does) draws
    each value once, in module order, as the C library's models do."""

    def __enter__(self):
        global _deferred
        _deferred += 1

    def __exit__(self, *exc):
        global _deferred
        _deferred -= 1


def _fan(t):
    s = t.shape
    rf = 1
    for d in s[2:]:
        rf *= d
    return s[1] * rf, s[0] * rf  # fan_in, fan_out


@no_grad()
def uniform_(t, a=0.0, b=1.0):
    """U(a, b); the C models' U(-bound, bound) is uniform_(t, -bound, bound)."""
    if _deferred:
        return t
    u = _C.rand(*t.shape, _C.float64)
    if a == -b:  # (2u - 1) * b: src/nn/init.c's arithmetic
        v = (u * 2 - 1) * b
    else:
        v = u * (b - a) + a
    return t.copy_(v)


@no_grad()
def normal_(t, mean=0.0, std=1.0):
    if _deferred:
        return t
    v = _C.randn(*t.shape, _C.float64) * std
    if mean != 0:
        v = v + mean
    return t.copy_(v)


def constant_(t, val):
    with no_grad():
        return t.fill_(val)


def zeros_(t):
    return constant_(t, 0.0)


def ones_(t):
    return constant_(t, 1.0)


def _gain2(a, nonlinearity):
    """The squared gain: sqrt(gain2 / fan) is the C models' std, to the last bit."""
    return 2.0 / (1 + a * a) if nonlinearity == "leaky_relu" else 2.0


def kaiming_uniform_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    fan_in, fan_out = _fan(t)
    bound = math.sqrt(3.0 * _gain2(a, nonlinearity) / (fan_in if mode == "fan_in" else fan_out))
    return uniform_(t, -bound, bound)


def kaiming_normal_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    fan_in, fan_out = _fan(t)
    return normal_(t, 0.0, math.sqrt(_gain2(a, nonlinearity) / (fan_in if mode == "fan_in" else fan_out)))


def default_(weight, bias=None):
    """Linear's and Conv's default (kaiming_uniform_(a=sqrt(5)) = U(+-1/sqrt(fan_in)), bias the same bound)."""
    fan_in, _ = _fan(weight) if weight.ndim > 1 else (weight.shape[0], 0)
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
    uniform_(weight, -bound, bound)
    if bias is not None:
        uniform_(bias, -bound, bound)
