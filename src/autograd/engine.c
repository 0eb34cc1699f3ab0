/* The backward engine: collect the fns reachable from the root, count their
 * incoming edges, and run each formula once all its gradient has arrived.
 * Formulas call the public ops with grad mode off, so backward only traces
 * more lazy IR; nothing runs until a sync. */
#include "../api/api.h"
#include "autograd.h"
#include "backward.h"

static ag_fn **order;  /* fns visited by this backward */
static ag_fn **ready;  /* fns whose gradient is complete */
static size_t cap;
static lt_tensor **gi; /* one formula's outputs */
static size_t gi_cap;
static uint32_t epoch;

static int reserve(size_t n) {
    if (n <= cap) return 0;
    size_t c = cap ? cap : 256;
    while (c < n) c *= 2;
    ag_fn **o = core_realloc(order, c * sizeof *o);
    if (!o) return -1;
    order = o;
    ag_fn **r = core_realloc(ready, c * sizeof *r);
    if (!r) return -1;
    ready = r;
    cap = c;
    return 0;
}

/* Breadth-first over the edges; deps counts each edge (mul(x, x) has two). */
static int collect(ag_fn *root, size_t *pn) {
    if (++epoch == 0) epoch = 1;
    if (reserve(1)) return -1;
    size_t n = 0;
    order[n++] = root;
    root->mark = epoch;
    root->deps = 0;
    for (size_t k = 0; k < n; k++) {
        ag_fn *f = order[k];
        for (int i = 0; i < f->nin; i++) {
            ag_fn *c = f->next[i];
            if (!c) continue;
            if (c->mark != epoch) {
                if (reserve(n + 1)) return -1;
                c->mark = epoch;
                c->deps = 0;
                order[n++] = c;
            }
            c->deps++;
        }
    }
    *pn = n;
    return 0;
}

/* A gradient handle the engine owns outright: a plain handle alone on its
 * storage (a view or a shared value gets its own storage; no node for it). */
static lt_tensor *own(lt_tensor *h) {
    if (!h->is_view && h->st->refs == 1) return h;
    lt_tensor *c = lt_clone(h);
    func_free(h);
    return c;
}

/* The dtype a gradient delivered to c ends in: past a CAST, its operand's. */
static lt_dtype end_dtype(const ag_fn *c) {
    return (lt_dtype)(c->op == LT_OP_CAST && c->next[0] ? c->next[0]->dtype : c->dtype);
}
lt_dtype ag_grad_dtype(const ag_fn *f, int i) { return end_dtype(f->next[i]); }

/* Makes h (taken) fit c's value: sum over broadcast dims (one REDUCE node,
 * plus a reshape only when leading and size-1 dims are both reduced), cast
 * to c's dtype, unless c is a CAST whose backward casts h back to the
 * dtype h has (autocast's bfloat16 copy of a float32 weight, whose
 * gradient nn_matmul_wide makes float32: not rounded on the way). */
static lt_tensor *fit(lt_tensor *h, const ag_fn *c) {
    if (h->ndim != c->ndim || memcmp(h->shape, c->shape, (size_t)c->ndim * 8)) {
        int axes[LT_MAX_DIMS], na = 0, lead = h->ndim - c->ndim, ones = 0;
        LT_ASSERT(lead >= 0);
        for (int d = 0; d < h->ndim; d++)
            if (d < lead) {
                axes[na++] = d;
            } else if (c->shape[d - lead] == 1 && h->shape[d] != 1) {
                axes[na++] = d;
                ones = 1;
            }
        lt_tensor *r = lt_sum(h, na, axes, lead == 0);
        func_free(h);
        if (r && (r->ndim != c->ndim || (lead && ones))) {
            lt_tensor *v = lt_reshape(r, c->ndim, c->shape);
            func_free(r);
            r = v;
        }
        if (!r) return NULL;
        h = r;
    }
    if (h->dtype != c->dtype && h->dtype != end_dtype(c)) {
        lt_tensor *r = lt_to_dtype(h, (lt_dtype)c->dtype);
        func_free(h);
        h = r;
    }
    return h;
}

/* acc + h, where h scatters a window of g into zeros (AS_STRIDED_BACKWARD:
 * the gradient of a slice, narrow or chunk), as g scattered into acc (the
 * op's second operand): in acc's place where acc dies there, it touches
 * the window's bytes, where the add read two whole bases and wrote a third
 * (a GPT's q, k and v gradients into one qkv gradient: 5 passes over it
 * became 1). An expanded window, whose elements repeat, keeps the add, as
 * does a dtype that differs. Returns NULL (error set) only if the IR arena
 * cannot grow; *done says whether the rewrite applied. */
static lt_tensor *add_into_window(lt_tensor *acc, lt_tensor *h, int *done) {
    *done = 0;
    ir_node *hv = func_value(h), *av = func_value(acc);
    if (!hv || !av) return NULL;
    if (hv->op != LT_OP_AS_STRIDED_BACKWARD || hv->dtype != av->dtype) return acc;
    if (hv->nin != 1 || shape_overlaps(hv->in[0]->ndim, hv->in[0]->shape, hv->ia)) return acc;
    ir_node *in[2] = {hv->in[0], av};
    ir_node *s = ir_new(LT_OP_AS_STRIDED_BACKWARD, (lt_dtype)av->dtype, av->ndim, av->shape, 2, in, hv->nia, hv->ia, 0, NULL);
    *done = 1;
    return s ? ag_value_handle(s) : NULL;
}

/* Adds h (taken) to c's pending gradient; a leaf accumulates into .grad. */
static int deliver(ag_fn *c, lt_tensor *h) {
    if (!(h = fit(h, c))) return -1;
    if (!c->grad) {
        c->grad = func_unscope(c->op == AG_LEAF ? own(h) : h); /* .grad outlives any scope */
        return c->grad ? 0 : -1;
    }
    if (c->op == AG_LEAF) { /* in place: a borrowed lt_grad pointer stays valid */
        lt_tensor *r = lt_add_(c->grad, h);
        func_free(h);
        return r ? 0 : -1;
    }
    int done;
    lt_tensor *s = add_into_window(c->grad, h, &done);
    if (s && !done) s = add_into_window(h, c->grad, &done);
    if (s && !done) s = lt_add(c->grad, h);
    func_free(h);
    func_free(c->grad);
    c->grad = func_unscope(s);
    return s ? 0 : -1;
}

static int run(ag_fn *root, lt_tensor *seed) {
    size_t n;
    if (collect(root, &n)) return -1;
    size_t sp = 0;
    ready[sp++] = root;
    int rc = deliver(root, seed);
    while (rc == 0 && sp) {
        ag_fn *f = ready[--sp];
        if (f->op == AG_LEAF) continue;
        if (f->released) {
            err_set(LT_ERR_STATE, "lt_backward: trying to backward through the graph of argument 'loss' a second time (the values "
                                  "saved by %s were released by the first backward)",
                    g_ops[f->op].name);
            rc = -1;
            break;
        }
        if ((size_t)f->nin > gi_cap) {
            lt_tensor **q = core_realloc(gi, (size_t)f->nin * 2 * sizeof *q);
            if (!q) {
                rc = -1;
                break;
            }
            gi = q;
            gi_cap = (size_t)f->nin * 2;
        }
        for (int i = 0; i < f->nin; i++) gi[i] = NULL;
        lt_tensor *g = f->grad;
        f->grad = NULL;
        if (g) {
            rc = ag_backward_fn(f, g, gi);
            ag_tmp_free_all();
            func_free(g);
        }
        for (int i = 0; i < f->nin; i++) {
            ag_fn *c = f->next[i];
            if (!c) continue;
            if (gi[i] && rc == 0) rc = deliver(c, gi[i]);
            else if (gi[i]) func_free(gi[i]);
            else if (g && rc == 0) rc = (err_set(LT_ERR_STATE, "lt_backward: %s gave no gradient for input %d",
                                                 g_ops[f->op].name, i), -1);
            if (--c->deps == 0) ready[sp++] = c;
        }
        if (f->nsaved) {
            ag_fn_drop_saved(f);
            f->released = 1;
        }
    }
    for (size_t k = 0; k < n; k++) /* after an error: drop the partial gradients */
        if (order[k]->op != AG_LEAF && order[k]->grad) {
            func_free(order[k]->grad);
            order[k]->grad = NULL;
        }
    return rc;
}

/* arg: the tensor's name in the header ("loss" or "t"); with: grad is required. */
static int backward(const char *fn, const char *arg, lt_tensor *t, lt_tensor *grad, int with) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (api_check(fn, arg, t) || ((grad || with) && api_check(fn, "grad", grad))) return -1;
    ag_fn *root = ag_fn_of(t);
    if (!root) {
        err_set(LT_ERR_STATE, "%s: argument '%s' does not require grad and has no grad_fn", fn, arg);
        return -1;
    }
    lt_tensor *seed;
    if (grad) {
        if (grad->ndim != t->ndim || memcmp(grad->shape, t->shape, (size_t)t->ndim * 8)) {
            err_set(LT_ERR_SHAPE, "%s: argument 'grad' has shape %s but the tensor has shape %s", fn,
                    SHAPE_STR(grad->ndim, grad->shape), SHAPE_STR(t->ndim, t->shape));
            return -1;
        }
        if (!dtype_is_float((lt_dtype)grad->dtype)) {
            err_set(LT_ERR_DTYPE, "%s: argument 'grad' must be a floating dtype, got %s", fn,
                    dtype_name((lt_dtype)grad->dtype));
            return -1;
        }
        seed = lt_clone(grad);
    } else {
        if (t->numel != 1) {
            err_set(LT_ERR_SHAPE, "%s: grad can be implicitly created only for a one-element 'loss', got shape %s",
                    fn, SHAPE_STR(t->ndim, t->shape));
            return -1;
        }
        seed = lt_ones((lt_dtype)t->dtype, t->ndim, t->shape);
    }
    if (!seed) return -1;
    ag_fn_ref(root); /* the root survives even if a formula frees t's last alias */
    g_ag_no_grad++;
    ag_update_on();
    uint8_t autocast = g_autocast; /* formulas run in their operands' dtypes, as PyTorch's backward */
    g_autocast = 0;
    int rc = run(root, seed);
    g_autocast = autocast;
    g_ag_no_grad--;
    ag_update_on();
    ag_fn_release(root);
    return rc;
}

int lt_backward(lt_tensor *loss) { return backward("lt_backward", "loss", loss, NULL, 0); }
int lt_backward_with(lt_tensor *t, lt_tensor *grad) { return backward("lt_backward_with", "t", t, grad, 1); }
