/* Helpers shared by src/api/nn_*.c: argument checks whose errors name the
 * function, the argument and the values, and the one-node constructor. */
#ifndef LT_API_NN_UTIL_H
#define LT_API_NN_UTIL_H

#include "api.h"
#include "nn.h"

/* A pair argument such as stride: NULL means `def`; each value >= min. */
static inline int nn_pair(const char *fn, const char *arg, const int64_t *v, int64_t def, int64_t min, int64_t out[2]) {
    for (int i = 0; i < 2; i++) {
        out[i] = v ? v[i] : def;
        if (out[i] < min) {
            err_set(LT_ERR_ARG, "%s: argument '%s' is [%lld, %lld]; each value must be >= %lld", fn, arg,
                    (long long)out[0], (long long)(v ? v[1] : def), (long long)min);
            return -1;
        }
    }
    return 0;
}

static inline int nn_float(const char *fn, const char *arg, const lt_tensor *t) {
    if (dtype_is_float((lt_dtype)t->dtype)) return 0;
    err_set(LT_ERR_DTYPE, "%s: argument '%s' must be a floating dtype, got %s", fn, arg, dtype_name((lt_dtype)t->dtype));
    return -1;
}

/* An empty index may have any dtype, as in PyTorch: no value is read. */
static inline int nn_int64(const char *fn, const char *arg, const lt_tensor *t) {
    if (t->dtype == LT_I64 || lt_numel(t) == 0) return 0;
    err_set(LT_ERR_DTYPE, "%s: argument '%s' must be int64, got %s", fn, arg, dtype_name((lt_dtype)t->dtype));
    return -1;
}

/* index_select and embedding take int32 indices too, as PyTorch (gather
 * and the losses' targets do not). */
static inline int nn_index_dtype(const char *fn, const char *arg, const lt_tensor *t) {
    if (t->dtype == LT_I64 || t->dtype == LT_I32) return 0;
    err_set(LT_ERR_DTYPE, "%s: argument '%s' must be int64 or int32, got %s", fn, arg, dtype_name((lt_dtype)t->dtype));
    return -1;
}

/* t must have ref's dtype (ref_arg names it in the message). */
static inline int nn_same_dtype(const char *fn, const char *arg, const lt_tensor *t, const char *ref_arg,
                                const lt_tensor *ref) {
    if (t->dtype == ref->dtype) return 0;
    err_set(LT_ERR_DTYPE, "%s: argument '%s' (%s) must have the dtype of '%s' (%s)", fn, arg,
            dtype_name((lt_dtype)t->dtype), ref_arg, dtype_name((lt_dtype)ref->dtype));
    return -1;
}

static inline int nn_ndim(const char *fn, const char *arg, const lt_tensor *t, int nd, const char *layout) {
    if (t->ndim == nd) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument '%s' must be %d-d %s, got shape %s", fn, arg, nd, layout,
            SHAPE_STR(t->ndim, t->shape));
    return -1;
}

/* grad_out must have exactly the forward output's shape. */
static inline int nn_check_grad(const char *fn, const lt_tensor *g, const int64_t expect[4]) {
    if (g->ndim == 4 && !memcmp(g->shape, expect, 4 * sizeof *expect)) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument 'grad_out' has shape %s; the forward output is %s", fn,
            SHAPE_STR(g->ndim, g->shape), SHAPE_STR(4, expect));
    return -1;
}

/* One node over the handles' values, as a new handle. NULL entries of `in`
 * are skipped (optional operands). */
static inline lt_tensor *nn_node(int op, lt_dtype dtype, int nd, const int64_t *shape, int nin, lt_tensor *const *in,
                                 int nia, const int64_t *ia, int nsc, const double *sc) {
    ir_node *v[8];
    lt_tensor *h[8]; /* the handles of the node's operands, for autograd */
    int n = 0;
    for (int i = 0; i < nin; i++)
        if (in[i] && (h[n] = in[i], !(v[n++] = func_value(in[i])))) return NULL;
    ir_node *node = ir_new(op, dtype, nd, shape, n, v, nia, ia, nsc, sc);
    lt_tensor *t = node ? func_new(node) : NULL;
    if (LT_UNLIKELY(g_ag_on) && t && ag_record(node, n, h, t)) {
        lt_free(t);
        return NULL;
    }
    return t;
}

#endif
