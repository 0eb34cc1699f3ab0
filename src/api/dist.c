/* The process group and the collectives of the public API (DESIGN 12).
 * A collective is one IR node assigned in place through functionalization,
 * so it joins the step's one compiled graph; src/dist runs it. */
#include "api.h"

_Static_assert((int)LT_REDUCE_SUM == DIST_SUM && (int)LT_REDUCE_MEAN == DIST_MEAN &&
                   (int)LT_REDUCE_MAX == DIST_MAX && (int)LT_REDUCE_MIN == DIST_MIN,
               "lt_reduce_op and dist_op must agree");

int lt_dist_init(void) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow(); /* which joins the job */
    return dist_init();
}
int lt_dist_rank(void) {
    lt_dist_init();
    return dist_rank();
}
int lt_dist_world_size(void) {
    lt_dist_init();
    return dist_world();
}
void lt_dist_finalize(void) { dist_finalize(); }
void lt_dist_abort(int code) { dist_abort(code); }

static const char *const op_names[DIST_NOPS] = {"sum", "mean", "max", "min"};

/* Can t take a collective's result in place? 0, or -1 with an error. */
static int check_target(const char *fn, const lt_tensor *t) {
    if (t->overlaps)
        return err_set(LT_ERR_ARG, "%s: argument 't' is an expanded view: more than one element refers to a single memory location", fn), -1;
    if (LT_UNLIKELY(g_ag_on) && t->ag != AG_DETACHED && t->st->grad_owner)
        return err_set(LT_ERR_STATE, "%s: argument 't' requires grad and collectives are not differentiable; call it "
                                     "between lt_no_grad_begin() and lt_no_grad_end() (gradients: lt_dist_average_grads)", fn), -1;
    return 0;
}

/* One node (ALL_REDUCE or BROADCAST) over t's value, assigned to t. */
static lt_tensor *collective(const char *fn, lt_tensor *t, int op, int64_t arg) {
    API_ENTER();
    if (api_check(fn, "t", t) || check_target(fn, t)) return NULL;
    ir_node *v = func_value(t);
    if (!v) return NULL;
    int64_t ia[2] = {arg, dist_world()};
    ir_node *n = ir_new(op, (lt_dtype)t->dtype, t->ndim, t->shape, 1, &v, 2, ia, 0, NULL);
    if (!n || func_assign(t, n)) return NULL;
    API_LEAVE(fn, t);
    return t;
}

/* op is a reduction, and MEAN's t is floating-point (lt_all_reduce_,
 * lt_reduce_scatter); -1 with the error set. */
static int check_reduce_op(const char *fn, const lt_tensor *t, lt_reduce_op op) {
    if ((int)op < 0 || (int)op >= DIST_NOPS)
        return err_set(LT_ERR_ARG, "%s: argument 'op' is %d; expected LT_REDUCE_SUM, _MEAN, _MAX or _MIN", fn, (int)op),
               -1;
    if (t && t->magic == LT_HANDLE_MAGIC && op == LT_REDUCE_MEAN && !dtype_is_float((lt_dtype)t->dtype))
        return err_set(LT_ERR_DTYPE, "%s: argument 't' is %s; reduction '%s' needs a floating-point tensor", fn,
                       dtype_name((lt_dtype)t->dtype), op_names[op]),
               -1;
    return 0;
}

lt_tensor *lt_all_reduce_(lt_tensor *t, lt_reduce_op op) {
    static const char fn[] = "lt_all_reduce_";
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (check_reduce_op(fn, t, op)) return NULL;
    return collective(fn, t, LT_OP_ALL_REDUCE, op);
}

lt_tensor *lt_broadcast_(lt_tensor *t, int root) {
    static const char fn[] = "lt_broadcast_";
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (root < 0 || root >= dist_world())
        return err_set(LT_ERR_ARG, "%s: argument 'root' is %d; expected a rank in [0, %d)", fn, root, dist_world());
    return collective(fn, t, LT_OP_BROADCAST, root);
}

/* ZeRO-1's ops (ops.def): a tensor of n elements is cut into world chunks
 * of c = ceil(n / world), zero-padded. The chunk is one MPI count. */
static int64_t chunk_of(const char *fn, const lt_tensor *t, int64_t world) {
    int64_t c = (t->numel + world - 1) / world;
    if (c > INT32_MAX)
        return err_set(LT_ERR_OVERFLOW, "%s: argument 't' has %lld elements: a chunk of %lld per rank is more than "
                                        "one MPI message holds (%d)", fn, (long long)t->numel, (long long)c, INT32_MAX), -1;
    return c;
}

/* A new (c) tensor: node op over t's value with ia. */
static lt_tensor *chunk_node(const char *fn, lt_tensor *t, int op, int nia, const int64_t *ia) {
    API_ENTER();
    if (api_check(fn, "t", t)) return NULL;
    int64_t c = chunk_of(fn, t, dist_world());
    ir_node *v = c < 0 ? NULL : func_value(t);
    ir_node *n = v ? ir_new(op, (lt_dtype)t->dtype, 1, &c, 1, &v, nia, ia, 0, NULL) : NULL;
    lt_tensor *r = n ? func_new(n) : NULL;
    API_LEAVE(fn, r);
    return r;
}

lt_tensor *lt_reduce_scatter(lt_tensor *t, lt_reduce_op op) {
    static const char fn[] = "lt_reduce_scatter";
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (check_reduce_op(fn, t, op)) return NULL;
    return chunk_node(fn, t, LT_OP_REDUCE_SCATTER, 2, (int64_t[]){op, dist_world()});
}

lt_tensor *lt_dist_shard(lt_tensor *t) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    return chunk_node("lt_dist_shard", t, LT_OP_SHARD, 1, (int64_t[]){dist_world()});
}

lt_tensor *lt_all_gather_(lt_tensor *t, lt_tensor *shard) {
    static const char fn[] = "lt_all_gather_";
    API_ENTER();
    if (api_check(fn, "t", t) || api_check(fn, "shard", shard)) return NULL;
    int64_t w = dist_world(), c = chunk_of(fn, t, w);
    if (c < 0) return NULL;
    if (shard->dtype != t->dtype)
        return err_set(LT_ERR_DTYPE, "%s: argument 'shard' is %s, t is %s", fn, dtype_name((lt_dtype)shard->dtype),
                       dtype_name((lt_dtype)t->dtype));
    if (shard->ndim != 1 || shard->shape[0] != c)
        return err_set(LT_ERR_SHAPE, "%s: argument 'shard' is %s; t (%s, %lld elements over %lld ranks) needs (%lld)",
                       fn, SHAPE_STR(shard->ndim, shard->shape), SHAPE_STR(t->ndim, t->shape), (long long)t->numel,
                       (long long)w, (long long)c);
    if (check_target(fn, t)) return NULL;
    ir_node *v = func_value(shard);
    if (!v) return NULL;
    ir_node *n = ir_new(LT_OP_ALL_GATHER, (lt_dtype)t->dtype, t->ndim, t->shape, 1, &v, 1, &w, 0, NULL);
    if (!n || func_assign(t, n)) return NULL;
    API_LEAVE(fn, t);
    return t;
}

void lt_dist_set_shard_optimizer(bool on) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    dist_set_shard_optimizer(on);
}

/* lt_dist_set_grad_compress: the reduction lt_dist_average_grads traces
 * for float32 gradients (part of the node, so of the graph key: turning it
 * on or off compiles the step anew, never runs a stale graph). */
static int grad_reduce = DIST_MEAN;

int lt_dist_set_grad_compress(lt_grad_compress mode) {
    if (mode != LT_GRAD_COMPRESS_NONE && mode != LT_GRAD_COMPRESS_BF16)
        return err_set(LT_ERR_ARG, "lt_dist_set_grad_compress: argument 'mode' is %d; expected "
                                   "LT_GRAD_COMPRESS_NONE or LT_GRAD_COMPRESS_BF16", (int)mode), -1;
    grad_reduce = mode == LT_GRAD_COMPRESS_BF16 ? DIST_MEAN_BF16 : DIST_MEAN;
    return 0;
}

int lt_dist_average_grads(int n, lt_tensor *const *params) {
    static const char fn[] = "lt_dist_average_grads";
    if (n < 0 || (n > 0 && !params))
        return err_set(LT_ERR_ARG, "%s: argument 'params' is NULL or 'n' is %d", fn, n), -1;
    if (lt_dist_world_size() == 1) return 0; /* the graphs of one process stay exactly as they were */
    if (dist_shard_optimizer()) return 0;    /* the sharded optimizer's step reduce-scatters the gradients */
    lt_no_grad_begin();
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (api_check(fn, "params[i]", params[i])) rc = -1;
        lt_tensor *g = rc ? NULL : lt_grad(params[i]);
        if (g && grad_reduce == DIST_MEAN_BF16 && lt_dtype_of(g) == LT_F32)
            rc = collective(fn, g, LT_OP_ALL_REDUCE, DIST_MEAN_BF16) ? 0 : -1;
        else if (g && !lt_all_reduce_(g, LT_REDUCE_MEAN)) rc = -1;
    }
    lt_no_grad_end();
    return rc;
}
