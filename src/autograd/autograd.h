/* autograd: grad nodes, recording hooks, backward (DESIGN 2.6, 7).
 *
 * Autograd sits below functionalization: it records the pure ops that the
 * api and func layers produce, including the AS_STRIDED read of a view and
 * the AS_STRIDED_SCATTER that a write through a view becomes.
 *
 * Where the state lives:
 *   storage->grad_owner  the ag_fn of the storage's CURRENT value (NULL: no
 *                        grad). A mutation that is recorded replaces it; a
 *                        leaf that requires grad holds an AG_LEAF fn, which
 *                        also owns the accumulated .grad.
 *   handle->ag           NULL; AG_DETACHED (lt_detach and views of it: this
 *                        alias is outside the graph); or, for a view, the
 *                        cached fn of the view's value (valid while its
 *                        vh/vgen name this handle and the storage's gen).
 * A fn never points at IR nodes (they die at each sync); the values its
 * backward needs are held by internal handles, so a sync between forward
 * and backward materializes them, and they are released by backward, so a
 * step that syncs only after backward never materializes them (DESIGN 2.7).
 *
 * Hot path: every hook is behind `if (LT_UNLIKELY(g_ag_on))`, which is false
 * unless grad mode is on AND some storage requires grad. */
#ifndef LT_AUTOGRAD_H
#define LT_AUTOGRAD_H

#include "../func/func.h"

#define AG_LEAF LT_OP_COUNT /* op of a leaf's accumulator fn */
#define AG_INLINE_IN 4      /* edges stored inline; more (CAT) go to `ext` */
#define AG_MAX_IA (2 * LT_MAX_DIMS + 2)

typedef struct ag_fn {
    int32_t refs;     /* storages, handle caches and edges holding it */
    uint16_t op;      /* enum lt_op, or AG_LEAF */
    uint16_t nin;     /* edges */
    uint8_t dtype, ndim, nia, nsc;
    uint8_t released; /* saved values dropped by a backward */
    uint8_t nsaved;   /* non-NULL entries of saved[] */
    uint32_t mark;    /* backward epoch of the last visit */
    int32_t deps;     /* during backward: edges not yet delivered */
    const lt_tensor *vh; /* handle-cache validity: the handle that cached it, */
    uint64_t vgen;        /* at this generation of its storage */
    double sc[IR_MAX_SCALARS];
    int64_t shape[LT_MAX_DIMS]; /* shape of the value this fn produced */
    int64_t ia[AG_MAX_IA];      /* the op's integer attributes (see backward.c) */
    struct ag_fn **next;        /* next[i]: fn of input i, NULL if it needs no grad */
    struct ag_fn *next_in[AG_INLINE_IN];
    int64_t *ext;               /* CAT: size of each input along dim; heap */
    lt_tensor *saved[5];        /* values of inputs 0..2, the output (3), input 3 (4) */
    lt_tensor *grad;            /* AG_LEAF: the accumulated .grad; else backward scratch */
} ag_fn;

/* The one flag of the hot path: grad mode on and some storage requires grad. */
extern int g_ag_on;
extern char g_ag_detached_mark;
#define AG_DETACHED ((void *)&g_ag_detached_mark)

/* Records the op that made node n from handles in[0..nin) into `out`: a new
 * handle (out-of-place), or in[0] after func_assign (in place). Attrs and
 * scalars are copied from n; inputs are read from n->in. A NULL in[i] is an
 * operand that no handle holds (needs no grad). 0, or -1 (OOM). */
int ag_record(ir_node *n, int nin, lt_tensor *const *in, lt_tensor *out);
/* Before an in-place write into t (with inputs in): the PyTorch errors.
 * 0, or -1 with LT_ERR_STATE set naming fn. */
int ag_check_inplace(const char *fn, lt_tensor *t, int nin, lt_tensor *const *in);
/* After func_assign(dst, v) in lt_copy_ (cast: v is a new CAST node). */
int ag_copy(lt_tensor *dst, lt_tensor *src, int cast);
/* After func_assign(t, FILL): t's new value needs no grad (but if t's
 * storage requires grad, t still does, with a zero gradient for the old
 * value, as PyTorch). 0, or -1 (OOM). */
int ag_fill(lt_tensor *t);
/* t is a new plain handle holding a's value (clone): it shares a's grad. */
void ag_share(lt_tensor *a, lt_tensor *t);

/* Release hooks (func): a storage or handle with autograd state dies. */
void ag_storage_free(storage *s);
void ag_handle_free(lt_tensor *t);

/* Internal to src/autograd. */
extern int g_ag_no_grad;                     /* lt_no_grad_begin depth */
void ag_update_on(void);                     /* recomputes g_ag_on */
void ag_fn_drop_saved(ag_fn *f);
int ag_covers(const lt_tensor *t, int *same_shape);
ag_fn *ag_strided_fn(ag_fn *base, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                     lt_dtype dt);
ag_fn *ag_fn_new(int op, int nin);           /* refs = 1, everything else zero */
void ag_fn_release(ag_fn *f);                /* NULL ok */
static inline ag_fn *ag_fn_ref(ag_fn *f) {
    if (f) f->refs++;
    return f;
}
ag_fn *ag_view_fn(lt_tensor *t);             /* borrowed; NULL if no grad */
/* Borrowed fn of a handle's current value, NULL if it needs no grad. */
static inline ag_fn *ag_fn_of(lt_tensor *t) {
    if (LT_LIKELY(!t->is_view && !t->ag)) return t->st->grad_owner;
    return ag_view_fn(t);
}
void ag_set_storage_fn(storage *s, ag_fn *f); /* takes f's reference */
/* The backward formula of f: g (borrowed) has f's shape and dtype; gi[i]
 * receives a new handle for every i with f->next[i]. 0, or -1 (error set). */
int ag_backward_fn(ag_fn *f, lt_tensor *g, lt_tensor **gi);
/* Saved values of the NN ops (bw_nn.c): bits 0..2 inputs 0..2, bit 3 the
 * output, bit 4 input 3; `need` bit i: input i needs a gradient. */
unsigned ag_nn_saves(int op, unsigned need, const int64_t *ia);
/* New plain handle holding node v (internal: no autograd, no counters). */
lt_tensor *ag_value_handle(ir_node *v);

#endif
