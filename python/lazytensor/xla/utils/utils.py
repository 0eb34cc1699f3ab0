"""torch_xla.utils.utils: the helpers training scripts use."""
import os

from .._names import missing as _missing


class SampleGenerator:
    """Yields the same sample (e.g. a fake batch) sample_count times."""

    def __init__(self, data, sample_count):
        self._data = data
        self._count = sample_count
        self._i = 0

    def __len__(self):
        return self._count

    def __iter__(self):
        return SampleGenerator(self._data, self._count)

    def __next__(self):
        if self._i >= self._count:
            raise StopIteration
        self._i += 1
        return self._data


def getenv_as(name, type, defval=None):
    v = os.environ.get(name)
    if v is None:
        return defval
    if type is bool:
        return v.lower() in ("1", "true", "yes", "on")
    return type(v)


def get_print_fn(debug=None):
    return print if (debug if debug is not None else getenv_as("DEBUG", bool, False)) else (lambda *a, **k: None)


def shape(inputs):
    return [shape(x) for x in inputs] if isinstance(inputs, (list, tuple)) else list(inputs.shape)


__getattr__ = _missing(__name__)
