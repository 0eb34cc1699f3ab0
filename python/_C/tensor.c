/* _C.TensorBase: the handle's owner, its attributes and the operator slots.
 * lazytensor.Tensor (Python) subclasses it for what is naturally Python
 * (repr, numpy()); the C ops create instances of that subclass. */
#include "ltpy.h"

PyTypeObject *ltpy_tensor_cls = &ltpy_tensor_base;
Py_ssize_t ltpy_live;

/* Freed objects of lazytensor.Tensor wait here for reuse, as CPython keeps
 * its floats and tuples: a tracing loop's short-lived tensors (a view made
 * per call, x[0:32].lerp_(...)) then cost no allocation and no free. The
 * objects hold nothing while they wait (the handle is freed, the class
 * reference dropped); the GIL serializes access, as for the library. */
#define FREE_OBJS 64
static PyObject *free_objs[FREE_OBJS];
static int nfree_objs;

PyObject *ltpy_wrap_as(PyTypeObject *cls, lt_tensor *h) {
    if (!h) return ltpy_raise();
    ltpy_tensor *t;
    if (cls == ltpy_tensor_cls && nfree_objs) {
        t = (ltpy_tensor *)PyObject_Init(free_objs[--nfree_objs], cls); /* takes a class reference */
    } else if (!(t = (ltpy_tensor *)cls->tp_alloc(cls, 0))) {
        lt_free(h);
        return NULL;
    }
    t->h = h;
    ltpy_live++;
    return (PyObject *)t;
}

PyObject *ltpy_wrap(lt_tensor *h) { return ltpy_wrap_as(ltpy_tensor_cls, h); }

/* TensorBase's dealloc, also reached from the dealloc of a subclass made
 * outside lazytensor.Tensor (subtype_dealloc, which then drops the
 * instance's class reference). */
static void tensor_dealloc(PyObject *self) {
    ltpy_live--;
    lt_free(((ltpy_tensor *)self)->h);
    if (Py_IS_TYPE(self, ltpy_tensor_cls) && ltpy_tensor_cls != &ltpy_tensor_base && nfree_objs < FREE_OBJS)
        free_objs[nfree_objs++] = self;
    else
        Py_TYPE(self)->tp_free(self);
}

void ltpy_tensor_class_dealloc(PyObject *self) {
    PyTypeObject *cls = Py_TYPE(self);
    tensor_dealloc(self);
    Py_DECREF(cls); /* every instance of a class made in Python holds one */
}

static PyObject *tensor_new(PyTypeObject *cls, PyObject *args, PyObject *kw) {
    (void)cls, (void)args, (void)kw;
    PyErr_SetString(PyExc_TypeError,
                    "lazytensor.Tensor cannot be constructed directly; use lazytensor.tensor(), zeros(), ...");
    return NULL;
}

PyObject *ltpy_shape_tuple(lt_tensor *h) {
    int nd = lt_ndim(h);
    const int64_t *s = lt_shape(h);
    PyObject *t = PyTuple_New(nd);
    if (!t) return NULL;
    for (int i = 0; i < nd; i++) {
        PyObject *v = PyLong_FromLongLong(s[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *get_shape(PyObject *self, void *c) { (void)c; return ltpy_shape_tuple(ltpy_h(self)); }
static PyObject *get_ndim(PyObject *self, void *c) { (void)c; return PyLong_FromLong(lt_ndim(ltpy_h(self))); }
static PyObject *get_dtype(PyObject *self, void *c) {
    (void)c;
    PyObject *d = ltpy_dtypes[lt_dtype_of(ltpy_h(self))];
    Py_INCREF(d);
    return d;
}
static PyObject *get_requires_grad(PyObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(lt_requires_grad(ltpy_h(self)));
}
static int set_requires_grad(PyObject *self, PyObject *v, void *c) {
    (void)c;
    int b = v ? PyObject_IsTrue(v) : 0;
    if (b < 0) return -1;
    lt_set_requires_grad(ltpy_h(self), b);
    return ltpy_check();
}
/* .grad: a new handle aliasing the accumulated gradient (in-place changes
 * through it change the gradient, as in torch), or None. */
static PyObject *get_grad(PyObject *self, void *c) {
    (void)c;
    lt_tensor *g = lt_grad(ltpy_h(self));
    if (!g) {
        if (lt_error()) return ltpy_raise();
        Py_RETURN_NONE;
    }
    return ltpy_wrap(lt_detach(g));
}
static int set_grad(PyObject *self, PyObject *v, void *c) {
    (void)c;
    if (v && v != Py_None) {
        PyErr_SetString(PyExc_TypeError, "lazytensor: .grad can only be set to None (gradients accumulate in backward)");
        return -1;
    }
    lt_zero_grad(ltpy_h(self));
    return ltpy_check();
}
static PyObject *get_T(PyObject *self, void *c) {
    (void)c;
    lt_tensor *h = ltpy_h(self);
    int nd = lt_ndim(h), dims[LT_MAX_DIMS];
    for (int i = 0; i < nd; i++) dims[i] = nd - 1 - i;
    return ltpy_wrap(lt_permute(h, nd, dims));
}
static PyObject *get_data(PyObject *self, void *c) { (void)c; return ltpy_wrap(lt_detach(ltpy_h(self))); }
static PyObject *get_is_view(PyObject *self, void *c) { (void)c; return PyBool_FromLong(lt_is_view(ltpy_h(self))); }

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "sizes as a tuple", NULL},
    {"ndim", get_ndim, NULL, "number of dimensions", NULL},
    {"dtype", get_dtype, NULL, "element type", NULL},
    {"requires_grad", get_requires_grad, set_requires_grad, "autograd records ops on this tensor", NULL},
    {"grad", get_grad, set_grad, "accumulated gradient or None", NULL},
    {"T", get_T, NULL, "dimensions reversed (a view)", NULL},
    {"data", get_data, NULL, "a detached alias", NULL},
    {"_is_view", get_is_view, NULL, "aliases another tensor's storage", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- operators ---- */
static PyObject *nb_add(PyObject *a, PyObject *b) { return ltpy_binary(a, b, '+'); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return ltpy_binary(a, b, '-'); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return ltpy_binary(a, b, '*'); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return ltpy_binary(a, b, '/'); }
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return ltpy_binary(a, b, '^');
}
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return ltpy_inplace(a, b, '+'); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return ltpy_inplace(a, b, '-'); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return ltpy_inplace(a, b, '*'); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return ltpy_inplace(a, b, '/'); }
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return ltpy_inplace(a, b, '^');
}
static PyObject *nb_neg(PyObject *a) { return ltpy_wrap(lt_neg(ltpy_h(a))); }
static PyObject *nb_pos(PyObject *a) { Py_INCREF(a); return a; }
static PyObject *nb_abs(PyObject *a) { return ltpy_wrap(lt_abs(ltpy_h(a))); }
static PyObject *nb_matmul(PyObject *a, PyObject *b) {
    if (!ltpy_is_tensor(a) || !ltpy_is_tensor(b)) Py_RETURN_NOTIMPLEMENTED;
    return ltpy_wrap(lt_matmul(ltpy_h(a), ltpy_h(b)));
}
static PyObject *nb_imatmul(PyObject *a, PyObject *b) {
    (void)a, (void)b;
    PyErr_SetString(PyExc_TypeError, "lazytensor: @= is not supported (the result's shape differs in general)");
    return NULL;
}

/* A one-element tensor as a Python number (syncs what it needs). */
static PyObject *item_number(PyObject *self, int as_float) {
    lt_tensor *h = ltpy_h(self);
    double v = lt_item(h);
    if (lt_error()) return ltpy_raise();
    lt_dtype d = lt_dtype_of(h);
    if (as_float) return PyFloat_FromDouble(v);
    if (d == LT_BOOL) return PyBool_FromLong(v != 0);
    if (ltpy_is_float(d)) return PyFloat_FromDouble(v);
    return PyLong_FromLongLong((long long)v);
}
PyObject *ltpy_item(PyObject *self, PyObject *unused) { (void)unused; return item_number(self, 0); }
static PyObject *nb_float(PyObject *a) { return item_number(a, 1); }
static PyObject *nb_int(PyObject *a) {
    PyObject *v = item_number(a, 0), *r;
    if (!v) return NULL;
    r = PyNumber_Long(v);
    Py_DECREF(v);
    return r;
}
static PyObject *nb_index(PyObject *a) {
    lt_dtype d = lt_dtype_of(ltpy_h(a));
    if (ltpy_is_float(d)) {
        PyErr_SetString(PyExc_TypeError, "only integer tensors of a single element can be converted to an index");
        return NULL;
    }
    return nb_int(a);
}
static int nb_bool(PyObject *a) {
    lt_tensor *h = ltpy_h(a);
    if (lt_numel(h) != 1) {
        PyErr_Format(PyExc_RuntimeError, "Boolean value of Tensor with %lld elements is ambiguous",
                     (long long)lt_numel(h));
        return -1;
    }
    double v = lt_item(h);
    if (lt_error()) return ltpy_raise(), -1;
    return v != 0;
}

static PyNumberMethods tensor_number = {
    .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul, .nb_true_divide = nb_div,
    .nb_power = nb_pow, .nb_negative = nb_neg, .nb_positive = nb_pos, .nb_absolute = nb_abs,
    .nb_bool = nb_bool, .nb_int = nb_int, .nb_float = nb_float, .nb_index = nb_index,
    .nb_inplace_add = nb_iadd, .nb_inplace_subtract = nb_isub, .nb_inplace_multiply = nb_imul,
    .nb_inplace_true_divide = nb_idiv, .nb_inplace_power = nb_ipow,
    .nb_matrix_multiply = nb_matmul, .nb_inplace_matrix_multiply = nb_imatmul,
};

static PyObject *richcompare(PyObject *a, PyObject *b, int op) { return ltpy_binary(a, b, op); }

static Py_ssize_t mp_length(PyObject *self) {
    lt_tensor *h = ltpy_h(self);
    if (lt_ndim(h) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)lt_shape(h)[0];
}

static PyMappingMethods tensor_mapping = {mp_length, ltpy_getitem, ltpy_setitem};

/* A tensor is iterable over dim 0 (views), like torch: Python's fallback
 * iterates __getitem__ with 0, 1, ... until IndexError. */

PyTypeObject ltpy_tensor_base = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazytensor._C.TensorBase",
    .tp_basicsize = sizeof(ltpy_tensor),
    .tp_dealloc = tensor_dealloc,
    .tp_as_number = &tensor_number,
    .tp_as_mapping = &tensor_mapping,
    .tp_richcompare = richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A lazy tensor: owns one lt_tensor handle.",
    .tp_methods = NULL, /* set at module init (methods.c) */
    .tp_getset = tensor_getset,
    .tp_new = tensor_new,
};

int ltpy_tensor_ready(void) {
    ltpy_tensor_base.tp_methods = ltpy_tensor_methods;
    ltpy_tensor_base.tp_hash = PyBaseObject_Type.tp_hash; /* identity, as torch */
    return PyType_Ready(&ltpy_tensor_base);
}
