/* func: tensor handles, storages, views and functionalization (DESIGN 5).
 *
 * A storage is the base of a family of aliases: its current value is either
 * a pending IR node or a materialized buffer, plus a generation counter that
 * every mutation bumps. A handle is what the user holds: a storage plus a
 * strided geometry (shape, strides, offset) relative to the storage's
 * contiguous layout. Every view is expressed as that one geometry, so
 * reading an alias is ONE AS_STRIDED node and writing through it is one op
 * plus ONE AS_STRIDED_SCATTER node, however deep the chain of views that
 * made it: O(1), flat in the number of earlier mutations. */
#ifndef LT_FUNC_H
#define LT_FUNC_H

#include "../ir/ir.h"

typedef struct storage {
    int32_t refs; /* handles (and internal holders) referencing it */
    uint8_t dtype;
    uint8_t ndim;
    int64_t numel;
    int64_t shape[LT_MAX_DIMS];
    ir_node *node;   /* pending value, or NULL when materialized */
    lt_buffer *buf;  /* materialized value (meaningful when node == NULL) */
    ir_node *leaf;   /* cached DATA node for buf, valid in leaf_epoch */
    uint32_t leaf_epoch;
    uint64_t gen;    /* bumped by every mutation */
    struct storage *prev, *next; /* live registry */
    void *grad_owner; /* autograd: the ag_fn of the current value, NULL if no grad */
} storage;

#define LT_HANDLE_MAGIC 0x1a2e7e45u
#define LT_HANDLE_DEAD 0xdeadbeefu

struct lt_tensor {
    uint32_t magic;
    uint8_t is_view;
    uint8_t dtype;
    uint8_t ndim;
    uint8_t overlaps; /* a view whose elements may share memory (a zero stride: writes error) */
    storage *st;
    int64_t numel;
    int64_t offset;
    int64_t shape[LT_MAX_DIMS];
    int64_t strides[LT_MAX_DIMS];
    ir_node *val;      /* cached value of a view */
    uint64_t val_gen;  /* storage generation of val */
    uint32_t val_epoch;
    uint32_t scope;    /* 1 + its slot in the open scopes (scope.c); 0: in none */
    void *ag;          /* autograd: NULL, AG_DETACHED, or a view's cached ag_fn */
};

/* Live registry: every live storage, in creation order. */
extern storage g_live;      /* sentinel of the doubly-linked list */
extern int64_t g_pending;   /* storages with a pending node */

/* A new plain tensor whose value is `v`. NULL (error set) on failure. */
lt_tensor *func_new(ir_node *v);
/* A new plain tensor holding `buf` (takes the reference). */
lt_tensor *func_new_data(lt_buffer *buf, lt_dtype dtype, int ndim, const int64_t *shape);
/* A new alias of t's storage with the given geometry, which must be one
 * that t's own reaches by a view op other than as_strided (overlap is
 * derived from t's; lt_as_strided sets it after, shape_overlaps). */
lt_tensor *func_new_view(lt_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                         int64_t offset);
void func_free(lt_tensor *t);

/* Handle scopes (scope.c). While a scope is open, handle creation records
 * the new handle (func_scope_add). A handle that the library keeps beyond
 * the call that made it (a model's parameters, an optimizer's state,
 * autograd's saved values and gradients) must leave the user's scope:
 * func_unscope it where it is created. */
extern int g_scope_depth;
void func_scope_add(lt_tensor *t);
void func_scope_forget(lt_tensor *t);
static inline lt_tensor *func_unscope(lt_tensor *t) {
    if (t && LT_UNLIKELY(t->scope)) func_scope_forget(t);
    return t;
}
int func_scope_begin(void);    /* 0, or -1 on OOM (the matching end is then a no-op) */
int func_scope_end(void);      /* the number of handles freed; -1 with no open scope */
void func_scope_keep(lt_tensor *t);

ir_node *storage_value_slow(storage *s);
static inline ir_node *storage_value(storage *s) {
    if (s->node) return s->node;
    if (LT_LIKELY(s->leaf && s->leaf_epoch == g_arena.epoch)) return s->leaf;
    return storage_value_slow(s);
}

ir_node *func_view_value(lt_tensor *t);
/* The current value of a handle as an IR node (NULL + error on failure). */
static inline ir_node *func_value(lt_tensor *t) {
    if (LT_LIKELY(!t->is_view)) return storage_value(t->st);
    return func_view_value(t);
}

/* Mutation: t's new value is v (same shape and dtype as t). */
int func_assign(lt_tensor *t, ir_node *v);

/* Sync rebinding: storage s now holds buf (takes a reference). */
void func_materialize(storage *s, lt_buffer *buf);

/* View geometry (view.c). All return 0 or -1 with an error naming `fn`. */
/* 1 if a dim of size > 1 has stride 0 and no dim is empty. */
static inline int geom_zero_stride(int ndim, const int64_t *shape, const int64_t *strides) {
    int z = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) return 0;
        z |= shape[i] > 1 && strides[i] == 0;
    }
    return z;
}
/* PyTorch's computeStride: strides for viewing (shape, strides) as newshape;
 * returns 0 if not expressible as a view. */
int geom_view_strides(int ndim, const int64_t *shape, const int64_t *strides, int nnew,
                      const int64_t *newshape, int64_t *newstrides);
int geom_is_contiguous(int ndim, const int64_t *shape, const int64_t *strides);

/* Would an in-place op writing `dst` while reading `src` be refused by
 * PyTorch's assert_no_partial_overlap? Only two distinct handles of one
 * storage can: everything else costs two compares. */
int func_partial_overlap_slow(const lt_tensor *dst, const lt_tensor *src);
static inline int func_partial_overlap(const lt_tensor *dst, const lt_tensor *src) {
    return src != dst && LT_UNLIKELY(src->st == dst->st) && func_partial_overlap_slow(dst, src);
}

#endif
