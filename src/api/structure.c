/* matmul, cat, clone/contiguous. */
#include "api.h"

/* PyTorch checks matmul's dtypes only where it multiplies: with an empty
 * operand (nothing to multiply: the result is empty or zeros) a bool or
 * mixed-dtype pair is accepted, and the result takes the dtype of the
 * operand that PyTorch's kernel chooses (mm and bmm: 'a', the matrix-vector
 * forms: 'b'). A floating result goes through a cast of the other operand,
 * so that gradients flow; bool and integer results need none. */
static lt_tensor *matmul(lt_tensor *a, lt_tensor *b, int out);
static lt_tensor *matmul_empty(lt_tensor *a, lt_tensor *b, int nd, const int64_t *shape) {
    bool take_a = b->ndim == 2 || (b->ndim > 2 && a->ndim == 1);
    lt_dtype dt = (lt_dtype)(take_a ? a->dtype : b->dtype);
    if (!dtype_is_float(dt)) return lt_zeros(dt, nd, shape);
    lt_tensor *c = lt_to_dtype(take_a ? b : a, dt);
    lt_tensor *t = c ? (take_a ? matmul(a, c, dt) : matmul(c, b, dt)) : NULL;
    lt_free(c);
    return t;
}

/* out: the result's dtype; -1: a's (all but nn_matmul_wide). */
static lt_tensor *matmul(lt_tensor *a, lt_tensor *b, int out) {
    API_ENTER();
    if (api_check("lt_matmul", "a", a) || api_check("lt_matmul", "b", b)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return err_set(LT_ERR_SHAPE, "lt_matmul: both arguments need at least 1 dim, got 'a' %s and 'b' %s",
                       SHAPE_STR(a->ndim, a->shape), SHAPE_STR(b->ndim, b->shape));
    if ((a->dtype != b->dtype || a->dtype == LT_BOOL) && ((a->ndim == 1 && b->ndim == 1) || (a->numel && b->numel)))
        return err_set(LT_ERR_DTYPE, "lt_matmul: arguments 'a' (%s) and 'b' (%s) must share one non-bool dtype",
                       dtype_name((lt_dtype)a->dtype), dtype_name((lt_dtype)b->dtype));
    int64_t k = a->shape[a->ndim - 1], kb = b->shape[b->ndim >= 2 ? b->ndim - 2 : 0];
    if (k != kb)
        return err_set(LT_ERR_SHAPE, "lt_matmul: 'a' %s and 'b' %s cannot be multiplied (%lld != %lld)",
                       SHAPE_STR(a->ndim, a->shape), SHAPE_STR(b->ndim, b->shape), (long long)k, (long long)kb);
    int abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
    int64_t shape[LT_MAX_DIMS + 1];
    int nd = shape_broadcast(abat, a->shape, bbat, b->shape, shape);
    if (nd < 0)
        return err_set(LT_ERR_SHAPE, "lt_matmul: batch dims of 'a' %s and 'b' %s do not broadcast",
                       SHAPE_STR(a->ndim, a->shape), SHAPE_STR(b->ndim, b->shape));
    if (a->ndim >= 2) shape[nd++] = a->shape[a->ndim - 2];
    if (b->ndim >= 2) shape[nd++] = b->shape[b->ndim - 1];
    if (nd > LT_MAX_DIMS) return err_set(LT_ERR_SHAPE, "lt_matmul: result has more than %d dims", LT_MAX_DIMS);
    if (a->dtype != b->dtype || a->dtype == LT_BOOL) return matmul_empty(a, b, nd, shape);
    ir_node *v[2] = {func_value(a), func_value(b)};
    if (!v[0] || !v[1]) return NULL;
    ir_node *n = ir_new(LT_OP_MATMUL, out < 0 ? (lt_dtype)a->dtype : (lt_dtype)out, nd, shape, 2, v, 0, NULL, 0, NULL);
    lt_tensor *t = n ? func_new(n) : NULL;
    lt_tensor *ab[2] = {a, b};
    if (LT_UNLIKELY(g_ag_on) && t && ag_record(n, 2, ab, t)) {
        lt_free(t);
        return NULL;
    }
    API_LEAVE("lt_matmul", t);
    return t;
}

lt_tensor *lt_matmul(lt_tensor *a, lt_tensor *b) {
    if (LT_LIKELY(!g_autocast)) return matmul(a, b, -1);
    lt_tensor *in[2] = {a, b}, *tmp[2]; /* autocast: lower-precision list */
    if (api_autocast_args(2, in, tmp, LT_F32, LT_BF16)) return NULL;
    lt_tensor *t = matmul(in[0], in[1], -1);
    api_autocast_free(2, tmp);
    return t;
}

lt_tensor *nn_matmul_wide(lt_tensor *a, lt_tensor *b) {
    if (api_check("nn_matmul_wide", "a", a) || api_check("nn_matmul_wide", "b", b)) return NULL;
    if (a->dtype != LT_BF16 || b->dtype != LT_BF16)
        return err_set(LT_ERR_DTYPE, "nn_matmul_wide: arguments 'a' (%s) and 'b' (%s) must be bfloat16",
                       dtype_name((lt_dtype)a->dtype), dtype_name((lt_dtype)b->dtype));
    return matmul(a, b, LT_F32);
}

lt_tensor *lt_flip(lt_tensor *a, int ndims, const int *dims) {
    API_ENTER();
    if (api_check("lt_flip", "a", a)) return NULL;
    if (ndims < 0 || ndims > LT_MAX_DIMS || (ndims && !dims))
        return err_set(LT_ERR_ARG, "lt_flip: argument 'ndims' is %d (dims %s)", ndims, dims ? "given" : "NULL");
    uint64_t mask = 0;
    for (int i = 0; i < ndims; i++) {
        int d = dim_wrap(dims[i], a->ndim);
        if (d < 0)
            return err_set(LT_ERR_ARG, "lt_flip: argument 'dims[%d]' = %d is out of range for a %d-d tensor", i, dims[i],
                           a->ndim);
        if ((mask >> d) & 1) return err_set(LT_ERR_ARG, "lt_flip: argument 'dims' names dim %d twice", d);
        if (a->ndim) mask |= 1ull << d;
    }
    ir_node *v = func_value(a);
    if (!v) return NULL;
    int64_t ia[1] = {(int64_t)mask};
    ir_node *n = ir_new(LT_OP_FLIP, (lt_dtype)a->dtype, a->ndim, a->shape, 1, &v, 1, ia, 0, NULL);
    lt_tensor *t = api_new_of(n, a);
    API_LEAVE("lt_flip", t);
    return t;
}

lt_tensor *lt_cat(int n, lt_tensor *const *ts, int dim) {
    API_ENTER();
    if (n <= 0) return err_set(LT_ERR_ARG, "lt_cat: argument 'n' is %d (needs at least one tensor)", n);
    if (!ts) return err_set(LT_ERR_NULL, "lt_cat: argument 'tensors' is NULL");
    if (n > 65535) return err_set(LT_ERR_ARG, "lt_cat: argument 'n' is %d (at most 65535)", n);
    for (int i = 0; i < n; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "tensors[%d]", i);
        if (api_check("lt_cat", arg, ts[i])) return NULL;
    }
    const lt_tensor *a = ts[0];
    if (a->ndim == 0) return err_set(LT_ERR_SHAPE, "lt_cat: zero-dimensional tensor 'tensors[0]' cannot be concatenated");
    int d = dim_wrap(dim, a->ndim);
    if (d < 0) return err_set(LT_ERR_ARG, "lt_cat: argument 'dim' = %d is out of range for %d-d tensors", dim, a->ndim);
    int64_t shape[LT_MAX_DIMS];
    memcpy(shape, a->shape, (size_t)a->ndim * 8);
    shape[d] = 0;
    lt_dtype dt = (lt_dtype)a->dtype;
    for (int i = 0; i < n; i++) {
        const lt_tensor *b = ts[i];
        int ok = b->ndim == a->ndim;
        for (int k = 0; ok && k < a->ndim; k++) ok = k == d || b->shape[k] == a->shape[k];
        if (!ok)
            return err_set(LT_ERR_SHAPE, "lt_cat: 'tensors[%d]' %s does not match 'tensors[0]' %s outside dim %d", i,
                           SHAPE_STR(b->ndim, b->shape), SHAPE_STR(a->ndim, a->shape), d);
        shape[d] += b->shape[d];
        dt = dtype_promote(dt, (lt_dtype)b->dtype);
    }
    ir_node **v = core_malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    for (int i = 0; i < n; i++)
        if (!(v[i] = func_value(ts[i]))) {
            core_free(v);
            return NULL;
        }
    int64_t ia[1] = {d};
    ir_node *node = ir_new(LT_OP_CAT, dt, a->ndim, shape, n, v, 1, ia, 0, NULL);
    core_free(v);
    lt_tensor *t = node ? func_new(node) : NULL;
    if (LT_UNLIKELY(g_ag_on) && t && ag_record(node, n, ts, t)) {
        lt_free(t);
        return NULL;
    }
    API_LEAVE("lt_cat", t);
    return t;
}

/* A copy is a new storage holding a's value: values are immutable, so no
 * node is needed; a materialized value shares its buffer. */
static lt_tensor *copy_of(const char *fn, lt_tensor *a) {
    API_ENTER();
    if (api_check(fn, "a", a)) return NULL;
    ir_node *v = func_value(a);
    if (!v) return NULL;
    lt_tensor *t;
    if (v->op == LT_OP_DATA) {
        buffer_retain(v->buf);
        t = func_new_data(v->buf, (lt_dtype)a->dtype, a->ndim, a->shape);
    } else {
        t = func_new(v);
    }
    if (LT_UNLIKELY(g_ag_on) && t) ag_share(a, t);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_clone(lt_tensor *a) { return copy_of("lt_clone", a); }
lt_tensor *lt_contiguous(lt_tensor *a) { return copy_of("lt_contiguous", a); }
