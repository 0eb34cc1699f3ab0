/* Transformer ops (issue 16): gelu's backward, layer norm and its backward
 * ops, scaled dot-product attention and its backward, the total norm of a
 * list of tensors. One node per call; the contract with autograd is in
 * src/api/nn.h. (lt_erf and lt_gelu are plain elementwise ops:
 * elementwise.c.) */
#include "nn_util.h"

lt_tensor *nn_gelu_backward(lt_tensor *grad_out, lt_tensor *x, bool tanh_form) {
    lt_tensor *in[2] = {grad_out, x};
    double s = tanh_form;
    return api_elementwise("nn_gelu_backward", LT_OP_GELU_BWD, 2, in, 1, &s, NULL);
}

/* ---- layer norm ---- */

/* x float with at least nnorm >= 1 dims; t (weight or bias) NULL or of the
 * normalized shape (x's last nnorm dims) and x's dtype. */
static int check_ln(const char *fn, const lt_tensor *x, int nnorm) {
    if (api_check(fn, "x", x) || nn_float(fn, "x", x)) return -1;
    if (nnorm >= 1 && nnorm <= x->ndim) return 0;
    err_set(LT_ERR_ARG, "%s: argument 'nnorm' is %d; must be in [1, %d] for x %s", fn, nnorm, x->ndim,
            SHAPE_STR(x->ndim, x->shape));
    return -1;
}

/* A parameter (weight, bias) has x's dtype, or float32 with a bfloat16 x:
 * PyTorch's mixed layer norm, bfloat16 activations (autocast's) with
 * float32 parameters, the math in float32 either way. */
static int check_ln_param(const char *fn, const char *arg, const lt_tensor *t, const lt_tensor *x, int nnorm) {
    if (!t) return 0;
    if (api_check(fn, arg, t)) return -1;
    if (t->dtype != x->dtype && !(x->dtype == LT_BF16 && t->dtype == LT_F32))
        return err_set(LT_ERR_DTYPE, "%s: argument '%s' (%s) must have the dtype of 'x' (%s)%s", fn, arg,
                       dtype_name((lt_dtype)t->dtype), dtype_name((lt_dtype)x->dtype),
                       x->dtype == LT_BF16 ? " or float32" : ""),
               -1;
    const int64_t *ns = x->shape + x->ndim - nnorm;
    if (t->ndim == nnorm && !memcmp(t->shape, ns, (size_t)nnorm * 8)) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument '%s' has shape %s; the normalized shape of x %s is %s", fn, arg,
            SHAPE_STR(t->ndim, t->shape), SHAPE_STR(x->ndim, x->shape), SHAPE_STR(nnorm, ns));
    return -1;
}

/* Any finite eps, as PyTorch: a negative one is the caller's choice (rows
 * whose variance is below -eps then normalize to NaN, as torch's do). */
static int check_eps(const char *fn, double eps) {
    if (isfinite(eps)) return 0;
    err_set(LT_ERR_ARG, "%s: argument 'eps' is %g; must be finite", fn, eps);
    return -1;
}

static int check_same_shape(const char *fn, const char *arg, const lt_tensor *t, const lt_tensor *x) {
    if (api_check(fn, arg, t) || nn_same_dtype(fn, arg, t, "x", x)) return -1;
    if (t->ndim == x->ndim && !memcmp(t->shape, x->shape, (size_t)x->ndim * 8)) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument '%s' %s must have the shape of x %s", fn, arg, SHAPE_STR(t->ndim, t->shape),
            SHAPE_STR(x->ndim, x->shape));
    return -1;
}

lt_tensor *lt_layer_norm(lt_tensor *x, int nnorm, lt_tensor *weight, lt_tensor *bias, double eps) {
    static const char fn[] = "lt_layer_norm";
    API_ENTER();
    if (check_ln(fn, x, nnorm) || check_ln_param(fn, "weight", weight, x, nnorm) ||
        check_ln_param(fn, "bias", bias, x, nnorm) || check_eps(fn, eps))
        return NULL;
    if (weight && bias && nn_same_dtype(fn, "bias", bias, "weight", weight)) return NULL;
    int64_t ia[3] = {nnorm, weight != NULL, bias != NULL};
    lt_tensor *in[3] = {x, weight, bias};
    lt_tensor *t = nn_node(LT_OP_LAYER_NORM, (lt_dtype)x->dtype, x->ndim, x->shape, 3, in, 3, ia, 1, &eps);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_layer_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, int nnorm, double eps) {
    static const char fn[] = "nn_layer_norm_backward_input";
    API_ENTER();
    if (check_ln(fn, x, nnorm) || check_same_shape(fn, "grad_out", grad_out, x) ||
        check_ln_param(fn, "weight", weight, x, nnorm) || check_eps(fn, eps))
        return NULL;
    int64_t ia[2] = {nnorm, weight != NULL};
    lt_tensor *in[3] = {grad_out, x, weight};
    lt_tensor *t = nn_node(LT_OP_LN_BWD_INPUT, (lt_dtype)x->dtype, x->ndim, x->shape, 3, in, 2, ia, 1, &eps);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_layer_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, int nnorm, double eps) {
    static const char fn[] = "nn_layer_norm_backward_params";
    API_ENTER();
    if (check_ln(fn, x, nnorm) || check_same_shape(fn, "grad_out", grad_out, x) || check_eps(fn, eps)) return NULL;
    int64_t ia[1] = {nnorm}, shape[LT_MAX_DIMS + 1] = {2};
    memcpy(shape + 1, x->shape + x->ndim - nnorm, (size_t)nnorm * 8);
    if (nnorm + 1 > LT_MAX_DIMS)
        return err_set(LT_ERR_SHAPE, "%s: argument 'nnorm' is %d; at most %d dims", fn, nnorm, LT_MAX_DIMS - 1);
    lt_tensor *in[2] = {grad_out, x};
    /* bfloat16 x: float32 sums (the autograd engine casts them to a
     * bfloat16 parameter's dtype, to the same bits: st_f rounds via float) */
    lt_dtype dt = x->dtype == LT_BF16 ? LT_F32 : (lt_dtype)x->dtype;
    lt_tensor *t = nn_node(LT_OP_LN_BWD_PARAMS, dt, nnorm + 1, shape, 2, in, 1, ia, 1, &eps);
    API_LEAVE(fn, t);
    return t;
}

/* aten's native_layer_norm outputs mean and rstd besides y: (2, x's
 * leading dims, 1 per normalized dim) [mean; rstd], one node (LN_STATS). */
lt_tensor *lt_layer_norm_stats(lt_tensor *x, int nnorm, double eps) {
    static const char fn[] = "lt_layer_norm_stats";
    API_ENTER();
    if (check_ln(fn, x, nnorm) || check_eps(fn, eps)) return NULL;
    if (x->ndim + 1 > LT_MAX_DIMS)
        return err_set(LT_ERR_SHAPE, "%s: argument 'x' %s has %d dims; at most %d", fn, SHAPE_STR(x->ndim, x->shape),
                       x->ndim, LT_MAX_DIMS - 1);
    int64_t ia[1] = {nnorm}, shape[LT_MAX_DIMS] = {2};
    for (int d = 0; d < x->ndim; d++) shape[1 + d] = d < x->ndim - nnorm ? x->shape[d] : 1;
    lt_tensor *t = nn_node(LT_OP_LN_STATS, (lt_dtype)x->dtype, x->ndim + 1, shape, 1, &x, 1, ia, 1, &eps);
    API_LEAVE(fn, t);
    return t;
}

/* ---- attention ---- */

/* q, k, v: one float dtype, one shape (..., T, D) with at most
 * LT_MAX_DIMS - 1 dims (the backward packs three of them). */
static int check_qkv(const char *fn, lt_tensor *const *in) {
    static const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++)
        if (api_check(fn, names[i], in[i])) return -1;
    if (nn_float(fn, "q", in[0])) return -1;
    if (in[0]->ndim < 2 || in[0]->ndim > LT_MAX_DIMS - 1)
        return err_set(LT_ERR_SHAPE, "%s: argument 'q' must be (..., T, D) with 2 to %d dims, got %s", fn,
                       LT_MAX_DIMS - 1, SHAPE_STR(in[0]->ndim, in[0]->shape)),
               -1;
    for (int i = 1; i < 3; i++)
        if (check_same_shape(fn, names[i], in[i], in[0])) return -1;
    return 0;
}

/* The node's attributes: ia [causal, scale as the bits of a double] (the
 * scale is a property of the model, baked into the graph; IR nodes carry
 * two runtime scalars), sc [p, seed]. scale 0 means 1/sqrt(D). */
static int att_attrs(const char *fn, const lt_tensor *q, bool causal, double scale, double p, double seed,
                     int64_t ia[2], double sc[2]) {
    if (!(p >= 0 && p <= 1))
        return err_set(LT_ERR_ARG, "%s: argument 'dropout_p' is %g; must be in [0, 1]", fn, p), -1;
    if (!isfinite(scale)) return err_set(LT_ERR_ARG, "%s: argument 'scale' is %g; must be finite", fn, scale), -1;
    if (!(seed >= 0 && seed < 0x1p53) || seed != floor(seed))
        return err_set(LT_ERR_ARG, "%s: argument 'seed' is %g; expected an integer in [0, 2^53)", fn, seed), -1;
    int64_t D = q->shape[q->ndim - 1];
    double s = scale != 0 ? scale : D ? 1.0 / sqrt((double)D) : 1.0;
    ia[0] = causal;
    memcpy(&ia[1], &s, sizeof s);
    sc[0] = p;
    sc[1] = p == 0 ? 0 : seed; /* no dropout: one graph whatever the generator's state */
    return 0;
}

static lt_tensor *attention(lt_tensor *q, lt_tensor *k, lt_tensor *v, bool causal, double dropout_p, double scale,
                            double *seed_out) {
    static const char fn[] = "lt_scaled_dot_product_attention";
    API_ENTER();
    lt_tensor *in[3] = {q, k, v};
    int64_t ia[2];
    double sc[2];
    if (seed_out) *seed_out = 0;
    if (check_qkv(fn, in)) return NULL;
    double seed = dropout_p > 0 ? (double)(rng_next() >> 11) : 0; /* < 2^53: exact as a double */
    if (att_attrs(fn, q, causal, scale, dropout_p, seed, ia, sc)) return NULL;
    lt_tensor *t = nn_node(LT_OP_ATTENTION, (lt_dtype)q->dtype, q->ndim, q->shape, 3, in, 2, ia, 2, sc);
    if (t && seed_out) *seed_out = sc[1];
    API_LEAVE(fn, t);
    return t;
}

/* Autocast: attention is on the lower-precision list, as in PyTorch's CPU
 * autocast: float32 q, k, v are cast to bfloat16 (a GPT's come bfloat16
 * from the qkv projection: no cast), and the kernels (attention.c) take
 * bfloat16 directly, with softmax and every sum in float32 and bfloat16
 * outputs; its backward runs in bfloat16 too. */
lt_tensor *nn_attention(lt_tensor *q, lt_tensor *k, lt_tensor *v, bool causal, double dropout_p, double scale,
                        double *seed_out) {
    if (LT_LIKELY(!g_autocast)) return attention(q, k, v, causal, dropout_p, scale, seed_out);
    lt_tensor *in[3] = {q, k, v}, *tmp[3];
    if (api_autocast_args(3, in, tmp, LT_F32, LT_BF16)) return NULL;
    lt_tensor *t = attention(in[0], in[1], in[2], causal, dropout_p, scale, seed_out);
    api_autocast_free(3, tmp);
    return t;
}

lt_tensor *lt_scaled_dot_product_attention(lt_tensor *q, lt_tensor *k, lt_tensor *v, bool causal, double dropout_p,
                                           double scale) {
    return nn_attention(q, k, v, causal, dropout_p, scale, NULL);
}

lt_tensor *nn_attention_backward(lt_tensor *grad_out, lt_tensor *q, lt_tensor *k, lt_tensor *v, lt_tensor *out,
                                 bool causal, double scale, double dropout_p, double seed) {
    static const char fn[] = "nn_attention_backward";
    API_ENTER();
    lt_tensor *in[5] = {grad_out, q, k, v, out};
    int64_t ia[2], shape[LT_MAX_DIMS] = {3};
    double sc[2];
    if (check_qkv(fn, in + 1) || check_same_shape(fn, "grad_out", grad_out, q) ||
        check_same_shape(fn, "out", out, q) || att_attrs(fn, q, causal, scale, dropout_p, seed, ia, sc))
        return NULL;
    memcpy(shape + 1, q->shape, (size_t)q->ndim * 8);
    if (shape_numel_checked(fn, q->ndim + 1, shape) < 0) return NULL;
    lt_tensor *t = nn_node(LT_OP_ATTENTION_BWD, (lt_dtype)q->dtype, q->ndim + 1, shape, 5, in, 2, ia, 2, sc);
    API_LEAVE(fn, t);
    return t;
}

/* ---- total norm ---- */

lt_tensor *nn_total_norm(int n, lt_tensor *const *tensors) {
    static const char fn[] = "nn_total_norm";
    API_ENTER();
    if (n < 1 || !tensors) return err_set(LT_ERR_ARG, "%s: argument 'n' is %d; expected at least one tensor", fn, n);
    char arg[32];
    for (int i = 0; i < n; i++) {
        snprintf(arg, sizeof arg, "tensors[%d]", i);
        if (api_check(fn, arg, tensors[i]) || nn_float(fn, arg, tensors[i]) ||
            nn_same_dtype(fn, arg, tensors[i], "tensors[0]", tensors[0]))
            return NULL;
    }
    ir_node **v = core_malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    ir_node *node = NULL;
    int i = 0;
    while (i < n && (v[i] = func_value(tensors[i]))) i++;
    if (i == n) node = ir_new(LT_OP_GRAD_NORM, (lt_dtype)tensors[0]->dtype, 0, NULL, n, v, 0, NULL, 0, NULL);
    core_free(v);
    lt_tensor *t = node ? func_new(node) : NULL;
    API_LEAVE(fn, t);
    return t;
}
