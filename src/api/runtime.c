/* Init, handle queries, lt_free, sync points (lt_mark_step, lt_to_host). */
#include "api.h"

static void at_exit(void) {
    prof_exit(); /* LT_METRICS report, and the trace file's closing brackets */
}

void api_init_slow(void) {
    core_init_slow();
    prof_init();
    dist_init(); /* joins the MPI job when launched by mpirun; else a world of one */
    atexit(at_exit);
}

void api_autosync(void) {
    prof_add(M_AutoSync, 1);
    lt_mark_step();
}

/* ---- dispatch trace (LT_DISPATCH_TRACE=1; DESIGN 8) ----------------------
 * One line per public call: the layers it passed and the IR nodes it made,
 * so the hop count of any op is visible, e.g.
 *   [dispatch] lt_lerp_: api > func[view: read AS_STRIDED, write AS_STRIDED_SCATTER] > autograd[off] > ir +3: AS_STRIDED#7 LERP#8 AS_STRIDED_SCATTER#9
 * Nodes carry no creation number, so the trace finds a call's new nodes by
 * walking down from the result's value(s) and stopping at nodes an earlier
 * call already reported: `tr_seen` holds every reported node of the current
 * arena epoch and is closed under operands, so each walk costs only the new
 * nodes. Ids are arena-epoch sequence numbers (post-order = creation order).
 * Cold path: nothing here runs unless the switch is on. */
static const ir_node **tr_seen;
static size_t tr_cap, tr_count;
static uint32_t tr_epoch;
static const ir_node **tr_new;
static size_t tr_new_cap;
static struct tr_frame {
    const ir_node *n;
    int next;
} *tr_stack;
static size_t tr_stack_cap;

static size_t tr_slot(const ir_node *n) {
    uint64_t h = (uint64_t)(uintptr_t)n * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (tr_cap - 1);
    while (tr_seen[i] && tr_seen[i] != n) i = (i + 1) & (tr_cap - 1);
    return i;
}

/* Adds n to the seen set; 1 if it was not there, -1 on OOM. */
static int tr_insert(const ir_node *n) {
    if (tr_epoch != g_arena.epoch) { /* the arena was reset: every node is new again */
        if (tr_seen) memset(tr_seen, 0, tr_cap * sizeof *tr_seen);
        tr_count = 0;
        tr_epoch = g_arena.epoch;
    }
    if (2 * (tr_count + 1) > tr_cap) {
        const ir_node **old = tr_seen;
        size_t oc = tr_cap;
        tr_cap = tr_cap ? tr_cap * 2 : 1024;
        tr_seen = core_calloc(tr_cap, sizeof *tr_seen);
        if (!tr_seen) {
            tr_seen = old;
            tr_cap = oc;
            return -1;
        }
        for (size_t i = 0; i < oc; i++)
            if (old[i]) tr_seen[tr_slot(old[i])] = old[i];
        core_free(old);
    }
    size_t i = tr_slot(n);
    if (tr_seen[i]) return 0;
    tr_seen[i] = n;
    tr_count++;
    return 1;
}

static int tr_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = core_realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Appends root's unreported nodes to tr_new in post-order. */
static void tr_collect(const ir_node *root, size_t *nnew) {
    if (!root || tr_insert(root) != 1) return;
    size_t sp = 0;
    if (tr_grow((void **)&tr_stack, &tr_stack_cap, 1, sizeof *tr_stack)) return;
    tr_stack[sp++] = (struct tr_frame){root, 0};
    while (sp) {
        struct tr_frame *f = &tr_stack[sp - 1];
        if (f->next < f->n->nin) {
            const ir_node *c = f->n->in[f->next++];
            if (tr_insert(c) == 1) {
                if (tr_grow((void **)&tr_stack, &tr_stack_cap, sp + 1, sizeof *tr_stack)) return;
                tr_stack[sp++] = (struct tr_frame){c, 0};
            }
            continue;
        }
        if (tr_grow((void **)&tr_new, &tr_new_cap, *nnew + 1, sizeof *tr_new)) return;
        tr_new[(*nnew)++] = f->n;
        sp--;
    }
}

static void dispatch_trace(const char *fn, lt_tensor *r, uint64_t nodes_before) {
    uint64_t made = g_arena.nodes - nodes_before;
    size_t nnew = 0;
    tr_collect(r->st->node, &nnew);
    if (r->is_view && r->val && r->val_epoch == g_arena.epoch) tr_collect(r->val, &nnew);
    int reads = 0, writes = 0;
    for (size_t i = 0; i < nnew; i++) {
        reads |= tr_new[i]->op == LT_OP_AS_STRIDED;
        writes |= tr_new[i]->op == LT_OP_AS_STRIDED_SCATTER;
    }
    char func[96];
    if (r->is_view && made == 0) snprintf(func, sizeof func, "view: alias, no node");
    else if (r->is_view || writes)
        snprintf(func, sizeof func, "view:%s%s%s", reads ? " read AS_STRIDED" : "", reads && writes ? "," : "",
                 writes ? " write AS_STRIDED_SCATTER" : "");
    else snprintf(func, sizeof func, "plain%s", reads ? "; operand view: read AS_STRIDED" : "");
    fprintf(stderr, "[dispatch] %s: api > func[%s] > autograd[%s] > ir +%llu%s", fn, func,
            r->st->grad_owner ? "record" : "off", (unsigned long long)made, nnew ? ":" : "");
    for (size_t i = 0; i < nnew; i++)
        fprintf(stderr, " %s#%llu", g_ops[tr_new[i]->op].name, (unsigned long long)(nodes_before + i));
    if (nnew != made) fprintf(stderr, " (%lld not reachable from the result)", (long long)made - (long long)nnew);
    fputc('\n', stderr);
}

void api_after_op(const char *fn, lt_tensor *result, uint64_t nodes_before) {
    if (g_config.dispatch_trace) dispatch_trace(fn, result, nodes_before);
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

/* Handle scopes: the pool itself is func/scope.c. */
void lt_scope_begin(void) { func_scope_begin(); }

int lt_scope_end(void) {
    int freed = func_scope_end();
    if (freed < 0) err_set(LT_ERR_STATE, "lt_scope_end: no matching 'lt_scope_begin'");
    return freed;
}

lt_tensor *lt_scope_keep(lt_tensor *t) {
    if (api_check("lt_scope_keep", "t", t)) return NULL;
    func_scope_keep(t);
    return t;
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
    uint64_t ts0 = prof_now_ns();
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
    /* outs doubles as the list of buffers the roots drop (donation candidates).
     * Only a sync of every pending storage donates: a partial one (lt_to_host)
     * may leave pending IR elsewhere that still reads an old buffer. */
    for (int i = 0; i < n; i++) {
        roots_n[i] = sts[i]->node;
        outs[i] = sts[i]->buf;
    }
    if (n && exec_sync_nodes_ex(roots_n, n, outs, n == g_pending ? outs : NULL)) return -1;
    for (int i = 0; i < n; i++) func_materialize(sts[i], outs[i]);
    if (g_pending == 0) {
        prof_arena_drop(g_arena.nodes, g_arena.bytes);
        arena_reset();
    }
    prof_sync_done(ts0, prof_now_ns());
    return 0;
}

void lt_mark_step(void) {
    if (LT_UNLIKELY(!g_initialized)) api_init_slow();
    prof_add(M_MarkStep, 1);
    prof_step_begin();
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
    prof_step_end();
}

/* Copies t's elements (its strided window of the storage) to dst. */
static void host_gather(const lt_tensor *t, void *dst) {
    size_t es = dtype_size((lt_dtype)t->dtype);
    const char *src = t->st->buf->data;
    int nd = t->ndim;
    int64_t idx[LT_MAX_DIMS] = {0}, off = t->offset;
    if (t->numel == 0) return;  /* dst may be NULL then (an empty torch tensor's data) */
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
        err_set(LT_ERR_SHAPE, "lt_item: argument 't' %s has %lld elements, expected 1", SHAPE_STR(t->ndim, t->shape),
                (long long)t->numel);
        return NAN;
    }
    union {
        double f;
        float f32;
        int32_t i32;
        int64_t i64;
        uint8_t b;
        uint16_t bf;
    } v;
    if (lt_to_host(t, &v, dtype_size((lt_dtype)t->dtype))) return NAN;
    switch ((lt_dtype)t->dtype) {
    case LT_F32: return v.f32;
    case LT_F64: return v.f;
    case LT_I32: return v.i32;
    case LT_I64: return (double)v.i64;
    case LT_BOOL: case LT_U8: return v.b;
    case LT_BF16: return bf16_to_f32(v.bf);
    }
    return NAN;
}
