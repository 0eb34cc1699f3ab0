/* The public autograd functions of lazytensor.h (except lt_backward*,
 * engine.c): leaves, .grad, detach, no-grad mode. */
#include "../api/api.h"
#include "autograd.h"

void lt_set_requires_grad(lt_tensor *t, bool requires_grad) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (api_check("lt_set_requires_grad", "t", t)) return;
    if (t->is_view) {
        err_set(LT_ERR_ARG, "lt_set_requires_grad: argument 't' is a view; only a plain (leaf) tensor can be set");
        return;
    }
    storage *s = t->st;
    ag_fn *f = s->grad_owner;
    if (f && f->op != AG_LEAF) {
        err_set(LT_ERR_STATE, "lt_set_requires_grad: argument 't' is not a leaf: you can only change requires_grad of leaf tensors (this one "
                              "was computed from tensors that require grad; use lt_detach)");
        return;
    }
    if (!requires_grad) {
        ag_set_storage_fn(s, NULL);
        s->gen++; /* views' cached fns are stale */
        return;
    }
    if (f) return;
    if (!dtype_is_float((lt_dtype)t->dtype)) {
        err_set(LT_ERR_DTYPE, "lt_set_requires_grad: argument 't' is %s: only floating tensors can require grad",
                dtype_name((lt_dtype)t->dtype));
        return;
    }
    if (!(f = ag_fn_new(AG_LEAF, 0))) return;
    f->dtype = t->dtype;
    f->ndim = t->ndim;
    memcpy(f->shape, t->shape, (size_t)t->ndim * 8);
    ag_set_storage_fn(s, f);
}

bool lt_requires_grad(const lt_tensor *t) {
    if (api_check("lt_requires_grad", "t", t)) return false;
    return t->ag != AG_DETACHED && t->st->grad_owner != NULL;
}

static ag_fn *leaf_of(const char *fn, lt_tensor *t) {
    if (api_check(fn, "t", t)) return NULL;
    ag_fn *f = t->st->grad_owner;
    return f && f->op == AG_LEAF && !t->is_view ? f : NULL;
}

lt_tensor *lt_grad(lt_tensor *t) {
    ag_fn *f = leaf_of("lt_grad", t);
    return f ? f->grad : NULL;
}

void lt_zero_grad(lt_tensor *t) {
    ag_fn *f = leaf_of("lt_zero_grad", t);
    if (f && f->grad) {
        func_free(f->grad);
        f->grad = NULL;
    }
}

lt_tensor *lt_detach(lt_tensor *t) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (api_check("lt_detach", "t", t)) return NULL;
    lt_tensor *d = func_new_view(t, t->ndim, t->shape, t->strides, t->offset);
    if (!d) return NULL;
    d->overlaps = t->overlaps;
    if (d->ag && d->ag != AG_DETACHED) ag_fn_release(d->ag);
    d->ag = AG_DETACHED;
    return d;
}

void lt_no_grad_begin(void) {
    g_ag_no_grad++;
    ag_update_on();
}

void lt_no_grad_end(void) {
    if (g_ag_no_grad > 0) g_ag_no_grad--;
    else err_set(LT_ERR_STATE, "lt_no_grad_end: no matching 'lt_no_grad_begin'");
    ag_update_on();
}

bool lt_grad_enabled(void) { return g_ag_no_grad == 0; }
