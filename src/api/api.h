/* api: the public functions: argument checks, type promotion, errors.
 * Shared helpers for the files of this folder. */
#ifndef LT_API_H
#define LT_API_H

#include "../autograd/autograd.h"
#include "../dist/dist.h"
#include "../exec/exec.h"
#include "../prof/prof.h"

#include <math.h>

void api_init_slow(void);
void api_autosync(void);
void api_after_op(const char *fn, lt_tensor *result, uint64_t nodes_before);

/* Every public op starts here: lazy init, the bound on pending IR, counters.
 * When the switches are off this is two predictable branches. */
#define API_ENTER()                                                                 \
    uint64_t api_nodes0_ = g_arena.nodes;                                           \
    do {                                                                            \
        if (LT_UNLIKELY(!g_initialized)) api_init_slow();                           \
        if (LT_UNLIKELY(g_arena.nodes >= (uint64_t)g_config.max_pending)) {         \
            api_autosync();                                                         \
            api_nodes0_ = 0;                                                        \
        }                                                                           \
        (void)api_nodes0_;                                                          \
    } while (0)

/* Every public op that traced something ends here (eager sync, dispatch trace). */
#define API_LEAVE(fn, result)                                                            \
    do {                                                                                 \
        g_counters[M_OpsTraced] += 1;                                                    \
        if (LT_UNLIKELY(g_config.eager | g_config.dispatch_trace) && (result))           \
            api_after_op((fn), (result), api_nodes0_);                                   \
    } while (0)

/* The end of an op whose one tensor operand is a: node n (NULL: its error
 * is set) as a new handle, recorded for autograd; NULL on error. */
static inline lt_tensor *api_new_of(ir_node *n, lt_tensor *a) {
    lt_tensor *t = n ? func_new(n) : NULL;
    if (LT_UNLIKELY(g_ag_on) && t && ag_record(n, 1, &a, t)) {
        lt_free(t);
        return NULL;
    }
    return t;
}

/* Checks a tensor argument: NULL propagates (the first error stays), a freed
 * handle is reported. Returns 0 if usable. */
static inline int api_check(const char *fn, const char *arg, const lt_tensor *t) {
    if (LT_LIKELY(t && t->magic == LT_HANDLE_MAGIC)) return 0;
    if (!t) err_set(LT_ERR_NULL, "%s: argument '%s' is NULL", fn, arg);
    else err_set(LT_ERR_STATE, "%s: argument '%s' is a freed or invalid handle", fn, arg);
    return -1;
}

/* Elementwise core shared by out-of-place and in-place forms: checks,
 * broadcasting, promotion; one node; a new handle, or `inplace` rebound. */
lt_tensor *api_elementwise_as(const char *fn, int op, int nin, lt_tensor *const *in, int nsc, const double *sc,
                              lt_tensor *inplace, int integral);
/* integral: the scalars are integers (lt_add_scalar_int ...): an integer tensor keeps its dtype. */
static inline lt_tensor *api_elementwise(const char *fn, int op, int nin, lt_tensor *const *in, int nsc,
                                         const double *sc, lt_tensor *inplace) {
    return api_elementwise_as(fn, op, nin, in, nsc, sc, inplace, 0);
}

/* Autocast (autocast.c). g_autocast: inside a bfloat16 region. Operands
 * of dtype `from` among in[n] are replaced by new CAST handles to `to`,
 * kept in tmp[n] (NULL where nothing was cast) for api_autocast_free after
 * the op. NULL entries stay NULL. -1 on error (nothing to free). */
extern uint8_t g_autocast;
int api_autocast_args(int n, lt_tensor **in, lt_tensor **tmp, lt_dtype from, lt_dtype to);
void api_autocast_free(int n, lt_tensor **tmp);

/* lt_from_data without the copy, for the data loaders: a new handle over
 * `data` (64-byte aligned, at least the shape's bytes; dtype and shape
 * valid, as the loaders' are), which it takes in every case: given back with give_back(ctx, data) when the last reference
 * goes, or at once on error (give_back NULL: core_free). */
lt_tensor *api_adopt_data(void *data, lt_dtype dtype, int ndim, const int64_t *shape,
                          void (*give_back)(void *ctx, void *data), void *ctx);

/* Sync storages' pending values (lt_mark_step with a subset). */
int api_sync_storages(storage **sts, int n);

#endif
