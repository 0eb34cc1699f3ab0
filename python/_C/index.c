/* t[idx] and t[idx] = v. Ints, slices (positive steps), None and ... become
 * the library's aliasing views (select, slice, unsqueeze), so a write
 * through the result is seen through the base and every other alias, as in
 * torch. A 1-D integer tensor index is a gather (index_select): a copy. */
#include "ltpy.h"

/* Replaces *cur (a new handle or NULL = the base) by r; frees the old one. */
static int step(lt_tensor **cur, lt_tensor *r, int index_error) {
    if (*cur) lt_free(*cur);
    *cur = r;
    if (r) return 0;
    if (index_error) ltpy_raise_index();
    else ltpy_raise();
    return -1;
}

/* PySlice_AdjustIndices for a positive step, without its division: start
 * and stop clamped into [0, size], stop not below start. */
static inline void clamp_slice(Py_ssize_t size, Py_ssize_t *start, Py_ssize_t *stop) {
    if (*start < 0 && (*start += size) < 0) *start = 0;
    else if (*start > size) *start = size;
    if (*stop < 0 && (*stop += size) < 0) *stop = 0;
    else if (*stop > size) *stop = size;
    if (*stop < *start) *stop = *start;
}

/* A new handle for base[idx]; *copied is set when the result does not alias
 * (an integer tensor index). NULL with a Python exception on error. */
static lt_tensor *index_handle(lt_tensor *base, PyObject *idx, int *copied) {
    *copied = 0;
    if (PySlice_Check(idx) && lt_ndim(base) > 0) { /* x[a:b], the commonest index: no item loops */
        Py_ssize_t start, stop, st, size = (Py_ssize_t)lt_shape(base)[0];
        if (PySlice_Unpack(idx, &start, &stop, &st)) return NULL;
        if (st > 0) {
            clamp_slice(size, &start, &stop);
            lt_tensor *r = lt_slice(base, 0, start, stop, st);
            if (!r) ltpy_raise();
            return r;
        } /* else the general path raises */
    }
    /* a tuple's items, or idx alone (no tuple is built for x[0:32]) */
    PyObject *const *items = PyTuple_Check(idx) ? &PyTuple_GET_ITEM(idx, 0) : &idx;
    Py_ssize_t n = PyTuple_Check(idx) ? PyTuple_GET_SIZE(idx) : 1;
    int nd = lt_ndim(base), consumed = 0, ellipses = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = items[i];
        if (it == Py_Ellipsis) ellipses++;
        else if (it != Py_None) consumed++;
    }
    lt_tensor *cur = NULL;
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        goto fail;
    }
    if (consumed > nd) {
        PyErr_Format(PyExc_IndexError, "too many indices for tensor of dimension %d", nd);
        goto fail;
    }
    int dim = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = items[i];
        lt_tensor *h = cur ? cur : base;
        if (it == Py_Ellipsis) {
            dim += nd - consumed;
        } else if (it == Py_None) {
            if (step(&cur, lt_unsqueeze(h, dim), 0)) goto fail;
            dim++;
        } else if (PySlice_Check(it)) {
            Py_ssize_t start, stop, st;
            if (PySlice_Unpack(it, &start, &stop, &st)) goto fail;
            if (st <= 0) {
                PyErr_SetString(PyExc_ValueError, "step must be greater than zero");
                goto fail;
            }
            Py_ssize_t size = (Py_ssize_t)lt_shape(h)[dim];
            clamp_slice(size, &start, &stop);
            if (start != 0 || stop != size || st != 1)
                if (step(&cur, lt_slice(h, dim, start, stop, st), 0)) goto fail;
            dim++;
        } else if (ltpy_is_tensor(it)) {
            lt_tensor *ix = ltpy_h(it);
            if (lt_ndim(ix) != 1 || (lt_dtype_of(ix) != LT_I64 && lt_dtype_of(ix) != LT_I32)) {
                PyErr_SetString(PyExc_IndexError,
                                "lazytensor: tensor indices must be 1-D int64 or int32 (boolean masks are not supported)");
                goto fail;
            }
            lt_tensor *ix64 = lt_dtype_of(ix) == LT_I64 ? NULL : lt_to_dtype(ix, LT_I64);
            lt_tensor *r = lt_index_select(h, dim, ix64 ? ix64 : ix);
            lt_free(ix64);
            if (step(&cur, r, 1)) goto fail;
            *copied = 1;
            dim++;
        } else if (PyIndex_Check(it) && !PyBool_Check(it)) {
            int64_t v;
            if (ltpy_int64_arg(it, "__getitem__", "index", &v)) goto fail;
            if (step(&cur, lt_select(h, dim, v), 1)) goto fail;
        } else {
            PyErr_Format(PyExc_IndexError,
                         "lazytensor: only integers, slices, None, ... and 1-D integer tensors are valid indices (got %.100s)",
                         Py_TYPE(it)->tp_name);
            goto fail;
        }
    }
    if (!cur) { /* t[:] and t[...]: an alias of the whole tensor, as torch */
        cur = nd ? lt_slice(base, 0, 0, lt_shape(base)[0], 1) : lt_view(base, 0, NULL);
        if (!cur) ltpy_raise();
    }
    return cur;
fail:
    lt_free(cur);
    return NULL;
}

PyObject *ltpy_getitem(PyObject *self, PyObject *idx) {
    int copied;
    lt_tensor *r = index_handle(ltpy_h(self), idx, &copied);
    return r ? ltpy_wrap(r) : NULL;
}

int ltpy_setitem(PyObject *self, PyObject *idx, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "lazytensor: tensor elements cannot be deleted");
        return -1;
    }
    lt_tensor *src = NULL;
    double s = 0;
    if (ltpy_is_tensor(value)) src = ltpy_h(value);
    else if (!ltpy_is_number(value)) {
        PyErr_Format(PyExc_TypeError, "lazytensor: can only assign a Tensor or a number, not %.100s",
                     Py_TYPE(value)->tp_name);
        return -1;
    } else if (ltpy_double_arg(value, "__setitem__", "value", &s)) {
        return -1;
    }
    int copied;
    lt_tensor *v = index_handle(ltpy_h(self), idx, &copied);
    if (!v) return -1;
    if (copied) {
        lt_free(v);
        PyErr_SetString(PyExc_IndexError, "lazytensor: assignment through a tensor index is not supported");
        return -1;
    }
    lt_tensor *r = src ? lt_copy_(v, src) : lt_fill_(v, s);
    lt_free(v);
    return r ? 0 : (ltpy_raise(), -1);
}
