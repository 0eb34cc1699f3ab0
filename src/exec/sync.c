/* Sync: post-order the pending IR under the roots, assign parameter slots,
 * serialize the canonical graph (which is the key and the structural check),
 * find or compile the executable, and run it. */
#include "exec.h"

#include "../dist/dist.h"
#include "../prof/prof.h"

/* Scratch vectors reused across syncs: a steady loop allocates nothing here. */
static ir_node **order;
static size_t order_cap;
static struct frame {
    ir_node *n;
    int next;
} *stack;
static size_t stack_cap;
static uint64_t *serial;
static size_t serial_len, serial_cap;
static lt_buffer **params;
static size_t params_cap;
static double *scalars;
static size_t scalars_cap;
static uint32_t sync_epoch;
static int ncollectives; /* in the last post-order: the graph talks to the other ranks */

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    void *q = core_realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}
#define GROW(v, cap, need) grow((void **)&(v), &(cap), (need), sizeof *(v))

static int emit(uint64_t w) {
    if (LT_UNLIKELY(serial_len == serial_cap) && GROW(serial, serial_cap, serial_len + 1)) return -1;
    serial[serial_len++] = w;
    return 0;
}

/* Post-order walk with an explicit stack: graphs may be a million nodes deep. */
static int post_order(ir_node *const *roots, int nroots, size_t *pn, int *pnparams, int *pnscalars) {
    size_t n = 0;
    int nparams = 0, nscalars = 0;
    ncollectives = 0;
    for (int r = 0; r < nroots; r++) {
        if (roots[r]->mark == sync_epoch) continue;
        size_t sp = 0;
        if (GROW(stack, stack_cap, 1)) return -1;
        stack[sp++] = (struct frame){roots[r], 0};
        roots[r]->mark = sync_epoch;
        while (sp) {
            struct frame *f = &stack[sp - 1];
            if (f->next < f->n->nin) {
                ir_node *c = f->n->in[f->next++];
                if (c->mark != sync_epoch) {
                    c->mark = sync_epoch;
                    if (GROW(stack, stack_cap, sp + 1)) return -1;
                    stack[sp++] = (struct frame){c, 0};
                }
                continue;
            }
            ir_node *x = f->n;
            sp--;
            if (GROW(order, order_cap, n + 1)) return -1;
            x->idx = (int32_t)n;
            order[n++] = x;
            ncollectives += (g_ops[x->op].flags & COLLECTIVE) != 0;
            if (x->op == LT_OP_DATA && x->buf->mark != sync_epoch) {
                x->buf->mark = sync_epoch;
                x->buf->slot = nparams;
                if (GROW(params, params_cap, (size_t)nparams + 1)) return -1;
                params[nparams++] = x->buf;
            }
            for (int i = 0; i < x->nsc; i++)
                if ((x->rt >> i) & 1) {
                    if (GROW(scalars, scalars_cap, (size_t)nscalars + 1)) return -1;
                    scalars[nscalars++] = x->sc[i];
                }
        }
    }
    *pn = n;
    *pnparams = nparams;
    *pnscalars = nscalars;
    return 0;
}

/* The canonical serialization: everything that determines the compiled
 * program and nothing that doesn't (runtime scalar values, buffer addresses). */
static int serialize(size_t n, ir_node *const *roots, int nroots) {
    serial_len = 0;
    for (size_t k = 0; k < n; k++) {
        ir_node *x = order[k];
        uint64_t head = (uint64_t)x->op | (uint64_t)x->dtype << 16 | (uint64_t)x->ndim << 24 |
                        (uint64_t)x->nin << 32 | (uint64_t)x->nia << 48 | (uint64_t)x->nsc << 56 |
                        (uint64_t)x->rt << 60;
        if (emit(head)) return -1;
        for (int i = 0; i < x->ndim; i++)
            if (emit((uint64_t)x->shape[i])) return -1;
        for (int i = 0; i < x->nin; i++)
            if (emit((uint64_t)x->in[i]->idx)) return -1;
        for (int i = 0; i < x->nia; i++)
            if (emit((uint64_t)x->ia[i])) return -1;
        for (int i = 0; i < x->nsc; i++) {
            uint64_t bits = 0;
            if (!((x->rt >> i) & 1)) memcpy(&bits, &x->sc[i], 8);
            if (emit(bits)) return -1;
        }
        if (x->op == LT_OP_DATA && emit((uint64_t)x->buf->slot)) return -1;
    }
    if (emit((uint64_t)nroots)) return -1;
    for (int r = 0; r < nroots; r++)
        if (emit((uint64_t)roots[r]->idx)) return -1;
    return 0;
}

void exec_graph_free(exec_graph *g) {
    if (!g) return;
    core_free(g->nodes);
    core_free(g->roots);
    core_free(g->in_pool);
    core_free(g->ia_pool);
    core_free(g->indexed);
    core_free(g);
}

static exec_graph *build_graph(size_t n, ir_node *const *roots, int nroots, int nparams, int nscalars) {
    size_t nin = 0, nia = 0;
    for (size_t k = 0; k < n; k++) {
        nin += order[k]->nin;
        nia += order[k]->nia;
    }
    exec_graph *g = core_calloc(1, sizeof *g);
    if (!g) return NULL;
    g->nodes = core_calloc(n ? n : 1, sizeof *g->nodes);
    g->roots = core_malloc((size_t)(nroots ? nroots : 1) * sizeof *g->roots);
    g->in_pool = core_malloc((nin ? nin : 1) * sizeof *g->in_pool);
    g->ia_pool = core_malloc((nia ? nia : 1) * sizeof *g->ia_pool);
    if (!g->nodes || !g->roots || !g->in_pool || !g->ia_pool) {
        exec_graph_free(g);
        return NULL;
    }
    g->n = (int)n;
    g->nroots = nroots;
    g->nparams = nparams;
    g->nscalars = nscalars;
    size_t pin = 0, pia = 0;
    int sc_slot = 0;
    for (size_t k = 0; k < n; k++) {
        ir_node *x = order[k];
        gnode *y = &g->nodes[k];
        y->op = x->op;
        y->dtype = x->dtype;
        y->ndim = x->ndim;
        y->nin = x->nin;
        y->nia = x->nia;
        y->nsc = x->nsc;
        y->numel = x->numel;
        memcpy(y->shape, x->shape, (size_t)x->ndim * 8);
        y->in = g->in_pool + pin;
        for (int i = 0; i < x->nin; i++) y->in[i] = x->in[i]->idx;
        pin += x->nin;
        y->ia = g->ia_pool + pia;
        memcpy(y->ia, x->ia, (size_t)x->nia * 8);
        pia += x->nia;
        for (int i = 0; i < IR_MAX_SCALARS; i++) {
            y->sc[i] = i < x->nsc ? x->sc[i] : 0;
            y->sc_slot[i] = (i < x->nsc && ((x->rt >> i) & 1)) ? sc_slot++ : -1;
        }
        y->param = x->op == LT_OP_DATA ? x->buf->slot : -1;
        /* Age in nodes (negative): right while a pending node is < 2^31 nodes old. */
        y->seq = x->op == LT_OP_DATA ? INT32_MIN : (int32_t)(x->seq - g_ir_seq);
    }
    for (int r = 0; r < nroots; r++) g->roots[r] = roots[r]->idx;
    if (exec_index_scan(g)) {
        exec_graph_free(g);
        return NULL;
    }
    return g;
}

static int forced_backend = -1;
void exec_set_backend(int which) { forced_backend = which; }

const backend *exec_backend(void) {
    int b = forced_backend >= 0 ? forced_backend : g_config.backend; /* LT_BACKEND; cpu by default */
    return b == 0 ? &g_backend_cpu : &g_backend_ref;
}

/* donate[p] = 1 where param p's buffer dies with this sync: its one
 * reference is held by a root storage that is about to be rebound. */
static uint8_t *donate;
static size_t donate_cap;
static int find_donatable(lt_buffer *const *released, int nroots, int nparams) {
    if (GROW(donate, donate_cap, (size_t)nparams + 1)) return -1;
    memset(donate, 0, (size_t)nparams + 1);
    for (int r = 0; released && r < nroots; r++) {
        lt_buffer *b = released[r];
        if (b && b->mark == sync_epoch && b->refs == 1) donate[b->slot] = 1;
    }
    return 0;
}

int exec_sync_nodes(ir_node *const *roots, int nroots, lt_buffer **outs) {
    return exec_sync_nodes_ex(roots, nroots, outs, NULL);
}

int exec_sync_nodes_ex(ir_node *const *roots, int nroots, lt_buffer **outs, lt_buffer *const *released) {
    uint64_t t0 = prof_now_ns();
    if (++sync_epoch == 0) sync_epoch = 1; /* 0 means "never visited" */
    size_t n;
    int nparams, nscalars;
    const backend *be = exec_backend();
    if (post_order(roots, nroots, &n, &nparams, &nscalars) || serialize(n, roots, nroots)) return -1;
    if (emit(be == &g_backend_ref) || find_donatable(released, nroots, nparams)) return -1;
    uint64_t key = hash_bytes(serial, serial_len * 8, 0x1a2e);
    uint64_t tk = prof_trace_now();
    prof_span("graph key", t0);
    cache_entry *e = cache_find(key, serial, serial_len);
    prof_span("cache lookup", tk);
    /* Every rank must run the same collectives in the same order: compare
     * the keys first (a world of one only checks the group is open). */
    if (ncollectives && dist_check_key(key)) return -1;
    if (e) {
        prof_add(M_CachedCompile, 1);
    } else {
        uint64_t c0 = prof_now_ns();
        exec_graph *g = build_graph(n, roots, nroots, nparams, nscalars);
        if (!g) return -1;
        uint64_t cb = prof_trace_now();
        prof_span("build graph", c0);
        void *exe = be->compile(g);
        prof_span("backend compile", cb);
        if (!exe) {
            exec_graph_free(g);
            return -1;
        }
        /* Observability on a miss only: why it missed, and LT_DUMP_IR. */
        uint64_t sig = exec_graph_sig(g), cx = prof_trace_now();
        exec_explain_miss(g, sig, be);
        prof_span("explain miss", cx);
        if (LT_UNLIKELY(g_config.dump_ir_dir != NULL)) exec_dump_compiled(g, NULL);
        e = cache_insert(key, serial, serial_len, g, exe, be);
        if (!e) {
            be->free_exec(exe);
            exec_graph_free(g);
            return -1;
        }
        cache_set_sig(e, sig);
        prof_add(M_UncachedCompile, 1);
        uint64_t c1 = prof_now_ns();
        prof_timer_add(M_CompileTime, c1 - c0);
        if (LT_UNLIKELY(g_prof_trace)) prof_span_emit(TRACK_RUNTIME, "compile", c0, c1, NULL);
    }
    prof_sample(M_TensorsGraphSize, (double)n);
    /* Bad index data fails the sync before anything runs; indices computed
     * in the graph are checked by the kernels, and then nothing is donated:
     * a run that stops must leave its inputs intact. */
    const exec_graph *cg = cache_graph(e);
    if (LT_UNLIKELY(cg->nindexed) && exec_check_indices(cg, params)) return -1;
    uint64_t r0 = prof_now_ns();
    int rc = cache_backend(e)->run(cache_exe(e), params, cg->index_computed ? NULL : donate, scalars, outs);
    uint64_t r1 = prof_now_ns();
    if (LT_UNLIKELY(g_prof_trace)) prof_span_emit(TRACK_RUNTIME, "execute", r0, r1, NULL);
    prof_timer_add(M_ExecuteTime, r1 - r0);
    prof_timer_add(M_SyncTime, r1 - t0);
    return rc;
}

exec_graph *exec_graph_of(ir_node *const *roots, int nroots) {
    if (++sync_epoch == 0) sync_epoch = 1;
    size_t n;
    int nparams, nscalars;
    if (post_order(roots, nroots, &n, &nparams, &nscalars)) return NULL;
    return build_graph(n, roots, nroots, nparams, nscalars);
}
