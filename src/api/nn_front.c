/* The nn ops behind a front end's kernels (the PyTorch device's conv.cpp,
 * norm.cpp, random.cpp): the backward ops that torch's autograd calls by
 * name, exposed as public functions over the contracts of nn.h, and the
 * seeded fills. The pooling ones are in nn_pool.c, layer norm's
 * statistics in nn_transformer.c. */
#include "nn_util.h"

lt_tensor *lt_conv2d_backward_input(lt_tensor *grad_out, lt_tensor *w, const int64_t in_shape[4],
                                    const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                    int64_t groups) {
    return nn_conv2d_backward_input(grad_out, w, in_shape, stride, padding, dilation, groups);
}

lt_tensor *lt_conv2d_backward_weight(lt_tensor *grad_out, lt_tensor *x, const int64_t w_shape[4],
                                     const int64_t stride[2], const int64_t padding[2], const int64_t dilation[2],
                                     int64_t groups) {
    return nn_conv2d_backward_weight(grad_out, x, w_shape, stride, padding, dilation, groups);
}

lt_tensor *lt_batch_norm_ex(lt_tensor *x, lt_tensor *weight, lt_tensor *bias, lt_tensor *running_mean,
                            lt_tensor *running_var, bool training, double momentum, double eps, lt_tensor **stats) {
    if (!stats) return err_set(LT_ERR_NULL, "lt_batch_norm_ex: argument 'stats' is NULL");
    return nn_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps, stats);
}

lt_tensor *lt_batch_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, lt_tensor *stats,
                                        lt_tensor *running_mean, lt_tensor *running_var, double eps) {
    return nn_batch_norm_backward_input(grad_out, x, weight, stats, running_mean, running_var, eps);
}

lt_tensor *lt_batch_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, lt_tensor *stats,
                                         lt_tensor *running_mean, lt_tensor *running_var, double eps) {
    return nn_batch_norm_backward_params(grad_out, x, stats, running_mean, running_var, eps);
}

lt_tensor *lt_layer_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, int nnorm,
                                        double eps) {
    return nn_layer_norm_backward_input(grad_out, x, weight, nnorm, eps);
}

lt_tensor *lt_layer_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, int nnorm, double eps) {
    return nn_layer_norm_backward_params(grad_out, x, nnorm, eps);
}

/* ---- seeded fills: one RANDOM node, the seed drawn from the core's
 * generator (lt_manual_seed) at trace time, a runtime parameter ---- */

static lt_tensor *random_node(const char *fn, lt_dtype dtype, int ndim, const int64_t *shape, int kind, double a,
                              double b) {
    API_ENTER();
    if (!dtype_valid((int)dtype)) return err_set(LT_ERR_DTYPE, "%s: argument 'dtype' is invalid (%d)", fn, (int)dtype);
    if (kind != 2 && !dtype_is_float(dtype))
        return err_set(LT_ERR_DTYPE, "%s: argument 'dtype' must be a floating dtype, got %s", fn, dtype_name(dtype));
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return err_set(LT_ERR_SHAPE, "%s: argument 'ndim' is %d; must be in [0, %d]", fn, ndim, LT_MAX_DIMS);
    if (shape_numel_checked(fn, ndim, shape) < 0) return NULL;
    /* two runtime scalars per node: b (to, std, p) and the seed; a (from,
     * mean: mostly 0) is an attribute */
    double sc[2] = {b, (double)(rng_next() >> 11)}; /* < 2^53: exact as a double */
    int64_t ia[2] = {kind, 0};
    memcpy(&ia[1], &a, sizeof a);
    lt_tensor *t = nn_node(LT_OP_RANDOM, dtype, ndim, shape, 0, NULL, 2, ia, 2, sc);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_rand_uniform(lt_dtype dtype, int ndim, const int64_t *shape, double from, double to) {
    static const char fn[] = "lt_rand_uniform";
    if (!(from <= to) || !isfinite(from) || !isfinite(to))
        return err_set(LT_ERR_ARG, "%s: arguments 'from' = %g and 'to' = %g must be finite with from <= to", fn, from, to);
    return random_node(fn, dtype, ndim, shape, 0, from, to);
}

lt_tensor *lt_rand_normal(lt_dtype dtype, int ndim, const int64_t *shape, double mean, double std) {
    static const char fn[] = "lt_rand_normal";
    if (!(std >= 0) || !isfinite(mean) || !isfinite(std))
        return err_set(LT_ERR_ARG, "%s: arguments 'mean' = %g and 'std' = %g must be finite with std >= 0", fn, mean, std);
    return random_node(fn, dtype, ndim, shape, 1, mean, std);
}

lt_tensor *lt_rand_bernoulli(lt_dtype dtype, int ndim, const int64_t *shape, double p) {
    static const char fn[] = "lt_rand_bernoulli";
    if (!(p >= 0 && p <= 1)) return err_set(LT_ERR_ARG, "%s: argument 'p' is %g; must be in [0, 1]", fn, p);
    return random_node(fn, dtype, ndim, shape, 2, 0, p);
}
