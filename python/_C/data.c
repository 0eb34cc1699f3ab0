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
static PyObject *ds_class_name(PyObject *self, PyObject *args) {
    int i;
    if (!PyArg_ParseTuple(args, "i", &i)) return NULL;
    const char *name = lt_dataset_class_name(((dataset_obj *)self)->d, i);
    return name ? PyUnicode_DecodeFSDefault(name) : ltpy_raise();
}
static PyMethodDef dataset_methods[] = {
    {"size", ds_size, METH_NOARGS, NULL},
    {"info", ds_info, METH_NOARGS, "(channels, height, width, classes)"},
    {"class_name", ds_class_name, METH_VARARGS, "class_name(i): an image folder's class i (its folder's name)"},
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

/* mean / std: None keeps the defaults; otherwise `channels` numbers (the C
 * API checks channels itself: other counts are left to it). */
static int channel_floats(PyObject *seq, int channels, float *out, const char *what) {
    if (seq == Py_None || (channels != 1 && channels != 3)) return 0;
    PyObject *f = PySequence_Fast(seq, "imagefolder: mean and std must be sequences of numbers");
    if (!f) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n != channels) {
        PyErr_Format(PyExc_ValueError, "ImageFolder: %s has %zd values for %d channels", what, n, channels);
        Py_DECREF(f);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(f, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(f);
            return -1;
        }
        out[i] = (float)v;
    }
    Py_DECREF(f);
    return 0;
}

/* dataset_imagefolder(dir, split, image_size, channels, resize, mean, std,
 * workers, prefetch, fail_bad); workers < 0: one per core. */
static PyObject *f_dataset_imagefolder(PyObject *m, PyObject *args) {
    (void)m;
    const char *dir, *split;
    PyObject *mean, *std;
    int workers, fail_bad;
    lt_imagefolder_opts o = lt_imagefolder_defaults();
    if (!PyArg_ParseTuple(args, "ssiiiOOiip", &dir, &split, &o.image_size, &o.channels, &o.resize, &mean, &std,
                          &workers, &o.prefetch, &fail_bad))
        return NULL;
    if (channel_floats(mean, o.channels, o.mean, "mean") || channel_floats(std, o.channels, o.std, "std")) return NULL;
    if (workers >= 0) o.workers = workers;
    o.fail_bad = fail_bad;
    return wrap_dataset(lt_dataset_imagefolder(dir, split, &o));
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
static PyObject *ld_skipped(PyObject *self, PyObject *u) {
    (void)u;
    return PyLong_FromLongLong(lt_loader_skipped(((loader_obj *)self)->l));
}
static PyMethodDef loader_methods[] = {
    {"batch", ld_batch, METH_VARARGS, "batch(epoch, b) -> (x, y)"},
    {"skipped", ld_skipped, METH_NOARGS, "broken image files skipped so far"},
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
    {"dataset_imagefolder", f_dataset_imagefolder, METH_VARARGS, NULL},
    {"loader", f_loader, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int ltpy_data_init(PyObject *m) {
    if (PyType_Ready(&dataset_type) || PyType_Ready(&loader_type)) return -1;
    return ltpy_add_functions(m, data_methods);
}
