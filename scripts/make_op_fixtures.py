#!/usr/bin/python3
"""Differential op cases against PyTorch 1.13 for tests/test_torch_diff.c.

    /usr/bin/python3 scripts/make_op_fixtures.py [--seed S] [--per-op N] [--out FILE]

For every public op of include/lazytensor.h (by its C name) it draws random
cases (every dtype, broadcasting, 0-d, empty and size-1 dims, NaN/inf and
edge values) plus the directed cases of issue 17, runs them in PyTorch and
writes what PyTorch did: the output (dtype, shape, values), the gradient of
each input that requires one for a given upstream gradient, or that the call
raised. The C test replays the file with no PyTorch at run time.

The file is safetensors (tests/data/op_cases.safetensors by default): the
tensors "<case>.<slot>", and in "__metadata__" one key "cases" holding a JSON
array with one object per case:
    {"op": C name without "lt_", "args": [ARG...], "raise": 0|1,
     "out": tensor name | null, "after": [[arg, name]...],
     "gout": name | null, "grads": [[arg, name]...], "clone0": 0|1, "nov": 0|1}
ARG: a number (a C double or integer; "nan", "inf", "-inf" as strings), a
list of integers, true/false, null (a NULL tensor), {"t": name, "rg": 0|1}
(a tensor; rg: requires grad), {"ts": [ARG...]} (a tensor array),
{"dtype": "F32"...}, or {"alias": k, "view": [...]} (a view of argument k:
["same"], ["t"], ["slice", dim, start, end(, step)], ["view", [sizes]]).
Trailing tensor arguments that only aliases view (Base) are not passed to
the op: in C no runner reads past the op's own arguments.
clone0: argument 0 is cloned before an in-place call (so a leaf that
requires grad can be written). nov: compare dtype and shape only (random ops).
"""
import argparse
import warnings
import json
import math
import os
import random
import struct
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DT = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32", torch.int64: "I64", torch.bool: "BOOL"}
TD = {v: k for k, v in DT.items()}
FLOATS = [torch.float32, torch.float64]
INTS = [torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool]
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e30, -1e-30, 0.5, -0.5, 2.0]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.g = torch.Generator().manual_seed(seed)

    def shape(self, nd=None, maxd=3, empty=0.08):
        r = self.r
        if nd is None:
            nd = r.choice([0, 1, 1, 2, 2, 3][: maxd + 3])
            nd = min(nd, maxd)
        return [0 if r.random() < empty else r.choice([1, 2, 3, 4]) for _ in range(nd)]

    def bshape(self, s):
        """A shape that broadcasts with s (sometimes one that does not)."""
        r = self.r
        s = list(s)
        if r.random() < 0.3:
            s = s[r.randint(0, len(s)):]
        s = [1 if r.random() < 0.3 else d for d in s]
        if r.random() < 0.15:
            s = [r.choice([1, 2])] + s
        if r.random() < 0.06 and s:
            i = r.randrange(len(s))
            s[i] = s[i] + 2
        return s

    def tensor(self, shape, dt, special=0.15, lo=-5, hi=6):
        r = self.r
        n = 1
        for d in shape:
            n *= d
        if dt in FLOATS:
            vals = torch.randn(n, generator=self.g, dtype=torch.float64) * 2
            for i in range(n):
                if r.random() < special:
                    vals[i] = r.choice(SPECIAL)
            return vals.to(dt).reshape(shape)
        if dt == torch.bool:
            return (torch.rand(n, generator=self.g) < 0.5).reshape(shape)
        return torch.randint(lo, hi, (n,), generator=self.g).to(dt).reshape(shape)

    def dtype(self, pool=ALL):
        return self.r.choice(pool)


# ---- the ops: C name -> (torch callable over the C argument list, maker) -------
# A maker returns the argument list (torch tensors, numbers, lists, ...) and
# options; tensors that should require grad are marked with rg().
class RG:
    """A tensor argument that requires grad (floats only)."""

    def __init__(self, t):
        self.t = t


class Alias:
    def __init__(self, k, view):
        self.k, self.view = k, view


class Base:  # a trailing tensor argument that only Alias arguments view
    def __init__(self, t):
        self.t = t


def rg(t, on=True):
    return RG(t) if on and t.dtype in FLOATS else t


def dims_of(n, g, maxn=2):
    if n == 0:
        return []
    k = g.r.randint(0, min(n, maxn))
    return g.r.sample(range(-n, n), k) if k else []


def t_axes(a, axes):
    return list(axes) if axes else list(range(a.dim()))


def torch_call(op, a):
    """Runs C op `op` on decoded args `a` in PyTorch."""
    if op in OTHER:
        return OTHER[op](*a)
    if op in BINARY:
        return BINARY[op](a[0], a[1])
    if op in UNARY:
        return UNARY[op](a[0])
    if op[:-1] in UNARY:
        return getattr(a[0], op)()
    return getattr(a[0], op)(a[1])


BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
          "minimum": torch.minimum, "pow": torch.pow, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt,
          "le": torch.le, "gt": torch.gt, "ge": torch.ge}
UNARY = {"erf": torch.erf, "neg": torch.neg, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
         "abs": torch.abs, "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}


def inplace_maxmin(a, b, fn):
    r = fn(a, b)
    if not torch.can_cast(r.dtype, a.dtype) or r.shape != a.shape:
        raise RuntimeError("result type/shape")
    if a.numel() and b.numel() and a.storage().data_ptr() == b.storage().data_ptr():
        # aliases: out=a, PyTorch's in-place form, checks memory overlap
        return fn(a, b, out=a)
    return a.copy_(r)


def clamp(a, lo, hi):  # the C bounds are Python floats (an infinite one bounds nothing)
    return torch.clamp(a, lo, hi)


def clamp_(a, lo, hi):
    return a.clamp_(lo, hi)


def red(fn):
    def f(a, axes, keepdim):
        return fn(a, dim=t_axes(a, axes), keepdim=keepdim)
    return f


def sl(a, dim, start, end, step):
    if a.dim() == 0:
        raise RuntimeError("0-d")
    idx = [slice(None)] * a.dim()
    idx[dim] = slice(start, end, step)
    return a[tuple(idx)]


def dropout(x, p, training):
    return F.dropout(x, p, training)


def sdpa(q, k, v, causal, p, scale):
    """PyTorch 2.0's F.scaled_dot_product_attention (1.13 has none), spelled out; p is 0 here."""
    s = scale if scale != 0 else 1.0 / math.sqrt(q.shape[-1])
    att = torch.matmul(q, k.transpose(-2, -1)) * s
    if causal:
        t = q.shape[-2]
        att = att.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), -math.inf)
    return torch.matmul(torch.softmax(att, -1), v)


def layer_norm(x, n, w, b, eps):
    if n < 1 or n > x.dim():
        raise RuntimeError("normalized dims out of range")
    return F.layer_norm(x, x.shape[x.dim() - n:], w, b, eps)


OTHER = {
    "add_scalar": lambda a, s: torch.add(a, s), "add_scalar_": lambda a, s: a.add_(s),
    "mul_scalar": lambda a, s: torch.mul(a, s), "mul_scalar_": lambda a, s: a.mul_(s),
    "pow_scalar": lambda a, s: torch.pow(a, s), "pow_scalar_": lambda a, s: a.pow_(s),
    "clamp": clamp, "clamp_": clamp_,
    "maximum_": lambda a, b: inplace_maxmin(a, b, torch.maximum),
    "minimum_": lambda a, b: inplace_maxmin(a, b, torch.minimum),
    "to_dtype": lambda a, d: a.to(d),
    "lerp": lambda a, b, w: torch.lerp(a, b, w), "lerp_": lambda a, b, w: a.lerp_(b, w),
    "where": torch.where,
    "addcmul": lambda a, b, c, v: torch.addcmul(a, b, c, value=v), "addcmul_": lambda a, b, c, v: a.addcmul_(b, c, value=v),
    "addcdiv": lambda a, b, c, v: torch.addcdiv(a, b, c, value=v), "addcdiv_": lambda a, b, c, v: a.addcdiv_(b, c, value=v),
    "copy_": lambda d, s: d.copy_(s), "fill_": lambda a, v: a.fill_(v), "zero_": lambda a: a.zero_(),
    "zeros": lambda d, s: torch.zeros(s, dtype=d), "ones": lambda d, s: torch.ones(s, dtype=d),
    "full": lambda v, d, s: torch.full(s, v, dtype=d),
    "randn": lambda d, s: torch.randn(s, dtype=d), "rand": lambda d, s: torch.rand(s, dtype=d),
    "arange": lambda a, b, s, d: torch.arange(a, b, s, dtype=d),
    "from_data": lambda a: a.clone(),
    "sum": red(torch.sum), "mean": red(torch.mean), "max": red(torch.amax), "min": red(torch.amin),
    "argmax": lambda a, d, k: torch.argmax(a, d, k), "argmin": lambda a, d, k: torch.argmin(a, d, k),
    "softmax": lambda a, d: torch.softmax(a, d), "log_softmax": lambda a, d: torch.log_softmax(a, d),
    "matmul": torch.matmul, "cat": lambda ts, d: torch.cat(ts, d),
    "clone": torch.clone, "contiguous": lambda a: a.contiguous(), "detach": lambda a: a.detach(),
    "view": lambda a, s: a.view(s), "reshape": lambda a, s: a.reshape(s),
    "flatten": lambda a, s, e: torch.flatten(a, s, e), "transpose": torch.transpose, "t": torch.t,
    "permute": lambda a, p: a.permute(p), "slice": sl, "narrow": torch.narrow, "select": torch.select,
    "expand": lambda a, s: a.expand(s), "unsqueeze": torch.unsqueeze, "squeeze": torch.squeeze,
    "diagonal": lambda a, o, d1, d2: torch.diagonal(a, o, d1, d2),
    "as_strided": lambda a, s, st, o: torch.as_strided(a, s, st, o),
    "conv2d": lambda x, w, b, s, p, d, g: F.conv2d(x, w, b, s, p, d, g),
    "max_pool2d": lambda x, k, s, p: F.max_pool2d(x, k, s, p),
    "avg_pool2d": lambda x, k, s, p: F.avg_pool2d(x, k, s, p),
    "adaptive_avg_pool2d": lambda x, o: F.adaptive_avg_pool2d(x, o),
    "batch_norm": lambda x, w, b, rm, rv, tr, mo, eps: F.batch_norm(x, rm, rv, w, b, tr, mo, eps),
    "linear": F.linear, "dropout": dropout,
    "nll_loss": F.nll_loss, "cross_entropy": lambda x, t, ls: F.cross_entropy(x, t, label_smoothing=ls),
    "mse_loss": F.mse_loss, "gather": torch.gather, "index_select": torch.index_select,
    "embedding": lambda w, i: F.embedding(i, w),
    "gelu": lambda x, t: F.gelu(x, approximate="tanh" if t else "none"),
    "layer_norm": layer_norm, "scaled_dot_product_attention": sdpa,
}
GRAD_OPS = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "add_scalar", "mul_scalar", "pow_scalar",
            "clamp", "neg", "exp", "log", "sqrt", "rsqrt", "abs", "relu", "tanh", "sigmoid", "to_dtype", "lerp",
            "where", "addcmul", "addcdiv", "sum", "mean", "max", "min", "softmax", "log_softmax", "matmul", "cat",
            "clone", "contiguous", "view", "reshape", "flatten", "transpose", "t", "permute", "slice", "narrow",
            "select", "expand", "unsqueeze", "squeeze", "diagonal", "as_strided", "conv2d", "max_pool2d",
            "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "linear", "dropout", "nll_loss", "cross_entropy",
            "mse_loss", "gather", "index_select", "embedding", "copy_", "fill_", "zero_", "erf", "gelu", "layer_norm",
            "scaled_dot_product_attention"}
GRAD_OPS |= {o + "_" for o in GRAD_OPS if o + "_" in OTHER or o in BINARY or o in UNARY}


# ---- makers: one random case per call ------------------------------------------
def m_binary(g, op):
    s = g.shape()
    a = g.tensor(s, g.dtype())
    b = g.tensor(g.bshape(s), g.dtype())
    r = g.r.random()
    if r < 0.15:  # a 0-d operand (item 3)
        b = g.tensor([], g.dtype())
    elif r < 0.2:
        a = g.tensor([], g.dtype())
    return [rg(a), rg(b)]


def m_unary(g, op):
    return [rg(g.tensor(g.shape(), g.dtype()))]


def m_scalar(g, op):
    s = g.r.choice([0.0, 1.0, 2.0, 0.5, -0.5, -1.0, 3.0, -2.5, math.nan, math.inf, 1e-3])
    return [rg(g.tensor(g.shape(), g.dtype())), s]


def m_clamp(g, op):
    lo = g.r.choice([-math.inf, -1.0, 0.0, 0.5, math.nan])
    hi = g.r.choice([math.inf, 1.0, 0.0, 2.0])
    return [rg(g.tensor(g.shape(), g.dtype())), lo, hi]


def m_lerp(g, op):
    s = g.shape()
    d = g.dtype(FLOATS) if g.r.random() < 0.9 else g.dtype()
    b = g.tensor(g.bshape(s) if op == "lerp" else s, d if g.r.random() < 0.9 else g.dtype())
    w = g.r.choice([0.0, 0.1, 0.34, 0.5, 0.7, 1.0, -0.5, 1.5, 2.0])
    return [rg(g.tensor(s, d)), rg(b), w]


def m_where(g, op):
    s = g.shape()
    c = g.tensor(g.bshape(s), torch.bool if g.r.random() < 0.9 else g.dtype())
    a = g.tensor(s, g.dtype())
    b = g.tensor(g.bshape(s) if g.r.random() < 0.8 else [], g.dtype())
    return [c, rg(a), rg(b)]


def m_addc(g, op):
    s = g.shape()
    d = g.dtype()
    a = g.tensor(s, d)
    t1 = g.tensor(g.bshape(s) if g.r.random() < 0.8 else [], d if g.r.random() < 0.7 else g.dtype())
    t2 = g.tensor(g.bshape(s) if g.r.random() < 0.8 else [], d if g.r.random() < 0.7 else g.dtype())
    v = g.r.choice([1.0, 0.5, -2.0, 0.0, 2.7])
    return [rg(a), rg(t1), rg(t2), v]


def m_inplace_binary(g, op):
    s = g.shape()
    a = g.tensor(s, g.dtype())
    b = g.tensor(g.bshape(s) if g.r.random() < 0.8 else [], g.dtype())
    return [rg(a), rg(b)]


def m_cast(g, op):
    return [rg(g.tensor(g.shape(), g.dtype())), g.dtype()]


def m_copy(g, op):
    s = g.shape()
    return [rg(g.tensor(s, g.dtype())), rg(g.tensor(g.bshape(s), g.dtype()))]


def m_fill(g, op):  # a float target requires grad (cloned: a non-leaf), the value does not
    return [rg(g.tensor(g.shape(), g.dtype())), g.r.choice([0.0, 1.5, -3.0, math.nan, math.inf, 1e20, 2.0 ** 31])]


def m_zero(g, op):
    return [rg(g.tensor(g.shape(), g.dtype()))]


def m_create(g, op):
    return [g.dtype(), g.shape()]


def m_full(g, op):
    return [g.r.choice([0.0, 2.5, -1.0, math.nan, math.inf, 1e20, 2.0 ** 31, 3e38, 1e39]), g.dtype(), g.shape()]


def m_arange(g, op):
    r = g.r
    a = r.choice([0.0, 1.0, -2.5, 0.5, 3.0])
    b = r.choice([5.0, 4.7, -1.0, 0.0, 10.0, 2.2])
    s = r.choice([1.0, 0.5, -1.0, 2.0, 0.3, 1.5, 0.0])
    return [a, b, s, g.dtype([torch.float32, torch.float64, torch.int32, torch.int64])]


def m_from_data(g, op):
    return [g.tensor(g.shape(), g.dtype())]


def m_reduce(g, op):
    s = g.shape()
    a = g.tensor(s, g.dtype())
    axes = dims_of(len(s), g)
    if g.r.random() < 0.08 and s:  # duplicate axes (item 10)
        axes = [0, 0] if g.r.random() < 0.5 else [-1, 0]
    return [rg(a), axes, g.r.random() < 0.4]


def m_arg(g, op):
    s = g.shape(nd=g.r.choice([1, 2, 3]))
    n = len(s)
    return [g.tensor(s, g.dtype()), g.r.randint(-n, n - 1), g.r.random() < 0.4]


def m_softmax(g, op):
    s = g.shape(nd=g.r.choice([1, 2, 3]))
    n = len(s)
    return [rg(g.tensor(s, g.dtype(FLOATS) if g.r.random() < 0.9 else g.dtype())), g.r.randint(-n, n - 1)]


def m_matmul(g, op):
    r = g.r
    k = r.choice([0, 1, 3])
    n, m = r.choice([1, 2]), r.choice([1, 3])
    sa = r.choice([[k], [n, k], [2, n, k], [1, n, k]])
    sb = r.choice([[k], [k, m], [2, k, m], [1, k, m]])
    if r.random() < 0.05:
        sb = [k + 1, m]
    d = g.dtype(FLOATS)
    return [rg(g.tensor(sa, d, special=0.05)), rg(g.tensor(sb, d if r.random() < 0.9 else g.dtype(), special=0.05))]


def m_cat(g, op):
    s = g.shape(nd=g.r.choice([1, 2, 3]))
    n = len(s)
    dim = g.r.randint(-n, n - 1)
    ts = []
    for _ in range(g.r.randint(1, 3)):
        s2 = list(s)
        s2[dim] = g.r.choice([0, 1, 2])
        ts.append(rg(g.tensor(s2, g.dtype() if g.r.random() < 0.3 else torch.float32)))
    return [ts, dim]


def m_plain(g, op):
    return [rg(g.tensor(g.shape(), g.dtype()))]


def m_view(g, op):
    s = g.shape()
    n = 1
    for d in s:
        n *= d
    opts = [[n], [-1], [1, n], [n, 1], list(reversed(s)) if s else [], [n + 1] if n else [2]]
    a = g.tensor(s, g.dtype())
    return [rg(a), g.r.choice(opts)]


def m_flatten(g, op):
    s = g.shape()
    n = max(len(s), 1)
    return [rg(g.tensor(s, g.dtype())), g.r.randint(-n, n - 1), g.r.randint(-n, n - 1)]


def m_transpose(g, op):
    s = g.shape(nd=g.r.choice([1, 2, 3]))
    n = len(s)
    return [rg(g.tensor(s, g.dtype())), g.r.randint(-n, n - 1), g.r.randint(-n, n - 1)]


def m_t(g, op):
    return [rg(g.tensor(g.shape(nd=g.r.choice([0, 1, 2, 2, 3])), g.dtype()))]


def m_permute(g, op):
    s = g.shape()
    p = list(range(len(s)))
    g.r.shuffle(p)
    if g.r.random() < 0.1 and p:
        p[0] = p[-1]
    return [rg(g.tensor(s, g.dtype())), p]


def m_slice(g, op):
    s = g.shape(nd=g.r.choice([1, 2, 3]))
    n = len(s)
    r = g.r
    return [rg(g.tensor(s, g.dtype())), r.randint(-n, n - 1), r.randint(-4, 4), r.randint(-4, 5), r.choice([1, 1, 2, 3])]


def m_narrow(g, op):
    s = g.shape(nd=g.r.choice([1, 2, 3]))
    n = len(s)
    return [rg(g.tensor(s, g.dtype())), g.r.randint(-n, n - 1), g.r.randint(-2, 3), g.r.randint(0, 3)]


def m_select(g, op):
    s = g.shape(nd=g.r.choice([1, 2, 3]))
    n = len(s)
    return [rg(g.tensor(s, g.dtype())), g.r.randint(-n, n - 1), g.r.randint(-3, 3)]


def m_expand(g, op):
    s = [g.r.choice([1, 1, 2]) for _ in range(g.r.randint(0, 3))]
    tgt = [d if d != 1 else g.r.choice([1, 3, 0, -1]) for d in s]
    if g.r.random() < 0.5:
        tgt = [2] + tgt
    return [rg(g.tensor(s, g.dtype())), tgt]


def m_unsqueeze(g, op):
    s = g.shape()
    n = len(s) + 1
    return [rg(g.tensor(s, g.dtype())), g.r.randint(-n, n - 1)]


def m_squeeze(g, op):
    s = g.shape()
    n = max(len(s), 1)
    return [rg(g.tensor(s, g.dtype())), g.r.randint(-n, n - 1)]


def m_diagonal(g, op):
    s = g.shape(nd=g.r.choice([2, 2, 3]))
    n = len(s)
    return [rg(g.tensor(s, g.dtype())), g.r.randint(-2, 2), g.r.randint(-n, n - 1), g.r.randint(-n, n - 1)]


def m_as_strided(g, op):
    s = [g.r.choice([2, 3, 4]) for _ in range(2)]
    n = s[0] * s[1]
    shp = [g.r.choice([1, 2]), g.r.choice([1, 2])]
    st = [g.r.choice([0, 1, 2]), g.r.choice([0, 1])]
    off = g.r.randint(0, 2)
    return [rg(g.tensor(s, g.dtype())), shp, st, off]


def m_conv(g, op):
    r = g.r
    N, C, H, W = r.choice([1, 2]), r.choice([1, 2, 4]), r.choice([3, 4, 5]), r.choice([3, 4])
    groups = r.choice([1, 1, 2]) if C % 2 == 0 else 1
    O = r.choice([1, 2, 4]) * groups
    kh, kw = r.choice([1, 2, 3]), r.choice([1, 3])
    d = g.dtype(FLOATS)
    x = g.tensor([N, C, H, W], d, special=0.02)
    w = g.tensor([O, C // groups, kh, kw], d, special=0.0)
    if r.random() < 0.2:  # a non-finite weight meets the padding in the forward
        w.view(-1)[r.randrange(w.numel())] = r.choice([math.inf, -math.inf, math.nan])
    b = g.tensor([O], d, special=0.0) if r.random() < 0.6 else None
    st = [r.choice([1, 2]), r.choice([1, 2])]
    pd = [r.choice([0, 1]), r.choice([0, 1])]
    dl = [r.choice([1, 2]), 1]
    return [rg(x), rg(w), rg(b) if b is not None else None, st, pd, dl, groups]


def m_pool(g, op):
    r = g.r
    nd = 4 if r.random() < 0.8 else 3
    s = [r.choice([1, 2]), r.choice([1, 2]), r.choice([2, 3, 4, 5]), r.choice([2, 3, 4])][4 - nd:]
    d = g.dtype(FLOATS)
    x = g.tensor(s, d, special=0.2)
    k = [r.choice([1, 2, 3]), r.choice([1, 2])]
    st = [r.choice([1, 2]), r.choice([1, 2])]
    p = [r.choice([0, 1]) if k[0] > 1 else 0, r.choice([0, 1]) if k[1] > 1 else 0]
    return [rg(x), k, st, p]


def m_adaptive(g, op):
    r = g.r
    nd = 4 if r.random() < 0.8 else 3
    s = [r.choice([1, 2]), r.choice([1, 2]), r.choice([1, 3, 4, 5]), r.choice([2, 3, 4])][4 - nd:]
    return [rg(g.tensor(s, g.dtype(FLOATS), special=0.05)), [r.choice([1, 2, 3]), r.choice([1, 2])]]


def m_bn(g, op):
    r = g.r
    N, C = r.choice([1, 2, 4]), r.choice([1, 3])
    s = [N, C] + [r.choice([1, 2, 3]) for _ in range(r.choice([0, 2]))]
    d = g.dtype(FLOATS)
    x = g.tensor(s, d, special=0.0)
    w = g.tensor([C], d, special=0.0) if r.random() < 0.7 else None
    b = g.tensor([C], d, special=0.0) if r.random() < 0.7 else None
    track = r.random() < 0.7
    rm = g.tensor([C], d, special=0.0) if track else None
    rv = (g.tensor([C], d, special=0.0).abs() + 0.5) if track else None
    tr = r.random() < 0.6
    return [rg(x), rg(w) if w is not None else None, rg(b) if b is not None else None, rm, rv, tr,
            r.choice([0.1, 0.5]), r.choice([1e-5, 1e-3])]


def m_linear(g, op):
    r = g.r
    k, o = r.choice([0, 1, 3]), r.choice([0, 1, 2])
    sx = r.choice([[k], [2, k], [2, 3, k], [0, k]])
    d = g.dtype(FLOATS)
    x = g.tensor(sx, d, special=0.05)
    w = g.tensor([o, k], d, special=0.0)
    b = g.tensor([o], d, special=0.0) if r.random() < 0.6 else None
    return [rg(x), rg(w), rg(b) if b is not None else None]


def m_dropout(g, op):
    p, tr = g.r.choice([(0.0, True), (0.5, False), (1.0, True), (0.0, False)])
    return [rg(g.tensor(g.shape(), g.dtype(FLOATS))), p, tr]


def targets(g, N, C, bad=0.1):
    t = torch.randint(0, max(C, 1), (N,), generator=g.g)
    for i in range(N):
        if g.r.random() < bad:
            t[i] = g.r.choice([-1, C, C + 3])
    return t


def m_nll(g, op):
    r = g.r
    N, C = r.choice([1, 2, 4]), r.choice([1, 3, 5])
    one = r.random() < 0.15
    x = g.tensor([C] if one else [N, C], g.dtype(FLOATS), special=0.03)
    t = targets(g, 1 if one else N, C)
    if one:
        t = t.reshape([])
    if r.random() < 0.1:
        t = t.to(torch.int32)
    a = [rg(x), t]
    if op == "cross_entropy":
        a.append(r.choice([0.0, 0.0, 0.1]))
    return a


def m_mse(g, op):
    s = g.shape()
    a = g.tensor(s, g.dtype(FLOATS), special=0.05)
    b = g.tensor(s if g.r.random() < 0.7 else g.bshape(s), g.dtype(FLOATS), special=0.05)
    return [rg(a), rg(b)]


def m_gather(g, op):
    r = g.r
    s = g.shape(nd=r.choice([1, 2, 3]), empty=0.03)
    n = len(s)
    dim = r.randint(-n, n - 1)
    si = [r.randint(1, d) if d else 0 for d in s]
    si[dim] = r.choice([1, 2, 3])
    lim = s[dim]
    idx = torch.randint(0, max(lim, 1), si, generator=g.g)
    if r.random() < 0.2 and idx.numel():
        idx.view(-1)[r.randrange(idx.numel())] = r.choice([lim, -1, lim + 5])
    if r.random() < 0.2:
        idx = idx.to(torch.int32)
    return [rg(g.tensor(s, g.dtype())), dim, idx]


def m_index_select(g, op):
    r = g.r
    s = g.shape(nd=r.choice([1, 2, 3]), empty=0.03)
    n = len(s)
    dim = r.randint(-n, n - 1)
    lim = s[dim]
    idx = torch.randint(0, max(lim, 1), (r.choice([0, 1, 3]),), generator=g.g)
    if r.random() < 0.2 and idx.numel():
        idx[r.randrange(idx.numel())] = r.choice([lim, -1, lim + 5])
    if r.random() < 0.2:
        idx = idx.to(torch.int32)
    return [rg(g.tensor(s, g.dtype())), dim, idx]


def m_embedding(g, op):
    r = g.r
    V, D = r.choice([1, 3, 5]), r.choice([1, 2])
    idx = torch.randint(0, V, g.shape(nd=r.choice([0, 1, 2]), empty=0.03), generator=g.g)
    if r.random() < 0.2 and idx.numel():
        idx.view(-1)[r.randrange(idx.numel())] = r.choice([V, -1, V + 5])
    if r.random() < 0.2:
        idx = idx.to(torch.int32)
    return [rg(g.tensor([V, D], g.dtype(FLOATS))), idx]


def m_gelu(g, op):
    return [rg(g.tensor(g.shape(), g.dtype(FLOATS) if g.r.random() < 0.9 else g.dtype())), g.r.random() < 0.5]


def m_layer_norm(g, op):
    r = g.r
    s = [r.choice([1, 2, 3]) for _ in range(r.choice([1, 2, 3]))]
    n = r.randint(1, len(s))
    d = g.dtype(FLOATS)
    ns = s[len(s) - n:]
    w = g.tensor(ns, d, special=0.0) if r.random() < 0.7 else None
    b = g.tensor(ns, d, special=0.0) if r.random() < 0.7 else None
    return [rg(g.tensor(s, d, special=0.03)), n, rg(w) if w is not None else None, rg(b) if b is not None else None,
            r.choice([1e-5, 1e-3])]


def m_sdpa(g, op):
    r = g.r
    s = [r.choice([1, 2])] * r.choice([0, 1]) + [r.choice([1, 2, 3]), r.choice([1, 2, 4])]
    d = g.dtype(FLOATS)
    return [rg(g.tensor(s, d, special=0.0)), rg(g.tensor(s, d, special=0.0)), rg(g.tensor(s, d, special=0.0)),
            r.random() < 0.5, 0.0, r.choice([0.0, 0.5])]


MAKERS = {}
for o in BINARY:
    MAKERS[o] = m_binary
for o in ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]:
    MAKERS[o + "_"] = m_inplace_binary
for o in UNARY:
    MAKERS[o] = MAKERS[o + "_"] = m_unary
for o in ["add_scalar", "mul_scalar", "pow_scalar"]:
    MAKERS[o] = MAKERS[o + "_"] = m_scalar
MAKERS.update({
    "clamp": m_clamp, "clamp_": m_clamp, "to_dtype": m_cast, "lerp": m_lerp, "lerp_": m_lerp, "where": m_where,
    "addcmul": m_addc, "addcmul_": m_addc, "addcdiv": m_addc, "addcdiv_": m_addc, "copy_": m_copy,
    "fill_": m_fill, "zero_": m_zero, "zeros": m_create, "ones": m_create, "full": m_full, "randn": m_create,
    "rand": m_create, "arange": m_arange, "from_data": m_from_data, "sum": m_reduce, "mean": m_reduce,
    "max": m_reduce, "min": m_reduce, "argmax": m_arg, "argmin": m_arg, "softmax": m_softmax,
    "log_softmax": m_softmax, "matmul": m_matmul, "cat": m_cat, "clone": m_plain, "contiguous": m_plain,
    "detach": m_plain, "view": m_view, "reshape": m_view, "flatten": m_flatten, "transpose": m_transpose,
    "t": m_t, "permute": m_permute, "slice": m_slice, "narrow": m_narrow, "select": m_select,
    "expand": m_expand, "unsqueeze": m_unsqueeze, "squeeze": m_squeeze, "diagonal": m_diagonal,
    "as_strided": m_as_strided, "conv2d": m_conv, "max_pool2d": m_pool, "avg_pool2d": m_pool,
    "adaptive_avg_pool2d": m_adaptive, "batch_norm": m_bn, "linear": m_linear, "dropout": m_dropout,
    "nll_loss": m_nll, "cross_entropy": m_nll, "mse_loss": m_mse, "gather": m_gather,
    "index_select": m_index_select, "embedding": m_embedding, "gelu": m_gelu, "layer_norm": m_layer_norm,
    "scaled_dot_product_attention": m_sdpa,
})
NOVALUES = {"randn", "rand"}


# ---- directed cases, one group per item of issue 17 ---------------------------------
def T(vals, dt, shape=None):
    t = torch.tensor(vals, dtype=dt)
    return t.reshape(shape) if shape is not None else t


def directed():
    f32, f64, i32, i64, b = torch.float32, torch.float64, torch.int32, torch.int64, torch.bool
    inf, nan = math.inf, math.nan
    c = []
    # 1. max_pool2d: NaN in a window, all-NaN, all -inf (f32 and f64)
    for d in FLOATS:
        x = T([nan, 1.0, 2.0, 3.0, nan, nan, nan, nan, -inf, -inf, -inf, -inf, 5.0, -inf, 1.0, nan], d, [1, 1, 4, 4])
        c.append(("max_pool2d", [RG(x), [2, 2], [2, 2], [0, 0]], T([inf, -inf, nan, 1.0], d, [1, 1, 2, 2])))
    # 2. masked backward with inf/NaN upstream gradients
    x = T([-1.0, 0.5, 2.0, -0.0, 3.0], f32)
    g = T([inf, nan, inf, -inf, nan], f32)
    c.append(("relu", [RG(x)], g))
    c.append(("abs", [RG(x)], g))
    c.append(("clamp", [RG(x), 0.0, 1.0], g))
    c.append(("maximum", [RG(x), RG(T([0.0] * 5, f32))], g))
    c.append(("minimum", [RG(x), RG(T([0.0] * 5, f32))], g))
    # 3. 0-d tensors raise the category, never the width
    c.append(("add", [T([1], i32), T(2, i64)], None))
    c.append(("mul", [RG(T([1.5, 2.0], f32)), RG(T(3.0, f64))], None))
    c.append(("sub", [T([1, 2], i32), T(2.5, f64)], None))
    c.append(("pow", [RG(T([1.5, 2.0], f32)), RG(T(2.0, f64))], None))
    c.append(("maximum", [T([1, 2], b), T(1, i64)], None))
    c.append(("minimum", [T(1.5, f64), T([1, 2], i32)], None))
    c.append(("where", [T([True, False], b), T([1, 2], i32), T(7, i64)], None))
    c.append(("addcdiv", [RG(T([1.0, 2.0], f32)), RG(T(2.0, f64)), RG(T([4.0, 8.0], f32)), 0.5], None))
    c.append(("add", [T(1, i32), T(2.5, f64)], None))
    # 4. addcmul on integers
    c.append(("addcmul", [T([1, 2, 3], i64), T([2, 3, 4], i64), T([1, 1, 2], i64), 2.7], None))
    c.append(("addcmul_", [T([1, 2, 3], i32), T([2, 3, 4], i32), T([1, 1, 2], i32), -1.5], None))
    # 5. lerp with w < 0.5, negative included
    c.append(("lerp", [RG(T([0.34, 1.0], f32)), RG(T([-inf, 2.0], f32)), -0.5], None))
    c.append(("lerp", [RG(T([0.34, inf], f64)), RG(T([-inf, 2.0], f64)), 0.25], None))
    # 6. pow with 0.5 / -0.5 as sqrt / rsqrt
    x = T([-inf, -0.0, 0.0, 4.0, inf, -1.0], f32)
    c.append(("pow_scalar", [RG(x), 0.5], None))
    c.append(("pow_scalar", [RG(x), -0.5], None))
    # 7. arange with an integer dtype and fractional arguments
    c.append(("arange", [0.0, 5.0, 1.5, i64], None))
    c.append(("arange", [0.5, 4.0, 1.0, i32], None))
    c.append(("arange", [0.0, 3.0, 0.5, i64], None))
    c.append(("arange", [-2.5, 2.0, 0.7, i32], None))
    # 8. linear backward with zero-size inner or output dims
    c.append(("linear", [RG(T([[]] * 2, f32)), RG(T([[]] * 3, f32)), RG(T([0.0, 1.0, 2.0], f32))], None))
    c.append(("linear", [RG(T([[1.0, 2.0]], f32)), RG(torch.zeros(0, 2)), None], None))
    # 9. out-of-range indices and targets
    c.append(("gather", [RG(T([1.0, 2.0, 3.0], f32)), 0, T([0, 3], i64)], None))
    c.append(("gather", [RG(T([1.0, 2.0, 3.0], f32)), 0, T([-1], i64)], None))
    c.append(("index_select", [RG(T([[1.0, 2.0], [3.0, 4.0]], f32)), 1, T([2], i64)], None))
    c.append(("embedding", [RG(T([[1.0], [2.0]], f32)), T([0, 2], i64)], None))
    c.append(("embedding", [RG(T([[1.0], [2.0]], f32)), T([-1], i64)], None))
    c.append(("nll_loss", [RG(T([[-1.0, -2.0]], f32)), T([2], i64)], None))
    c.append(("nll_loss", [RG(T([[-1.0, -2.0], [-0.5, -0.1]], f32)), T([1, -1], i64)], None))
    c.append(("nll_loss", [RG(T([[-1.0, -2.0], [-0.5, -0.1]], f32)), T([1, -100], i64)], None))
    c.append(("cross_entropy", [RG(T([[1.0, 2.0]], f32)), T([5], i64), 0.0], None))
    c.append(("cross_entropy", [RG(T([[1.0, 2.0], [0.0, 1.0]], f32)), T([-100, 1], i64), 0.1], None))
    # 10. calls PyTorch refuses
    c.append(("full", [1e20, i32, [2]], None))
    c.append(("full", [nan, i64, [1]], None))
    c.append(("full", [2.0 ** 31, i32, [1]], None))
    c.append(("full", [-(2.0 ** 31), i32, [1]], None))
    c.append(("full", [1e39, f32, [1]], None))
    c.append(("full", [2.0, b, [1]], None))
    c.append(("fill_", [T([1, 2], i32), 1e20], None))
    c.append(("sub", [T([True], b), T([1], i64)], None))
    c.append(("abs", [T([True, False], b)], None))
    c.append(("relu", [T([True, False], b)], None))
    c.append(("pow", [T([True, False], b), T([True, True], b)], None))
    c.append(("pow_scalar", [T([True, False], b), 2.0], None))
    c.append(("sum", [RG(T([1.0, 2.0], f32)), [0, 0], False], None))
    c.append(("sum", [RG(T([1.0, 2.0], f32)), [-1, 0], False], None))
    c.append(("max", [RG(T([1.0, 2.0], f32)), [0, -1], True], None))
    c.append(("flatten", [RG(torch.zeros(2, 3, 4)), 2, 1], None))
    c.append(("batch_norm", [RG(torch.ones(2, 3)), None, None, None, None, False, 0.1, 1e-5], None))
    # 11. in-place ops through aliases (PyTorch's memory-overlap rules): an
    # input that partly overlaps the written-to tensor raises; the same window,
    # disjoint windows and windows that are not dense run.
    a = torch.arange(9.0).reshape(3, 3)
    v = torch.arange(6.0)
    x1, x0 = ["slice", 0, 1, 6], ["slice", 0, 0, 5]  # x[1:], x[:-1]
    c.append(("add_", [a, Alias(0, ["same"])], None))
    c.append(("sub_", [a, Alias(0, ["t"])], None))
    c.append(("mul_", [a, Alias(0, ["slice", 0, 0, 1])], None))  # a row of the target, broadcast
    c.append(("add_", [Alias(2, x1), Alias(2, x0), Base(v)], None))
    c.append(("add_", [Alias(1, ["view", [1, 6]]), v], None))  # the same range, other strides
    c.append(("add_", [Alias(2, ["slice", 0, 0, 6, 2]), Alias(2, ["slice", 0, 1, 4]), Base(v)], None))  # not dense
    c.append(("add_", [Alias(2, ["slice", 0, 1, 2]), Alias(2, ["slice", 0, 0, 1]), Base(v)], None))  # disjoint
    c.append(("pow_", [Alias(2, x1), Alias(2, x0), Base(v + 1)], None))
    c.append(("maximum_", [Alias(2, x1), Alias(2, x0), Base(v)], None))
    c.append(("lerp_", [Alias(3, x0), Alias(3, x1), 0.5, Base(v)], None))
    c.append(("addcmul_", [Alias(4, x1), torch.ones(5), Alias(4, x0), 2.0, Base(v)], None))
    c.append(("addcdiv_", [Alias(4, x1), Alias(4, x0), torch.ones(5), 2.0, Base(v)], None))
    c.append(("copy_", [Alias(2, ["slice", 0, 0, 4]), Alias(2, ["slice", 0, 2, 6]), Base(v)], None))
    c.append(("copy_", [Alias(2, ["slice", 0, 0, 3]), Alias(2, ["slice", 0, 3, 6]), Base(v)], None))
    c.append(("copy_", [Alias(2, ["slice", 0, 0, 3]), Alias(2, ["slice", 0, 0, 3]), Base(v)], None))
    # ... and a written-to tensor whose own elements meet: a zero stride on a
    # dim of size > 1 is refused (fill_ / zero_ / copy_ of itself excepted),
    # elements that meet otherwise (as_strided only) are written
    zs, th = ["strided", [3], [0], 1], ["strided", [2, 2], [1, 1], 0]
    for tgt in [zs, th, ["strided", [2, 3], [2, 1], 0], ["strided", [1, 3], [0, 1], 2]]:
        shp = tgt[1]
        c.append(("add_", [Alias(2, tgt), torch.ones(shp), Base(v)], None))
        c.append(("add_scalar_", [Alias(2, tgt), 1.5, Base(v)], None))
        c.append(("neg_", [Alias(1, tgt), Base(v)], None))
        c.append(("lerp_", [Alias(3, tgt), torch.ones(shp), 0.25, Base(v)], None))
        c.append(("copy_", [Alias(2, tgt), torch.arange(float(math.prod(shp))).reshape(shp), Base(v)], None))
        c.append(("copy_", [Alias(2, tgt), Alias(2, tgt), Base(v)], None))
        c.append(("fill_", [Alias(2, tgt), 2.5, Base(v)], None))
        c.append(("zero_", [Alias(1, tgt), Base(v)], None))
    c.append(("add_", [Alias(2, th), Alias(2, ["slice", 0, 0, 2]), Base(v)], None))  # dst TOO_HARD: no partial check
    # 12. what PyTorch accepts
    c.append(("index_select", [RG(T([[1.0, 2.0], [3.0, 4.0]], f32)), 0, T([1, 0, 1], i32)], None))
    c.append(("embedding", [RG(T([[1.0], [2.0]], f32)), T([[1, 0]], i32)], None))
    c.append(("gather", [RG(T([[1.0, 2.0], [3.0, 4.0]], f32)), 1, T([[1, 0], [0, 0]], i32)], None))
    c.append(("max_pool2d", [RG(torch.arange(18.0).reshape(2, 3, 3)), [2, 2], [1, 1], [0, 0]], None))
    c.append(("avg_pool2d", [RG(torch.arange(18.0).reshape(2, 3, 3)), [2, 2], [1, 1], [1, 1]], None))
    c.append(("nll_loss", [RG(T([-1.0, -2.0, -0.5], f32)), T(1, i64)], None))
    c.append(("cross_entropy", [RG(T([1.0, 2.0, 0.5], f64)), T(2, i64), 0.0], None))
    c.append(("mse_loss", [RG(T([[1.0, 2.0]], f32)), RG(T([0.5], f64))], None))
    c.append(("mse_loss", [RG(T([[1.0], [2.0]], f32)), RG(T([0.5, 3.0], f32))], None))
    # copy_ / fill_ / zero_ of a value without grad into a non-leaf that
    # requires grad: the result still requires grad, the overwritten value
    # gets a zero gradient (copy_ from a value with grad passes it on)
    c.append(("copy_", [RG(T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], f32)), T([7.0, 8.0, 9.0], f32)], None))
    c.append(("copy_", [RG(T([1.5, -2.0], f64)), T([3, 4], i64)], None))
    c.append(("copy_", [RG(T([1.5, -2.0], f64)), RG(T([3.0, 4.0], f32))], None))
    c.append(("fill_", [RG(T([[1.0, 2.0], [3.0, 4.0]], f32)), 1.5], None))
    c.append(("zero_", [RG(T([1.0, inf, nan], f64))], None))
    # index_select / gather with 0-d operands: PyTorch counts a 0-d tensor as [1]
    c.append(("index_select", [RG(T(5.0, f32)), 0, T(0, i64)], None))
    c.append(("index_select", [RG(T(5.0, f64)), -1, T([0], i32)], None))
    c.append(("index_select", [RG(T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], f32)), 1, T(2, i64)], None))
    c.append(("index_select", [RG(T(5.0, f32)), 0, T([1], i64)], None))
    c.append(("gather", [RG(T(5.0, f32)), 0, T(0, i64)], None))
    c.append(("gather", [RG(T(5.0, f32)), -1, T([0, 0], i64)], None))
    c.append(("gather", [RG(T([1.0, 2.0, 3.0], f64)), 0, T(2, i64)], None))
    c.append(("gather", [RG(T(5.0, f32)), 0, T([1], i64)], None))
    c.append(("gather", [RG(T(5.0, f32)), 1, T(0, i64)], None))
    # Found by seeds 1-8 at --per-op 30 after the above: narrow's start on a
    # dim of size 0 wraps as a dim index (-1 and 0 are valid); pow's base
    # gradient with an integer exponent stays in the base's dtype (b - 1 is
    # integer); a non-finite g meets the padding in conv2d's weight gradient
    # (3x3 taps, padding 1: NaN where a tap reads padding, inf elsewhere)
    c.append(("narrow", [RG(torch.zeros(2, 0, dtype=f64)), 1, -1, 0], None))
    c.append(("narrow", [RG(torch.zeros(0)), 0, -1, 0], None))
    c.append(("narrow", [RG(torch.zeros(0)), 0, 1, 0], None))
    c.append(("pow", [RG(T(-1.895743481, f64)), T([4], i64)], None))
    c.append(("pow", [RG(T([1.5, -2.25], f32)), T([3, 0], i32)], None))
    g = torch.ones(1, 2, 3, 3)
    g[0, 0, 0, 0], g[0, 1, 1, 2] = inf, nan
    c.append(("conv2d", [RG(torch.ones(1, 1, 3, 3)), RG(torch.ones(2, 1, 3, 3)), None, [1, 1], [1, 1], [1, 1], 1], g))
    # ... and where oneDNN's direct kernels leave padding taps out (seed 11:
    # two images, a 2x3 kernel, stride (1, 2)), and an inf weight in the forward
    g = torch.ones(2, 2, 4, 2)
    g[0, 1, 2, 1], g[1, 0, 0, 0] = nan, -inf
    x = torch.arange(18.0).reshape(2, 1, 3, 3) / 7 - 1
    c.append(("conv2d", [RG(x), RG(torch.ones(2, 1, 2, 3)), RG(T([0.5, -1.0], f32)), [1, 2], [1, 1], [1, 1], 1], g))
    w = torch.ones(2, 2, 3, 3)
    w[0, 1, 0, 2], w[1, 0, 2, 1] = inf, nan
    for d in FLOATS:
        c.append(("conv2d", [RG(torch.ones(2, 2, 4, 4, dtype=d)), RG(w.to(d)), None, [1, 1], [1, 1], [1, 1], 1], None))
    # Value mismatches the random cases found after items 1-12 (seeds 1-6):
    # matmul checks dtypes only where it multiplies (an empty operand: mixed
    # or bool dtypes accepted, the result takes one operand's dtype)
    c.append(("matmul", [RG(torch.ones(2, 0)), RG(torch.ones(0, 3, dtype=f64))], None))
    c.append(("matmul", [RG(torch.ones(2, 0, dtype=f64)), torch.ones(0, dtype=i64)], None))
    c.append(("matmul", [torch.ones(0, 3, dtype=i32), RG(torch.ones(3, 2))], None))
    c.append(("matmul", [RG(torch.ones(2, 1, 0)), torch.ones(2, 0, 3, dtype=b)], None))
    c.append(("matmul", [torch.ones(2, 0, dtype=b), torch.ones(0, 3, dtype=b)], None))
    c.append(("matmul", [RG(torch.ones(0)), RG(torch.ones(0, dtype=f64))], None))
    c.append(("matmul", [RG(torch.ones(2, 3)), RG(torch.ones(3, 1, dtype=f64))], None))
    # softmax of an integer or bool tensor: only an empty one is answered
    c.append(("softmax", [torch.ones(2, 0, dtype=i32), 0], None))
    c.append(("log_softmax", [torch.ones(0, dtype=b), -1], None))
    c.append(("softmax", [torch.ones(2, 1, dtype=b), 1], None))
    c.append(("log_softmax", [torch.ones(3, dtype=i64), 0], None))
    # gather with an empty index: any dtype and dims (only dim is checked)
    c.append(("gather", [RG(torch.ones(3, 2)), 1, torch.zeros(2, 0, dtype=i32)], None))
    c.append(("gather", [RG(torch.ones(3, 2)), 0, torch.zeros(0)], None))
    c.append(("gather", [RG(torch.ones(3, 2, 2)), -1, torch.zeros(0, dtype=i64)], None))
    c.append(("gather", [RG(torch.ones(3)), 1, torch.zeros(0, dtype=i64)], None))
    c.append(("gather", [RG(torch.ones(3, 2)), 0, T([[1, 0]], i32)], None))
    # pow's gradients where the base is 0 or the exponent 0, inf upstream gradients
    x = T([0.0, 0.0, 0.0, 2.0, -0.0, 0.0, 0.0], f32)
    e = T([2.0, 0.0, -1.0, 0.0, 3.0, 0.5, 1.0], f32)
    c.append(("pow", [RG(x), RG(e)], T([1.0, inf, 1.0, inf, inf, inf, inf], f32)))
    c.append(("pow", [RG(x), RG(e)], T([1.0] * 7, f32)))
    c.append(("pow_scalar", [RG(x), 0.5], T([inf, 1.0, inf, 1.0, nan, 2.0, 1.0], f32)))
    # to_dtype: a NaN or out-of-range float gives the integer type's minimum on x86
    big = [nan, inf, -inf, 1e30, -1e30, 3e9, -3e9, 2.0 ** 31, -(2.0 ** 31) - 1, 2.0 ** 63, -(2.0 ** 63), 255.7, -1.5]
    for src in FLOATS:
        for dst in [i32, i64, b]:
            c.append(("to_dtype", [T(big, src), dst], None))
    # dropout with p = 1 multiplies by 0 (inf and NaN give NaN), backward too
    c.append(("dropout", [RG(T([inf, nan, 1.0, -inf, 2.0], f32)), 1.0, True], T([inf, 1.0, nan, 2.0, -inf], f32)))
    # conv2d's weight gradient multiplies g by the zero padding too (a NaN g there gives NaN)
    for d in FLOATS:
        c.append(("conv2d", [RG(torch.ones(1, 1, 2, 2, dtype=d)), RG(torch.ones(1, 1, 1, 1, dtype=d)), None, [1, 1],
                             [1, 1], [1, 1], 1], T([nan] + [1.0] * 15, d)))
    # seeds 13-30: an elementwise op casts every operand to the compute dtype
    # first (addcdiv's gradient (v t1) / (t2 t2), bool t1, float64 0-d t2,
    # divides in float32); cross_entropy's gradient in PyTorch's order (an
    # inf g: inf - inf = NaN at the target; a NaN logit in an ignored row)
    c.append(("addcdiv_", [RG(T([2.3152849554], f64)), T([True], b), RG(T(2.9834104538, f64)), 0.5], None))
    c.append(("div", [RG(T([0.5, 3.0], f32)), RG(T(8.900737, f64))], None))
    for ls in [0.0, 0.1]:
        x = T([[-3.96, -1.19, -1.37], [0.03, 0.14, -1.21], [nan, 1.0, 2.0]], f64)
        c.append(("cross_entropy", [RG(x), T([2, 1, -100], i64), ls], T(-inf, f64)))
        c.append(("cross_entropy", [RG(x.to(f32)), T([0, -100, -100], i64), ls], T(1.5, f32)))
    # clamp's gradient passes where lo <= a <= hi (none when lo > hi)
    c.append(("clamp", [RG(T([0.0, 0.7, 0.2, nan, -1.0], f64)), 0.5, 0.0], None))
    # addcdiv's gradients in PyTorch's order (value times an integer t1 rounds to float32)
    c.append(("addcdiv", [RG(T([3.764012007], f64)), T([2], i64), RG(T([-1.059404623], f64)), 2.7], None))
    # GELU's float gradient: x * x overflows past 1.8e19 (tanh form: NaN)
    for t in [True, False]:
        c.append(("gelu", [RG(T([1e30, -1e30, 2e19, 1e19, 1.0], f32)), t], None))
    # layer norm of a 1-element row: PyTorch's x rstd - mean rstd leaves a rounding residue
    c.append(("layer_norm", [RG(T([[1.0095161]], f32)), 1, RG(T([0.08379294], f32)), None, 1e-5], None))
    # layer norm's input gradient in PyTorch's form a w g + b x + c: an inf g makes its row NaN
    for d in FLOATS:
        c.append(("layer_norm", [RG(T([[-4.1, -0.6, 4.0], [1.0, 2.0, 0.5]], d)), 1, RG(T([-2.5, 0.9, 0.7], d)),
                                 RG(T([-0.8, 3.4, 3.1], d)), 1e-3], T([-1.6, -inf, 0.1, 1.0, 2.0, 3.0], d)))
    # layer norm's moments in the row's type, in PyTorch's order (Welford per
    # lane of 8 floats / 4 doubles, chunks of 16 vectors, a cascade, the tail,
    # then the lanes): where a huge value overflows decides between a row of
    # NaN and a finite one (lengths 3, 16, 40, 300: tail only, one chunk,
    # chunk + tail, a cascade of 3 chunks + tail)
    gl = torch.Generator().manual_seed(17)
    for n, spots, d in [(3, [(1, 1e30)], f32), (16, [(3, 1e20)], f32), (40, [(39, 3e19)], f32), (40, [(5, 3e19)], f32),
                        (300, [(7, 1e25)], f32), (300, [(297, 1e25)], f32), (300, [(100, 1e19), (108, -1e19)], f32),
                        (16, [(3, 1e200)], f64)]:
        x = torch.randn(2, n, generator=gl, dtype=f64).to(d)
        for i, v in spots:
            x[0, i] = v
        c.append(("layer_norm", [RG(x), 1, RG(torch.randn(n, generator=gl, dtype=f64).to(d)), None, 1e-5],
                  torch.randn(2, n, generator=gl, dtype=f64).to(d)))
    # div's divisor gradient in PyTorch's order, -g ((a / b) / b): g / b overflows where a / b is 0
    c.append(("div", [T([2, -2, 0], i64), RG(T(-1e-30, f32))], T([-0.6, 4.5, 1e30], f32)))
    return c


# ---- running a case in PyTorch --------------------------------------------------------
def fmt_num(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


class Writer:
    def __init__(self):
        self.tensors = []
        self.cases = []

    def add(self, name, t):
        self.tensors.append((name, t.detach().contiguous()))
        return name


def order_dependent(op, args):
    """An in-place write through a view whose elements meet without a zero
    stride (PyTorch's TOO_HARD): PyTorch runs it in its own loop order
    (lazytensor: inputs read first, the last row-major write wins), so only
    that it runs, the dtype and the shape are compared; fill_ / zero_ write
    one value and are compared in full."""
    a = args[0] if args else None
    if op in ("fill_", "zero_") or not isinstance(a, Alias) or a.view[0] != "strided":
        return False
    offs = [0]
    for n, st in zip(a.view[1], a.view[2]):
        offs = [o + i * st for o in offs for i in range(n)]
    return len(set(offs)) < len(offs)


def f32_noise(op, call, leaves, out, grads, go):
    """How far PyTorch's own float32 results are from the same call computed
    in float64 (every float32 tensor made float64): per element |f32 - f64|,
    for the output and each gradient, or None where not float32 or not
    finite in both. A case whose float32 answer cancels (a gradient of 1e30
    against 2, a one-element row's layer norm) has no float32 answer to
    match bit by bit: the test accepts what lies within a few times PyTorch's
    own error. None for in-place calls, views and random ops (the float64
    call would not be the same computation)."""
    if op.endswith("_") or op in NOVALUES or op == "dropout":
        return None, []
    twins = {}

    def twin(a):
        if isinstance(a, list):
            return [twin(x) for x in a]
        if not isinstance(a, torch.Tensor):
            return a
        t = a.detach().clone()
        t = t.double() if t.dtype == torch.float32 else t
        if a.requires_grad:
            t.requires_grad_(True)
        twins[id(a)] = t
        return t

    try:
        out64 = torch_call(op, [twin(a) for a in call])
        grads64 = [None] * len(grads)
        if grads:
            ls = [twins[id(t)] for _, (k, t) in leaves.items()]
            grads64 = torch.autograd.grad(out64, ls, go.to(out64.dtype), allow_unused=True)
    except (RuntimeError, IndexError, ValueError, TypeError, KeyError):
        return None, []

    def noise(a, b):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.dtype != torch.float32 \
                or a.shape != b.shape:
            return None
        d = (a.double() - b.detach().double()).abs()
        d = torch.where(torch.isfinite(d), d, torch.zeros_like(d)).float()
        return d if bool((d > 0).any()) else None

    return noise(out.detach(), out64), [noise(a, b) for a, b in zip(grads, grads64)]


def run_case(w, cid, op, args, gout_spec, g):
    """Encodes and runs one case; appends it to w."""
    enc, targs, leaves = [], [], {}

    def encode(a, k, path):
        if isinstance(a, RG) or isinstance(a, torch.Tensor):
            t = a.t if isinstance(a, RG) else a
            req = isinstance(a, RG) and op in GRAD_OPS
            name = w.add(f"{cid}.{path}", t)
            tt = t.clone()
            if req:
                tt.requires_grad_(True)
                leaves[path] = (k, tt)
            return {"t": name, "rg": 1 if req else 0}, tt
        if isinstance(a, list) and a and isinstance(a[0], (RG, torch.Tensor)):
            pairs = [encode(x, k, f"{path}_{j}") for j, x in enumerate(a)]
            return {"ts": [p[0] for p in pairs]}, [p[1] for p in pairs]
        if isinstance(a, Alias):
            return {"alias": a.k, "view": a.view}, a
        if isinstance(a, Base):
            return {"t": w.add(f"{cid}.{path}", a.t), "rg": 0}, a.t.clone()
        if isinstance(a, torch.dtype):
            return {"dtype": DT[a]}, a
        if isinstance(a, float):
            return fmt_num(a), a
        return a, a

    for k, a in enumerate(args):
        e, t = encode(a, k, f"i{k}")
        enc.append(e)
        targs.append(t)
    clone0 = op.endswith("_") and 0 in [k for k, _ in leaves.values()]

    def view_of(base, v):
        if v[0] == "same":
            return base
        if v[0] == "t":
            return base.t()
        if v[0] == "view":
            return base.view(v[1])
        if v[0] == "strided":
            return base.as_strided(v[1], v[2], v[3])
        return sl(base, v[1], v[2], v[3], v[4] if len(v) > 4 else 1)

    call = []
    for a, t in zip(args, targs):
        if not isinstance(a, Base):
            call.append(view_of(targs[t.k], t.view) if isinstance(t, Alias) else t)
    if clone0:
        call[0] = call[0].clone()
    case = {"op": op, "args": enc, "raise": 0, "out": None, "after": [], "gout": None, "grads": [],
            "clone0": int(clone0), "nov": int(op in NOVALUES or order_dependent(op, args))}
    try:
        out = torch_call(op, call)
    except (RuntimeError, IndexError, ValueError, TypeError) as ex:
        if "INTERNAL ASSERT" in str(ex):  # a PyTorch bug, not a refusal: no case
            w.tensors = [t for t in w.tensors if not t[0].startswith(cid + ".")]
            return None
        case["raise"] = 1
        case["why"] = str(ex).split("\n")[0][:120]
        w.cases.append(case)
        return case
    if op.endswith("_"):
        out = call[0]
    case["out"] = w.add(f"{cid}.out", out)
    grads, go = [], None
    if op == "batch_norm":
        for k in (3, 4):
            if isinstance(targs[k], torch.Tensor):
                case["after"].append([k, w.add(f"{cid}.a{k}", targs[k])])
    if leaves and out.requires_grad and out.dtype in FLOATS:
        if gout_spec is not None:
            go = gout_spec.to(out.dtype).reshape(out.shape)
        else:
            # inf/NaN upstream gradients (item 2), except through the attention
            # written out above: PyTorch's matmul turns 0 * NaN into NaN where a
            # fused kernel never multiplies a masked-out probability
            special = 0.08 if g.r.random() < 0.3 and op != "scaled_dot_product_attention" else 0.0
            go = g.tensor(list(out.shape), out.dtype, special=special)
        try:
            grads = torch.autograd.grad(out, [t for _, t in leaves.values()], go, allow_unused=True)
        except RuntimeError:  # PyTorch's own backward refuses (mse_loss of mixed dtypes): values only
            w.cases.append(case)
            return case
        case["gout"] = w.add(f"{cid}.gout", go)
        grads = [torch.zeros_like(t) if gr is None else gr for (k, t), gr in zip(leaves.values(), grads)]
        for path, gr in zip(leaves, grads):
            case["grads"].append([path, w.add(f"{cid}.g{path}", gr)])
    if not case["nov"] and not any(isinstance(a, Alias) for a in args):
        on, gn = f32_noise(op, call, leaves, out, grads, go)
        if on is not None:
            case["onoise"] = w.add(f"{cid}.on", on)
        case["gnoise"] = [[path, w.add(f"{cid}.n{path}", n)] for path, n in zip(leaves, gn) if n is not None]
    w.cases.append(case)
    return case


def save(path, w):
    header, blobs, off = {}, [], 0
    header["__metadata__"] = {"cases": json.dumps(w.cases, separators=(",", ":"))}
    for name, t in w.tensors:
        raw = t.numpy().tobytes()
        header[name] = {"dtype": DT[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    print(f"{path}: {len(w.cases)} cases, {8 + len(h) + off} bytes")


def native(op):
    """conv2d runs (forward and backward) on PyTorch's native kernel, im2col
    then a GEMM: where inf or NaN meets a padding tap, its oneDNN path gives
    NaN in some of oneDNN's kernels and leaves the tap out in others (by
    shape and ISA), so only the native path is one rule, the same on every
    machine. lazytensor follows it (ref_nn_conv.c)."""
    return torch.backends.mkldnn.flags(enabled=op != "conv2d")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--per-op", type=int, default=12)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "op_cases.safetensors"))
    ap.add_argument("--no-directed", action="store_true")
    opt = ap.parse_args()
    warnings.simplefilter("ignore")
    torch.manual_seed(opt.seed)
    g = Gen(opt.seed)
    w = Writer()
    n = 0
    if not opt.no_directed:
        for op, args, gout in directed():
            with native(op):
                run_case(w, f"c{n}", op, args, gout, g)
            n += 1
    for op in sorted(MAKERS):
        for _ in range(opt.per_op):
            with native(op):
                run_case(w, f"c{n}", op, MAKERS[op](g, op), None, g)
            n += 1
    save(os.path.abspath(opt.out), w)


if __name__ == "__main__":
    main()
