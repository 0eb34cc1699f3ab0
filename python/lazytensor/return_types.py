"""Named tuples returned by functions with several results, as ``torch.return_types``:
``t.max(dim)`` is a ``return_types.max`` with fields ``values`` and ``indices``."""
from ._C import return_types_max as max, return_types_min as min  # noqa: A001 (torch's names)

__all__ = ["max", "min"]
