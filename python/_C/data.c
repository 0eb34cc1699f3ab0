/* _C.Dataset and _C.Loader over lt_dataset / lt_loader. A loader keeps its
 * dataset's Python object alive (lt_loader borrows the dataset). */
#include "ltpy.h"

typedef struct {
    PyObject_HEAD
    lt_dataset *d;
} dataset_obj;

typedef struct {
    PyObject_HEAD
    lt_loader *l;
    PyObject *ds;
} loader_obj;

static void dataset_dealloc(PyObject *self) {
    lt_dataset_free(((dataset_obj *)self)->d);
    Py_TYPE(self)->tp_free(self);
}
static PyObject *ds_size(PyObject *self, PyObject *u) {
    (void)u;
    return PyLong_FromLongLong(lt_dataset_size(((dataset_obj *)self)->d));
}
static PyObject *ds_info(PyObject *self, PyObject *u) {
    (void)u;
    int c, h, w, k;
    if (lt_dataset_info(((dataset_obj *)self)->d, &c, &h, &w, &k)) return ltpy_raise();
    return Py_BuildValue("(iiii)", c, h, w, k);
}
static PyMethodDef dataset_methods[] = {
    {"size", ds_size, METH_NOARGS, NULL},
    {"info", ds_info, METH_NOARGS, "(channels, height, width, classes)"},
    {NULL, NULL, 0, NULL},
};
static PyTypeObject dataset_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazytensor._C.Dataset",
    .tp_basicsize = sizeof(dataset_obj),
    .tp_dealloc = dataset_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = dataset_methods,
};

static PyObject *wrap_dataset(lt_dataset *d) {
    if (!d) return ltpy_raise();
    dataset_obj *o = PyObject_New(dataset_obj, &dataset_type);
    if (!o) {
        lt_dataset_free(d);
        return NULL;
    }
    o->d = d;
    return (PyObject *)o;
}

static PyObject *f_dataset_fashion(PyObject *m, PyObject *args) {
    (void)m;
    const char *dir = NULL;
    int train;
    if (!PyArg_ParseTuple(args, "zp", &dir, &train)) return NULL;
    return wrap_dataset(lt_dataset_fashion_mnist(dir, train));
}
static PyObject *f_dataset_fake(PyObject *m, PyObject *args) {
    (void)m;
    long long n;
    int c, hw, k;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "LiiiK", &n, &c, &hw, &k, &seed)) return NULL;
    return wrap_dataset(lt_dataset_fake(n, c, hw, k, seed));
}

static void loader_dealloc(PyObject *self) {
    loader_obj *o = (loader_obj *)self;
    lt_loader_free(o->l);
    Py_XDECREF(o->ds);
    Py_TYPE(self)->tp_free(self);
}
static PyObject *ld_batch(PyObject *self, PyObject *args) {
    long long epoch, b;
    if (!PyArg_ParseTuple(args, "LL", &epoch, &b)) return NULL;
    lt_tensor *x, *y;
    int64_t rows = lt_loader_batch(((loader_obj *)self)->l, epoch, b, &x, &y);
    if (rows < 0) return ltpy_raise();
    if (rows == 0) return PyErr_Format(PyExc_IndexError, "batch %lld is past the end of the epoch", b);
    PyObject *px = ltpy_wrap(x), *py = px ? ltpy_wrap(y) : (lt_free(y), NULL);
    if (!py) {
        Py_XDECREF(px);
        return NULL;
    }
    return Py_BuildValue("(NN)", px, py);
}
static PyObject *ld_num_batches(PyObject *self, PyObject *u) {
    (void)u;
    return PyLong_FromLongLong(lt_loader_num_batches(((loader_obj *)self)->l));
}
static PyObject *ld_batch_size(PyObject *self, PyObject *u) {
    (void)u;
    return PyLong_FromLongLong(lt_loader_batch_size(((loader_obj *)self)->l));
}
static PyMethodDef loader_methods[] = {
    {"batch", ld_batch, METH_VARARGS, "batch(epoch, b) -> (x, y)"},
    {"num_batches", ld_num_batches, METH_NOARGS, NULL},
    {"batch_size", ld_batch_size, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyTypeObject loader_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazytensor._C.Loader",
    .tp_basicsize = sizeof(loader_obj),
    .tp_dealloc = loader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = loader_methods,
};

/* loader(dataset, batch, seed, shuffle, augment) */
static PyObject *f_loader(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *ds;
    long long batch;
    unsigned long long seed;
    int shuffle, augment;
    if (!PyArg_ParseTuple(args, "O!LKpp", &dataset_type, &ds, &batch, &seed, &shuffle, &augment)) return NULL;
    lt_loader *l = lt_loader_new(((dataset_obj *)ds)->d, batch, seed, shuffle, augment);
    if (!l) return ltpy_raise();
    loader_obj *o = PyObject_New(loader_obj, &loader_type);
    if (!o) {
        lt_loader_free(l);
        return NULL;
    }
    o->l = l;
    o->ds = ds;
    Py_INCREF(ds);
    return (PyObject *)o;
}

static PyMethodDef data_methods[] = {
    {"dataset_fashion_mnist", f_dataset_fashion, METH_VARARGS, NULL},
    {"dataset_fake", f_dataset_fake, METH_VARARGS, NULL},
    {"loader", f_loader, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int ltpy_data_init(PyObject *m) {
    if (PyType_Ready(&dataset_type) || PyType_Ready(&loader_type)) return -1;
    return ltpy_add_functions(m, data_methods);
}
