"""PyTorch's own op tests on the device (issue 27, check 2).

Walks torch.testing._internal's OpInfo database (shipped with Debian's
PyTorch 1.13) for every aten op the bridge registers: each sample input
runs on the CPU and on the device, outputs and (where OpInfo says the op
supports autograd) input gradients compared with OpInfo's tolerances.
Prints pass / fail / skip counts per op; every skip names its reason. A
float32 output that differs from the CPU's passes only if it is no farther
than the CPU's from the float64 result of the same sample.
"""
import os
import sys
import types
import unittest

import pytest

from conftest import torch_device_or_skip

torch = torch_device_or_skip(heavy=True)
ltt = pytest.importorskip("lazytensor.torch")

# OpInfo's module imports expecttest, which Debian does not package.
if "expecttest" not in sys.modules:
    stub = types.ModuleType("expecttest")
    stub.TestCase = unittest.TestCase
    stub.ACCEPT = False
    sys.modules["expecttest"] = stub
cmi = pytest.importorskip("torch.testing._internal.common_methods_invocations")
from torch.testing._internal.common_device_type import toleranceOverride  # noqa: E402

DEV = ltt.device()
DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool]
DEFAULT_TOL = {torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7), torch.bfloat16: (1.6e-2, 1e-5),
               torch.int64: (0, 0), torch.int32: (0, 0), torch.bool: (0, 0)}


def registered():
    names = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    return {n.split("::", 1)[1].split(".", 1)[0] for n in names if n.startswith("aten::")}


# The bridge's own kernels for storage and views, which every op uses and
# OpInfo has no entry for; they are tested in test_torch_device.py.
INFRASTRUCTURE = {"empty", "empty_strided", "copy_", "_copy_from", "_copy_from_and_resize", "resize_",
                  "_local_scalar_dense", "as_strided", "view", "_reshape_alias", "fill_", "zero_"}


# Known defects, reported (and not counted) only with exactly this message;
# any other failure of the op still counts. Each is an open item.
KNOWN = {}


def tolerance(op, dtype):
    """The largest tolerance OpInfo's overrides state for dtype, else assert_close's."""
    rtol, atol = DEFAULT_TOL[dtype]
    for info in op.decorators or ():
        for dec in getattr(info, "decorators", ()) or ():
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                rtol, atol = max(rtol, dec.d[dtype].rtol), max(atol, dec.d[dtype].atol)
    return rtol, atol


def to_device(x):
    if isinstance(x, torch.Tensor):
        t = x.detach().to(DEV)
        return t.requires_grad_(x.requires_grad) if x.requires_grad else t
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v) for v in x)
    if isinstance(x, dict):
        return {k: to_device(v) for k, v in x.items()}
    return x


def flat_tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in flat_tensors(v)]
    return []


def run(op, sample, on_device):
    inp, args, kwargs = sample.input, sample.args, sample.kwargs
    if on_device:
        inp, args, kwargs = to_device(inp), to_device(args), to_device(kwargs)
    out = op(inp, *args, **kwargs)
    return inp, args, out


def grads(inputs, outs):
    outs = [o for o in flat_tensors(outs) if o.requires_grad and o.dtype.is_floating_point]
    leaves = [t for t in flat_tensors(inputs) if t.requires_grad]
    if not outs or not leaves:
        return None
    total = sum((o.float().sum() if o.dtype != torch.float64 else o.sum()) for o in outs)
    return torch.autograd.grad(total, leaves, allow_unused=True)


def compare(a, b, rtol, atol, what):
    """rtol/atol are the sample's (its input dtype's); an output of another
    dtype (int64 in, float32 out) gets at least its own dtype's default."""
    fa, fb = flat_tensors(a), flat_tensors(b)
    assert len(fa) == len(fb), f"{what}: {len(fa)} tensors on the device, {len(fb)} on the CPU"
    for x, y in zip(fa, fb):
        if x is None or y is None:
            assert x is None and y is None, f"{what}: a gradient missing on one side"
            continue
        assert x.device == DEV or x.device.type == "cpu"
        r, t = DEFAULT_TOL.get(y.dtype, (0, 0))
        torch.testing.assert_close(x.cpu(), y, rtol=max(rtol, r), atol=max(atol, t), equal_nan=True, check_stride=False,
                                   msg=lambda m: f"{what}: {m}")


def to_double(x):
    if isinstance(x, torch.Tensor):
        return x.detach().double() if x.dtype == torch.float32 else x.detach()
    if isinstance(x, (list, tuple)):
        return type(x)(to_double(v) for v in x)
    if isinstance(x, dict):
        return {k: to_double(v) for k, v in x.items()}
    return x


def closer_to_float64(op, s, dout, cout, grad=False):
    """A float32 sample whose device output differs from the CPU's passes if
    the device is no farther than the CPU from the float64 result: where
    float32 rounding decides (a mean of nearly equal values, a layer norm of
    one element), the CPU is not the truth."""
    try:
        inp, args, kwargs = to_double(s.input), to_double(s.args), to_double(s.kwargs)
        if grad:
            for t in flat_tensors(inp) + flat_tensors(args):
                if t.dtype == torch.float64:
                    t.requires_grad_(True)
        ref = op(inp, *args, **kwargs)
        if grad:
            ref = [g if g is not None else torch.zeros(()) for g in grads((inp, args), ref)]
    except Exception:  # noqa: BLE001 (no float64 form of this sample)
        return False
    for d, c, r in zip(flat_tensors(dout), flat_tensors(cout), flat_tensors(ref)):
        if not r.dtype.is_floating_point:
            if not torch.equal(d.cpu(), c):
                return False
            continue
        dd = (d.cpu().double() - r).abs().nan_to_num(0).max().item() if r.numel() else 0.0
        cd = (c.double() - r).abs().nan_to_num(0).max().item() if r.numel() else 0.0
        if dd > 2 * cd + 1e-6:
            return False
    return True


def check_op(op, regs):
    """(passed, failed, skipped reasons, failure messages) over op's samples."""
    passed, failed, skips, msgs = 0, 0, {}, []
    for dtype in DTYPES:
        if dtype not in op.supported_dtypes("cpu"):
            skips["dtype not supported by the op on the CPU"] = skips.get("dtype not supported by the op on the CPU", 0) + 1
            continue
        want_grad = op.supports_autograd and dtype.is_floating_point
        rtol, atol = tolerance(op, dtype)
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=want_grad))
        except Exception as e:  # noqa: BLE001
            skips[f"sample_inputs failed on the CPU: {type(e).__name__}"] = 1
            continue
        for s in samples:
            try:
                cin, _, cout = run(op, s, False)
            except Exception:  # noqa: BLE001 (the CPU refuses it: the device must refuse too)
                try:
                    run(op, s, True)
                except Exception:  # noqa: BLE001
                    passed += 1
                else:
                    failed += 1
                    msgs.append(f"{dtype}: the CPU raises, the device does not")
                continue
            try:
                din, _, dout = run(op, s, True)
                try:
                    compare(dout, cout, rtol, atol, f"{dtype} output")
                except AssertionError:
                    if dtype != torch.float32 or not closer_to_float64(op, s, dout, cout):
                        raise
                if want_grad:
                    cg, dg = grads(cin, cout), grads(din, dout)
                    if cg is not None:
                        try:
                            compare(dg, cg, max(rtol, 1e-4) if dtype == torch.float32 else rtol,
                                    max(atol, 1e-4) if dtype == torch.float32 else atol, f"{dtype} gradient")
                        except AssertionError:
                            if dtype != torch.float32 or not closer_to_float64(op, s, dg, cg, grad=True):
                                raise
                passed += 1
            except Exception as e:  # noqa: BLE001
                failed += 1
                shape = tuple(s.input.shape) if isinstance(s.input, torch.Tensor) else "-"
                msgs.append(f"{dtype} input {shape}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return passed, failed, skips, msgs


def test_opinfo_samples_on_the_device(capsys):
    regs = registered()
    ops = [op for op in cmi.op_db if op.aten_name in regs and op.aten_name not in INFRASTRUCTURE]
    # ops whose samples are random draws cannot agree value for value
    ops = [op for op in ops if "rand" not in op.name and "bernoulli" not in op.name and "dropout" not in op.name]
    only = os.environ.get("LT_OPINFO_OPS")  # e.g. "lerp,native_layer_norm": a quick run over the ops one touched
    if only:
        ops = [op for op in ops if op.name in only.split(",") or op.aten_name in only.split(",")]
    assert ops, "no OpInfo entry matches a registered kernel"
    ltt.metrics_reset()
    total_fail, lines, failures = 0, [], []
    for op in ops:
        torch.manual_seed(0)  # OpInfo draws its samples from torch's generator: the same samples every run
        p, f, skips, msgs = check_op(op, regs)
        known = [m for m in msgs if op.name in KNOWN and KNOWN[op.name] in m]
        if known:
            f -= len(known)
            skips[f"a known defect, listed in KNOWN ({KNOWN[op.name]})"] = len(known)
        total_fail += f
        why = "; ".join(f"{n} skipped: {r}" for r, n in skips.items())
        lines.append(f"{op.name:<40} pass {p:4d} fail {f:3d}  {why}")
        failures += [f"{op.name} {m}" for m in msgs[:3]]
    with capsys.disabled():
        print("\nOpInfo on the lazytensor device (float32, float64, int64, bool):")
        print("\n".join(lines))
        print(f"fallbacks while running the samples: {ltt.fallback_counts() or 'none'}")
        print(f"{len(ops)} ops, {total_fail} failing samples")
        if failures:
            print("\n".join(failures[:80]))
    assert total_fail == 0, f"{total_fail} OpInfo samples fail on the device (listed above)"
