/* Python arguments to C values, with TypeErrors that name the function and
 * the argument as the library's own messages do. */
#include "ltpy.h"

int ltpy_nargs(const char *fn, Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi) {
    if (n >= lo && n <= hi) return 0;
    if (lo == hi) PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fn, lo, n);
    else PyErr_Format(PyExc_TypeError, "%s() takes %zd to %zd arguments (%zd given)", fn, lo, hi, n);
    return -1;
}

int ltpy_tensor_arg(PyObject *o, const char *fn, const char *arg, lt_tensor **out) {
    if (ltpy_is_tensor(o)) {
        *out = ltpy_h(o);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be a Tensor, not %.100s", fn, arg, Py_TYPE(o)->tp_name);
    return -1;
}

lt_tensor **ltpy_handles(PyObject *seq, const char *fn, const char *arg, int *n) {
    PyObject *f = PySequence_Fast(seq, "");
    if (!f) {
        PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be a sequence of Tensors, not %.100s", fn, arg,
                     Py_TYPE(seq)->tp_name);
        return NULL;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
    if (len > INT_MAX) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s: argument '%s' has %zd tensors, too many", fn, arg, len);
        return NULL;
    }
    lt_tensor **h = PyMem_Malloc(sizeof *h * (size_t)(len ? len : 1));
    if (!h) PyErr_NoMemory();
    for (Py_ssize_t i = 0; h && i < len; i++)
        if (ltpy_tensor_arg(PySequence_Fast_GET_ITEM(f, i), fn, arg, &h[i])) {
            PyMem_Free(h);
            h = NULL;
        }
    *n = (int)len;
    Py_DECREF(f);
    return h;
}

int ltpy_opt_tensor_arg(PyObject *o, const char *fn, const char *arg, lt_tensor **out) {
    if (o == Py_None) {
        *out = NULL;
        return 0;
    }
    return ltpy_tensor_arg(o, fn, arg, out);
}

int ltpy_double_arg(PyObject *o, const char *fn, const char *arg, double *out) {
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (!PyFloat_Check(o) && !PyLong_Check(o) && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be a number, not %.100s", fn, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyFloat_AsDouble(o);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

int ltpy_int64_arg(PyObject *o, const char *fn, const char *arg, int64_t *out) {
    if (PyBool_Check(o) || !PyIndex_Check(o)) { /* torch refuses floats as sizes and indices */
        PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be an int, not %.100s", fn, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow = 0;
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow) {
        PyErr_Format(PyExc_OverflowError, "%s: argument '%s' does not fit in 64 bits", fn, arg);
        return -1;
    }
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

int ltpy_int_arg(PyObject *o, const char *fn, const char *arg, int *out) {
    int64_t v;
    if (ltpy_int64_arg(o, fn, arg, &v)) return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PyExc_IndexError, "%s: argument '%s' = %lld is out of range", fn, arg, (long long)v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int ltpy_dtype_arg(PyObject *o, const char *fn, lt_dtype *out) {
    for (int d = 0; d < LTPY_NDTYPES; d++)
        if (o == ltpy_dtypes[d]) {
            *out = (lt_dtype)d;
            return 0;
        }
    PyErr_Format(PyExc_TypeError, "%s: argument 'dtype' must be a lazytensor dtype, not %.100s", fn,
                 Py_TYPE(o)->tp_name);
    return -1;
}

static int seq_int64(PyObject *seq, const char *fn, const char *arg, int64_t *out, int *n) {
    PyObject *f = PySequence_Fast(seq, "");
    if (!f) {
        PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be a sequence of ints, not %.100s", fn, arg,
                     Py_TYPE(seq)->tp_name);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
    if (len > LT_MAX_DIMS) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s: argument '%s' has %zd entries, at most %d allowed", fn, arg, len,
                     LT_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++)
        if (ltpy_int64_arg(PySequence_Fast_GET_ITEM(f, i), fn, arg, &out[i])) {
            Py_DECREF(f);
            return -1;
        }
    *n = (int)len;
    Py_DECREF(f);
    return 0;
}

int ltpy_shape_args(PyObject *const *args, Py_ssize_t n, const char *fn, int64_t *shape, int *ndim) {
    if (n == 1 && !PyIndex_Check(args[0])) return seq_int64(args[0], fn, "size", shape, ndim);
    if (n > LT_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s: %zd sizes given, at most %d allowed", fn, n, LT_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (ltpy_int64_arg(args[i], fn, "size", &shape[i])) return -1;
    *ndim = (int)n;
    return 0;
}

int ltpy_dims_arg(PyObject *o, const char *fn, const char *arg, int *dims, int *n) {
    if (PyIndex_Check(o)) {
        *n = 1;
        return ltpy_int_arg(o, fn, arg, dims);
    }
    int64_t v[LT_MAX_DIMS];
    if (seq_int64(o, fn, arg, v, n)) return -1;
    for (int i = 0; i < *n; i++) {
        if (v[i] < INT_MIN || v[i] > INT_MAX) {
            PyErr_Format(PyExc_IndexError, "%s: argument '%s' = %lld is out of range", fn, arg, (long long)v[i]);
            return -1;
        }
        dims[i] = (int)v[i];
    }
    return 0;
}

int ltpy_pair_arg(PyObject *o, const char *fn, const char *arg, int64_t out[2]) {
    if (PyIndex_Check(o)) {
        if (ltpy_int64_arg(o, fn, arg, &out[0])) return -1;
        out[1] = out[0];
        return 0;
    }
    int n;
    int64_t v[LT_MAX_DIMS];
    if (seq_int64(o, fn, arg, v, &n)) return -1;
    if (n != 2) {
        PyErr_Format(PyExc_ValueError, "%s: argument '%s' must be an int or 2 ints, got %d", fn, arg, n);
        return -1;
    }
    out[0] = v[0], out[1] = v[1];
    return 0;
}
