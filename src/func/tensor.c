/* Handles, storages and the live registry. Handles and storages come from
 * free lists: creating a tensor on the tracing hot path costs no malloc
 * after warm-up. */
#include "func.h"

#include "../autograd/autograd.h"
#include "../prof/prof.h"

storage g_live = {.prev = &g_live, .next = &g_live};
int64_t g_pending;

/* Free lists. Freed handles keep LT_HANDLE_DEAD until reused, so use after
 * free is detected while the memory has not been handed out again. */
typedef union pool_item {
    union pool_item *next;
    struct lt_tensor t;
    storage s;
} pool_item;
static pool_item *free_items;

static void *pool_get(void) {
    if (LT_LIKELY(free_items != NULL)) {
        pool_item *p = free_items;
        free_items = p->next;
        return p;
    }
    return core_malloc(sizeof(pool_item));
}
static void pool_put(void *p) {
    pool_item *it = p;
    it->next = free_items;
    free_items = it;
}

/* Under AddressSanitizer storages bypass the pool, so a use after free of
 * one (say, a release too many) is reported instead of corrupting the free
 * list. Handles stay pooled in every build: lt_free's freed-handle check
 * reads the magic of a handle that was freed, and the pool keeps it readable. */
#if defined(__SANITIZE_ADDRESS__)
static void *storage_alloc(void) { return core_malloc(sizeof(storage)); }
static void storage_dealloc(storage *s) { core_free(s); }
#else
static void *storage_alloc(void) { return pool_get(); }
static void storage_dealloc(storage *s) { pool_put(s); }
#endif

static storage *storage_new(lt_dtype dtype, int ndim, const int64_t *shape, int64_t numel) {
    storage *s = storage_alloc();
    if (!s) return NULL;
    s->refs = 1;
    s->dtype = (uint8_t)dtype;
    s->ndim = (uint8_t)ndim;
    s->numel = numel;
    for (int i = 0; i < ndim; i++) s->shape[i] = shape[i];
    s->node = NULL;
    s->buf = NULL;
    s->leaf = NULL;
    s->leaf_epoch = 0;
    s->gen = 0;
    s->grad_owner = NULL;
    s->next = &g_live;
    s->prev = g_live.prev;
    g_live.prev->next = s;
    g_live.prev = s;
    return s;
}

/* A DATA leaf borrows a buffer (ir.h), and any IR of the current arena
 * epoch may still read it: pending values, and view values cached in
 * handles. The buffer's last holder may go before that IR does (the tensor
 * is freed, a clone sharing the buffer is freed, or a sync of a subset
 * rebinds the storage), so while the arena holds any node a dropped buffer
 * waits in this list until the arena resets. */
static lt_buffer **deferred;
static size_t ndeferred, deferred_cap;
static uint32_t deferred_epoch;

static void flush_deferred(void) {
    if (deferred_epoch == g_arena.epoch && g_arena.nodes > 0) return;
    for (size_t i = 0; i < ndeferred; i++) buffer_release(deferred[i]);
    ndeferred = 0;
}

static void drop_buffer(lt_buffer *b) {
    if (!b) return;
    if (LT_UNLIKELY(ndeferred)) flush_deferred();
    if (g_arena.nodes == 0) {
        buffer_release(b);
        return;
    }
    if (ndeferred == deferred_cap) {
        size_t c = deferred_cap ? deferred_cap * 2 : 64;
        lt_buffer **q = core_realloc(deferred, c * sizeof *q);
        if (!q) return; /* out of memory: leaking the buffer is safe, freeing it is not */
        deferred = q;
        deferred_cap = c;
    }
    deferred[ndeferred++] = b;
    deferred_epoch = g_arena.epoch;
}

static void storage_release(storage *s) {
    if (--s->refs > 0) return;
    if (LT_UNLIKELY(s->grad_owner != NULL)) ag_storage_free(s);
    if (s->node) g_pending--;
    drop_buffer(s->buf);
    s->prev->next = s->next;
    s->next->prev = s->prev;
    storage_dealloc(s);
}

/* strides NULL: the contiguous ones. */
static lt_tensor *handle_new(storage *s, lt_dtype dtype, int ndim, const int64_t *shape, const int64_t *strides,
                             int64_t numel) {
    lt_tensor *t = pool_get();
    if (!t) return NULL;
    t->magic = LT_HANDLE_MAGIC;
    t->is_view = 0;
    t->overlaps = 0;
    t->dtype = (uint8_t)dtype;
    t->ndim = (uint8_t)ndim;
    t->st = s;
    t->numel = numel;
    t->offset = 0;
    if (strides) {
        for (int i = 0; i < ndim; i++) {
            t->shape[i] = shape[i];
            t->strides[i] = strides[i];
        }
    } else {
        int64_t st = 1;
        for (int i = ndim - 1; i >= 0; i--) {
            t->shape[i] = shape[i];
            t->strides[i] = st;
            st *= shape[i] > 1 ? shape[i] : 1;
        }
    }
    t->val = NULL;
    t->ag = NULL;
    t->scope = 0;
    prof_add(M_LiveTensors, 1);
    if (LT_UNLIKELY(g_scope_depth)) func_scope_add(t);
    return t;
}

lt_tensor *func_new(ir_node *v) {
    storage *s = storage_new((lt_dtype)v->dtype, v->ndim, v->shape, v->numel);
    if (!s) return NULL;
    lt_tensor *t = handle_new(s, (lt_dtype)v->dtype, v->ndim, v->shape, NULL, v->numel);
    if (!t) {
        storage_release(s);
        return NULL;
    }
    s->node = v;
    g_pending++;
    return t;
}

lt_tensor *func_new_data(lt_buffer *buf, lt_dtype dtype, int ndim, const int64_t *shape) {
    int64_t numel = shape_numel(ndim, shape);
    storage *s = storage_new(dtype, ndim, shape, numel);
    if (!s) {
        buffer_release(buf);
        return NULL;
    }
    s->buf = buf;
    lt_tensor *t = handle_new(s, dtype, ndim, shape, NULL, numel);
    if (!t) storage_release(s);
    return t;
}

lt_tensor *func_new_view(lt_tensor *b, int ndim, const int64_t *shape, const int64_t *strides,
                         int64_t offset) {
    storage *s = b->st;
    int64_t numel = shape_numel(ndim, shape);
    lt_tensor *t = handle_new(s, (lt_dtype)b->dtype, ndim, shape, strides, numel);
    if (!t) return NULL;
    s->refs++;
    t->offset = offset;
    /* A view with the storage's own geometry is not an alias in effect; we
     * still mark it a view so that it shares mutations. */
    t->is_view = 1;
    /* Slicing, selecting, reordering, reshaping or (un)squeezing a view whose
     * elements are distinct keeps them distinct: then only a zero stride on
     * a dim of size > 1 (lt_expand) can alias two, and the full test runs
     * only when the base may overlap. lt_as_strided decides for itself. */
    t->overlaps = (uint8_t)(b->overlaps ? shape_overlaps(ndim, shape, strides) : geom_zero_stride(ndim, shape, strides));
    if (LT_UNLIKELY(b->ag == AG_DETACHED)) t->ag = AG_DETACHED; /* views of a detached alias stay outside */
    return t;
}

void func_free(lt_tensor *t) {
    storage *s = t->st;
    if (LT_UNLIKELY(t->ag != NULL)) ag_handle_free(t);
    if (LT_UNLIKELY(t->scope)) func_scope_forget(t);
    prof_add(M_LiveTensors, -1);
    t->magic = LT_HANDLE_DEAD;
    pool_put(t);
    storage_release(s);
}

ir_node *storage_value_slow(storage *s) {
    if (LT_UNLIKELY(ndeferred)) flush_deferred();
    ir_node *n = ir_data(s->buf, (lt_dtype)s->dtype, s->ndim, s->shape);
    if (!n) return NULL;
    s->leaf = n;
    s->leaf_epoch = g_arena.epoch;
    return n;
}

/* Does the view cover its storage exactly, in order? Then its value is the
 * storage's value reshaped (or the value itself when shapes agree). */
static int covers_storage(const lt_tensor *t) {
    return t->offset == 0 && t->numel == t->st->numel && geom_is_contiguous(t->ndim, t->shape, t->strides);
}

/* Did the storage's last write (scatter `s`, made by func_assign) cover
 * exactly t's window? Then reading t is the written value itself: the
 * as_strided(as_strided_scatter(b, v, W), W) = v peephole at trace time,
 * for any alias with W's geometry, so that `x[0:32].lerp_(g, w)` with a new
 * view each time costs the same nodes as through one view kept alive. A
 * window whose elements share memory is excluded (the scatter's last write
 * would win there, not v). */
static int scatters_window(const ir_node *s, const lt_tensor *t) {
    const ir_node *v = s->in[1];
    if (t->overlaps || v->dtype != t->dtype || s->nia != t->ndim + 1 || s->ia[t->ndim] != t->offset ||
        !shape_eq(v->ndim, v->shape, t->ndim, t->shape))
        return 0;
    for (int i = 0; i < t->ndim; i++)
        if (s->ia[i] != t->strides[i]) return 0;
    return 1;
}

ir_node *func_view_value(lt_tensor *t) {
    if (t->val && t->val_gen == t->st->gen && t->val_epoch == g_arena.epoch) return t->val;
    ir_node *base = storage_value(t->st);
    if (!base) return NULL;
    ir_node *v;
    if (covers_storage(t) && shape_eq(t->ndim, t->shape, t->st->ndim, t->st->shape)) {
        v = base;
    } else if (base->op == LT_OP_AS_STRIDED_SCATTER && scatters_window(base, t)) {
        v = base->in[1];
    } else {
        int64_t ia[LT_MAX_DIMS + 1];
        memcpy(ia, t->strides, sizeof t->strides); /* fixed size: a few moves, not a rep movs */
        ia[t->ndim] = t->offset;
        v = ir_new(LT_OP_AS_STRIDED, (lt_dtype)t->dtype, t->ndim, t->shape, 1, &base, t->ndim + 1, ia, 0, NULL);
        if (!v) return NULL;
    }
    t->val = v;
    t->val_gen = t->st->gen;
    t->val_epoch = g_arena.epoch;
    return v;
}

/* s gets a whole new value: its buffer is dead now unless IR of this trace
 * reads it (a DATA leaf made from it in this arena epoch; another storage
 * sharing the buffer holds its own reference). Released here rather than
 * when the sync rebinds s, so a step that overwrites storages (torch's
 * zero_grad zeroes every gradient in place) does not hold their old and
 * new values at once. */
static void release_overwritten(storage *s) {
    if (!s->buf || (s->leaf && s->leaf_epoch == g_arena.epoch)) return;
    buffer_release(s->buf);
    s->buf = NULL;
    s->leaf = NULL;
}

int func_assign(lt_tensor *t, ir_node *v) {
    storage *s = t->st;
    if (LT_LIKELY(!t->is_view)) {
        release_overwritten(s);
        if (!s->node) g_pending++;
        s->node = v;
        s->gen++;
        return 0;
    }
    ir_node *nb;
    int whole = covers_storage(t);
    if (whole) {
        if (shape_eq(t->ndim, t->shape, s->ndim, s->shape)) {
            nb = v;
        } else {
            int64_t ia[LT_MAX_DIMS + 1];
            shape_contig_strides(s->ndim, s->shape, ia);
            ia[s->ndim] = 0;
            nb = ir_new(LT_OP_AS_STRIDED, (lt_dtype)s->dtype, s->ndim, s->shape, 1, &v, s->ndim + 1, ia, 0, NULL);
        }
    } else {
        ir_node *base = storage_value(s);
        if (!base) return -1;
        int64_t ia[LT_MAX_DIMS + 1];
        memcpy(ia, t->strides, sizeof t->strides); /* fixed size: a few moves, not a rep movs */
        ia[t->ndim] = t->offset;
        ir_node *in[2] = {base, v};
        nb = ir_new(LT_OP_AS_STRIDED_SCATTER, (lt_dtype)s->dtype, s->ndim, s->shape, 2, in, t->ndim + 1, ia, 0, NULL);
    }
    if (!nb) return -1;
    if (whole) release_overwritten(s);
    if (!s->node) g_pending++;
    s->node = nb;
    s->gen++;
    /* Reading this alias back is v itself: the slice(slice_scatter) peephole
     * at trace time. Not where its elements meet: there the last write wins. */
    if (LT_UNLIKELY(t->overlaps)) return 0;
    t->val = v;
    t->val_gen = s->gen;
    t->val_epoch = g_arena.epoch;
    return 0;
}

void func_materialize(storage *s, lt_buffer *buf) {
    drop_buffer(s->buf);
    s->buf = buf;
    if (s->node) {
        s->node = NULL;
        g_pending--;
    }
    s->leaf = NULL;
}
