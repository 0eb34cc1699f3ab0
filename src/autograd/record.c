/* Recording: the hooks the api calls after each op when g_ag_on. One fn per
 * recorded op, its attrs copied from the IR node, the values its backward
 * needs held by internal handles. */
#include "autograd.h"

lt_tensor *ag_value_handle(ir_node *v) {
    if (v->op == LT_OP_DATA) { /* materialized: share the buffer, nothing pending */
        buffer_retain(v->buf);
        return func_unscope(func_new_data(v->buf, (lt_dtype)v->dtype, v->ndim, v->shape));
    }
    return func_unscope(func_new(v)); /* autograd's own: never in the user's scope */
}

/* Which values an op's backward reads: bits 0..2 = inputs 0..2, bit 3 = the
 * output, bit 4 = input 3; `need` has bit i set when input i needs a gradient. */
static unsigned saves(int op, unsigned need, const int64_t *ia) {
    switch (op) {
    case LT_OP_MUL: case LT_OP_MATMUL: return (need & 2 ? 1u : 0) | (need & 1 ? 2u : 0);
    case LT_OP_DIV: return 2u | (need & 2 ? 8u : 0);
    case LT_OP_MAXIMUM: case LT_OP_MINIMUM: return 3u;
    case LT_OP_POW: return 3u | (need & 2 ? 8u : 0);
    case LT_OP_POW_SCALAR: case LT_OP_CLAMP: case LT_OP_LOG: case LT_OP_ABS: case LT_OP_WHERE: case LT_OP_ERF:
    case LT_OP_GELU: case LT_OP_SILU: case LT_OP_HARDSWISH: case LT_OP_HARDSIGMOID:
        return 1u;
    case LT_OP_MASKED_FILL: return 2u; /* the mask */
    case LT_OP_LAYER_NORM: return 1u | (ia[1] ? 2u : 0); /* x, the weight */
    case LT_OP_ATTENTION: return 15u;                    /* q, k, v, the output */
    case LT_OP_MAX: case LT_OP_MIN: case LT_OP_STD: return 9u;
    case LT_OP_VAR: return 1u;
    case LT_OP_EXP: case LT_OP_SQRT: case LT_OP_RSQRT: case LT_OP_RELU: case LT_OP_TANH: case LT_OP_SIGMOID:
    case LT_OP_SOFTMAX: case LT_OP_LOG_SOFTMAX:
        return 8u;
    case LT_OP_ADDCMUL: return (need & 4 ? 2u : 0) | (need & 2 ? 4u : 0);
    case LT_OP_ADDCDIV: return (need & 6 ? 4u : 0) | (need & 4 ? 2u : 0);
    case LT_OP_LERP_TENSOR: return (need & 3 ? 4u : 0) | (need & 4 ? 3u : 0); /* the weight; a and b */
    default: return ag_nn_saves(op, need, ia); /* 0 for every op without saved values */
    }
}

static int requires(lt_tensor *t) { return t->ag != AG_DETACHED && t->st->grad_owner != NULL; }

/* The CAST fn that makes an alias of a leaf a non-leaf (clone, copy_). */
static ag_fn *identity_fn(ag_fn *src, lt_dtype dt, int ndim, const int64_t *shape) {
    ag_fn *f = ag_fn_new(LT_OP_CAST, 1);
    if (!f) return NULL;
    f->dtype = (uint8_t)dt;
    f->ndim = (uint8_t)ndim;
    memcpy(f->shape, shape, (size_t)ndim * 8);
    f->next[0] = ag_fn_ref(src);
    return f;
}

/* t's value was just replaced (func_assign) by one whose fn is f (taken).
 * Plain: the storage's fn is f. View: the storage's fn scatters f into the
 * old one, exactly as func_assign scattered the value. */
static int assign(lt_tensor *t, ag_fn *f) {
    if (t->ag == AG_DETACHED) { /* outside the graph (inputs were checked) */
        ag_fn_release(f);
        return 0;
    }
    storage *s = t->st;
    if (LT_LIKELY(!t->is_view)) {
        ag_set_storage_fn(s, f);
        return 0;
    }
    ag_fn *old = s->grad_owner;
    if (!old && !f) return 0;
    int same;
    ag_fn *nb = NULL;
    if (ag_covers(t, &same)) {
        if (same) {
            nb = ag_fn_ref(f);
        } else if (f) {
            int64_t st[LT_MAX_DIMS];
            shape_contig_strides(s->ndim, s->shape, st);
            if (!(nb = ag_strided_fn(f, s->ndim, s->shape, st, 0, (lt_dtype)s->dtype))) goto oom;
        }
    } else {
        /* ia: window strides, offset, window shape */
        if (!(nb = ag_fn_new(LT_OP_AS_STRIDED_SCATTER, 2))) goto oom;
        nb->dtype = s->dtype;
        nb->ndim = s->ndim;
        memcpy(nb->shape, s->shape, (size_t)s->ndim * 8);
        memcpy(nb->ia, t->strides, (size_t)t->ndim * 8);
        nb->ia[t->ndim] = t->offset;
        memcpy(nb->ia + t->ndim + 1, t->shape, (size_t)t->ndim * 8);
        nb->nia = (uint8_t)(2 * t->ndim + 1);
        nb->next[0] = ag_fn_ref(old);
        nb->next[1] = ag_fn_ref(f);
    }
    ag_set_storage_fn(s, nb);
    /* Reading this alias back is f itself (func_assign's peephole, mirrored). */
    if (t->ag) ag_fn_release(t->ag);
    t->ag = f;
    if (f) {
        f->vh = t;
        f->vgen = s->gen;
    }
    return 0;
oom:
    ag_fn_release(f);
    return -1;
}

int ag_record(ir_node *n, int nin, lt_tensor *const *in, lt_tensor *out) {
    int op = n->op;
    int inplace = out == in[0];
    ag_fn *f = NULL;
    if ((g_ops[op].flags & GRAD) && dtype_is_float((lt_dtype)n->dtype)) {
        int any = 0;
        for (int i = 0; i < nin && !any; i++) any = in[i] && ag_fn_of(in[i]) != NULL;
        if (any) {
            if (LT_UNLIKELY(!(f = ag_fn_new(op, nin)))) return -1;
            unsigned need = 0;
            for (int i = 0; i < nin; i++) {
                ag_fn *e = in[i] ? ag_fn_of(in[i]) : NULL;
                f->next[i] = ag_fn_ref(e);
                if (e && i < 32) need |= 1u << i;
            }
            f->dtype = n->dtype;
            f->ndim = n->ndim;
            memcpy(f->shape, n->shape, (size_t)n->ndim * 8);
            LT_ASSERT(n->nia <= AG_MAX_IA);
            f->nia = n->nia;
            memcpy(f->ia, n->ia, (size_t)n->nia * 8);
            f->nsc = n->nsc;
            for (int i = 0; i < n->nsc; i++) f->sc[i] = n->sc[i];
            if (LT_UNLIKELY(op == LT_OP_CAT))
                for (int i = 0; i < nin; i++) f->ext[i] = in[i]->shape[n->ia[0]];
            unsigned sv = saves(op, need, n->ia);
            for (int i = 0; sv; i++, sv >>= 1) {
                if (!(sv & 1)) continue;
                LT_ASSERT(i < 3 || i == 3 || (i == 4 && nin > 3));
                lt_tensor *h = ag_value_handle(i < 3 ? n->in[i] : i == 3 ? n : n->in[3]);
                if (LT_UNLIKELY(!h)) {
                    ag_fn_release(f);
                    return -1;
                }
                f->saved[i] = h;
                f->nsaved++;
            }
        }
    }
    if (inplace) return assign(out, f);
    if (f) ag_set_storage_fn(out->st, f);
    return 0;
}

int ag_check_inplace(const char *fn, lt_tensor *t, int nin, lt_tensor *const *in) {
    if (t->ag == AG_DETACHED) {
        for (int i = 0; i < nin; i++)
            if (in[i] != t && requires(in[i])) {
                err_set(LT_ERR_STATE,
                        "%s: the destination is a detached alias (lt_detach) but an input requires grad; write "
                        "into a tensor that is part of the graph instead",
                        fn);
                return -1;
            }
        return 0;
    }
    ag_fn *f = t->st->grad_owner;
    if (f && f->op == AG_LEAF) {
        err_set(LT_ERR_STATE,
                "%s: argument '%s' is a leaf tensor that requires grad%s and is being used in an in-place operation; "
                "update it between lt_no_grad_begin() and lt_no_grad_end()",
                fn, strcmp(fn, "lt_copy_") ? "a" : "dst", t->is_view ? " (through a view of it)" : "");
        return -1;
    }
    return 0;
}

/* A value that needs no grad written over t's by copy_ or fill_, where t's
 * storage requires grad: as in PyTorch the result still requires grad and
 * the overwritten value gets a zero gradient (CopyBackwards, fill_'s
 * zeros_like). The fn is a FILL whose backward gives zeros of its input's
 * shape; its input is the storage's old fn when t covers the storage (the
 * whole old value is gone), none when t is a window (the scatter around it
 * already passes the rest of the gradient to the old value). t's storage
 * requires grad and t is not detached; NULL: out of memory. */
static ag_fn *overwrite_fn(lt_tensor *t) {
    ag_fn *old = t->st->grad_owner, *f = ag_fn_new(LT_OP_FILL, 1);
    int same;
    if (!f) return NULL;
    f->dtype = t->dtype;
    f->ndim = t->ndim;
    memcpy(f->shape, t->shape, (size_t)t->ndim * 8);
    f->next[0] = !t->is_view || ag_covers(t, &same) ? ag_fn_ref(old) : NULL;
    return f;
}

int ag_copy(lt_tensor *dst, lt_tensor *src, int cast) {
    ag_fn *sf = dtype_is_float((lt_dtype)dst->dtype) ? ag_fn_of(src) : NULL;
    ag_fn *f = NULL;
    if (sf) {
        if (cast || sf->op == AG_LEAF) {
            if (!(f = identity_fn(sf, (lt_dtype)dst->dtype, dst->ndim, dst->shape))) return -1;
        } else {
            f = ag_fn_ref(sf);
        }
    } else if (dst->st->grad_owner && dst->ag != AG_DETACHED && !(f = overwrite_fn(dst))) {
        return -1;
    }
    return assign(dst, f);
}

int ag_fill(lt_tensor *t) {
    if (!t->st->grad_owner || t->ag == AG_DETACHED) return 0;
    ag_fn *f = overwrite_fn(t);
    return f ? assign(t, f) : -1;
}

void ag_share(lt_tensor *a, lt_tensor *t) {
    ag_fn *sf = ag_fn_of(a);
    if (!sf) return;
    ag_fn *f = sf->op == AG_LEAF ? identity_fn(sf, (lt_dtype)t->dtype, t->ndim, t->shape) : ag_fn_ref(sf);
    if (f) ag_set_storage_fn(t->st, f);
}
