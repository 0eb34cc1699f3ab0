/* conv2d and its backward ops: shape rules and argument checks. One CONV2D
 * node with ia [sH, sW, pH, pW, dH, dW, groups]; the backward ops append
 * the spatial size they produce (see src/api/nn.h for the contract). */
#include "nn_util.h"

/* stride, padding, dilation, groups -> ia[0..6]. */
static int conv_attrs(const char *fn, const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                      int64_t groups, int64_t ia[7]) {
    if (nn_pair(fn, "stride", stride, 1, 1, ia) || nn_pair(fn, "padding", padding, 0, 0, ia + 2) ||
        nn_pair(fn, "dilation", dilation, 1, 1, ia + 4))
        return -1;
    if (groups < 1) {
        err_set(LT_ERR_ARG, "%s: argument 'groups' is %lld; must be >= 1", fn, (long long)groups);
        return -1;
    }
    ia[6] = groups;
    return 0;
}

/* The output shape of x (N, C, H, W) convolved with w (O, C/g, kH, kW);
 * checks channel and group compatibility and that the kernel fits. */
static int conv_out_shape(const char *fn, const int64_t *x, const int64_t *w, const int64_t ia[7], int64_t out[4]) {
    int64_t g = ia[6];
    if (x[1] % g || w[0] % g || w[1] * g != x[1]) {
        err_set(LT_ERR_SHAPE,
                "%s: input 'x' %s and weight 'w' %s do not match 'groups' = %lld (need C %% groups == 0, O %% groups == 0, "
                "weight dim 1 == C / groups)",
                fn, SHAPE_STR(4, x), SHAPE_STR(4, w), (long long)g);
        return -1;
    }
    out[0] = x[0];
    out[1] = w[0];
    for (int i = 0; i < 2; i++) {
        int64_t eff = ia[4 + i] * (w[2 + i] - 1) + 1, padded = x[2 + i] + 2 * ia[2 + i];
        if (w[2 + i] < 1 || eff > padded) {
            err_set(LT_ERR_SHAPE,
                    "%s: kernel of 'w' %s (dilated size %lld) does not fit the padded input size %lld in dim %d of 'x' %s",
                    fn, SHAPE_STR(4, w), (long long)eff, (long long)padded, 2 + i, SHAPE_STR(4, x));
            return -1;
        }
        out[2 + i] = (padded - eff) / ia[i] + 1;
    }
    return 0;
}

static lt_tensor *conv2d(lt_tensor *x, lt_tensor *w, lt_tensor *bias, const int64_t stride[2], const int64_t padding[2],
                         const int64_t dilation[2], int64_t groups) {
    static const char fn[] = "lt_conv2d";
    API_ENTER();
    if (api_check(fn, "x", x) || api_check(fn, "w", w) || (bias && api_check(fn, "bias", bias))) return NULL;
    if (nn_ndim(fn, "x", x, 4, "(N, C, H, W)") || nn_ndim(fn, "w", w, 4, "(O, C/groups, kH, kW)") ||
        nn_same_dtype(fn, "w", w, "x", x))
        return NULL;
    /* integers too, as torch's CPU convolution (exact sums that wrap); not bool */
    if (x->dtype == LT_BOOL)
        return err_set(LT_ERR_DTYPE, "lt_conv2d: argument 'x' must be a floating or integer dtype, got bool");
    if (bias && (nn_same_dtype(fn, "bias", bias, "x", x) || nn_ndim(fn, "bias", bias, 1, "(O)")))
        return NULL;
    if (bias && bias->shape[0] != w->shape[0])
        return err_set(LT_ERR_SHAPE, "lt_conv2d: argument 'bias' %s must have O = %lld elements (weight %s)",
                       SHAPE_STR(1, bias->shape), (long long)w->shape[0], SHAPE_STR(4, w->shape));
    int64_t ia[7], shape[4];
    if (conv_attrs(fn, stride, padding, dilation, groups, ia) || conv_out_shape(fn, x->shape, w->shape, ia, shape))
        return NULL;
    lt_tensor *in[3] = {x, w, bias};
    lt_tensor *t = nn_node(LT_OP_CONV2D, (lt_dtype)x->dtype, 4, shape, 3, in, 7, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_conv2d(lt_tensor *x, lt_tensor *w, lt_tensor *bias, const int64_t stride[2], const int64_t padding[2],
                     const int64_t dilation[2], int64_t groups) {
    if (LT_LIKELY(!g_autocast)) return conv2d(x, w, bias, stride, padding, dilation, groups);
    lt_tensor *in[3] = {x, w, bias}, *tmp[3]; /* autocast: lower-precision list */
    if (api_autocast_args(3, in, tmp, LT_F32, LT_BF16)) return NULL;
    lt_tensor *t = conv2d(in[0], in[1], in[2], stride, padding, dilation, groups);
    api_autocast_free(3, tmp);
    return t;
}


lt_tensor *nn_conv2d_backward_input(lt_tensor *grad_out, lt_tensor *w, const int64_t in_shape[4],
                                    const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups) {
    static const char fn[] = "nn_conv2d_backward_input";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || api_check(fn, "w", w)) return NULL;
    if (!in_shape) return err_set(LT_ERR_NULL, "%s: argument 'in_shape' is NULL", fn);
    if (shape_numel_checked(fn, 4, in_shape) < 0) return NULL;
    if (nn_ndim(fn, "w", w, 4, "(O, C/groups, kH, kW)") || nn_float(fn, "grad_out", grad_out) ||
        nn_same_dtype(fn, "w", w, "grad_out", grad_out))
        return NULL;
    int64_t ia[9], oshape[4];
    if (conv_attrs(fn, stride, padding, dilation, groups, ia) || conv_out_shape(fn, in_shape, w->shape, ia, oshape) ||
        nn_check_grad(fn, grad_out, oshape))
        return NULL;
    ia[7] = in_shape[2];
    ia[8] = in_shape[3];
    lt_tensor *in[2] = {grad_out, w};
    lt_tensor *t = nn_node(LT_OP_CONV2D_BWD_INPUT, (lt_dtype)grad_out->dtype, 4, in_shape, 2, in, 9, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_conv2d_backward_weight(lt_tensor *grad_out, lt_tensor *x, const int64_t w_shape[4],
                                     const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                     int64_t groups) {
    static const char fn[] = "nn_conv2d_backward_weight";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || api_check(fn, "x", x)) return NULL;
    if (!w_shape) return err_set(LT_ERR_NULL, "%s: argument 'w_shape' is NULL", fn);
    if (shape_numel_checked(fn, 4, w_shape) < 0) return NULL;
    if (nn_ndim(fn, "x", x, 4, "(N, C, H, W)") || nn_float(fn, "grad_out", grad_out) ||
        nn_same_dtype(fn, "x", x, "grad_out", grad_out))
        return NULL;
    int64_t ia[9], oshape[4];
    if (conv_attrs(fn, stride, padding, dilation, groups, ia) || conv_out_shape(fn, x->shape, w_shape, ia, oshape) ||
        nn_check_grad(fn, grad_out, oshape))
        return NULL;
    ia[7] = w_shape[2];
    ia[8] = w_shape[3];
    lt_tensor *in[2] = {grad_out, x};
    lt_tensor *t = nn_node(LT_OP_CONV2D_BWD_WEIGHT, (lt_dtype)grad_out->dtype, 4, w_shape, 2, in, 9, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}
