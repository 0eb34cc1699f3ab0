/* Reductions and softmax: shape rules and dtype rules. */
#include "api.h"

static lt_tensor *finish(const char *fn, ir_node *n) {
    (void)fn;
    return n ? func_new(n) : NULL;
}

/* Output shape of reducing `mask` (bits = dims) with or without keepdim. */
static int reduced_shape(const lt_tensor *a, uint64_t mask, bool keepdim, int64_t *out) {
    int nd = 0;
    for (int d = 0; d < a->ndim; d++) {
        if ((mask >> d) & 1) {
            if (keepdim) out[nd++] = 1;
        } else {
            out[nd++] = a->shape[d];
        }
    }
    return nd;
}

static lt_tensor *reduce(const char *fn, int op, lt_tensor *a, int naxes, const int *axes, bool keepdim, double corr) {
    API_ENTER();
    if (api_check(fn, "a", a)) return NULL;
    if (naxes < 0 || naxes > LT_MAX_DIMS || (naxes && !axes))
        return err_set(LT_ERR_ARG, "%s: argument 'naxes' is %d (axes %s)", fn, naxes, axes ? "given" : "NULL");
    uint64_t mask = 0;
    if (naxes == 0) {
        mask = a->ndim ? (1ull << a->ndim) - 1 : 0;
    } else {
        for (int i = 0; i < naxes; i++) {
            int d = dim_wrap(axes[i], a->ndim);
            if (d < 0)
                return err_set(LT_ERR_ARG, "%s: argument 'axes[%d]' = %d is out of range for a %d-d tensor", fn, i,
                               axes[i], a->ndim);
            if (a->ndim == 0) continue; /* dim 0 / -1 of a 0-d tensor is the tensor */
            if ((mask >> d) & 1) return err_set(LT_ERR_ARG, "%s: argument 'axes' names dim %d twice", fn, d);
            mask |= 1ull << d;
        }
    }
    lt_dtype dt = (lt_dtype)a->dtype;
    lt_dtype od = dt;
    if (op == LT_OP_SUM && !dtype_is_float(dt)) od = LT_I64;
    if ((op == LT_OP_MEAN || op == LT_OP_VAR || op == LT_OP_STD) && !dtype_is_float(dt))
        return err_set(LT_ERR_DTYPE, "%s: argument 'a' must be a floating dtype, got %s", fn, dtype_name(dt));
    if (op == LT_OP_MAX || op == LT_OP_MIN)
        for (int d = 0; d < a->ndim; d++)
            if (((mask >> d) & 1) && a->shape[d] == 0)
                return err_set(LT_ERR_SHAPE, "%s: reduction of argument 'a' over dim %d of size 0 has no identity (shape %s)", fn, d,
                               SHAPE_STR(a->ndim, a->shape));
    int64_t shape[LT_MAX_DIMS];
    int nd = reduced_shape(a, mask, keepdim, shape);
    ir_node *v = func_value(a);
    if (!v) return NULL;
    int64_t ia[2] = {(int64_t)mask, keepdim};
    int nsc = op == LT_OP_VAR || op == LT_OP_STD; /* the correction */
    ir_node *n = ir_new(op, od, nd, shape, 1, &v, 2, ia, nsc, &corr);
    lt_tensor *t = api_new_of(n, a);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_sum(lt_tensor *a, int naxes, const int *axes, bool keepdim) {
    return reduce("lt_sum", LT_OP_SUM, a, naxes, axes, keepdim, 0);
}
lt_tensor *lt_mean(lt_tensor *a, int naxes, const int *axes, bool keepdim) {
    return reduce("lt_mean", LT_OP_MEAN, a, naxes, axes, keepdim, 0);
}
lt_tensor *lt_max(lt_tensor *a, int naxes, const int *axes, bool keepdim) {
    return reduce("lt_max", LT_OP_MAX, a, naxes, axes, keepdim, 0);
}
lt_tensor *lt_min(lt_tensor *a, int naxes, const int *axes, bool keepdim) {
    return reduce("lt_min", LT_OP_MIN, a, naxes, axes, keepdim, 0);
}
lt_tensor *lt_var(lt_tensor *a, int naxes, const int *axes, double correction, bool keepdim) {
    return reduce("lt_var", LT_OP_VAR, a, naxes, axes, keepdim, correction);
}
lt_tensor *lt_std(lt_tensor *a, int naxes, const int *axes, double correction, bool keepdim) {
    return reduce("lt_std", LT_OP_STD, a, naxes, axes, keepdim, correction);
}

lt_tensor *lt_cumsum(lt_tensor *a, int dim, bool reverse) {
    API_ENTER();
    if (api_check("lt_cumsum", "a", a)) return NULL;
    int d = dim_wrap(dim, a->ndim);
    if (d < 0)
        return err_set(LT_ERR_ARG, "lt_cumsum: argument 'dim' = %d is out of range for a %d-d tensor", dim, a->ndim);
    lt_dtype od = dtype_is_float((lt_dtype)a->dtype) ? (lt_dtype)a->dtype : LT_I64;
    ir_node *v = func_value(a);
    if (!v) return NULL;
    int64_t ia[2] = {a->ndim ? d : 0, reverse};
    ir_node *n = ir_new(LT_OP_CUMSUM, od, a->ndim, a->shape, 1, &v, 2, ia, 0, NULL);
    lt_tensor *t = api_new_of(n, a);
    API_LEAVE("lt_cumsum", t);
    return t;
}

static lt_tensor *argreduce(const char *fn, int op, lt_tensor *a, int dim, bool keepdim) {
    API_ENTER();
    if (api_check(fn, "a", a)) return NULL;
    int d = dim_wrap(dim, a->ndim);
    if (d < 0) return err_set(LT_ERR_ARG, "%s: argument 'dim' = %d is out of range for a %d-d tensor", fn, dim, a->ndim);
    /* PyTorch has no bool kernel; it answers without one only when nothing is compared */
    if (a->dtype == LT_BOOL && a->numel > 0 && a->ndim && a->shape[d] != 1)
        return err_set(LT_ERR_DTYPE, "%s: argument 'a' must not be bool", fn);
    if (a->ndim && a->shape[d] == 0)
        return err_set(LT_ERR_SHAPE, "%s: dim %d of shape %s is empty", fn, d, SHAPE_STR(a->ndim, a->shape));
    int64_t shape[LT_MAX_DIMS];
    int nd = reduced_shape(a, a->ndim ? 1ull << d : 0, keepdim, shape);
    ir_node *v = func_value(a);
    if (!v) return NULL;
    int64_t ia[2] = {a->ndim ? d : 0, keepdim};
    lt_tensor *t = finish(fn, ir_new(op, LT_I64, nd, shape, 1, &v, 2, ia, 0, NULL));
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_argmax(lt_tensor *a, int dim, bool keepdim) { return argreduce("lt_argmax", LT_OP_ARGMAX, a, dim, keepdim); }
lt_tensor *lt_argmin(lt_tensor *a, int dim, bool keepdim) { return argreduce("lt_argmin", LT_OP_ARGMIN, a, dim, keepdim); }

static lt_tensor *softmax(const char *fn, int op, lt_tensor *a, int dim) {
    API_ENTER();
    if (api_check(fn, "a", a)) return NULL;
    int d = dim_wrap(dim, a->ndim);
    if (d < 0) return err_set(LT_ERR_ARG, "%s: argument 'dim' = %d is out of range for a %d-d tensor", fn, dim, a->ndim);
    /* PyTorch has no integer or bool kernel; it answers without one only
     * when there is nothing to compute: an empty tensor of the input's dtype */
    if (!dtype_is_float((lt_dtype)a->dtype) && a->numel == 0) return lt_zeros((lt_dtype)a->dtype, a->ndim, a->shape);
    if (!dtype_is_float((lt_dtype)a->dtype))
        return err_set(LT_ERR_DTYPE, "%s: argument 'a' must be a floating dtype, got %s", fn,
                       dtype_name((lt_dtype)a->dtype));
    ir_node *v = func_value(a);
    if (!v) return NULL;
    int64_t ia[1] = {a->ndim ? d : 0};
    ir_node *n = ir_new(op, (lt_dtype)a->dtype, a->ndim, a->shape, 1, &v, 1, ia, 0, NULL);
    lt_tensor *t = api_new_of(n, a);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_softmax(lt_tensor *a, int dim) { return softmax("lt_softmax", LT_OP_SOFTMAX, a, dim); }
lt_tensor *lt_log_softmax(lt_tensor *a, int dim) { return softmax("lt_log_softmax", LT_OP_LOG_SOFTMAX, a, dim); }

/* The backward of softmax / log_softmax given the forward's output, as
 * PyTorch's _softmax_backward_data: out (g - sum(g out)) and
 * g - exp(out) sum(g). A backward formula, so several public ops. */
static lt_tensor *softmax_bwd(const char *fn, bool log, lt_tensor *g, lt_tensor *out, int dim) {
    if (api_check(fn, "grad_out", g) || api_check(fn, "out", out)) return NULL;
    if (g->dtype != out->dtype || !dtype_is_float((lt_dtype)g->dtype))
        return err_set(LT_ERR_DTYPE, "%s: arguments 'grad_out' (%s) and 'out' (%s) must share one floating dtype", fn,
                       dtype_name((lt_dtype)g->dtype), dtype_name((lt_dtype)out->dtype));
    if (!shape_eq(g->ndim, g->shape, out->ndim, out->shape))
        return err_set(LT_ERR_SHAPE, "%s: arguments 'grad_out' %s and 'out' %s must have one shape", fn,
                       SHAPE_STR(g->ndim, g->shape), SHAPE_STR(out->ndim, out->shape));
    if (dim_wrap(dim, g->ndim) < 0)
        return err_set(LT_ERR_ARG, "%s: argument 'dim' = %d is out of range for a %d-d tensor", fn, dim, g->ndim);
    lt_tensor *p = log ? NULL : lt_mul(g, out);
    lt_tensor *s = lt_sum(log ? g : p, 1, &dim, true), *t;
    if (log) {
        lt_tensor *e = lt_exp(out), *m = lt_mul(e, s);
        t = lt_sub(g, m);
        lt_free(e);
        lt_free(m);
    } else {
        lt_tensor *d = lt_sub(g, s);
        t = lt_mul(out, d);
        lt_free(d);
    }
    lt_free(p);
    lt_free(s);
    return t;
}

lt_tensor *lt_softmax_backward(lt_tensor *grad_out, lt_tensor *out, int dim) {
    return softmax_bwd("lt_softmax_backward", false, grad_out, out, dim);
}
lt_tensor *lt_log_softmax_backward(lt_tensor *grad_out, lt_tensor *out, int dim) {
    return softmax_bwd("lt_log_softmax_backward", true, grad_out, out, dim);
}
