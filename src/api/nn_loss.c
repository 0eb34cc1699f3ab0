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

/* reduction: PyTorch's enum (0 none, 1 mean, 2 sum); NLL_COUNT: the node
 * counts the targets that are not ignore_index (aten's total_weight). */
enum { NLL_NONE, NLL_MEAN, NLL_SUM, NLL_COUNT };

static int check_reduction(const char *fn, int reduction) {
    if (reduction >= NLL_NONE && reduction <= NLL_SUM) return 0;
    err_set(LT_ERR_ARG, "%s: argument 'reduction' is %d; must be 0 (none), 1 (mean) or 2 (sum)", fn, reduction);
    return -1;
}

/* One NLL_LOSS node, ia [C, reduction, ignore_index]; the count is not
 * differentiable and is never recorded. */
static lt_tensor *nll_node(const char *fn, lt_tensor *logp, lt_tensor *target, int reduction, int64_t ignore_index) {
    API_ENTER();
    if (check_class_args(fn, "logp", logp, target)) return NULL;
    int64_t ia[3] = {logp->shape[1], reduction, ignore_index}; /* C, for the backward */
    int64_t shape[1] = {logp->shape[0]};
    lt_tensor *in[2] = {logp, target}, *t;
    if (reduction == NLL_COUNT) {
        ir_node *v[2] = {func_value(logp), func_value(target)};
        ir_node *n = v[0] && v[1] ? ir_new(LT_OP_NLL_LOSS, (lt_dtype)logp->dtype, 0, NULL, 2, v, 3, ia, 0, NULL) : NULL;
        t = n ? func_new(n) : NULL;
    } else {
        t = nn_node(LT_OP_NLL_LOSS, (lt_dtype)logp->dtype, reduction == NLL_NONE, shape, 2, in, 3, ia, 0, NULL);
    }
    API_LEAVE(fn, t);
    return t;
}

static lt_tensor *nll_loss(lt_tensor *logp, lt_tensor *target) {
    lt_tensor *y;
    if (unbatched(logp, target, 0, &y, nll2)) return y;
    return nll_node("lt_nll_loss", logp, target, NLL_MEAN, -100);
}

/* (C) with a 0-d target: the batch of one, its result a 0-d tensor (none too). */
lt_tensor *lt_nll_loss_forward(lt_tensor *logp, lt_tensor *target, int reduction, int64_t ignore_index,
                               lt_tensor **total_weight) {
    static const char fn[] = "lt_nll_loss_forward";
    if (total_weight) *total_weight = NULL;
    if (check_reduction(fn, reduction) || api_check(fn, "logp", logp) || api_check(fn, "target", target)) return NULL;
    lt_tensor *x = logp, *t = target, *own[2] = {NULL, NULL}, *r = NULL, *w = NULL;
    int unb = logp->ndim == 1 && target->ndim == 0;
    if (unb) {
        x = own[0] = lt_unsqueeze(logp, 0);
        t = own[1] = lt_unsqueeze(target, 0);
    }
    if (x && t) r = nll_node(fn, x, t, reduction, ignore_index);
    if (r && unb && reduction == NLL_NONE) { /* (1) -> () */
        lt_tensor *s = lt_reshape(r, 0, NULL);
        lt_free(r);
        r = s;
    }
    if (r && total_weight) {
        /* PyTorch leaves 0 in total_weight for a batch without reduction */
        w = reduction == NLL_NONE && !unb ? lt_zeros((lt_dtype)logp->dtype, 0, NULL)
                                          : nll_node(fn, x, t, NLL_COUNT, ignore_index);
        if (!w) {
            lt_free(r);
            r = NULL;
        }
        *total_weight = w;
    }
    lt_free(own[0]);
    lt_free(own[1]);
    return r;
}

lt_tensor *nn_nll_loss_backward_ex(lt_tensor *grad_out, lt_tensor *target, int64_t num_classes, int reduction,
                                   int64_t ignore_index) {
    static const char fn[] = "nn_nll_loss_backward";
    API_ENTER();
    if (api_check(fn, "grad_out", grad_out) || nn_float(fn, "grad_out", grad_out) || api_check(fn, "target", target) ||
        nn_int64(fn, "target", target) || nn_ndim(fn, "target", target, 1, "(N)") || check_reduction(fn, reduction))
        return NULL;
    if (reduction == NLL_NONE ? !(grad_out->ndim == 1 && grad_out->shape[0] == target->shape[0])
                              : check_grad0(fn, grad_out))
        return reduction == NLL_NONE ? err_set(LT_ERR_SHAPE, "%s: argument 'grad_out' has shape %s; expected (N) = [%lld]",
                                               fn, SHAPE_STR(grad_out->ndim, grad_out->shape),
                                               (long long)target->shape[0])
                                     : NULL;
    int64_t shape[2] = {target->shape[0], num_classes}, ia[2] = {reduction, ignore_index};
    if (shape_numel_checked(fn, 2, shape) < 0) return NULL;
    lt_tensor *in[2] = {grad_out, target};
    lt_tensor *t = nn_node(LT_OP_NLL_LOSS_BWD, (lt_dtype)grad_out->dtype, 2, shape, 2, in, 2, ia, 0, NULL);
    API_LEAVE(fn, t);
    return t;
}

lt_tensor *nn_nll_loss_backward(lt_tensor *grad_out, lt_tensor *target, int64_t num_classes) {
    return nn_nll_loss_backward_ex(grad_out, target, num_classes, NLL_MEAN, -100);
}

/* aten's nll_loss_backward: mean divides by the total_weight given
 * (-(g / total_weight) at each counted target, PyTorch's order), sum and
 * none do not. logp lends its shape: (N, C), or (C) with a 0-d target. */
lt_tensor *lt_nll_loss_backward(lt_tensor *grad_out, lt_tensor *logp, lt_tensor *target, lt_tensor *total_weight,
                                int reduction, int64_t ignore_index) {
    static const char fn[] = "lt_nll_loss_backward";
    if (check_reduction(fn, reduction) || api_check(fn, "grad_out", grad_out) || api_check(fn, "logp", logp) ||
        api_check(fn, "target", target) || (reduction == NLL_MEAN && api_check(fn, "total_weight", total_weight)))
        return NULL;
    int unb = logp->ndim == 1 && target->ndim == 0;
    if (!unb && nn_ndim(fn, "logp", logp, 2, "(N, C)")) return NULL;
    lt_tensor *g = grad_out, *t = target, *own[3] = {NULL, NULL, NULL}, *r = NULL;
    if (reduction == NLL_MEAN) g = own[0] = lt_div(grad_out, total_weight);
    if (g && unb) {
        t = own[1] = lt_unsqueeze(target, 0);
        if (reduction == NLL_NONE) g = own[2] = lt_reshape(g, 1, (int64_t[]){1});
    }
    int64_t C = logp->shape[logp->ndim - 1];
    if (g && t) r = nn_nll_loss_backward_ex(g, t, C, reduction == NLL_NONE ? NLL_NONE : NLL_SUM, ignore_index);
    if (r && unb) {
        lt_tensor *s = lt_reshape(r, 1, &C);
        lt_free(r);
        r = s;
    }
    for (int i = 0; i < 3; i++) lt_free(own[i]);
    return r;
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
static lt_tensor *mse_loss(lt_tensor *a, lt_tensor *b, int reduction);
static lt_tensor *mse_common(lt_tensor *a, lt_tensor *b, int reduction) {
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
    if (c[0] && c[1]) t = mse_loss(c[0], c[1], reduction);
    lt_free(own[0]);
    lt_free(own[1]);
    return t;
}

static lt_tensor *mse_loss(lt_tensor *a, lt_tensor *b, int reduction) {
    static const char fn[] = "lt_mse_loss";
    if (a && b && a->magic == LT_HANDLE_MAGIC && b->magic == LT_HANDLE_MAGIC &&
        (a->dtype != b->dtype || !shape_eq(a->ndim, a->shape, b->ndim, b->shape)))
        return mse_common(a, b, reduction);
    API_ENTER();
    if (check_pair(fn, a, b) || check_reduction(fn, reduction)) return NULL;
    lt_tensor *in[2] = {a, b};
    int64_t ia[1] = {reduction};
    lt_tensor *t = nn_node(LT_OP_MSE_LOSS, (lt_dtype)a->dtype, reduction == NLL_NONE ? a->ndim : 0, a->shape, 2, in, 1,
                           ia, 0, NULL);
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

lt_tensor *lt_mse_loss_ex(lt_tensor *a, lt_tensor *b, int reduction) {
    if (LT_LIKELY(!g_autocast)) return mse_loss(a, b, reduction);
    lt_tensor *in[2] = {a, b}, *tmp[2];
    if (api_autocast_args(2, in, tmp, LT_BF16, LT_F32)) return NULL;
    lt_tensor *t = mse_loss(in[0], in[1], reduction);
    api_autocast_free(2, tmp);
    return t;
}

lt_tensor *lt_mse_loss(lt_tensor *a, lt_tensor *b) { return lt_mse_loss_ex(a, b, NLL_MEAN); }

/* d mean((a - b)^2) / da = 2 (a - b) g / numel (sum: 2 (a - b) g; none: g
 * has a's shape), PyTorch's ((a - b) norm) g: backward, so several public
 * ops are fine here (DESIGN 2.1 binds the forward). */
lt_tensor *nn_mse_loss_backward_ex(lt_tensor *grad_out, lt_tensor *a, lt_tensor *b, int reduction) {
    static const char fn[] = "nn_mse_loss_backward";
    if (api_check(fn, "grad_out", grad_out) || nn_float(fn, "grad_out", grad_out) || check_pair(fn, a, b) ||
        nn_same_dtype(fn, "grad_out", grad_out, "a", a) || check_reduction(fn, reduction))
        return NULL;
    if (reduction != NLL_NONE && check_grad0(fn, grad_out)) return NULL;
    if (reduction == NLL_NONE && !shape_eq(grad_out->ndim, grad_out->shape, a->ndim, a->shape))
        return err_set(LT_ERR_SHAPE, "%s: argument 'grad_out' has shape %s; expected a's %s", fn,
                       SHAPE_STR(grad_out->ndim, grad_out->shape), SHAPE_STR(a->ndim, a->shape));
    double norm = reduction == NLL_MEAN ? (a->numel ? 2.0 / (double)a->numel : NAN) : 2.0;
    lt_tensor *d = lt_sub(a, b);
    lt_tensor *s = lt_mul_scalar(d, norm);
    lt_tensor *g0 = grad_out->ndim && reduction != NLL_NONE ? lt_reshape(grad_out, 0, NULL) : NULL;
    lt_tensor *t = lt_mul(s, g0 ? g0 : grad_out);
    lt_free(d);
    lt_free(s);
    lt_free(g0);
    return t;
}

lt_tensor *nn_mse_loss_backward(lt_tensor *grad_out, lt_tensor *a, lt_tensor *b) {
    return nn_mse_loss_backward_ex(grad_out, a, b, NLL_MEAN);
}

/* aten's mse_loss_backward (a and b of one shape and dtype). */
lt_tensor *lt_mse_loss_backward(lt_tensor *grad_out, lt_tensor *a, lt_tensor *b, int reduction) {
    return nn_mse_loss_backward_ex(grad_out, a, b, reduction);
}
