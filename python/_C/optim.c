/* _C.Optimizer and _C.Scheduler: the library's optimizers (PyTorch 1.13's
 * formulas, hyperparameters as runtime scalars) and schedules. The Python
 * classes in lazytensor.optim own one of these. An optimizer keeps its
 * parameters' Python objects alive, since lt_optim borrows their handles. */
#include "ltpy.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    lt_optim *o;
    PyObject *params; /* list of every group's tensors */
} optim_obj;

typedef struct {
    PyObject_HEAD
    lt_sched *s;
    PyObject *opt;
} sched_obj;

static void optim_dealloc(PyObject *self) {
    optim_obj *o = (optim_obj *)self;
    lt_optim_free(o->o);
    Py_XDECREF(o->params);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *add_group(PyObject *self, PyObject *list) {
    optim_obj *o = (optim_obj *)self;
    int n;
    lt_tensor **h = ltpy_handles(list, "add_param_group", "params", &n);
    if (!h) return NULL;
    int g = lt_optim_add_group(o->o, n, h);
    PyMem_Free(h);
    if (g < 0) return ltpy_raise();
    PyObject *f = PySequence_Fast(list, "");
    for (Py_ssize_t i = 0; f && i < PySequence_Fast_GET_SIZE(f); i++)
        PyList_Append(o->params, PySequence_Fast_GET_ITEM(f, i));
    Py_XDECREF(f);
    return PyErr_Occurred() ? NULL : PyLong_FromLong(g);
}

static PyObject *o_set(PyObject *self, PyObject *args) {
    int g;
    const char *name;
    double v;
    if (!PyArg_ParseTuple(args, "isd", &g, &name, &v)) return NULL;
    if (lt_optim_set(((optim_obj *)self)->o, g, name, v)) return ltpy_raise();
    Py_RETURN_NONE;
}
static PyObject *o_get(PyObject *self, PyObject *args) {
    int g;
    const char *name;
    if (!PyArg_ParseTuple(args, "is", &g, &name)) return NULL;
    return PyFloat_FromDouble(lt_optim_get(((optim_obj *)self)->o, g, name));
}
static PyObject *o_step(PyObject *self, PyObject *u) {
    (void)u;
    if (lt_optim_step(((optim_obj *)self)->o)) return ltpy_raise();
    Py_RETURN_NONE;
}
static PyObject *o_zero_grad(PyObject *self, PyObject *u) {
    (void)u;
    lt_optim_zero_grad(((optim_obj *)self)->o);
    if (ltpy_check()) return NULL;
    Py_RETURN_NONE;
}
/* state() -> list of (name, tensor): new handles aliasing the state. */
static PyObject *o_state(PyObject *self, PyObject *u) {
    (void)u;
    lt_optim *op = ((optim_obj *)self)->o;
    int n = lt_optim_state(op, 0, NULL, NULL);
    if (n < 0) return ltpy_raise();
    const char **names = PyMem_Calloc((size_t)n + 1, sizeof *names);
    lt_tensor **ts = PyMem_Calloc((size_t)n + 1, sizeof *ts);
    PyObject *list = names && ts ? PyList_New(0) : PyErr_NoMemory();
    if (list && lt_optim_state(op, n, names, ts) != n) {
        Py_CLEAR(list);
        ltpy_raise();
    }
    for (int i = 0; list && i < n; i++) {
        PyObject *item = Py_BuildValue("(sN)", names[i], ltpy_wrap(lt_detach(ts[i])));
        if (!item || PyList_Append(list, item)) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    PyMem_Free(names);
    PyMem_Free(ts);
    return list;
}
static PyObject *o_load_state(PyObject *self, PyObject *args) {
    PyObject *names, *tensors;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &names, &PyList_Type, &tensors)) return NULL;
    int n;
    lt_tensor **h = ltpy_handles(tensors, "load_state_dict", "tensors", &n);
    if (!h) return NULL;
    const char **cn = PyMem_Calloc((size_t)n + 1, sizeof *cn);
    PyObject *r = NULL;
    if (!cn || PyList_GET_SIZE(names) != n) {
        if (cn) PyErr_SetString(PyExc_ValueError, "load_state_dict: names and tensors differ in length");
        else PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (!(cn[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(names, i)))) goto done;
    if (lt_optim_load_state(((optim_obj *)self)->o, n, cn, h)) {
        ltpy_raise();
        goto done;
    }
    r = Py_None;
    Py_INCREF(r);
done:
    PyMem_Free(h);
    PyMem_Free(cn);
    return r;
}
static PyObject *o_get_step(PyObject *self, PyObject *o) {
    int i;
    if (ltpy_int_arg(o, "get_step", "i", &i)) return NULL;
    return PyLong_FromLongLong(lt_optim_get_step(((optim_obj *)self)->o, i));
}
static PyObject *o_set_step(PyObject *self, PyObject *args) {
    int i;
    long long s;
    if (!PyArg_ParseTuple(args, "iL", &i, &s)) return NULL;
    if (lt_optim_set_step(((optim_obj *)self)->o, i, s)) return ltpy_raise();
    Py_RETURN_NONE;
}

static PyMethodDef optim_methods[] = {
    {"add_group", add_group, METH_O, NULL},
    {"set", o_set, METH_VARARGS, NULL},
    {"get", o_get, METH_VARARGS, NULL},
    {"step", o_step, METH_NOARGS, NULL},
    {"zero_grad", o_zero_grad, METH_NOARGS, NULL},
    {"state", o_state, METH_NOARGS, NULL},
    {"load_state", o_load_state, METH_VARARGS, NULL},
    {"get_step", o_get_step, METH_O, NULL},
    {"set_step", o_set_step, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject optim_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazytensor._C.Optimizer",
    .tp_basicsize = sizeof(optim_obj),
    .tp_dealloc = optim_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = optim_methods,
};

/* optimizer(kind, params, lr, a, b, c, d, flag):
 * "sgd": momentum, dampening, weight_decay, (unused), nesterov;
 * "adam"/"adamw": beta1, beta2, eps, weight_decay, amsgrad. */
static PyObject *f_optimizer(PyObject *m, PyObject *args) {
    (void)m;
    const char *kind;
    PyObject *params;
    double lr, a, b, c, d;
    int flag;
    if (!PyArg_ParseTuple(args, "sOdddddp", &kind, &params, &lr, &a, &b, &c, &d, &flag)) return NULL;
    int n;
    lt_tensor **h = ltpy_handles(params, kind, "params", &n);
    if (!h) return NULL;
    lt_optim *o = !strcmp(kind, "sgd")     ? lt_optim_sgd(n, h, lr, a, b, c, flag)
                  : !strcmp(kind, "adam")  ? lt_optim_adam(n, h, lr, a, b, c, d, flag)
                  : !strcmp(kind, "adamw") ? lt_optim_adamw(n, h, lr, a, b, c, d, flag)
                                           : NULL;
    PyMem_Free(h);
    if (!o) return lt_error() ? ltpy_raise() : PyErr_Format(PyExc_ValueError, "optimizer: unknown kind '%s'", kind);
    optim_obj *r = PyObject_New(optim_obj, &optim_type);
    PyObject *keep = PySequence_List(params);
    if (!r || !keep) {
        lt_optim_free(o);
        Py_XDECREF(keep);
        if (r) { r->o = NULL, r->params = NULL; Py_DECREF(r); }
        return NULL;
    }
    r->o = o;
    r->params = keep;
    return (PyObject *)r;
}

static void sched_dealloc(PyObject *self) {
    sched_obj *s = (sched_obj *)self;
    lt_sched_free(s->s);
    Py_XDECREF(s->opt);
    Py_TYPE(self)->tp_free(self);
}
static PyObject *s_step(PyObject *self, PyObject *u) {
    (void)u;
    lt_sched_step(((sched_obj *)self)->s);
    if (ltpy_check()) return NULL;
    Py_RETURN_NONE;
}
static PyObject *s_epoch(PyObject *self, PyObject *u) {
    (void)u;
    return PyLong_FromLongLong(lt_sched_epoch(((sched_obj *)self)->s));
}
static PyMethodDef sched_methods[] = {
    {"step", s_step, METH_NOARGS, NULL},
    {"epoch", s_epoch, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyTypeObject sched_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazytensor._C.Scheduler",
    .tp_basicsize = sizeof(sched_obj),
    .tp_dealloc = sched_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = sched_methods,
};

/* scheduler(optimizer, kind, n, x): "step" (step_size, gamma), "cosine" (t_max, eta_min). */
static PyObject *f_scheduler(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *opt;
    const char *kind;
    long long n;
    double x;
    if (!PyArg_ParseTuple(args, "O!sLd", &optim_type, &opt, &kind, &n, &x)) return NULL;
    lt_optim *o = ((optim_obj *)opt)->o;
    lt_sched *s = !strcmp(kind, "step") ? lt_sched_step_lr(o, n, x) : !strcmp(kind, "cosine") ? lt_sched_cosine(o, n, x) : NULL;
    if (!s) return lt_error() ? ltpy_raise() : PyErr_Format(PyExc_ValueError, "scheduler: unknown kind '%s'", kind);
    sched_obj *r = PyObject_New(sched_obj, &sched_type);
    if (!r) {
        lt_sched_free(s);
        return NULL;
    }
    r->s = s;
    r->opt = opt;
    Py_INCREF(opt);
    return (PyObject *)r;
}

static PyMethodDef optim_module_methods[] = {
    {"optimizer", f_optimizer, METH_VARARGS, NULL},
    {"scheduler", f_scheduler, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int ltpy_optim_init(PyObject *m) {
    if (PyType_Ready(&optim_type) || PyType_Ready(&sched_type)) return -1;
    return ltpy_add_functions(m, optim_module_methods);
}
