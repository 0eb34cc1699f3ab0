/* Grad nodes: allocation, the fn of a handle (views included), and the
 * release hooks. Fns come from a free list: recording costs no malloc
 * after warm-up. */
#include "autograd.h"

int g_ag_on;
char g_ag_detached_mark;
static int64_t nstorages; /* storages whose value requires grad */
int g_ag_no_grad;

void ag_update_on(void) { g_ag_on = nstorages > 0 && g_ag_no_grad == 0; }

static ag_fn *free_fns;

ag_fn *ag_fn_new(int op, int nin) {
    ag_fn *f = free_fns;
    if (LT_LIKELY(f != NULL)) free_fns = *(ag_fn **)f;
    else if (!(f = core_malloc(sizeof *f))) return NULL;
    /* Only the header and pointers need clearing; shape/ia are written by
     * whoever fills them, up to ndim/nia. */
    memset(f, 0, offsetof(ag_fn, sc));
    f->refs = 1;
    f->op = (uint16_t)op;
    f->nin = (uint16_t)nin;
    f->next = f->next_in;
    for (int i = 0; i < AG_INLINE_IN; i++) f->next_in[i] = NULL;
    f->ext = NULL;
    for (int i = 0; i < 5; i++) f->saved[i] = NULL;
    f->grad = NULL;
    if (LT_UNLIKELY(nin > AG_INLINE_IN)) {
        /* CAT: edges and per-input sizes in one block */
        void *blk = core_calloc((size_t)nin, sizeof(ag_fn *) + sizeof(int64_t));
        if (!blk) {
            *(ag_fn **)f = free_fns;
            free_fns = f;
            return NULL;
        }
        f->next = blk;
        f->ext = (int64_t *)((ag_fn **)blk + nin);
    } else if (nin > 0 && op == LT_OP_CAT) {
        f->ext = core_calloc((size_t)nin, sizeof(int64_t));
        if (!f->ext) {
            *(ag_fn **)f = free_fns;
            free_fns = f;
            return NULL;
        }
    }
    return f;
}

/* Drops saved values (after backward, or when the fn dies). */
void ag_fn_drop_saved(ag_fn *f) {
    for (int i = 0; i < 5; i++)
        if (f->saved[i]) {
            func_free(f->saved[i]);
            f->saved[i] = NULL;
        }
}

/* Iterative: a chain of a million recorded ops must not overflow the stack. */
void ag_fn_release(ag_fn *f) {
    static ag_fn **stack;
    static size_t cap;
    size_t sp = 0;
    while (f) {
        if (--f->refs == 0) {
            for (int i = 0; i < f->nin; i++) {
                ag_fn *c = f->next[i];
                if (!c) continue;
                if (sp == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    ag_fn **q = core_realloc(stack, nc * sizeof *q);
                    if (!q) continue; /* out of memory: leak that subgraph rather than crash */
                    stack = q;
                    cap = nc;
                }
                stack[sp++] = c;
            }
            ag_fn_drop_saved(f);
            if (f->grad) func_free(f->grad);
            if (f->next != f->next_in) core_free(f->next); /* ext lives in the same block */
            else core_free(f->ext);
            *(ag_fn **)f = free_fns;
            free_fns = f;
        }
        f = sp ? stack[--sp] : NULL;
    }
}

void ag_set_storage_fn(storage *s, ag_fn *f) {
    ag_fn *old = s->grad_owner;
    s->grad_owner = f;
    if (!old != !f) {
        nstorages += f ? 1 : -1;
        ag_update_on();
    }
    ag_fn_release(old);
}

void ag_storage_free(storage *s) { ag_set_storage_fn(s, NULL); }

void ag_handle_free(lt_tensor *t) {
    if (t->ag != AG_DETACHED) ag_fn_release(t->ag);
    t->ag = NULL;
}

/* Does the view cover its storage exactly, in order (then its value is the
 * storage's value, reshaped if the shapes differ)? Mirrors func's rule. */
int ag_covers(const lt_tensor *t, int *same_shape) {
    const storage *s = t->st;
    if (t->offset != 0 || t->numel != s->numel || !geom_is_contiguous(t->ndim, t->shape, t->strides)) return 0;
    *same_shape = t->ndim == s->ndim && !memcmp(t->shape, s->shape, (size_t)t->ndim * 8);
    return 1;
}

/* AS_STRIDED fn reading `geometry` of `base` (ia: strides..., offset). */
ag_fn *ag_strided_fn(ag_fn *base, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                     lt_dtype dt) {
    ag_fn *f = ag_fn_new(LT_OP_AS_STRIDED, 1);
    if (!f) return NULL;
    f->dtype = (uint8_t)dt;
    f->ndim = (uint8_t)ndim;
    memcpy(f->shape, shape, (size_t)ndim * 8);
    memcpy(f->ia, strides, (size_t)ndim * 8);
    f->ia[ndim] = offset;
    f->nia = (uint8_t)(ndim + 1);
    f->next[0] = ag_fn_ref(base);
    return f;
}

ag_fn *ag_view_fn(lt_tensor *t) {
    if (t->ag == AG_DETACHED) return NULL;
    storage *s = t->st;
    ag_fn *base = s->grad_owner;
    if (!base) return NULL;
    if (!t->is_view) return base;
    ag_fn *c = t->ag;
    if (c && c->vh == t && c->vgen == s->gen) return c;
    int same;
    ag_fn *f;
    if (ag_covers(t, &same) && same) f = ag_fn_ref(base);
    else f = ag_strided_fn(base, t->ndim, t->shape, t->strides, t->offset, (lt_dtype)t->dtype);
    if (!f) return NULL; /* OOM: treated as "no grad" by the caller's error check */
    ag_fn_release(t->ag);
    t->ag = f;
    f->vh = t;
    f->vgen = s->gen;
    return f;
}
