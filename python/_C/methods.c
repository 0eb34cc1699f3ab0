/* Tensor methods with PyTorch's names, one lt_ call each. Hot methods
 * (in-place elementwise, lerp_) use METH_FASTCALL. */
#include "ltpy.h"

#define SELF ltpy_h(self)
#define FAST(name) static PyObject *name(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
#define KW(name) static PyObject *name(PyObject *self, PyObject *args, PyObject *kw)

static PyObject *same(PyObject *self, lt_tensor *r) {
    if (!r) return ltpy_raise();
    Py_INCREF(self);
    return self;
}

/* ---- elementwise ---- */
#define UNARY(py, fn)                                                                           \
    static PyObject *m_##py(PyObject *self, PyObject *u) { (void)u; return ltpy_wrap(fn(SELF)); } \
    static PyObject *m_##py##_(PyObject *self, PyObject *u) { (void)u; return same(self, fn##_(SELF)); }
UNARY(neg, lt_neg)
UNARY(exp, lt_exp)
UNARY(log, lt_log)
UNARY(sqrt, lt_sqrt)
UNARY(rsqrt, lt_rsqrt)
UNARY(abs, lt_abs)
UNARY(relu, lt_relu)
UNARY(tanh, lt_tanh)
UNARY(sigmoid, lt_sigmoid)

#define BINARY(py, op)                                                                     \
    static PyObject *m_##py(PyObject *self, PyObject *o) { return ltpy_binary(self, o, op); } \
    static PyObject *m_##py##_(PyObject *self, PyObject *o) {                              \
        PyObject *r = ltpy_inplace(self, o, op);                                           \
        if (r == Py_NotImplemented) {                                                      \
            Py_DECREF(r);                                                                  \
            return PyErr_Format(PyExc_TypeError, #py "_: argument 'other' must be a Tensor or a number, not %.100s", \
                                Py_TYPE(o)->tp_name);                                      \
        }                                                                                  \
        return r;                                                                          \
    }
BINARY(add, '+')
BINARY(sub, '-')
BINARY(mul, '*')
BINARY(div, '/')
BINARY(pow, '^')
BINARY(maximum, 'M')
BINARY(minimum, 'm')

#define COMPARE(py, op) \
    static PyObject *m_##py(PyObject *self, PyObject *o) { return ltpy_binary(self, o, op); }
COMPARE(eq, Py_EQ)
COMPARE(ne, Py_NE)
COMPARE(lt, Py_LT)
COMPARE(le, Py_LE)
COMPARE(gt, Py_GT)
COMPARE(ge, Py_GE)

/* lerp(end, weight) / lerp_: weight is a Python number (a runtime scalar). */
static int lerp_args(const char *fn, PyObject *const *args, Py_ssize_t nargs, lt_tensor **end, double *w) {
    if (nargs != 2) return ltpy_nargs(fn, nargs, 2, 2);
    if (ltpy_tensor_arg(args[0], fn, "end", end)) return -1;
    return ltpy_double_arg(args[1], fn, "weight", w);
}
FAST(m_lerp) {
    lt_tensor *e;
    double w;
    if (lerp_args("lerp", args, nargs, &e, &w)) return NULL;
    return ltpy_wrap(lt_lerp(SELF, e, w));
}
FAST(m_lerp_) {
    lt_tensor *e;
    double w;
    if (lerp_args("lerp_", args, nargs, &e, &w)) return NULL;
    return same(self, lt_lerp_(SELF, e, w));
}

/* addcmul/addcdiv(t1, t2, value=1) */
static int addc_args(const char *fn, PyObject *args, PyObject *kw, lt_tensor **t1, lt_tensor **t2, double *v) {
    static char *kws[] = {"tensor1", "tensor2", "value", NULL};
    PyObject *a, *b, *val = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", kws, &a, &b, &val)) return -1;
    *v = 1;
    if (ltpy_tensor_arg(a, fn, "tensor1", t1) || ltpy_tensor_arg(b, fn, "tensor2", t2)) return -1;
    return val ? ltpy_double_arg(val, fn, "value", v) : 0;
}
#define ADDC(py, fn)                                                                           \
    KW(m_##py) {                                                                               \
        lt_tensor *t1, *t2;                                                                    \
        double v;                                                                              \
        if (addc_args(#py, args, kw, &t1, &t2, &v)) return NULL;                               \
        return ltpy_wrap(fn(SELF, t1, t2, v));                                                 \
    }                                                                                          \
    KW(m_##py##_) {                                                                            \
        lt_tensor *t1, *t2;                                                                    \
        double v;                                                                              \
        if (addc_args(#py "_", args, kw, &t1, &t2, &v)) return NULL;                           \
        return same(self, fn##_(SELF, t1, t2, v));                                             \
    }
ADDC(addcmul, lt_addcmul)
ADDC(addcdiv, lt_addcdiv)

static int clamp_args(const char *fn, PyObject *args, PyObject *kw, double *lo, double *hi) {
    static char *kws[] = {"min", "max", NULL};
    PyObject *a = Py_None, *b = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO", kws, &a, &b)) return -1;
    *lo = -INFINITY, *hi = INFINITY;
    if (a != Py_None && ltpy_double_arg(a, fn, "min", lo)) return -1;
    if (b != Py_None && ltpy_double_arg(b, fn, "max", hi)) return -1;
    return 0;
}
KW(m_clamp) {
    double lo, hi;
    if (clamp_args("clamp", args, kw, &lo, &hi)) return NULL;
    return ltpy_wrap(lt_clamp(SELF, lo, hi));
}
KW(m_clamp_) {
    double lo, hi;
    if (clamp_args("clamp_", args, kw, &lo, &hi)) return NULL;
    return same(self, lt_clamp_(SELF, lo, hi));
}

static PyObject *m_copy_(PyObject *self, PyObject *src) {
    lt_tensor *s;
    if (ltpy_tensor_arg(src, "copy_", "src", &s)) return NULL;
    return same(self, lt_copy_(SELF, s));
}
static PyObject *m_fill_(PyObject *self, PyObject *v) {
    double d;
    if (ltpy_double_arg(v, "fill_", "value", &d)) return NULL;
    return same(self, lt_fill_(SELF, d));
}
static PyObject *m_zero_(PyObject *self, PyObject *u) { (void)u; return same(self, lt_zero_(SELF)); }

/* ---- reductions ---- */
/* dim: None (all), an int or a sequence of ints. */
static int reduce_args(const char *fn, PyObject *args, PyObject *kw, int *dims, int *n, int *keepdim) {
    static char *kws[] = {"dim", "keepdim", NULL};
    PyObject *d = Py_None;
    *keepdim = 0, *n = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op", kws, &d, keepdim)) return -1;
    if (d == Py_None) return 0;
    if (ltpy_dims_arg(d, fn, "dim", dims, n)) return -1;
    return 0; /* dim=() (n = 0) reduces everything, as torch */
}
#define REDUCE(py, fn)                                                   \
    KW(m_##py) {                                                         \
        int dims[LT_MAX_DIMS], n, keep;                                  \
        if (reduce_args(#py, args, kw, dims, &n, &keep)) return NULL;    \
        return ltpy_wrap(fn(SELF, n, dims, keep));                       \
    }
REDUCE(sum, lt_sum)
REDUCE(mean, lt_mean)
REDUCE(amax, lt_max)
REDUCE(amin, lt_min)

/* max()/min(): all elements; max(dim) -> (values, indices) as torch: a
 * named tuple of type lazytensor.return_types.max / .min. */
PyTypeObject *ltpy_minmax_types[2];

static PyObject *minmax(PyObject *self, PyObject *args, PyObject *kw, int is_max) {
    const char *fn = is_max ? "max" : "min";
    if (PyTuple_GET_SIZE(args) == 1 && ltpy_is_tensor(PyTuple_GET_ITEM(args, 0)) && !kw)
        return ltpy_binary(self, PyTuple_GET_ITEM(args, 0), is_max ? 'M' : 'm');
    int dims[LT_MAX_DIMS], n, keep;
    if (reduce_args(fn, args, kw, dims, &n, &keep)) return NULL;
    if (n == 0) return ltpy_wrap(is_max ? lt_max(SELF, 0, NULL, false) : lt_min(SELF, 0, NULL, false));
    if (n != 1) return PyErr_Format(PyExc_TypeError, "%s: argument 'dim' must be one int", fn);
    PyObject *r = PyStructSequence_New(ltpy_minmax_types[is_max]);
    if (!r) return NULL;
    PyObject *v = ltpy_wrap(is_max ? lt_max(SELF, 1, dims, keep) : lt_min(SELF, 1, dims, keep));
    if (!v) goto fail;
    PyStructSequence_SET_ITEM(r, 0, v);
    PyObject *i = ltpy_wrap(is_max ? lt_argmax(SELF, dims[0], keep) : lt_argmin(SELF, dims[0], keep));
    if (!i) goto fail;
    PyStructSequence_SET_ITEM(r, 1, i);
    return r;
fail:
    Py_DECREF(r); /* a structseq's dealloc skips the NULL item */
    return NULL;
}
KW(m_max) { return minmax(self, args, kw, 1); }
KW(m_min) { return minmax(self, args, kw, 0); }

/* argmax(dim=None): None flattens first, as torch. */
static PyObject *argext(PyObject *self, PyObject *args, PyObject *kw, int is_max) {
    static char *kws[] = {"dim", "keepdim", NULL};
    PyObject *d = Py_None;
    int keep = 0, dim = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op", kws, &d, &keep)) return NULL;
    if (d == Py_None) {
        lt_tensor *f = lt_reshape(SELF, 1, (int64_t[]){-1});
        lt_tensor *r = is_max ? lt_argmax(f, 0, false) : lt_argmin(f, 0, false);
        lt_free(f);
        return ltpy_wrap(r);
    }
    if (ltpy_int_arg(d, is_max ? "argmax" : "argmin", "dim", &dim)) return NULL;
    return ltpy_wrap(is_max ? lt_argmax(SELF, dim, keep) : lt_argmin(SELF, dim, keep));
}
KW(m_argmax) { return argext(self, args, kw, 1); }
KW(m_argmin) { return argext(self, args, kw, 0); }

static PyObject *softmax_like(PyObject *self, PyObject *args, PyObject *kw, int log) {
    static char *kws[] = {"dim", NULL};
    int dim;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i", kws, &dim)) return NULL;
    return ltpy_wrap(log ? lt_log_softmax(SELF, dim) : lt_softmax(SELF, dim));
}
KW(m_softmax) { return softmax_like(self, args, kw, 0); }
KW(m_log_softmax) { return softmax_like(self, args, kw, 1); }

/* ---- structure and views ---- */
static PyObject *m_matmul(PyObject *self, PyObject *o) {
    lt_tensor *b;
    if (ltpy_tensor_arg(o, "matmul", "other", &b)) return NULL;
    return ltpy_wrap(lt_matmul(SELF, b));
}
static PyObject *m_clone(PyObject *self, PyObject *u) { (void)u; return ltpy_wrap(lt_clone(SELF)); }
static PyObject *m_contiguous(PyObject *self, PyObject *u) {
    (void)u;
    if (!lt_is_view(SELF)) { /* already contiguous: torch returns self */
        Py_INCREF(self);
        return self;
    }
    return ltpy_wrap(lt_contiguous(SELF));
}
static PyObject *m_detach(PyObject *self, PyObject *u) { (void)u; return ltpy_wrap(lt_detach(SELF)); }

static PyObject *m_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    lt_dtype d;
    if (ltpy_nargs("to", nargs, 1, 1) || ltpy_dtype_arg(args[0], "to", &d)) return NULL;
    if (d == lt_dtype_of(SELF)) { /* torch: same dtype returns self */
        Py_INCREF(self);
        return self;
    }
    return ltpy_wrap(lt_to_dtype(SELF, d));
}
#define CAST(py, dt)                                                    \
    static PyObject *m_##py(PyObject *self, PyObject *u) {              \
        (void)u;                                                        \
        if (lt_dtype_of(SELF) == dt) {                                  \
            Py_INCREF(self);                                            \
            return self;                                                \
        }                                                               \
        return ltpy_wrap(lt_to_dtype(SELF, dt));                        \
    }
CAST(float, LT_F32)
CAST(double, LT_F64)
CAST(int, LT_I32)
CAST(long, LT_I64)
CAST(bool, LT_BOOL)
CAST(bfloat16, LT_BF16)
CAST(byte, LT_U8)

FAST(m_view) {
    int64_t s[LT_MAX_DIMS];
    int n;
    if (ltpy_shape_args(args, nargs, "view", s, &n)) return NULL;
    return ltpy_wrap(lt_view(SELF, n, s));
}
FAST(m_reshape) {
    int64_t s[LT_MAX_DIMS];
    int n;
    if (ltpy_shape_args(args, nargs, "reshape", s, &n)) return NULL;
    return ltpy_wrap(lt_reshape(SELF, n, s));
}
FAST(m_expand) {
    int64_t s[LT_MAX_DIMS];
    int n;
    if (ltpy_shape_args(args, nargs, "expand", s, &n)) return NULL;
    return ltpy_wrap(lt_expand(SELF, n, s));
}
FAST(m_permute) {
    int64_t s[LT_MAX_DIMS];
    int n, d[LT_MAX_DIMS];
    if (ltpy_shape_args(args, nargs, "permute", s, &n)) return NULL;
    for (int i = 0; i < n; i++) d[i] = (int)s[i]; /* the library checks the range */
    for (int i = 0; i < n; i++)
        if (s[i] != d[i]) return PyErr_Format(PyExc_IndexError, "permute: dim %lld is out of range", (long long)s[i]);
    return ltpy_wrap(lt_permute(SELF, n, d));
}
KW(m_flatten) {
    static char *kws[] = {"start_dim", "end_dim", NULL};
    int a = 0, b = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ii", kws, &a, &b)) return NULL;
    return ltpy_wrap(lt_flatten(SELF, a, b));
}
FAST(m_transpose) {
    int a, b;
    if (ltpy_nargs("transpose", nargs, 2, 2) || ltpy_int_arg(args[0], "transpose", "dim0", &a) ||
        ltpy_int_arg(args[1], "transpose", "dim1", &b))
        return NULL;
    return ltpy_wrap(lt_transpose(SELF, a, b));
}
static PyObject *m_t(PyObject *self, PyObject *u) { (void)u; return ltpy_wrap(lt_t(SELF)); }
static PyObject *m_unsqueeze(PyObject *self, PyObject *o) {
    int d;
    if (ltpy_int_arg(o, "unsqueeze", "dim", &d)) return NULL;
    return ltpy_wrap(lt_unsqueeze(SELF, d));
}
/* squeeze(): every size-1 dim, one library squeeze per dim from the last. */
FAST(m_squeeze) {
    int d;
    if (ltpy_nargs("squeeze", nargs, 0, 1)) return NULL;
    if (nargs == 1 && args[0] != Py_None) {
        if (ltpy_int_arg(args[0], "squeeze", "dim", &d)) return NULL;
        return ltpy_wrap(lt_squeeze(SELF, d));
    }
    lt_tensor *cur = NULL;
    int nd = lt_ndim(SELF);
    for (int i = nd - 1; i >= 0; i--) {
        if (lt_shape(SELF)[i] != 1) continue;
        lt_tensor *n = lt_squeeze(cur ? cur : SELF, i);
        lt_free(cur);
        if (!(cur = n)) return ltpy_raise();
    }
    if (!cur) cur = lt_view(SELF, nd, lt_shape(SELF)); /* nothing to squeeze: an alias, as torch */
    return ltpy_wrap(cur);
}
KW(m_diagonal) {
    static char *kws[] = {"offset", "dim1", "dim2", NULL};
    long long off = 0;
    int a = 0, b = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Lii", kws, &off, &a, &b)) return NULL;
    return ltpy_wrap(lt_diagonal(SELF, off, a, b));
}
FAST(m_narrow) {
    int d;
    int64_t s, l;
    if (ltpy_nargs("narrow", nargs, 3, 3) || ltpy_int_arg(args[0], "narrow", "dim", &d) ||
        ltpy_int64_arg(args[1], "narrow", "start", &s) || ltpy_int64_arg(args[2], "narrow", "length", &l))
        return NULL;
    lt_tensor *r = lt_narrow(SELF, d, s, l);
    return r ? ltpy_wrap(r) : ltpy_raise_index();
}
FAST(m_select) {
    int d;
    int64_t i;
    if (ltpy_nargs("select", nargs, 2, 2) || ltpy_int_arg(args[0], "select", "dim", &d) ||
        ltpy_int64_arg(args[1], "select", "index", &i))
        return NULL;
    lt_tensor *r = lt_select(SELF, d, i);
    return r ? ltpy_wrap(r) : ltpy_raise_index();
}
KW(m_as_strided) {
    static char *kws[] = {"size", "stride", "storage_offset", NULL};
    PyObject *sz, *st;
    long long off = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|L", kws, &sz, &st, &off)) return NULL;
    int64_t s[LT_MAX_DIMS], t[LT_MAX_DIMS];
    int n, m;
    if (ltpy_shape_args(&sz, 1, "as_strided", s, &n) || ltpy_shape_args(&st, 1, "as_strided", t, &m)) return NULL;
    if (n != m) return PyErr_Format(PyExc_ValueError, "as_strided: %d sizes but %d strides", n, m);
    return ltpy_wrap(lt_as_strided(SELF, n, s, t, off));
}

/* ---- attributes and host ---- */
static PyObject *m_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (ltpy_nargs("size", nargs, 0, 1)) return NULL;
    if (nargs == 0 || args[0] == Py_None) return ltpy_shape_tuple(SELF);
    int d, nd = lt_ndim(SELF);
    if (ltpy_int_arg(args[0], "size", "dim", &d)) return NULL;
    if (d < -nd || d >= nd || nd == 0)
        return PyErr_Format(PyExc_IndexError, "size: dim %d is out of range for a %d-d tensor", d, nd);
    return PyLong_FromLongLong(lt_shape(SELF)[d < 0 ? d + nd : d]);
}
static PyObject *m_dim(PyObject *self, PyObject *u) { (void)u; return PyLong_FromLong(lt_ndim(SELF)); }
static PyObject *m_numel(PyObject *self, PyObject *u) { (void)u; return PyLong_FromLongLong(lt_numel(SELF)); }
static PyObject *m_element_size(PyObject *self, PyObject *u) {
    (void)u;
    return PyLong_FromSize_t(lt_dtype_size(lt_dtype_of(SELF)));
}
/* _to_host(buffer): copies the value into a writable C-contiguous buffer of
 * exactly numel * itemsize bytes (numpy() and tolist() use it). */
static PyObject *m_to_host(PyObject *self, PyObject *obj) {
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) return NULL;
    int rc = lt_to_host(SELF, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    if (rc) return ltpy_raise();
    Py_RETURN_NONE;
}
static PyObject *m_requires_grad_(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int b = 1;
    if (ltpy_nargs("requires_grad_", nargs, 0, 1)) return NULL;
    if (nargs && (b = PyObject_IsTrue(args[0])) < 0) return NULL;
    lt_set_requires_grad(SELF, b);
    if (ltpy_check()) return NULL;
    Py_INCREF(self);
    return self;
}
KW(m_backward) {
    static char *kws[] = {"gradient", NULL};
    PyObject *g = Py_None;
    lt_tensor *gh;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kws, &g)) return NULL;
    if (ltpy_opt_tensor_arg(g, "backward", "gradient", &gh)) return NULL;
    if (gh ? lt_backward_with(SELF, gh) : lt_backward(SELF)) return ltpy_raise();
    Py_RETURN_NONE;
}
static PyObject *m_is_floating_point(PyObject *self, PyObject *u) {
    (void)u;
    lt_dtype d = lt_dtype_of(SELF);
    return PyBool_FromLong(ltpy_is_float(d));
}

#define M(name, fn, flags) {name, (PyCFunction)(void (*)(void))fn, flags, NULL}
#define M_NO(name) M(#name, m_##name, METH_NOARGS), M(#name "_", m_##name##_, METH_NOARGS)
#define M_O(name) M(#name, m_##name, METH_O), M(#name "_", m_##name##_, METH_O)
#define M_KW(name) M(#name, m_##name, METH_VARARGS | METH_KEYWORDS)
#define M_FAST(name) M(#name, m_##name, METH_FASTCALL)
PyMethodDef ltpy_tensor_methods[] = {
    M_NO(neg), M_NO(exp), M_NO(log), M_NO(sqrt), M_NO(rsqrt), M_NO(abs), M_NO(relu), M_NO(tanh), M_NO(sigmoid),
    M_O(add), M_O(sub), M_O(mul), M_O(div), M_O(pow), M_O(maximum), M_O(minimum),
    M("eq", m_eq, METH_O), M("ne", m_ne, METH_O), M("lt", m_lt, METH_O), M("le", m_le, METH_O),
    M("gt", m_gt, METH_O), M("ge", m_ge, METH_O),
    M_FAST(lerp), M_FAST(lerp_),
    M_KW(addcmul), M_KW(addcmul_), M_KW(addcdiv), M_KW(addcdiv_), M_KW(clamp), M_KW(clamp_),
    M("copy_", m_copy_, METH_O), M("fill_", m_fill_, METH_O), M("zero_", m_zero_, METH_NOARGS),
    M_KW(sum), M_KW(mean), M_KW(amax), M_KW(amin), M_KW(max), M_KW(min), M_KW(argmax), M_KW(argmin),
    M_KW(softmax), M_KW(log_softmax),
    M("matmul", m_matmul, METH_O), M("clone", m_clone, METH_NOARGS), M("contiguous", m_contiguous, METH_NOARGS),
    M("detach", m_detach, METH_NOARGS), M_FAST(to),
    M("float", m_float, METH_NOARGS), M("double", m_double, METH_NOARGS), M("int", m_int, METH_NOARGS),
    M("long", m_long, METH_NOARGS), M("bool", m_bool, METH_NOARGS), M("bfloat16", m_bfloat16, METH_NOARGS),
    M("byte", m_byte, METH_NOARGS),
    M_FAST(view), M_FAST(reshape), M_FAST(expand), M_FAST(permute), M_KW(flatten), M_FAST(transpose),
    M("t", m_t, METH_NOARGS), M("unsqueeze", m_unsqueeze, METH_O), M_FAST(squeeze), M_KW(diagonal),
    M_FAST(narrow), M_FAST(select), M_KW(as_strided),
    M_FAST(size), M("dim", m_dim, METH_NOARGS), M("numel", m_numel, METH_NOARGS),
    M("element_size", m_element_size, METH_NOARGS), M("item", ltpy_item, METH_NOARGS),
    M("_to_host", m_to_host, METH_O), M_FAST(requires_grad_), M_KW(backward),
    M("is_floating_point", m_is_floating_point, METH_NOARGS),
    M("__dlpack__", ltpy_dlpack, METH_FASTCALL | METH_KEYWORDS),
    M("__dlpack_device__", ltpy_dlpack_device, METH_NOARGS),
    {NULL, NULL, 0, NULL},
};
