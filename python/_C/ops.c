/* Tensors combined with Python numbers, and the binary operators. A float
 * tensor with a Python number uses the library's scalar ops (the number is a
 * node attribute, a runtime scalar: no recompiles); other combinations wrap
 * the number as a 0-d tensor of the result dtype PyTorch would choose. */
#include "ltpy.h"

int ltpy_is_number(PyObject *o) { return PyFloat_Check(o) || PyLong_Check(o); } /* bool is a PyLong */

lt_tensor *ltpy_scalar_tensor(lt_tensor *like, PyObject *num) {
    lt_dtype d = lt_dtype_of(like);
    if (PyFloat_Check(num)) {
        if (!ltpy_is_float(d)) d = LT_F32;
    } else if (!PyBool_Check(num) && d == LT_BOOL) {
        d = LT_I64;
    }
    double v = PyFloat_AsDouble(num);
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    lt_tensor *t = lt_full(v, d, 0, NULL);
    if (!t) ltpy_raise();
    return t;
}

static lt_tensor *apply(lt_tensor *a, lt_tensor *b, int op) {
    switch (op) {
    case '+': return lt_add(a, b);
    case '-': return lt_sub(a, b);
    case '*': return lt_mul(a, b);
    case '/': return lt_div(a, b);
    case '^': return lt_pow(a, b);
    case Py_LT: return lt_lt(a, b);
    case Py_LE: return lt_le(a, b);
    case Py_EQ: return lt_eq(a, b);
    case Py_NE: return lt_ne(a, b);
    case Py_GT: return lt_gt(a, b);
    case Py_GE: return lt_ge(a, b);
    case 'M': return lt_maximum(a, b);
    case 'm': return lt_minimum(a, b);
    }
    return NULL;
}

static lt_tensor *apply_(lt_tensor *a, lt_tensor *b, int op) {
    switch (op) {
    case '+': return lt_add_(a, b);
    case '-': return lt_sub_(a, b);
    case '*': return lt_mul_(a, b);
    case '/': return lt_div_(a, b);
    case '^': return lt_pow_(a, b);
    case 'M': return lt_maximum_(a, b);
    case 'm': return lt_minimum_(a, b);
    }
    PyErr_SetString(PyExc_TypeError, "lazytensor: this operator has no in-place form");
    return NULL;
}

/* A float tensor with a number, on the scalar ops; NULL h with no error set:
 * no scalar form for this op. */
static lt_tensor *scalar_op(lt_tensor *a, double s, int op, bool inplace) {
    switch (op) {
    case '+': return inplace ? lt_add_scalar_(a, s) : lt_add_scalar(a, s);
    case '-': return inplace ? lt_add_scalar_(a, -s) : lt_add_scalar(a, -s);
    case '*': return inplace ? lt_mul_scalar_(a, s) : lt_mul_scalar(a, s);
    case '^': return inplace ? lt_pow_scalar_(a, s) : lt_pow_scalar(a, s);
    }
    return NULL;
}

static int scalar_fast(lt_tensor *t, PyObject *num, int op) {
    return (op == '+' || op == '-' || op == '*' || op == '^') && ltpy_is_float(lt_dtype_of(t)) && !PyBool_Check(num);
}

PyObject *ltpy_binary(PyObject *a, PyObject *b, int op) {
    int ta = ltpy_is_tensor(a), tb = ltpy_is_tensor(b);
    if (ta && tb) return ltpy_wrap(apply(ltpy_h(a), ltpy_h(b), op));
    if (ta && ltpy_is_number(b)) {
        lt_tensor *x = ltpy_h(a);
        if (scalar_fast(x, b, op)) {
            double s = PyFloat_AsDouble(b);
            if (s == -1.0 && PyErr_Occurred()) return NULL;
            return ltpy_wrap(scalar_op(x, s, op, false));
        }
        lt_tensor *sb = ltpy_scalar_tensor(x, b);
        if (!sb) return NULL;
        lt_tensor *r = apply(x, sb, op);
        lt_free(sb);
        return ltpy_wrap(r);
    }
    if (tb && ltpy_is_number(a)) {
        lt_tensor *y = ltpy_h(b);
        if ((op == '+' || op == '*') && scalar_fast(y, a, op)) { /* commutative */
            double s = PyFloat_AsDouble(a);
            if (s == -1.0 && PyErr_Occurred()) return NULL;
            return ltpy_wrap(scalar_op(y, s, op, false));
        }
        lt_tensor *sa = ltpy_scalar_tensor(y, a);
        if (!sa) return NULL;
        lt_tensor *r = apply(sa, y, op);
        lt_free(sa);
        return ltpy_wrap(r);
    }
    Py_RETURN_NOTIMPLEMENTED;
}

/* a <op>= b: returns a (new reference) with its value replaced. */
PyObject *ltpy_inplace(PyObject *a, PyObject *b, int op) {
    lt_tensor *x = ltpy_h(a), *r;
    if (ltpy_is_tensor(b)) {
        r = apply_(x, ltpy_h(b), op);
    } else if (ltpy_is_number(b)) {
        if (scalar_fast(x, b, op)) {
            double s = PyFloat_AsDouble(b);
            if (s == -1.0 && PyErr_Occurred()) return NULL;
            r = scalar_op(x, s, op, true);
        } else {
            lt_tensor *sb = ltpy_scalar_tensor(x, b);
            if (!sb) return NULL;
            r = apply_(x, sb, op);
            lt_free(sb);
        }
    } else {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!r) return PyErr_Occurred() ? NULL : ltpy_raise();
    Py_INCREF(a);
    return a;
}
