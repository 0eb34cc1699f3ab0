"""Module-level functions with torch's names; each is one Tensor method or one _C call."""
from . import _C

cat = _C.cat
where = _C.where
from_dlpack = _C.from_dlpack


def stack(tensors, dim=0):
    return cat([t.unsqueeze(dim) for t in tensors], dim)


def _method(name):
    def f(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"torch.{name}: the Tensor method {name}()"
    return f


for _name in ("matmul", "lerp", "maximum", "minimum", "exp", "log", "sqrt", "rsqrt", "abs", "relu", "tanh",
              "sigmoid", "neg", "clamp", "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "softmax",
              "log_softmax", "addcmul", "addcdiv", "flatten", "transpose", "permute", "reshape", "unsqueeze",
              "squeeze", "diagonal", "numel"):
    globals()[_name] = _method(_name)
del _name
