/* Losses with mean reduction: nll_loss, cross_entropy (with PyTorch's
 * label smoothing), mse_loss; one node each, a 0-d result. Targets are
 * class indices (N) int64; -100 (PyTorch's ignore_index) is ignored, any
 * other outside [0, C) fails the sync (index_check.c). An unbatched input
 * (C) with a 0-d target is the batch of one, as PyTorch. */
#include "nn_util.h"

/* input (N, C) float and target (N) int64. */
static int check_class_args(const char *fn, const char *arg, const lt_tensor *in, const lt_tensor *target) {
    if (api_check(fn, arg, in) || api_check(fn, "target", target) || nn_float(fn, arg, in) ||
        nn_ndim(fn, arg, in, 2, "(N, C)") || nn_int64(fn, "target", target))
        return -1;
    if (target->ndim == 1 && target->shape[0] == in->shape[0]) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument 'target' has shape %s; expected (N) = [%lld] for '%s' %s", fn,
            SHAPE_STR(target->ndim, target->shape), (long long)in->shape[0], arg, SHAPE_STR(2, in->shape));
    return -1;
}

static int check_grad0(const char *fn, const lt_tensor *g) {
    if (api_check(fn, "grad_out", g) || nn_float(fn, "grad_out", g)) return -1;
    if (g->numel == 1) return 0;
    err_set(LT_ERR_SHAPE, "%s: argument 'grad_out' must hold the loss's one element, got shape %s", fn,
            SHAPE_STR(g->ndim, g->shape));
    return -1;
}

static int check_ls(const char *fn, double ls) {
    if (ls >= 0 && ls <= 1) return 0;
    err_set(LT_ERR_ARG, "%s: argument 'label_smoothing' is %g; must be in [0, 1]", fn, ls);
    return -1;
}

/* (C) and a 0-d target: the same loss as (1, C) and (1). Returns 1 if so
 * (*y the result, NULL on error). Views: no node. */
static int unbatched(lt_tensor *x, lt_tensor *target, double ls, lt_tensor **y,
                     lt_tensor *(*f)(lt_tensor *, lt_tensor *, double)) {
    if (!x || x->magic != LT_HANDLE_MAGIC || x->ndim != 1 || !target || target->magic != LT_HANDLE_MAGIC ||
        target->ndim != 0)
        return 0;
    lt_tensor *x2 = lt_unsqueeze(x, 0), *t1 = lt_unsqueeze(target, 0);
    *y = x2 && t1 ? f(x2, t1, ls) : NULL;
    lt_free(x2);
    lt_free(t1);
    return 1;
}

static lt_tensor *nll_loss(lt_tensor *logp, lt_tensor *target);
static lt_tensor *nll2(lt_tensor *x, lt_tensor *t, double ls) {
    (void)ls;
    return nll_loss(x, t);
}

static lt_tensor *nll_loss(lt_tensor *logp, lt_tensor *target) {
    static const char fn[] = "lt_nll_loss";
    lt_tensor *y;
    if (unbatched(logp, target, 0, &y, nll2)) return y;
    API_ENTER();
    if (check_class_args(fn, "logp", logp, target)) return NULL;
    int64_t ia[1] = {logp->shape[1]}; /* C, for the backward */
    lt_tensor *in[2] = {logp, target};
    lt_tensor *t = nn_node(LT_OP_NLL_LOSS, (lt_dtype)logp->dtype, 0, NULL, 2, in, 1, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_nll_loss_backward(lt_tensor *grad_out, lt_tensor *target, int64_t num_classes) {
    static const char fn[] = "nn_nll_loss_backward";
    API_ENTER();
    if (check_grad0(fn, grad_out) || api_check(fn, "target", target) || nn_int64(fn, "target", target) ||
        nn_ndim(fn, "target", target, 1, "(N)"))
        return NULL;
    int64_t shape[2] = {target->shape[0], num_classes};
    if (shape_numel_checked(fn, 2, shape) < 0) return NULL;
    lt_tensor *in[2] = {grad_out, target};
    lt_tensor *t = nn_node(LT_OP_NLL_LOSS_BWD, (lt_dtype)grad_out->dtype, 2, shape, 2, in, 0, NULL, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

static lt_tensor *cross_entropy(lt_tensor *logits, lt_tensor *target, double label_smoothing) {
    static const char fn[] = "lt_cross_entropy";
    lt_tensor *y;
    if (unbatched(logits, target, label_smoothing, &y, cross_entropy)) return y;
    API_ENTER();
    if (check_class_args(fn, "logits", logits, target) || check_ls(fn, label_smoothing)) return NULL;
    lt_tensor *in[2] = {logits, target};
    lt_tensor *t = nn_node(LT_OP_CROSS_ENTROPY, (lt_dtype)logits->dtype, 0, NULL, 2, in, 0, NULL, 1, &label_smoothing);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_cross_entropy_backward(lt_tensor *grad_out, lt_tensor *logits, lt_tensor *target,
                                     double label_smoothing) {
    static const char fn[] = "nn_cross_entropy_backward";
    API_ENTER();
    if (check_grad0(fn, grad_out) || check_class_args(fn, "logits", logits, target) ||
        nn_same_dtype(fn, "grad_out", grad_out, "logits", logits) || check_ls(fn, label_smoothing))
        return NULL;
    lt_tensor *in[3] = {grad_out, logits, target};
    lt_tensor *t = nn_node(LT_OP_CROSS_ENTROPY_BWD, (lt_dtype)logits->dtype, 2, logits->shape, 3, in, 0, NULL, 1,
                           &label_smoothing);
    API_LEAVE(fn, t);
    return t;
}

static int check_pair(const char *fn, const lt_tensor *a, const lt_tensor *b) {
    if (api_check(fn, "a", a) || api_check(fn, "b", b) || nn_float(fn, "a", a) || nn_same_dtype(fn, "b", b, "a", a))
        return -1;
    if (a->ndim == b->ndim && !memcmp(a->shape, b->shape, (size_t)a->ndim * 8)) return 0;
    err_set(LT_ERR_SHAPE, "%s: arguments 'a' %s and 'b' %s must have the same shape", fn, SHAPE_STR(a->ndim, a->shape),
            SHAPE_STR(b->ndim, b->shape));
    return -1;
}

/* PyTorch's mse_loss broadcasts a and b and promotes their float dtypes:
 * expand (a view) and cast to the common shape and dtype, then one node. */
static lt_tensor *mse_loss(lt_tensor *a, lt_tensor *b);
static lt_tensor *mse_common(lt_tensor *a, lt_tensor *b) {
    static const char fn[] = "lt_mse_loss";
    if (api_check(fn, "a", a) || api_check(fn, "b", b) || nn_float(fn, "a", a) || nn_float(fn, "b", b)) return NULL;
    int64_t shape[LT_MAX_DIMS];
    int nd = shape_broadcast(a->ndim, a->shape, b->ndim, b->shape, shape);
    if (nd < 0)
        return err_set(LT_ERR_SHAPE, "%s: shapes %s ('a') and %s ('b') do not broadcast", fn,
                       SHAPE_STR(a->ndim, a->shape), SHAPE_STR(b->ndim, b->shape));
    lt_dtype d[2] = {(lt_dtype)a->dtype, (lt_dtype)b->dtype};
    lt_dtype dt = dtype_promote(d[0], d[1]); /* F.mse_loss broadcasts first: no 0-d rule */
    lt_tensor *ab[2] = {a, b}, *c[2], *own[2] = {NULL, NULL}, *t = NULL;
    for (int i = 0; i < 2; i++) {
        c[i] = ab[i];
        if (c[i] && !shape_eq(nd, shape, c[i]->ndim, c[i]->shape)) c[i] = own[i] = lt_expand(c[i], nd, shape);
        if (c[i] && d[i] != dt) {
            c[i] = lt_to_dtype(c[i], dt);
            lt_free(own[i]);
            own[i] = c[i];
        }
    }
    if (c[0] && c[1]) t = mse_loss(c[0], c[1]);
    lt_free(own[0]);
    lt_free(own[1]);
    return t;
}

static lt_tensor *mse_loss(lt_tensor *a, lt_tensor *b) {
    static const char fn[] = "lt_mse_loss";
    if (a && b && a->magic == LT_HANDLE_MAGIC && b->magic == LT_HANDLE_MAGIC &&
        (a->dtype != b->dtype || !shape_eq(a->ndim, a->shape, b->ndim, b->shape)))
        return mse_common(a, b);
    API_ENTER();
    if (check_pair(fn, a, b)) return NULL;
    lt_tensor *in[2] = {a, b};
    lt_tensor *t = nn_node(LT_OP_MSE_LOSS, (lt_dtype)a->dtype, 0, NULL, 2, in, 0, NULL, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

/* Autocast: the losses are on PyTorch's fp32 list; their bfloat16
 * operands are cast to float32 (the int64 target is left alone). */
lt_tensor *lt_nll_loss(lt_tensor *logp, lt_tensor *target) {
    if (LT_LIKELY(!g_autocast)) return nll_loss(logp, target);
    lt_tensor *tmp;
    if (api_autocast_args(1, &logp, &tmp, LT_BF16, LT_F32)) return NULL;
    lt_tensor *t = nll_loss(logp, target);
    api_autocast_free(1, &tmp);
    return t;
}

lt_tensor *lt_cross_entropy(lt_tensor *logits, lt_tensor *target, double label_smoothing) {
    if (LT_LIKELY(!g_autocast)) return cross_entropy(logits, target, label_smoothing);
    lt_tensor *tmp;
    if (api_autocast_args(1, &logits, &tmp, LT_BF16, LT_F32)) return NULL;
    lt_tensor *t = cross_entropy(logits, target, label_smoothing);
    api_autocast_free(1, &tmp);
    return t;
}

lt_tensor *lt_mse_loss(lt_tensor *a, lt_tensor *b) {
    if (LT_LIKELY(!g_autocast)) return mse_loss(a, b);
    lt_tensor *in[2] = {a, b}, *tmp[2];
    if (api_autocast_args(2, in, tmp, LT_BF16, LT_F32)) return NULL;
    lt_tensor *t = mse_loss(in[0], in[1]);
    api_autocast_free(2, tmp);
    return t;
}

/* d mean((a - b)^2) / da = 2 (a - b) g / numel: backward, so several public
 * ops are fine here (DESIGN 2.1 binds the forward). */
lt_tensor *nn_mse_loss_backward(lt_tensor *grad_out, lt_tensor *a, lt_tensor *b) {
    static const char fn[] = "nn_mse_loss_backward";
    if (check_grad0(fn, grad_out) || check_pair(fn, a, b) || nn_same_dtype(fn, "grad_out", grad_out, "a", a))
        return NULL;
    lt_tensor *d = lt_sub(a, b);
    lt_tensor *s = lt_mul_scalar(d, a->numel ? 2.0 / (double)a->numel : NAN);
    lt_tensor *g0 = grad_out->ndim ? lt_reshape(grad_out, 0, NULL) : NULL;
    lt_tensor *t = lt_mul(s, g0 ? g0 : grad_out);
    lt_free(d);
    lt_free(s);
    lt_free(g0);
    return t;
}
