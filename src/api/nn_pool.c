/* Pooling: max, average, adaptive average; shape rules as PyTorch. ia of
 * MAX/AVG (and MAX_POOL2D_INDICES): [kH, kW, sH, sW, pH, pW, H, W, ceil_mode,
 * count_include_pad, divisor_override (0: none)], of ADAPTIVE: [oH, oW, H,
 * W]; their backward ops use the same ia. The input size H, W is repeated
 * in ia so that a node alone tells its backward the shape to produce.
 * ceil_mode only adds output cells (windows stay clipped to the image, and
 * for the average's divisor to the padded image, as PyTorch's). */
#include "nn_util.h"

/* lt_max_pool2d / lt_avg_pool2d: floor mode, the average counts padding. */
static const nn_pool_opt k_plain = {0, 1, 0};

static int check_x(const char *fn, const char *arg, const lt_tensor *x) {
    if (nn_ndim(fn, arg, x, 4, "(N, C, H, W) (or (C, H, W), unbatched)") || nn_float(fn, arg, x)) return -1;
    return 0;
}

/* The average of integers is PyTorch's too: the sum divided with C's
 * truncation (the forward only; integers have no gradient). */
static int check_avg_x(const char *fn, const lt_tensor *x) {
    if (nn_ndim(fn, "x", x, 4, "(N, C, H, W) (or (C, H, W), unbatched)")) return -1;
    if (x->dtype == LT_BOOL) {
        err_set(LT_ERR_DTYPE, "%s: argument 'x' must be a floating or integer dtype, got bool", fn);
        return -1;
    }
    return 0;
}

/* kernel, stride (NULL: kernel), padding (NULL: 0) -> ia; the output
 * shape of pooling an (N, C, H, W) input. PyTorch's rules: padding at
 * most half the kernel, and at least one output element per dim. */
static int pool_shape(const char *fn, const int64_t *in, const int64_t *kernel, const int64_t *stride,
                      const int64_t *padding, nn_pool_opt opt, int64_t ia[NN_POOL_NIA], int64_t out[4]) {
    if (!kernel) {
        err_set(LT_ERR_NULL, "%s: argument 'kernel' is NULL", fn);
        return -1;
    }
    if (nn_pair(fn, "kernel", kernel, 1, 1, ia) || nn_pair(fn, "stride", stride ? stride : kernel, 1, 1, ia + 2) ||
        nn_pair(fn, "padding", padding, 0, 0, ia + 4))
        return -1;
    out[0] = in[0];
    out[1] = in[1];
    for (int i = 0; i < 2; i++) {
        if (ia[4 + i] > ia[i] / 2) {
            err_set(LT_ERR_ARG, "%s: argument 'padding' %lld in dim %d must be at most half the kernel size %lld", fn,
                    (long long)ia[4 + i], 2 + i, (long long)ia[i]);
            return -1;
        }
        int64_t span = in[2 + i] + 2 * ia[4 + i] - ia[i];
        if (span < 0) {
            err_set(LT_ERR_SHAPE, "%s: argument 'kernel' [%lld, %lld] is larger than the padded input %s (padding [%lld, %lld])",
                    fn, (long long)ia[0], (long long)ia[1], SHAPE_STR(4, in), (long long)ia[4], (long long)ia[5]);
            return -1;
        }
        /* ceil_mode: one more cell where the stride leaves a partial window,
         * unless that window would start in the right padding */
        int64_t o = (span + (opt.ceil ? ia[2 + i] - 1 : 0)) / ia[2 + i] + 1;
        if (opt.ceil && (o - 1) * ia[2 + i] >= in[2 + i] + ia[4 + i]) o--;
        out[2 + i] = o;
        ia[6 + i] = in[2 + i];
    }
    ia[8] = opt.ceil != 0;
    ia[9] = opt.include_pad != 0;
    ia[10] = opt.divisor;
    return 0;
}

/* PyTorch's unbatched form: a (C, H, W) input pools as (1, C, H, W) and
 * gives (C, oH, oW). Returns 1 if x is such an input (and *y the result,
 * NULL on error), 0 otherwise. The views cost no node. */
static int unbatched(lt_tensor *x, lt_tensor **y, lt_tensor *(*f)(lt_tensor *, const int64_t *, const int64_t *,
                                                                  const int64_t *),
                     const int64_t *a0, const int64_t *a1, const int64_t *a2) {
    if (!x || x->magic != LT_HANDLE_MAGIC || x->ndim != 3) return 0;
    lt_tensor *x4 = lt_unsqueeze(x, 0), *y4 = x4 ? f(x4, a0, a1, a2) : NULL;
    *y = y4 ? lt_squeeze(y4, 0) : NULL;
    lt_free(x4);
    lt_free(y4);
    return 1;
}

static lt_tensor *pool(const char *fn, int op, lt_tensor *x, const int64_t *kernel, const int64_t *stride,
                       const int64_t *padding, nn_pool_opt opt) {
    API_ENTER();
    if (api_check(fn, "x", x) || (op == LT_OP_AVG_POOL2D ? check_avg_x(fn, x) : op == LT_OP_MAX_POOL2D_INDICES ?
                                  nn_ndim(fn, "x", x, 4, "(N, C, H, W)") : check_x(fn, "x", x)))
        return NULL;
    int64_t ia[NN_POOL_NIA], shape[4];
    if (pool_shape(fn, x->shape, kernel, stride, padding, opt, ia, shape)) return NULL;
    lt_dtype dt = op == LT_OP_MAX_POOL2D_INDICES ? LT_I64 : (lt_dtype)x->dtype;
    lt_tensor *t = nn_node(op, dt, 4, shape, 1, &x, NN_POOL_NIA, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_max_pool2d(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2]) {
    lt_tensor *y;
    if (unbatched(x, &y, lt_max_pool2d, kernel, stride, padding)) return y;
    return pool("lt_max_pool2d", LT_OP_MAX_POOL2D, x, kernel, stride, padding, k_plain);
}
lt_tensor *lt_avg_pool2d(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2]) {
    lt_tensor *y;
    if (unbatched(x, &y, lt_avg_pool2d, kernel, stride, padding)) return y;
    return pool("lt_avg_pool2d", LT_OP_AVG_POOL2D, x, kernel, stride, padding, k_plain);
}

static lt_tensor *adaptive3(lt_tensor *x, const int64_t *out_hw, const int64_t *u1, const int64_t *u2) {
    (void)u1, (void)u2;
    return lt_adaptive_avg_pool2d(x, out_hw);
}


lt_tensor *nn_max_pool2d_backward(lt_tensor *grad_out, lt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                                  const int64_t padding[2]) {
    return nn_max_pool2d_backward_opt(grad_out, x, kernel, stride, padding, k_plain);
}

lt_tensor *nn_max_pool2d_backward_opt(lt_tensor *grad_out, lt_tensor *x, const int64_t kernel[2],
                                      const int64_t stride[2], const int64_t padding[2], nn_pool_opt opt) {
    static const char fn[] = "nn_max_pool2d_backward";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || api_check(fn, "x", x) || check_x(fn, "x", x) ||
        nn_same_dtype(fn, "grad_out", grad_out, "x", x))
        return NULL;
    int64_t ia[NN_POOL_NIA], shape[4];
    if (pool_shape(fn, x->shape, kernel, stride, padding, opt, ia, shape) || nn_check_grad(fn, grad_out, shape))
        return NULL;
    lt_tensor *in[2] = {grad_out, x};
    lt_tensor *t = nn_node(LT_OP_MAX_POOL2D_BWD, (lt_dtype)x->dtype, 4, x->shape, 2, in, NN_POOL_NIA, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4], const int64_t kernel[2],
                                  const int64_t stride[2], const int64_t padding[2]) {
    return nn_avg_pool2d_backward_opt(grad_out, in_shape, kernel, stride, padding, k_plain);
}

lt_tensor *nn_avg_pool2d_backward_opt(lt_tensor *grad_out, const int64_t in_shape[4], const int64_t kernel[2],
                                      const int64_t stride[2], const int64_t padding[2], nn_pool_opt opt) {
    static const char fn[] = "nn_avg_pool2d_backward";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || nn_float(fn, "grad_out", grad_out)) return NULL;
    if (!in_shape) return err_set(LT_ERR_NULL, "%s: argument 'in_shape' is NULL", fn);
    if (shape_numel_checked(fn, 4, in_shape) < 0) return NULL;
    int64_t ia[NN_POOL_NIA], shape[4];
    if (pool_shape(fn, in_shape, kernel, stride, padding, opt, ia, shape) || nn_check_grad(fn, grad_out, shape))
        return NULL;
    lt_tensor *t =
        nn_node(LT_OP_AVG_POOL2D_BWD, (lt_dtype)grad_out->dtype, 4, in_shape, 1, &grad_out, NN_POOL_NIA, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_adaptive_avg_pool2d(lt_tensor *x, const int64_t out_hw[2]) {
    static const char fn[] = "lt_adaptive_avg_pool2d";
    lt_tensor *y;
    if (unbatched(x, &y, adaptive3, out_hw, NULL, NULL)) return y;
    API_ENTER();
    if (api_check(fn, "x", x) || check_x(fn, "x", x)) return NULL;
    if (!out_hw) return err_set(LT_ERR_NULL, "%s: argument 'out_hw' is NULL", fn);
    int64_t ia[4] = {0, 0, x->shape[2], x->shape[3]}, shape[4] = {x->shape[0], x->shape[1], 0, 0};
    if (nn_pair(fn, "out_hw", out_hw, 1, 1, ia)) return NULL;
    if (x->shape[2] < 1 || x->shape[3] < 1)
        return err_set(LT_ERR_SHAPE, "%s: argument 'x' %s has an empty spatial dim", fn, SHAPE_STR(4, x->shape));
    shape[2] = ia[0];
    shape[3] = ia[1];
    lt_tensor *t = nn_node(LT_OP_ADAPTIVE_AVG_POOL2D, (lt_dtype)x->dtype, 4, shape, 1, &x, 4, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_adaptive_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4]) {
    static const char fn[] = "nn_adaptive_avg_pool2d_backward";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || check_x(fn, "grad_out", grad_out)) return NULL;
    if (!in_shape) return err_set(LT_ERR_NULL, "%s: argument 'in_shape' is NULL", fn);
    if (shape_numel_checked(fn, 4, in_shape) < 0) return NULL;
    if (in_shape[0] != grad_out->shape[0] || in_shape[1] != grad_out->shape[1] || in_shape[2] < 1 || in_shape[3] < 1)
        return err_set(LT_ERR_SHAPE, "%s: 'in_shape' %s does not fit 'grad_out' %s", fn, SHAPE_STR(4, in_shape),
                       SHAPE_STR(4, grad_out->shape));
    int64_t ia[4] = {grad_out->shape[2], grad_out->shape[3], in_shape[2], in_shape[3]};
    lt_tensor *t =
        nn_node(LT_OP_ADAPTIVE_AVG_POOL2D_BWD, (lt_dtype)grad_out->dtype, 4, in_shape, 1, &grad_out, 4, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

/* ---- for front ends (PyTorch's max_pool2d_with_indices, avg_pool2d) ---- */

/* A (C, H, W) input pools as (1, C, H, W), as the unbatched forms above. */
static lt_tensor *pool_any(const char *fn, int op, lt_tensor *x, const int64_t *kernel, const int64_t *stride,
                           const int64_t *padding, nn_pool_opt opt) {
    if (!x || x->magic != LT_HANDLE_MAGIC || x->ndim != 3) return pool(fn, op, x, kernel, stride, padding, opt);
    lt_tensor *x4 = lt_unsqueeze(x, 0), *y4 = x4 ? pool(fn, op, x4, kernel, stride, padding, opt) : NULL;
    lt_tensor *y = y4 ? lt_squeeze(y4, 0) : NULL;
    lt_free(x4);
    lt_free(y4);
    return y;
}

lt_tensor *lt_max_pool2d_ex(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                            bool ceil_mode) {
    nn_pool_opt o = {ceil_mode, 1, 0};
    return pool_any("lt_max_pool2d_ex", LT_OP_MAX_POOL2D, x, kernel, stride, padding, o);
}

lt_tensor *lt_max_pool2d_indices(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                                 const int64_t padding[2], bool ceil_mode) {
    nn_pool_opt o = {ceil_mode, 1, 0};
    return pool_any("lt_max_pool2d_indices", LT_OP_MAX_POOL2D_INDICES, x, kernel, stride, padding, o);
}

lt_tensor *lt_avg_pool2d_ex(lt_tensor *x, const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                            bool ceil_mode, bool count_include_pad, int64_t divisor_override) {
    nn_pool_opt o = {ceil_mode, count_include_pad, divisor_override};
    return pool_any("lt_avg_pool2d_ex", LT_OP_AVG_POOL2D, x, kernel, stride, padding, o);
}

lt_tensor *lt_max_pool2d_backward(lt_tensor *grad_out, lt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                                  const int64_t padding[2], bool ceil_mode) {
    nn_pool_opt o = {ceil_mode, 1, 0};
    return nn_max_pool2d_backward_opt(grad_out, x, kernel, stride, padding, o);
}

lt_tensor *lt_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4], const int64_t kernel[2],
                                  const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                                  bool count_include_pad, int64_t divisor_override) {
    nn_pool_opt o = {ceil_mode, count_include_pad, divisor_override};
    return nn_avg_pool2d_backward_opt(grad_out, in_shape, kernel, stride, padding, o);
}

lt_tensor *lt_adaptive_avg_pool2d_backward(lt_tensor *grad_out, const int64_t in_shape[4]) {
    return nn_adaptive_avg_pool2d_backward(grad_out, in_shape);
}
