/* DLPack exchange (the CPU subset of the v0.6 ABI that NumPy 1.24 and
 * PyTorch 1.13 speak). Export materializes the value into a new host buffer
 * that the capsule owns: a lazy tensor's buffer is rebound by every sync, so
 * lending it out would not be safe. Import copies a C-contiguous producer
 * into a new data tensor; any other layout is refused. */
#include "ltpy.h"

#include <stdlib.h>
#include <string.h>

enum { DL_CPU = 1, DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6 };
typedef struct { int32_t device_type, device_id; } dl_device;
typedef struct { uint8_t code, bits; uint16_t lanes; } dl_dtype;
typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
    dl_tensor t;
    void *ctx;
    void (*deleter)(struct dl_managed *self);
} dl_managed;

/* Export: one allocation holds the struct, the shape and the data. */
typedef struct {
    dl_managed m;
    int64_t shape[LT_MAX_DIMS];
} export_block;

static void export_deleter(dl_managed *m) {
    export_block *b = (export_block *)m;
    free(b->m.t.data);
    free(b);
}

static void capsule_destructor(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, "dltensor")) return; /* consumed: the consumer calls the deleter */
    dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m && m->deleter) m->deleter(m);
}

static const dl_dtype dl_of[LTPY_NDTYPES] = {
    [LT_F32] = {DL_FLOAT, 32, 1}, [LT_F64] = {DL_FLOAT, 64, 1}, [LT_I32] = {DL_INT, 32, 1},
    [LT_I64] = {DL_INT, 64, 1},   [LT_BOOL] = {DL_BOOL, 8, 1}, [LT_BF16] = {DL_BFLOAT, 16, 1},
    [LT_U8] = {DL_UINT, 8, 1},
};

PyObject *ltpy_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kw) {
    (void)args;
    if (n > 1 || (kw && PyTuple_GET_SIZE(kw) > 1))
        return PyErr_Format(PyExc_TypeError, "__dlpack__() takes at most 1 argument (stream)");
    lt_tensor *h = ltpy_h(self);
    lt_dtype d = lt_dtype_of(h);
    size_t bytes = (size_t)lt_numel(h) * lt_dtype_size(d);
    export_block *b = calloc(1, sizeof *b);
    void *data = malloc(bytes ? bytes : 1);
    if (!b || !data) {
        free(b), free(data);
        return PyErr_NoMemory();
    }
    if (lt_to_host(h, data, bytes)) {
        free(b), free(data);
        return ltpy_raise();
    }
    int nd = lt_ndim(h);
    memcpy(b->shape, lt_shape(h), (size_t)nd * sizeof(int64_t));
    b->m.t = (dl_tensor){data, {DL_CPU, 0}, nd, dl_of[d], b->shape, NULL, 0};
    b->m.deleter = export_deleter;
    PyObject *cap = PyCapsule_New(&b->m, "dltensor", capsule_destructor);
    if (!cap) export_deleter(&b->m);
    return cap;
}

PyObject *ltpy_dlpack_device(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return Py_BuildValue("(ii)", DL_CPU, 0);
}

static int dtype_from(dl_dtype t, lt_dtype *out) {
    if (t.lanes != 1) return -1;
    if (t.code == DL_FLOAT && (t.bits == 32 || t.bits == 64)) *out = t.bits == 32 ? LT_F32 : LT_F64;
    else if (t.code == DL_INT && (t.bits == 32 || t.bits == 64)) *out = t.bits == 32 ? LT_I32 : LT_I64;
    else if (t.code == DL_BOOL && t.bits == 8) *out = LT_BOOL;
    else if (t.code == DL_BFLOAT && t.bits == 16) *out = LT_BF16;
    else if (t.code == DL_UINT && t.bits == 8) *out = LT_U8;
    else return -1;
    return 0;
}

static lt_tensor *import(const dl_tensor *t) {
    lt_dtype d;
    if (t->device.device_type != DL_CPU)
        return PyErr_Format(PyExc_ValueError, "from_dlpack: device type %d is not the CPU (1)", t->device.device_type), NULL;
    if (dtype_from(t->dtype, &d))
        return PyErr_Format(PyExc_TypeError, "from_dlpack: DLPack dtype (code %d, %d bits, %d lanes) is not supported",
                            t->dtype.code, t->dtype.bits, t->dtype.lanes), NULL;
    if (t->ndim < 0 || t->ndim > LT_MAX_DIMS)
        return PyErr_Format(PyExc_ValueError, "from_dlpack: %d dims, at most %d supported", t->ndim, LT_MAX_DIMS), NULL;
    if (t->strides) { /* compact row-major only; size-1 dims may carry any stride */
        int64_t want = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (t->shape[i] != 1 && t->strides[i] != want)
                return PyErr_Format(PyExc_ValueError,
                                    "from_dlpack: the producer is not C-contiguous (dim %d has stride %lld, expected "
                                    "%lld); call .contiguous() / np.ascontiguousarray first",
                                    i, (long long)t->strides[i], (long long)want), NULL;
            want *= t->shape[i];
        }
    }
    lt_tensor *r = lt_from_data((const char *)t->data + t->byte_offset, d, t->ndim, t->shape);
    if (!r) ltpy_raise();
    return r;
}

PyObject *ltpy_from_dlpack(PyObject *mod, PyObject *obj) {
    (void)mod;
    PyObject *cap;
    if (PyCapsule_CheckExact(obj)) {
        cap = obj;
        Py_INCREF(cap);
    } else {
        PyObject *fn = PyObject_GetAttrString(obj, "__dlpack__");
        if (!fn) {
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError, "from_dlpack: %.100s has no __dlpack__", Py_TYPE(obj)->tp_name);
        }
        cap = PyObject_CallNoArgs(fn);
        Py_DECREF(fn);
        if (!cap) return NULL;
    }
    dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
    if (!m) {
        Py_DECREF(cap);
        return NULL;
    }
    lt_tensor *r = import(&m->t);
    /* the data is copied: consume the capsule and release the producer's memory */
    if (PyCapsule_SetName(cap, "used_dltensor") == 0 && m->deleter) m->deleter(m);
    Py_DECREF(cap);
    return r ? ltpy_wrap(r) : NULL;
}
