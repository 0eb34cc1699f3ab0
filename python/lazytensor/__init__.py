"""lazytensor: a lazy-tensor runtime with a PyTorch-shaped Python API.

Every tensor call records one IR node in the C library; values are computed
at a sync point (``mark_step()``, or reading a value with ``item()``,
``numpy()``, ``tolist()``, ``print``), where the pending graph is compiled
once and then found in a cache.

The ``_C`` extension is a thin layer over ``include/lazytensor.h``; this
package adds only what is naturally Python (nn.Module, optimizer classes,
reprs). No numerics are done here.
"""
import os as _os

# OpenMP threads that wait spin briefly, then sleep, unless the user chose
# (src/core/omp_policy.h says why): libgomp reads this once, when it loads
# with _C just below (too late if another module loaded it first).
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "1000"

from . import _C  # noqa: E402
from ._tensor import Tensor, Size
from ._C import float32, float64, int32, int64, bool, bfloat16, uint8, dtype  # noqa: A004 (torch's names)
from ._creation import (tensor, as_tensor, from_numpy, zeros, ones, full, empty, arange, rand, randn,
                        zeros_like, ones_like, full_like, empty_like, rand_like, randn_like)
from ._autograd import no_grad, is_grad_enabled
from ._functions import (cat, stack, where, matmul, lerp, maximum, minimum, exp, log, sqrt, rsqrt, abs, relu,
                         tanh, sigmoid, neg, clamp, sum, mean, amax, amin, max, min, argmax, argmin, softmax,
                         log_softmax, addcmul, addcdiv, flatten, transpose, permute, reshape, unsqueeze, squeeze,
                         diagonal, from_dlpack, numel)
from ._runtime import mark_step, metrics_report, metric, metrics_reset, manual_seed, save, load
from . import nn, optim, models, data, distributed, return_types  # noqa: E402

float = float32  # noqa: A001 (torch.float)
double = float64
long = int64
int = int32  # noqa: A001

__all__ = [n for n in dir() if not n.startswith("_")]
