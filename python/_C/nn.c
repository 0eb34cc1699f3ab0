/* Neural-network ops for lazytensor.nn.functional, positional arguments
 * only (the Python layer supplies torch's keywords and defaults). */
#include "ltpy.h"

#define T(o, fn, arg, h) ltpy_tensor_arg(o, fn, arg, h)
#define OT(o, fn, arg, h) ltpy_opt_tensor_arg(o, fn, arg, h)

/* conv2d(x, w, bias, stride, padding, dilation, groups) */
static PyObject *f_conv2d(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *x, *w, *b, *st, *pad, *dil;
    long long groups;
    lt_tensor *hx, *hw, *hb;
    int64_t s[2], p[2], d[2];
    if (!PyArg_ParseTuple(args, "OOOOOOL", &x, &w, &b, &st, &pad, &dil, &groups) || T(x, "conv2d", "input", &hx) ||
        T(w, "conv2d", "weight", &hw) || OT(b, "conv2d", "bias", &hb) || ltpy_pair_arg(st, "conv2d", "stride", s) ||
        ltpy_pair_arg(pad, "conv2d", "padding", p) || ltpy_pair_arg(dil, "conv2d", "dilation", d))
        return NULL;
    return ltpy_wrap(lt_conv2d(hx, hw, hb, s, p, d, groups));
}

/* max_pool2d / avg_pool2d(x, kernel, stride, padding) */
static PyObject *pool(PyObject *args, int is_max) {
    const char *fn = is_max ? "max_pool2d" : "avg_pool2d";
    PyObject *x, *k, *st, *pad;
    lt_tensor *hx;
    int64_t kk[2], s[2], p[2];
    if (!PyArg_ParseTuple(args, "OOOO", &x, &k, &st, &pad) || T(x, fn, "input", &hx) ||
        ltpy_pair_arg(k, fn, "kernel_size", kk) || ltpy_pair_arg(st, fn, "stride", s) ||
        ltpy_pair_arg(pad, fn, "padding", p))
        return NULL;
    return ltpy_wrap(is_max ? lt_max_pool2d(hx, kk, s, p) : lt_avg_pool2d(hx, kk, s, p));
}
static PyObject *f_max_pool2d(PyObject *m, PyObject *args) { (void)m; return pool(args, 1); }
static PyObject *f_avg_pool2d(PyObject *m, PyObject *args) { (void)m; return pool(args, 0); }

static PyObject *f_adaptive_avg_pool2d(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *x, *o;
    lt_tensor *hx;
    int64_t hw[2];
    if (!PyArg_ParseTuple(args, "OO", &x, &o) || T(x, "adaptive_avg_pool2d", "input", &hx) ||
        ltpy_pair_arg(o, "adaptive_avg_pool2d", "output_size", hw))
        return NULL;
    return ltpy_wrap(lt_adaptive_avg_pool2d(hx, hw));
}

/* batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps): torch's order */
static PyObject *f_batch_norm(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *x, *rm, *rv, *w, *b;
    int training;
    double mom, eps;
    lt_tensor *hx, *hrm, *hrv, *hw, *hb;
    if (!PyArg_ParseTuple(args, "OOOOOpdd", &x, &rm, &rv, &w, &b, &training, &mom, &eps) ||
        T(x, "batch_norm", "input", &hx) || OT(rm, "batch_norm", "running_mean", &hrm) ||
        OT(rv, "batch_norm", "running_var", &hrv) || OT(w, "batch_norm", "weight", &hw) ||
        OT(b, "batch_norm", "bias", &hb))
        return NULL;
    return ltpy_wrap(lt_batch_norm(hx, hw, hb, hrm, hrv, training, mom, eps));
}

static PyObject *f_linear(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *x, *w, *b = Py_None;
    lt_tensor *hx, *hw, *hb;
    if (!PyArg_ParseTuple(args, "OO|O", &x, &w, &b) || T(x, "linear", "input", &hx) ||
        T(w, "linear", "weight", &hw) || OT(b, "linear", "bias", &hb))
        return NULL;
    return ltpy_wrap(lt_linear(hx, hw, hb));
}

static PyObject *f_dropout(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *x;
    double p;
    int training;
    lt_tensor *hx;
    if (!PyArg_ParseTuple(args, "Odp", &x, &p, &training) || T(x, "dropout", "input", &hx)) return NULL;
    return ltpy_wrap(lt_dropout(hx, p, training));
}

/* Two-tensor ops: nll_loss(logp, target), mse_loss(a, b), embedding(weight, indices). */
#define TWO(py, call, a0, a1)                                                               \
    static PyObject *f_##py(PyObject *m, PyObject *args) {                                 \
        (void)m;                                                                           \
        PyObject *a, *b;                                                                   \
        lt_tensor *ha, *hb;                                                                \
        if (!PyArg_ParseTuple(args, "OO", &a, &b) || T(a, #py, a0, &ha) || T(b, #py, a1, &hb)) \
            return NULL;                                                                   \
        return ltpy_wrap(call(ha, hb));                                                    \
    }
TWO(nll_loss, lt_nll_loss, "input", "target")
TWO(mse_loss, lt_mse_loss, "input", "target")
TWO(embedding, lt_embedding, "weight", "input")

static PyObject *f_cross_entropy(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *a, *b;
    double ls;
    lt_tensor *ha, *hb;
    if (!PyArg_ParseTuple(args, "OOd", &a, &b, &ls) || T(a, "cross_entropy", "input", &ha) ||
        T(b, "cross_entropy", "target", &hb))
        return NULL;
    return ltpy_wrap(lt_cross_entropy(ha, hb, ls));
}

/* gather / index_select(x, dim, index) */
static PyObject *dim_index(PyObject *args, int gather) {
    const char *fn = gather ? "gather" : "index_select";
    PyObject *a, *ix;
    int dim;
    lt_tensor *ha, *hi;
    if (!PyArg_ParseTuple(args, "OiO", &a, &dim, &ix) || T(a, fn, "input", &ha) || T(ix, fn, "index", &hi))
        return NULL;
    lt_tensor *r = gather ? lt_gather(ha, dim, hi) : lt_index_select(ha, dim, hi);
    return r ? ltpy_wrap(r) : ltpy_raise_index();
}
static PyObject *f_gather(PyObject *m, PyObject *args) { (void)m; return dim_index(args, 1); }
static PyObject *f_index_select(PyObject *m, PyObject *args) { (void)m; return dim_index(args, 0); }

#define F(name) {#name, (PyCFunction)(void (*)(void))f_##name, METH_VARARGS, NULL}
PyMethodDef ltpy_nn_methods[] = {
    F(conv2d), F(max_pool2d), F(avg_pool2d), F(adaptive_avg_pool2d), F(batch_norm), F(linear), F(dropout),
    F(nll_loss), F(mse_loss), F(embedding), F(cross_entropy), F(gather), F(index_select),
    {NULL, NULL, 0, NULL},
};
