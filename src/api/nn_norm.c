/* batch_norm: BN_STATS (batch statistics, (2, C) [mean; biased var]) and
 * BN_APPLY (normalize), the in-place running-stat update, and the two
 * backward ops. x is (N, C, *). See src/api/nn.h for the contract. */
#include "nn_util.h"

/* The dtype of the per-channel operands (weight, bias, running and batch
 * statistics, the parameters' gradient): x's, or float32 with a bfloat16
 * x when the first per-channel argument given is float32 (PyTorch's mixed
 * batch norm, as autocast makes it: bfloat16 activations, float32
 * parameters; the math is float32 either way). */
static lt_dtype param_dtype(const lt_tensor *x, const lt_tensor *a, const lt_tensor *b, const lt_tensor *c) {
    const lt_tensor *p = a ? a : b ? b : c;
    if (x->dtype == LT_BF16 && p && p->magic == LT_HANDLE_MAGIC && p->dtype == LT_F32) return LT_F32;
    return (lt_dtype)x->dtype;
}

static int check_pdtype(const char *fn, const char *arg, const lt_tensor *t, const lt_tensor *x, lt_dtype pd) {
    if (api_check(fn, arg, t)) return -1;
    if (t->dtype == pd) return 0;
    err_set(LT_ERR_DTYPE, "%s: argument '%s' (%s) must have the dtype of 'x' (%s)%s", fn, arg,
            dtype_name((lt_dtype)t->dtype), dtype_name((lt_dtype)x->dtype),
            x->dtype == LT_BF16 ? " or, with every per-channel argument, float32" : "");
    return -1;
}

/* An optional per-channel argument: NULL, or (C) of dtype pd (param_dtype). */
static int check_channel(const char *fn, const char *arg, const lt_tensor *t, const lt_tensor *x, lt_dtype pd) {
    if (!t) return 0;
    if (check_pdtype(fn, arg, t, x, pd)) return -1;
    if (t->ndim == 1 && t->shape[0] == x->shape[1]) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument '%s' has shape %s; expected (C) = [%lld] for x %s", fn, arg,
            SHAPE_STR(t->ndim, t->shape), (long long)x->shape[1], SHAPE_STR(x->ndim, x->shape));
    return -1;
}

static int check_x(const char *fn, const lt_tensor *x) {
    if (api_check(fn, "x", x) || nn_float(fn, "x", x)) return -1;
    if (x->ndim >= 2) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument 'x' must be (N, C, ...) with at least 2 dims, got %s", fn,
            SHAPE_STR(x->ndim, x->shape));
    return -1;
}

/* running_mean and running_var come together or not at all. */
static int check_running(const char *fn, const lt_tensor *rm, const lt_tensor *rv, const lt_tensor *x, lt_dtype pd) {
    if (!rm != !rv)
        return err_set(LT_ERR_NULL, "%s: 'running_mean' and 'running_var' must both be given or both be NULL", fn),
               -1;
    return check_channel(fn, "running_mean", rm, x, pd) || check_channel(fn, "running_var", rv, x, pd) ? -1 : 0;
}

static int64_t per_channel(const lt_tensor *x) { return x->shape[1] ? x->numel / x->shape[1] : 0; }

/* running := lerp(running, stat, momentum), outside autograd: an IR node
 * assigned straight to the storage, so it joins the same lazy graph. */
static int update_running(lt_tensor *r, ir_node *stat, double momentum) {
    ir_node *in[2] = {func_value(r), stat};
    if (!in[0]) return -1;
    ir_node *v = ir_new(LT_OP_LERP, (lt_dtype)r->dtype, 1, r->shape, 2, in, 0, NULL, 1, &momentum);
    return v ? func_assign(r, v) : -1;
}

lt_tensor *nn_batch_norm(lt_tensor *x, lt_tensor *weight, lt_tensor *bias, lt_tensor *running_mean,
                         lt_tensor *running_var, bool training, double momentum, double eps, lt_tensor **stats_out) {
    static const char fn[] = "lt_batch_norm";
    API_ENTER();
    if (stats_out) *stats_out = NULL;
    if (check_x(fn, x)) return NULL;
    lt_dtype pd = param_dtype(x, weight, bias, running_mean);
    if (check_channel(fn, "weight", weight, x, pd) || check_channel(fn, "bias", bias, x, pd) ||
        check_running(fn, running_mean, running_var, x, pd))
        return NULL;
    if (!(eps >= 0) || !isfinite(eps)) return err_set(LT_ERR_ARG, "%s: argument 'eps' is %g; must be >= 0", fn, eps);
    if (!isfinite(momentum)) return err_set(LT_ERR_ARG, "%s: argument 'momentum' is %g; must be finite", fn, momentum);
    int64_t C = x->shape[1], cnt = per_channel(x);
    /* Without running stats there is nothing else to normalize with: batch
     * statistics in evaluation mode too (PyTorch's BatchNorm2d with
     * track_running_stats=False; its CPU kernel crashes on this call). */
    int batch = training || !running_mean;
    if (batch && cnt <= 1)
        return err_set(LT_ERR_SHAPE, "%s: expected more than 1 value per channel when %s, got 'x' %s", fn,
                       training ? "training" : "using batch statistics (no running stats)", SHAPE_STR(x->ndim, x->shape));
    if (training && running_mean && (running_mean->overlaps || running_var->overlaps))
        return err_set(LT_ERR_STATE, "%s: running stats ('running_mean', 'running_var') are written in place and must not be an expanded view", fn);
    /* Synchronized batch norm (nn_sync_bn.c): the global batch's statistics. */
    int sync = training && g_sync_bn && dist_world() > 1;
    lt_tensor *gst = NULL;
    ir_node *xv = func_value(x), *st = NULL;
    if (!xv) return NULL;
    ir_node *in[5] = {xv};
    int nin = 1;
    if (batch) {
        int64_t sshape[2] = {2, C};
        if (!(st = ir_new(LT_OP_BN_STATS, pd, 2, sshape, 1, &xv, 0, NULL, 0, NULL))) return NULL;
        if (sync) {
            lt_tensor *lst = func_new(st);
            gst = lst ? nn_bn_global_stats(lst, pd) : NULL;
            lt_free(lst);
            if (!gst || !(st = func_value(gst))) return lt_free(gst), NULL;
        }
        in[nin++] = st;
    } else if (!(in[nin++] = func_value(running_mean)) || !(in[nin++] = func_value(running_var))) {
        return NULL;
    }
    if ((weight && !(in[nin++] = func_value(weight))) || (bias && !(in[nin++] = func_value(bias)))) return NULL;
    int64_t ia[4] = {batch, weight != NULL, bias != NULL, 1};
    ir_node *yn = ir_new(LT_OP_BN_APPLY, (lt_dtype)x->dtype, x->ndim, x->shape, nin, in, sync ? 4 : 3, ia, 1, &eps);
    lt_free(gst); /* its value lives on in the nodes that read it */
    if (!yn) return NULL;
    if (training && running_mean) {
        /* rows of the stats as (C) values; the running variance is unbiased (PyTorch) */
        int64_t row[2][2] = {{1, 0}, {1, C}};
        double n = (double)cnt * (sync ? dist_world() : 1), bessel = n / (n - 1);
        ir_node *mr = ir_new(LT_OP_AS_STRIDED, pd, 1, &C, 1, &st, 2, row[0], 0, NULL);
        ir_node *vr = ir_new(LT_OP_AS_STRIDED, pd, 1, &C, 1, &st, 2, row[1], 0, NULL);
        ir_node *vu = vr ? ir_new(LT_OP_MUL_SCALAR, pd, 1, &C, 1, &vr, 0, NULL, 1, &bessel) : NULL;
        if (!mr || !vu || update_running(running_mean, mr, momentum) || update_running(running_var, vu, momentum))
            return NULL;
    }
    lt_tensor *t = func_new(yn);
    if (LT_UNLIKELY(g_ag_on) && t) { /* operands as in yn; the batch stats are no handle's */
        lt_tensor *h[5] = {x, batch ? NULL : running_mean, batch ? NULL : running_var};
        int k = batch ? 2 : 3;
        if (weight) h[k++] = weight;
        if (bias) h[k++] = bias;
        if (ag_record(yn, k, h, t)) {
            lt_free(t);
            return NULL;
        }
    }
    if (t && stats_out && st && !(*stats_out = func_new(st))) {
        lt_free(t);
        return NULL;
    }
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *lt_batch_norm(lt_tensor *x, lt_tensor *weight, lt_tensor *bias, lt_tensor *running_mean,
                         lt_tensor *running_var, bool training, double momentum, double eps) {
    return nn_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps, NULL);
}

/* The statistics a backward op normalizes with, appended to in[*nin]:
 * the (2, C) batch stats, or the running pair. */
static int bwd_stats(const char *fn, lt_tensor *x, lt_tensor *stats, lt_tensor *rm, lt_tensor *rv, lt_dtype pd,
                     ir_node **in, int *nin) {
    if (!stats == !rm)
        return err_set(LT_ERR_ARG, "%s: give either 'stats' (batch statistics) or 'running_mean'/'running_var'", fn),
               -1;
    if (stats) {
        if (check_pdtype(fn, "stats", stats, x, pd)) return -1;
        if (stats->ndim != 2 || stats->shape[0] != 2 || stats->shape[1] != x->shape[1])
            return err_set(LT_ERR_SHAPE, "%s: argument 'stats' has shape %s; expected (2, C) with C = %lld", fn,
                           SHAPE_STR(stats->ndim, stats->shape), (long long)x->shape[1]),
                   -1;
        return (in[(*nin)++] = func_value(stats)) ? 0 : -1;
    }
    if (check_running(fn, rm, rv, x, pd)) return -1;
    if (!(in[(*nin)++] = func_value(rm))) return -1;
    return (in[(*nin)++] = func_value(rv)) ? 0 : -1;
}

static int check_grad_x(const char *fn, const lt_tensor *g, const lt_tensor *x) {
    if (api_check(fn, "grad_out", g) || nn_same_dtype(fn, "grad_out", g, "x", x)) return -1;
    if (g->ndim == x->ndim && !memcmp(g->shape, x->shape, (size_t)x->ndim * 8)) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument 'grad_out' %s must have the shape of x %s", fn, SHAPE_STR(g->ndim, g->shape),
            SHAPE_STR(x->ndim, x->shape));
    return -1;
}

lt_tensor *nn_batch_norm_backward_input(lt_tensor *grad_out, lt_tensor *x, lt_tensor *weight, lt_tensor *stats,
                                        lt_tensor *running_mean, lt_tensor *running_var, double eps) {
    static const char fn[] = "nn_batch_norm_backward_input";
    API_ENTER();
    if (check_x(fn, x) || check_grad_x(fn, grad_out, x)) return NULL;
    lt_dtype pd = param_dtype(x, weight, stats, running_mean);
    if (check_channel(fn, "weight", weight, x, pd)) return NULL;
    ir_node *in[5] = {func_value(grad_out), func_value(x)};
    int nin = 2;
    int64_t ia[2] = {stats != NULL, weight != NULL};
    if (!in[0] || !in[1] || bwd_stats(fn, x, stats, running_mean, running_var, pd, in, &nin)) return NULL;
    if (weight && !(in[nin++] = func_value(weight))) return NULL;
    ir_node *n = ir_new(LT_OP_BN_BWD_INPUT, (lt_dtype)x->dtype, x->ndim, x->shape, nin, in, 2, ia, 1, &eps);
    lt_tensor *t = n ? func_new(n) : NULL;
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_batch_norm_backward_params(lt_tensor *grad_out, lt_tensor *x, lt_tensor *stats,
                                         lt_tensor *running_mean, lt_tensor *running_var, double eps) {
    static const char fn[] = "nn_batch_norm_backward_params";
    API_ENTER();
    if (check_x(fn, x) || check_grad_x(fn, grad_out, x)) return NULL;
    lt_dtype pd = param_dtype(x, stats, running_mean, NULL);
    ir_node *in[4] = {func_value(grad_out), func_value(x)};
    int nin = 2;
    int64_t ia[1] = {stats != NULL}, shape[2] = {2, x->shape[1]};
    if (!in[0] || !in[1] || bwd_stats(fn, x, stats, running_mean, running_var, pd, in, &nin)) return NULL;
    ir_node *n = ir_new(LT_OP_BN_BWD_PARAMS, pd, 2, shape, nin, in, 1, ia, 1, &eps);
    lt_tensor *t = n ? func_new(n) : NULL;
    API_LEAVE(fn, t);
    return t;
}
