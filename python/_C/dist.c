/* Several processes (include/lazytensor.h, DESIGN 12) for
 * lazytensor.distributed: rank and world size, the in-place collectives and
 * the gradient average. Launched under mpirun each process is one rank;
 * otherwise the world is one rank and every collective is the identity. */
#include "ltpy.h"

#include <string.h>

static PyObject *f_dist_rank(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    if (lt_dist_init()) return ltpy_raise();
    return PyLong_FromLong(lt_dist_rank());
}

static PyObject *f_dist_world_size(PyObject *m, PyObject *u) {
    (void)m, (void)u;
    if (lt_dist_init()) return ltpy_raise();
    return PyLong_FromLong(lt_dist_world_size());
}

/* all_reduce_(t, op): op is "sum", "mean", "max" or "min". Returns t. */
static PyObject *f_all_reduce_(PyObject *m, PyObject *args) {
    (void)m;
    static const char *names[] = {"sum", "mean", "max", "min"};
    static const lt_reduce_op ops[] = {LT_REDUCE_SUM, LT_REDUCE_MEAN, LT_REDUCE_MAX, LT_REDUCE_MIN};
    PyObject *t;
    const char *op;
    lt_tensor *h;
    if (!PyArg_ParseTuple(args, "Os", &t, &op) || ltpy_tensor_arg(t, "all_reduce", "tensor", &h)) return NULL;
    for (int i = 0; i < 4; i++)
        if (!strcmp(op, names[i])) {
            if (!lt_all_reduce_(h, ops[i])) return ltpy_raise();
            Py_INCREF(t);
            return t;
        }
    return PyErr_Format(PyExc_ValueError, "all_reduce: argument 'op' = '%s' is not one of sum, mean, max, min", op);
}

/* broadcast_(t, src): t := rank src's t. Returns t. */
static PyObject *f_broadcast_(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *t;
    int src;
    lt_tensor *h;
    if (!PyArg_ParseTuple(args, "Oi", &t, &src) || ltpy_tensor_arg(t, "broadcast", "tensor", &h)) return NULL;
    if (!lt_broadcast_(h, src)) return ltpy_raise();
    Py_INCREF(t);
    return t;
}

/* average_grads(params): each gradient := its mean over the ranks (traced). */
static PyObject *f_average_grads(PyObject *m, PyObject *params) {
    (void)m;
    int n;
    lt_tensor **h = ltpy_handles(params, "average_gradients", "params", &n);
    if (!h) return NULL;
    int rc = lt_dist_average_grads(n, h);
    PyMem_Free(h);
    if (rc) return ltpy_raise();
    Py_RETURN_NONE;
}

/* A switch of the dist API set from a Python truth value. */
static PyObject *set_switch(PyObject *on, void (*set)(bool)) {
    int b = PyObject_IsTrue(on);
    if (b < 0) return NULL;
    set(b != 0);
    if (ltpy_check()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *f_set_sync_bn(PyObject *m, PyObject *on) {
    (void)m;
    return set_switch(on, lt_dist_set_sync_bn);
}

static PyObject *f_set_shard_optimizer(PyObject *m, PyObject *on) {
    (void)m;
    return set_switch(on, lt_dist_set_shard_optimizer);
}

#define F(name, flags) {#name, (PyCFunction)(void (*)(void))f_##name, flags, NULL}
PyMethodDef ltpy_dist_methods[] = {
    F(dist_rank, METH_NOARGS), F(dist_world_size, METH_NOARGS), F(all_reduce_, METH_VARARGS),
    F(broadcast_, METH_VARARGS), F(average_grads, METH_O), F(set_sync_bn, METH_O), F(set_shard_optimizer, METH_O),
    {NULL, NULL, 0, NULL},
};
