/* Init, handle queries, lt_free, sync points (lt_mark_step, lt_to_host). */
#include "api.h"

static void at_exit(void) {
    if (g_config.metrics_at_exit) {
        fprintf(stderr, "lazytensor metrics:\n");
        fprintf(stderr, "  MarkStep %.0f, UncachedCompile %.0f, CachedCompile %.0f, OpsTraced %.0f\n",
                g_counters[M_MarkStep], g_counters[M_UncachedCompile], g_counters[M_CachedCompile],
                g_counters[M_OpsTraced]);
    }
}

void api_init_slow(void) {
    core_init_slow();
    atexit(at_exit);
}

void api_autosync(void) {
    prof_add(M_AutoSync, 1);
    lt_mark_step();
}

void api_after_op(const char *fn, lt_tensor *result, uint64_t nodes_before) {
    if (g_config.dispatch_trace)
        fprintf(stderr, "[dispatch] %s: api > func(%s) > ir +%llu node(s)\n", fn,
                result->is_view ? "view" : "plain", (unsigned long long)(g_arena.nodes - nodes_before));
    if (g_config.eager) lt_mark_step();
}

void lt_free(lt_tensor *t) {
    if (!t) return;
    if (t->magic != LT_HANDLE_MAGIC) {
        err_set(LT_ERR_STATE, "lt_free: argument 't' is a freed or invalid handle");
        return;
    }
    func_free(t);
}

int lt_ndim(const lt_tensor *t) { return api_check("lt_ndim", "t", t) ? -1 : t->ndim; }
const int64_t *lt_shape(const lt_tensor *t) { return api_check("lt_shape", "t", t) ? NULL : t->shape; }
lt_dtype lt_dtype_of(const lt_tensor *t) { return api_check("lt_dtype_of", "t", t) ? LT_F32 : (lt_dtype)t->dtype; }
int64_t lt_numel(const lt_tensor *t) { return api_check("lt_numel", "t", t) ? -1 : t->numel; }
bool lt_is_view(const lt_tensor *t) { return api_check("lt_is_view", "t", t) ? false : t->is_view; }

static storage **roots_st;
static ir_node **roots_n;
static lt_buffer **outs;
static size_t roots_cap;

int api_sync_storages(storage **sts, int n) {
    if ((size_t)n > roots_cap) {
        size_t c = roots_cap ? roots_cap : 64;
        while (c < (size_t)n) c *= 2;
        ir_node **rn = core_realloc(roots_n, c * sizeof *rn);
        if (!rn) return -1;
        roots_n = rn;
        lt_buffer **ob = core_realloc(outs, c * sizeof *ob);
        if (!ob) return -1;
        outs = ob;
        roots_cap = c;
    }
    for (int i = 0; i < n; i++) roots_n[i] = sts[i]->node;
    if (n && exec_sync_nodes(roots_n, n, outs)) return -1;
    for (int i = 0; i < n; i++) func_materialize(sts[i], outs[i]);
    if (g_pending == 0) arena_reset();
    return 0;
}

void lt_mark_step(void) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    prof_add(M_MarkStep, 1);
    static size_t cap;
    size_t n = 0;
    for (storage *s = g_live.next; s != &g_live; s = s->next) {
        if (!s->node) continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 256;
            storage **q = core_realloc(roots_st, c * sizeof *q);
            if (!q) return;
            roots_st = q;
            cap = c;
        }
        roots_st[n++] = s;
    }
    api_sync_storages(roots_st, (int)n);
    prof_gauge_max(M_ArenaBytes, (double)g_arena.bytes);
}

/* Copies t's elements (its strided window of the storage) to dst. */
static void host_gather(const lt_tensor *t, void *dst) {
    size_t es = dtype_size((lt_dtype)t->dtype);
    const char *src = t->st->buf->data;
    int nd = t->ndim;
    int64_t idx[LT_MAX_DIMS] = {0}, off = t->offset;
    if (!t->is_view) {
        memcpy(dst, src, (size_t)t->numel * es);
        return;
    }
    for (int64_t i = 0; i < t->numel; i++) {
        memcpy((char *)dst + (size_t)i * es, src + (size_t)off * es, es);
        for (int d = nd - 1; d >= 0; d--) {
            idx[d]++;
            off += t->strides[d];
            if (idx[d] < t->shape[d]) break;
            off -= t->strides[d] * idx[d];
            idx[d] = 0;
        }
    }
}

int lt_to_host(lt_tensor *t, void *dst, size_t nbytes) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    if (api_check("lt_to_host", "t", t)) return -1;
    size_t want = (size_t)t->numel * dtype_size((lt_dtype)t->dtype);
    if (!dst && want) {
        err_set(LT_ERR_NULL, "lt_to_host: argument 'dst' is NULL");
        return -1;
    }
    if (nbytes != want) {
        err_set(LT_ERR_ARG, "lt_to_host: argument 'nbytes' is %zu but tensor %s %s needs %zu bytes", nbytes,
                dtype_name((lt_dtype)t->dtype), SHAPE_STR(t->ndim, t->shape), want);
        return -1;
    }
    storage *s = t->st;
    if (s->node && api_sync_storages(&s, 1)) return -1;
    uint64_t t0 = prof_now_ns();
    host_gather(t, dst);
    prof_timer_add(M_TransferFromDeviceTime, prof_now_ns() - t0);
    return 0;
}

double lt_item(lt_tensor *t) {
    if (api_check("lt_item", "t", t)) return NAN;
    if (t->numel != 1) {
        err_set(LT_ERR_SHAPE, "lt_item: tensor %s has %lld elements, expected 1", SHAPE_STR(t->ndim, t->shape),
                (long long)t->numel);
        return NAN;
    }
    union {
        double f;
        float f32;
        int32_t i32;
        int64_t i64;
        uint8_t b;
    } v;
    if (lt_to_host(t, &v, dtype_size((lt_dtype)t->dtype))) return NAN;
    switch ((lt_dtype)t->dtype) {
    case LT_F32: return v.f32;
    case LT_F64: return v.f;
    case LT_I32: return v.i32;
    case LT_I64: return (double)v.i64;
    case LT_BOOL: return v.b;
    }
    return NAN;
}
