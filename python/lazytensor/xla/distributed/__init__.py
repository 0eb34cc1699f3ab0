from .._names import missing as _missing

__getattr__ = _missing(__name__)
