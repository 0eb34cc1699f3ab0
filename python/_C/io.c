/* Safetensors files: save(path, names, tensors, metadata) and
 * load(path) -> (list of (name, tensor), metadata dict). */
#include "ltpy.h"

#include <stdlib.h>

static PyObject *f_save(PyObject *m, PyObject *args) {
    (void)m;
    const char *path;
    PyObject *names, *tensors, *meta;
    if (!PyArg_ParseTuple(args, "sO!O!O!", &path, &PyList_Type, &names, &PyList_Type, &tensors, &PyDict_Type, &meta))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(names), nm = PyDict_Size(meta);
    if (n != PyList_GET_SIZE(tensors)) return PyErr_Format(PyExc_ValueError, "save: %zd names for %zd tensors", n,
                                                           PyList_GET_SIZE(tensors));
    const char **cn = PyMem_Calloc((size_t)n + 1, sizeof *cn), **mk = PyMem_Calloc((size_t)nm + 1, sizeof *mk),
               **mv = PyMem_Calloc((size_t)nm + 1, sizeof *mv);
    lt_tensor **ct = PyMem_Calloc((size_t)n + 1, sizeof *ct);
    PyObject *r = NULL;
    if (!cn || !ct || !mk || !mv) {
        r = PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(cn[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(names, i))) ||
            ltpy_tensor_arg(PyList_GET_ITEM(tensors, i), "save", "tensors", &ct[i]))
            goto done;
    PyObject *k, *v;
    Py_ssize_t pos = 0, j = 0;
    while (PyDict_Next(meta, &pos, &k, &v)) {
        if (!(mk[j] = PyUnicode_AsUTF8(k)) || !(mv[j] = PyUnicode_AsUTF8(v))) goto done;
        j++;
    }
    if (lt_save_safetensors_meta(path, (int)n, cn, ct, (int)nm, mk, mv)) {
        ltpy_raise();
        goto done;
    }
    r = Py_None;
    Py_INCREF(r);
done:
    PyMem_Free(cn), PyMem_Free(ct), PyMem_Free(mk), PyMem_Free(mv);
    return r;
}

static void free_strings(char **s, int n) {
    for (int i = 0; i < n && s; i++) free(s[i]);
    free(s);
}

static PyObject *f_load(PyObject *m, PyObject *args) {
    (void)m;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    char **names = NULL, **mk = NULL, **mv = NULL;
    lt_tensor **ts = NULL;
    int nm = 0, n = lt_load_safetensors_meta(path, &names, &ts, &nm, &mk, &mv);
    if (n < 0) return ltpy_raise();
    PyObject *items = PyList_New(0), *meta = PyDict_New(), *r = NULL;
    int i = 0;
    if (!items || !meta) goto done;
    for (; i < n; i++) { /* each tensor's ownership moves to its Python object */
        PyObject *t = ltpy_wrap(ts[i]);
        ts[i] = NULL;
        PyObject *pair = t ? Py_BuildValue("(sN)", names[i], t) : NULL;
        if (!pair || PyList_Append(items, pair)) {
            Py_XDECREF(pair);
            i++;
            goto done;
        }
        Py_DECREF(pair);
    }
    for (int j = 0; j < nm; j++) {
        PyObject *v = PyUnicode_FromString(mv[j]);
        if (!v || PyDict_SetItemString(meta, mk[j], v)) {
            Py_XDECREF(v);
            goto done;
        }
        Py_DECREF(v);
    }
    r = PyTuple_Pack(2, items, meta);
done:
    for (int j = i; j < n; j++) lt_free(ts[j]);
    free(ts);
    free_strings(names, n);
    free_strings(mk, nm);
    free_strings(mv, nm);
    Py_XDECREF(items);
    Py_XDECREF(meta);
    return r;
}

PyMethodDef ltpy_io_methods[] = {
    {"save", f_save, METH_VARARGS, NULL},
    {"load", f_load, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};
