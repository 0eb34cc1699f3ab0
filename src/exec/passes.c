/* Graph passes: peepholes and CSE in one forward sweep (operands are
 * remapped before a node is looked at, so a rewrite exposes the next one),
 * then DCE from the roots, then a compacting copy in program order
 * (schedule.c). */
#include "passes.h"

static int same_i64(const int64_t *a, const int64_t *b, int n) { return !n || !memcmp(a, b, (size_t)n * 8); }

static int is_contig(int nd, const int64_t *shape, const int64_t *strides) {
    int64_t st = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (shape[d] != 1 && strides[d] != st) return 0;
        st *= shape[d];
    }
    return 1;
}

/* Structural equality of two nodes whose operands are already remapped. */
static int node_equal(const gnode *a, const gnode *b, const int32_t *ia_in, const int32_t *ib_in) {
    if (a->op != b->op || a->dtype != b->dtype || a->ndim != b->ndim || a->nin != b->nin || a->nia != b->nia ||
        a->nsc != b->nsc || a->param != b->param)
        return 0;
    if (!same_i64(a->shape, b->shape, a->ndim) || !same_i64(a->ia, b->ia, a->nia)) return 0;
    for (int i = 0; i < a->nin; i++)
        if (ia_in[i] != ib_in[i]) return 0;
    for (int i = 0; i < a->nsc; i++) {
        /* A runtime scalar is only equal to itself: two slots may differ at run time. */
        if (a->sc_slot[i] != b->sc_slot[i]) return 0;
        if (a->sc_slot[i] < 0 && memcmp(&a->sc[i], &b->sc[i], 8)) return 0;
    }
    return 1;
}

static uint64_t node_hash(const gnode *y, const int32_t *in) {
    uint64_t h = hash_mix((uint64_t)y->op << 8 | y->dtype, (uint64_t)y->param);
    for (int i = 0; i < y->ndim; i++) h = hash_mix(h, (uint64_t)y->shape[i]);
    for (int i = 0; i < y->nin; i++) h = hash_mix(h, (uint64_t)in[i]);
    for (int i = 0; i < y->nia; i++) h = hash_mix(h, (uint64_t)y->ia[i]);
    for (int i = 0; i < y->nsc; i++) {
        uint64_t bits;
        memcpy(&bits, &y->sc[i], 8);
        h = hash_mix(h, y->sc_slot[i] >= 0 ? (uint64_t)y->sc_slot[i] : bits);
    }
    return h;
}

/* Peepholes on node k (operands remapped in `in`): the node it equals, or k. */
static int32_t peephole(const exec_graph *g, int32_t k, const int32_t *in) {
    const gnode *y = &g->nodes[k];
    if (y->op == LT_OP_AS_STRIDED) {
        const gnode *x = &g->nodes[in[0]];
        /* The identity view. (Reading back a scattered window is in the sweep:
         * it needs the scatter's remapped operands.) */
        if (x->ndim == y->ndim && same_i64(x->shape, y->shape, y->ndim) && y->ia[y->ndim] == 0 &&
            is_contig(y->ndim, y->shape, y->ia) && x->dtype == y->dtype)
            return in[0];
    }
    if ((y->op == LT_OP_CAST || y->op == LT_OP_MUL_SCALAR || y->op == LT_OP_POW_SCALAR) && y->nin == 1) {
        const gnode *x = &g->nodes[in[0]];
        int unit = y->op == LT_OP_CAST || (y->sc_slot[0] < 0 && y->sc[0] == 1.0);
        /* x * 1 and pow(x, 1) are exact for every value, NaN and -0 included. */
        if (unit && x->dtype == y->dtype && x->ndim == y->ndim && same_i64(x->shape, y->shape, y->ndim) &&
            (y->op == LT_OP_CAST || dtype_is_float((lt_dtype)y->dtype)))
            return in[0];
    }
    return k;
}

exec_graph *exec_optimize(const exec_graph *g) {
    int n = g->n;
    int32_t *repl = core_malloc((size_t)(n ? n : 1) * sizeof *repl);
    size_t total_in = 0;
    for (int k = 0; k < n; k++) total_in += g->nodes[k].nin;
    int32_t *remap_pool = core_malloc((total_in ? total_in : 1) * sizeof *remap_pool);
    size_t hcap = 16;
    while (hcap < (size_t)n * 2 || hcap < (size_t)g->nroots) hcap *= 2; /* reused for the roots */
    int32_t *table = core_malloc(hcap * sizeof *table);
    uint8_t *live = core_calloc((size_t)(n ? n : 1), 1);
    int32_t *seq = core_malloc((size_t)(n ? n : 1) * sizeof *seq), *order = core_malloc((size_t)(n ? n : 1) * 4);
    exec_graph *o = NULL;
    if (!repl || !remap_pool || !table || !live || !seq || !order) goto done;
    /* A collective runs as soon as its operand is ready, whenever the program
     * issued it: its communication then overlaps the kernels that follow
     * (the late layers' gradients travel while the early layers' backward
     * runs, as PyTorch DDP's buckets). */
    for (int32_t k = 0; k < n; k++)
        seq[k] = g_ops[g->nodes[k].op].flags & COLLECTIVE ? INT32_MIN + 1 : g->nodes[k].seq;
    memset(table, 0xff, hcap * sizeof *table);
    /* Two roots are never merged: each keeps its own output buffer. Merged,
     * two storages would share one buffer after the sync, and the next step,
     * where they diverge, would be another graph (its parameter sequence
     * differs), e.g. optimizer states all created as zeros. `live` doubles
     * as the root mark until DCE clears it. */
    for (int r = 0; r < g->nroots; r++) live[g->roots[r]] = 1;
    for (int32_t k = 0; k < n; k++) {
        const gnode *y = &g->nodes[k];
        int32_t *in = remap_pool + (y->in - g->in_pool);
        for (int i = 0; i < y->nin; i++) in[i] = repl[y->in[i]];
        int32_t r = peephole(g, k, in);
        if (r == k && y->op == LT_OP_AS_STRIDED) {
            const gnode *x = &g->nodes[in[0]];
            if (x->op == LT_OP_AS_STRIDED_SCATTER) {
                const int32_t *xin = remap_pool + (x->in - g->in_pool);
                const gnode *v = &g->nodes[xin[1]];
                if (v->ndim == y->ndim && same_i64(v->shape, y->shape, y->ndim) && v->dtype == y->dtype &&
                    same_i64(x->ia, y->ia, y->ndim + 1) && !shape_overlaps(y->ndim, y->shape, y->ia))
                    r = xin[1]; /* (a window whose elements meet reads the scatter's last writes, not v) */
            }
        }
        if (r == k) { /* CSE: the first structurally equal node wins */
            uint64_t h = node_hash(y, in);
            size_t at = h & (hcap - 1);
            while (table[at] >= 0) {
                const gnode *z = &g->nodes[table[at]];
                if (!(live[k] && live[table[at]]) && node_equal(y, z, in, remap_pool + (z->in - g->in_pool))) {
                    r = table[at];
                    if (seq[k] < seq[r]) seq[r] = seq[k]; /* runs when the first of them was issued */
                    break;
                }
                at = (at + 1) & (hcap - 1);
            }
            if (r == k) table[at] = k;
        }
        repl[k] = r;
    }
    /* DCE: mark from the roots, backwards (operands precede their users). */
    memset(live, 0, (size_t)(n ? n : 1));
    for (int r = 0; r < g->nroots; r++) live[repl[g->roots[r]]] = 1;
    size_t nin = 0, nia = 0;
    int nlive = 0;
    for (int32_t k = n - 1; k >= 0; k--) {
        if (!live[k]) continue;
        const gnode *y = &g->nodes[k];
        const int32_t *in = remap_pool + (y->in - g->in_pool);
        for (int i = 0; i < y->nin; i++) live[in[i]] = 1;
        nin += y->nin;
        nia += y->nia;
        nlive++;
    }
    for (int r = 0; r < g->nroots; r++) table[r] = repl[g->roots[r]]; /* canonical old index, before compaction */
    o = core_calloc(1, sizeof *o);
    if (!o) goto done;
    o->nodes = core_calloc((size_t)(nlive ? nlive : 1), sizeof *o->nodes);
    o->roots = core_malloc((size_t)(g->nroots ? g->nroots : 1) * sizeof *o->roots);
    o->in_pool = core_malloc((nin ? nin : 1) * sizeof *o->in_pool);
    o->ia_pool = core_malloc((nia ? nia : 1) * sizeof *o->ia_pool);
    if (!o->nodes || !o->roots || !o->in_pool || !o->ia_pool) {
        exec_graph_free(o);
        o = NULL;
        goto done;
    }
    o->nroots = g->nroots;
    o->nparams = g->nparams;
    o->nscalars = g->nscalars;
    /* repl now maps old index -> new index for live nodes, numbered in program order. */
    if (exec_program_order(g, remap_pool, live, seq, order) != nlive) {
        exec_graph_free(o);
        o = NULL;
        goto done;
    }
    size_t pin = 0, pia = 0;
    for (int j = 0; j < nlive; j++) {
        int32_t k = order[j];
        const gnode *y = &g->nodes[k];
        const int32_t *in = remap_pool + (y->in - g->in_pool);
        gnode *z = &o->nodes[o->n];
        *z = *y;
        z->seq = seq[k];
        z->in = o->in_pool + pin;
        for (int i = 0; i < y->nin; i++) z->in[i] = repl[in[i]];
        z->ia = o->ia_pool + pia;
        if (y->nia) memcpy(z->ia, y->ia, (size_t)y->nia * 8);
        pin += y->nin;
        pia += y->nia;
        repl[k] = o->n++;
    }
    for (int r = 0; r < g->nroots; r++) o->roots[r] = repl[table[r]];
done:
    core_free(repl);
    core_free(remap_pool);
    core_free(table);
    core_free(live);
    core_free(seq);
    core_free(order);
    return o;
}
