"""Grad mode: no_grad() as a context manager and a decorator."""
import functools

from . import _C


class no_grad:
    """Ops inside record no autograd history (nests; also a decorator)."""

    def __enter__(self):
        _C._no_grad_begin()
        return self

    def __exit__(self, *exc):
        _C._no_grad_end()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return wrapper


is_grad_enabled = _C.is_grad_enabled
