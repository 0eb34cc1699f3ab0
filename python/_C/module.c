/* The _C module: dtypes, creation, runtime (sync, metrics, seed, no-grad)
 * and the module init. */
#include "ltpy.h"

PyObject *ltpy_dtypes[LTPY_NDTYPES];

/* ---- dtype objects ---- */
typedef struct {
    PyObject_HEAD
    int code;
} dtype_obj;

static PyObject *dtype_repr(PyObject *self) {
    return PyUnicode_FromFormat("lazytensor.%s", lt_dtype_name((lt_dtype)((dtype_obj *)self)->code));
}
static PyObject *dtype_is_float(PyObject *self, void *c) {
    (void)c;
    int d = ((dtype_obj *)self)->code;
    return PyBool_FromLong(ltpy_is_float(d));
}
static PyObject *dtype_itemsize(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(lt_dtype_size((lt_dtype)((dtype_obj *)self)->code));
}
static PyObject *dtype_code(PyObject *self, void *c) { (void)c; return PyLong_FromLong(((dtype_obj *)self)->code); }
static PyGetSetDef dtype_getset[] = {
    {"is_floating_point", dtype_is_float, NULL, NULL, NULL},
    {"itemsize", dtype_itemsize, NULL, NULL, NULL},
    {"_code", dtype_code, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject ltpy_dtype_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazytensor.dtype",
    .tp_basicsize = sizeof(dtype_obj),
    .tp_repr = dtype_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_getset = dtype_getset,
};

/* ---- creation ---- */
/* f(shape..., dtype): shape as ints or one sequence, dtype last (required:
 * the Python layer supplies torch's defaults). */
static int shape_dtype(const char *fn, PyObject *const *args, Py_ssize_t n, int64_t *shape, int *nd, lt_dtype *d) {
    if (n < 1) return ltpy_nargs(fn, n, 1, 1 + LT_MAX_DIMS);
    if (ltpy_dtype_arg(args[n - 1], fn, d)) return -1;
    return ltpy_shape_args(args, n - 1, fn, shape, nd);
}
#define CREATE(py, call)                                                                       \
    static PyObject *f_##py(PyObject *m, PyObject *const *args, Py_ssize_t n) {                \
        (void)m;                                                                               \
        int64_t s[LT_MAX_DIMS];                                                                \
        int nd;                                                                                \
        lt_dtype d;                                                                            \
        if (shape_dtype(#py, args, n, s, &nd, &d)) return NULL;                                \
        return ltpy_wrap(call);                                                                \
    }
CREATE(zeros, lt_zeros(d, nd, s))
CREATE(ones, lt_ones(d, nd, s))
CREATE(rand, lt_rand(d, nd, s))
CREATE(randn, lt_randn(d, nd, s))

/* full(shape, value, dtype) */
static PyObject *f_full(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *shape, *val, *dt;
    if (!PyArg_ParseTuple(args, "OOO", &shape, &val, &dt)) return NULL;
    int64_t s[LT_MAX_DIMS];
    int nd;
    lt_dtype d;
    double v;
    if (ltpy_shape_args(&shape, 1, "full", s, &nd) || ltpy_double_arg(val, "full", "fill_value", &v) ||
        ltpy_dtype_arg(dt, "full", &d))
        return NULL;
    return ltpy_wrap(lt_full(v, d, nd, s));
}

static PyObject *f_arange(PyObject *m, PyObject *args) {
    (void)m;
    double a, b, st;
    PyObject *dt;
    lt_dtype d;
    if (!PyArg_ParseTuple(args, "dddO", &a, &b, &st, &dt) || ltpy_dtype_arg(dt, "arange", &d)) return NULL;
    return ltpy_wrap(lt_arange(a, b, st, d));
}

/* from_buffer(obj, dtype, shape): copies a C-contiguous buffer (bytes,
 * array.array, a NumPy array) of exactly numel * itemsize bytes. */
static PyObject *f_from_buffer(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *obj, *dt, *shape;
    if (!PyArg_ParseTuple(args, "OOO", &obj, &dt, &shape)) return NULL;
    lt_dtype d;
    int64_t s[LT_MAX_DIMS];
    int nd;
    if (ltpy_dtype_arg(dt, "from_buffer", &d) || ltpy_shape_args(&shape, 1, "from_buffer", s, &nd)) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_C_CONTIGUOUS)) return NULL;
    int64_t numel = 1;
    for (int i = 0; i < nd; i++) numel *= s[i] < 0 ? 0 : s[i];
    PyObject *r = NULL;
    if ((size_t)b.len != (size_t)numel * lt_dtype_size(d))
        PyErr_Format(PyExc_ValueError, "from_buffer: %zd bytes for %lld elements of %s", b.len, (long long)numel,
                     lt_dtype_name(d));
    else
        r = ltpy_wrap(lt_from_data(b.buf, d, nd, s));
    PyBuffer_Release(&b);
    return r;
}

static PyObject *f_cat(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *seq;
    int dim = 0;
    if (!PyArg_ParseTuple(args, "O|i", &seq, &dim)) return NULL;
    PyObject *f = PySequence_Fast(seq, "cat: argument 'tensors' must be a sequence of Tensors");
    if (!f) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    lt_tensor **hs = PyMem_Malloc(sizeof *hs * (size_t)(n ? n : 1));
    PyObject *r = NULL;
    if (!hs) r = PyErr_NoMemory();
    else {
        Py_ssize_t i = 0;
        for (; i < n; i++)
            if (ltpy_tensor_arg(PySequence_Fast_GET_ITEM(f, i), "cat", "tensors", &hs[i])) break;
        if (i == n) r = n > INT_MAX ? PyErr_Format(PyExc_ValueError, "cat: too many tensors")
                                    : ltpy_wrap(lt_cat((int)n, hs, dim));
    }
    PyMem_Free(hs);
    Py_DECREF(f);
    return r;
}

static PyObject *f_where(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *c, *a, *b;
    lt_tensor *hc, *ha, *hb;
    if (!PyArg_ParseTuple(args, "OOO", &c, &a, &b) || ltpy_tensor_arg(c, "where", "condition", &hc) ||
        ltpy_tensor_arg(a, "where", "input", &ha) || ltpy_tensor_arg(b, "where", "other", &hb))
        return NULL;
    return ltpy_wrap(lt_where(hc, ha, hb));
}

/* _make_subclass(cls, data, requires_grad): a leaf of class cls holding
 * data's value (nn.Parameter). lt_clone copies nothing: a materialized
 * value's buffer is shared, a pending one's node too. */
static PyObject *f_make_subclass(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cls, *data;
    int rg;
    lt_tensor *h;
    if (!PyArg_ParseTuple(args, "OOp", &cls, &data, &rg) || ltpy_tensor_arg(data, "Parameter", "data", &h)) return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &ltpy_tensor_base))
        return PyErr_Format(PyExc_TypeError, "_make_subclass: cls must be a Tensor subclass");
    lt_no_grad_begin();
    lt_tensor *c = lt_clone(h);
    lt_no_grad_end();
    if (c && rg) {
        lt_set_requires_grad(c, true);
        if (lt_error()) {
            lt_free(c);
            return ltpy_raise();
        }
    }
    return ltpy_wrap_as((PyTypeObject *)cls, c);
}

/* _set_tensor_class(Tensor): the class the C ops create. Called once, from
 * the class statement's module, before any instance exists.
 *
 * Python gives every class statement's instances cyclic-GC support, and
 * subtype_dealloc as their dealloc; with them, each tensor that a tracing
 * loop creates and drops (x[0:32].lerp_(...) makes a view per call) pays
 * the GC header, tracking and untracking, the collector's allocation count
 * (a collection every 700 allocations) and subtype_dealloc's generic
 * checks. A Tensor instance holds no Python reference but its class
 * (__slots__ = (): no __dict__, no weakrefs; no __del__; the handle is C),
 * so it can never be part of a reference cycle: the class gets plain
 * allocation, as a C type without GC has, and a dealloc that does exactly
 * what subtype_dealloc would do for it. Subclasses made later
 * (nn.Parameter) keep Python's GC; their subtype_dealloc calls ours as
 * their base's (which drops the class reference, as a heap base must). */
static PyObject *f_set_tensor_class(PyObject *m, PyObject *cls) {
    (void)m;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &ltpy_tensor_base))
        return PyErr_Format(PyExc_TypeError, "_set_tensor_class: a TensorBase subclass is required");
    PyTypeObject *c = (PyTypeObject *)cls;
    if (ltpy_tensor_cls != &ltpy_tensor_base)
        return PyErr_Format(PyExc_RuntimeError, "_set_tensor_class: the tensor class is already set");
    if (c->tp_base != &ltpy_tensor_base || c->tp_basicsize != ltpy_tensor_base.tp_basicsize || c->tp_dictoffset ||
        c->tp_weaklistoffset)
        return PyErr_Format(PyExc_TypeError, "_set_tensor_class: %s must subclass TensorBase directly with __slots__ = ()",
                            c->tp_name);
    if (c->tp_finalize || c->tp_del)
        return PyErr_Format(PyExc_TypeError, "_set_tensor_class: %s must not define __del__", c->tp_name);
    c->tp_flags &= ~Py_TPFLAGS_HAVE_GC;
    c->tp_traverse = NULL;
    c->tp_clear = NULL;
    c->tp_free = PyObject_Free;
    c->tp_dealloc = ltpy_tensor_class_dealloc;
    PyType_Modified(c);
    Py_INCREF(cls);
    ltpy_tensor_cls = c; /* kept for the process's life */
    Py_RETURN_NONE;
}

/* ---- runtime ---- */
static PyObject *f_mark_step(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    lt_mark_step();
    if (ltpy_check()) return NULL;
    Py_RETURN_NONE;
}
static PyObject *f_manual_seed(PyObject *m, PyObject *o) {
    (void)m;
    unsigned long long s = PyLong_AsUnsignedLongLongMask(o);
    if (PyErr_Occurred()) return NULL;
    lt_manual_seed(s);
    Py_RETURN_NONE;
}
static PyObject *f_metric(PyObject *m, PyObject *o) {
    (void)m;
    const char *name = PyUnicode_AsUTF8(o);
    if (!name) return NULL;
    return PyFloat_FromDouble(lt_metric(name));
}
static PyObject *f_metrics_report(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    const char *r = lt_metrics_report();
    return r ? PyUnicode_FromString(r) : ltpy_raise();
}
static PyObject *f_metrics_reset(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    lt_metrics_reset();
    Py_RETURN_NONE;
}
static PyObject *f_no_grad_begin(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    lt_no_grad_begin();
    Py_RETURN_NONE;
}
static PyObject *f_no_grad_end(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    lt_no_grad_end();
    Py_RETURN_NONE;
}
static PyObject *f_live_tensors(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    return PyLong_FromSsize_t(ltpy_live);
}
static PyObject *f_grad_enabled(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    return PyBool_FromLong(lt_grad_enabled());
}

/* The exchange with the PyTorch device (lazytensor.torch.to_lt / from_lt):
 * a handle's address, borrowed, and a tensor made from a NEW handle. Both
 * extensions call the same liblazytensor, so an address means the same
 * handle to both. */
static PyObject *f_handle(PyObject *m, PyObject *t) {
    (void)m;
    if (!ltpy_is_tensor(t)) return PyErr_Format(PyExc_TypeError, "_handle: expected a lazytensor.Tensor");
    return PyLong_FromVoidPtr(ltpy_h(t));
}
static PyObject *f_wrap_handle(PyObject *m, PyObject *addr) {
    (void)m;
    lt_tensor *h = PyLong_AsVoidPtr(addr);
    if (!h) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "_wrap_handle: a NULL handle");
    return ltpy_wrap(h);
}

#define F(name, fn, flags) {name, (PyCFunction)(void (*)(void))fn, flags, NULL}
PyMethodDef ltpy_module_methods[] = {
    F("zeros", f_zeros, METH_FASTCALL), F("ones", f_ones, METH_FASTCALL), F("rand", f_rand, METH_FASTCALL),
    F("randn", f_randn, METH_FASTCALL), F("full", f_full, METH_VARARGS), F("arange", f_arange, METH_VARARGS),
    F("from_buffer", f_from_buffer, METH_VARARGS), F("cat", f_cat, METH_VARARGS), F("where", f_where, METH_VARARGS),
    F("_make_subclass", f_make_subclass, METH_VARARGS), F("_set_tensor_class", f_set_tensor_class, METH_O),
    F("mark_step", f_mark_step, METH_NOARGS), F("manual_seed", f_manual_seed, METH_O),
    F("metric", f_metric, METH_O), F("metrics_report", f_metrics_report, METH_NOARGS),
    F("metrics_reset", f_metrics_reset, METH_NOARGS), F("_no_grad_begin", f_no_grad_begin, METH_NOARGS),
    F("_no_grad_end", f_no_grad_end, METH_NOARGS), F("is_grad_enabled", f_grad_enabled, METH_NOARGS),
    F("from_dlpack", ltpy_from_dlpack, METH_O), F("_live_tensors", f_live_tensors, METH_NOARGS),
    F("_handle", f_handle, METH_O), F("_wrap_handle", f_wrap_handle, METH_O),
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "lazytensor._C",
                                        "The lazytensor C library (thin bindings).", -1, NULL, NULL, NULL, NULL, NULL};

int ltpy_add_functions(PyObject *m, PyMethodDef *defs) {
    for (PyMethodDef *d = defs; d->ml_name; d++) {
        PyObject *f = PyCFunction_NewEx(d, m, NULL);
        if (!f || PyModule_AddObject(m, d->ml_name, f)) {
            Py_XDECREF(f);
            return -1;
        }
    }
    return 0;
}

/* lazytensor.return_types.max / .min: torch's named tuples for max(dim)
 * and min(dim) (structseq types: tuples whose items also have names). */
static int minmax_types_init(PyObject *m) {
    static PyStructSequence_Field fields[] = {
        {"values", "the maximum (max) or minimum (min) along dim"},
        {"indices", "the index of each value along dim (the first one on ties)"},
        {NULL, NULL},
    };
    static PyStructSequence_Desc desc[2] = {
        {"lazytensor.return_types.min", "The result of min(dim): (values, indices).", fields, 2},
        {"lazytensor.return_types.max", "The result of max(dim): (values, indices).", fields, 2},
    };
    static const char *attr[2] = {"return_types_min", "return_types_max"};
    for (int k = 0; k < 2; k++) {
        if (!ltpy_minmax_types[k] && !(ltpy_minmax_types[k] = PyStructSequence_NewType(&desc[k]))) return -1;
        Py_INCREF(ltpy_minmax_types[k]); /* this table keeps one reference for the process's life */
        if (PyModule_AddObject(m, attr[k], (PyObject *)ltpy_minmax_types[k])) {
            Py_DECREF(ltpy_minmax_types[k]);
            return -1;
        }
    }
    return 0;
}

PyMODINIT_FUNC PyInit__C(void) {
    if (ltpy_tensor_ready() || PyType_Ready(&ltpy_dtype_type)) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (ltpy_add_functions(m, ltpy_module_methods) || ltpy_add_functions(m, ltpy_nn_methods) || ltpy_add_functions(m, ltpy_io_methods) ||
        ltpy_add_functions(m, ltpy_dist_methods))
        goto fail;
    Py_INCREF(&ltpy_tensor_base);
    if (PyModule_AddObject(m, "TensorBase", (PyObject *)&ltpy_tensor_base)) goto fail;
    Py_INCREF(&ltpy_dtype_type);
    if (PyModule_AddObject(m, "dtype", (PyObject *)&ltpy_dtype_type)) goto fail;
    static const char *names[LTPY_NDTYPES] = {"float32", "float64", "int32", "int64", "bool", "bfloat16", "uint8"};
    for (int d = 0; d < LTPY_NDTYPES; d++) {
        dtype_obj *o = PyObject_New(dtype_obj, &ltpy_dtype_type);
        if (!o) goto fail;
        o->code = d;
        ltpy_dtypes[d] = (PyObject *)o; /* the module and this table each hold one reference */
        Py_INCREF(o);
        if (PyModule_AddObject(m, names[d], (PyObject *)o)) goto fail;
    }
    if (ltpy_optim_init(m) || ltpy_data_init(m) || minmax_types_init(m)) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
