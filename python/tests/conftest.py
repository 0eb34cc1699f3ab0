"""Shared helpers. Run with the build tree on PYTHONPATH (ctest does):
    PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests
"""
import os

import numpy as np
import pytest

import lazytensor as lt

DTYPES = [lt.float32, lt.float64, lt.int32, lt.int64, lt.bool]
NP = {lt.float32: np.float32, lt.float64: np.float64, lt.int32: np.int32, lt.int64: np.int64, lt.bool: np.bool_}
SANITIZED = os.environ.get("LT_SANITIZED") == "1"


def torch_or_skip():
    if SANITIZED:
        pytest.skip("PyTorch is not loaded under the ASan runtime (its own allocator hooks)")
    return pytest.importorskip("torch")


def torch_device_or_skip(heavy=False):
    """torch for the PyTorch device's tests. These run under the sanitizers
    too (the bridge is built with them; torch itself is not instrumented),
    except the heavy ones (whole models, OpInfo's thousands of samples),
    which make test runs."""
    if SANITIZED and heavy:
        pytest.skip("whole-model runs are too slow under the sanitizers; make test runs them", allow_module_level=True)
    return pytest.importorskip("torch")


def rand_np(shape, dtype, rng):
    if dtype == lt.bool:
        return rng.random(shape) < 0.5
    if dtype in (lt.int32, lt.int64):
        return rng.integers(-5, 6, size=shape).astype(NP[dtype])
    return rng.standard_normal(shape).astype(NP[dtype])


@pytest.fixture
def rng():
    return np.random.default_rng(0)
