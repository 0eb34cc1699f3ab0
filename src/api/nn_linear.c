/* linear: one LINEAR node, x (..., K) @ w^T (K, O) + bias (O) -> (..., O).
 * Its backward is written with public ops (src/api/nn.h). */
#include "nn_util.h"

static lt_tensor *linear(lt_tensor *x, lt_tensor *w, lt_tensor *bias) {
    static const char fn[] = "lt_linear";
    API_ENTER();
    if (api_check(fn, "x", x) || api_check(fn, "w", w) || (bias && api_check(fn, "bias", bias))) return NULL;
    if (nn_float(fn, "x", x) || nn_same_dtype(fn, "w", w, "x", x) || nn_ndim(fn, "w", w, 2, "(O, K)") ||
        (bias && (nn_same_dtype(fn, "bias", bias, "x", x) || nn_ndim(fn, "bias", bias, 1, "(O)"))))
        return NULL;
    if (x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1])
        return err_set(LT_ERR_SHAPE, "%s: arguments 'x' %s and 'w' %s do not match (x's last dim must be K = %lld)", fn,
                       SHAPE_STR(x->ndim, x->shape), SHAPE_STR(2, w->shape), (long long)w->shape[1]);
    if (bias && bias->shape[0] != w->shape[0])
        return err_set(LT_ERR_SHAPE, "%s: argument 'bias' %s must have O = %lld elements (w %s)", fn,
                       SHAPE_STR(1, bias->shape), (long long)w->shape[0], SHAPE_STR(2, w->shape));
    int64_t shape[LT_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    shape[x->ndim - 1] = w->shape[0];
    if (shape_numel_checked(fn, x->ndim, shape) < 0) return NULL;
    lt_tensor *in[3] = {x, w, bias};
    lt_tensor *t = nn_node(LT_OP_LINEAR, (lt_dtype)x->dtype, x->ndim, shape, 3, in, 0, NULL, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_linear(lt_tensor *x, lt_tensor *w, lt_tensor *bias) {
    if (LT_LIKELY(!g_autocast)) return linear(x, w, bias);
    lt_tensor *in[3] = {x, w, bias}, *tmp[3]; /* autocast: lower-precision list */
    if (api_autocast_args(3, in, tmp, LT_F32, LT_BF16)) return NULL;
    lt_tensor *t = linear(in[0], in[1], in[2]);
    api_autocast_free(3, tmp);
    return t;
}
