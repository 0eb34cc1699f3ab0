/* Collectives in the cpu backend (DESIGN 12): each runs as two halves.
 * Start (non-blocking MPI) where the kernel order puts it, as soon as its
 * operand is computed (passes.c schedules collectives first among the ready
 * nodes); wait just before the first kernel that reads its result, or at
 * the end of the run. Between kernels the executor lets MPI progress.
 *
 * Buckets: consecutive small collectives of the same kind, reduction and
 * dtype are merged, as fusion merges elementwise ops, into one kernel that
 * copies its operands into one staging buffer and issues ONE collective
 * (LT_DIST_BUCKET_MB, 0 = off): a ResNet-50 step issues tens, not hundreds.
 * A bucket closes when the next one would not fit, or before a kernel that
 * reads one of its results; it starts where its last member was ready.
 *
 * REDUCE_SCATTER and ALL_GATHER (ZeRO-1) always run through a staging
 * buffer, since operand and result differ in size. A bucket of them is
 * one reduce-scatter or all-gather of chunk C = the members' chunks
 * together: rank r's part of the stage holds every member's chunk r, one
 * after the other, so one MPI call hands each rank its chunk of every
 * member. Operands are copied in (zero-padded) at the start, results out
 * at the wait. */
#include "cpu.h"

#include "../../dist/dist.h"
#include "../../prof/prof.h"

static size_t value_bytes(const gnode *y) { return (size_t)y->numel * dtype_size((lt_dtype)y->dtype); }

static int is_shard_op(int op) { return op == LT_OP_REDUCE_SCATTER || op == LT_OP_ALL_GATHER; }

static int is_coll(const exec_graph *g, const kernel *k) {
    return k->kind == K_COLL && g_ops[g->nodes[k->node].op].flags & COLLECTIVE;
}

/* A REDUCE_SCATTER or ALL_GATHER member's chunk, its whole tensor's
 * elements (the operand, or the result), and the world size. */
static int64_t shard_chunk(const exec_graph *g, const gnode *y) {
    return y->op == LT_OP_REDUCE_SCATTER ? y->numel : g->nodes[y->in[0]].numel;
}
static int64_t shard_whole(const exec_graph *g, const gnode *y) {
    return y->op == LT_OP_REDUCE_SCATTER ? g->nodes[y->in[0]].numel : y->numel;
}
static int64_t shard_world(const gnode *y) { return y->op == LT_OP_REDUCE_SCATTER ? y->ia[1] : y->ia[0]; }

/* The chunk of a reduce-scatter or all-gather kernel: its members' together. */
static int64_t kernel_chunk(const exec_graph *g, const kernel *kn) {
    int64_t c = 0;
    for (int i = 0; i < kn->nwrite; i++) c += shard_chunk(g, &g->nodes[kn->write[i]]);
    return c;
}

/* Elements [r * c, (r + 1) * c) of a tensor of n: how many exist (the rest is padding). */
static int64_t chunk_have(int64_t n, int64_t r, int64_t c) {
    int64_t h = n - r * c;
    return h < 0 ? 0 : h > c ? c : h;
}

/* Can collective kernel b join a bucket whose first member is a? */
static int compatible(const exec_graph *g, const kernel *a, const kernel *b) {
    const gnode *x = &g->nodes[a->node], *y = &g->nodes[b->node];
    return x->op == y->op && x->dtype == y->dtype && x->ia[0] == y->ia[0];
}

/* Merges bucket members m[0..nm) (kernels of ks, in order) into one kernel. */
static int merge(const exec_graph *g, kernel *ks, const int32_t *m, int nm, kernel *out) {
    int32_t *read = core_malloc((size_t)nm * 4), *write = core_malloc((size_t)nm * 4);
    uint8_t *inplace = core_malloc((size_t)nm);
    if (!read || !write || !inplace) {
        core_free(read), core_free(write), core_free(inplace);
        return -1;
    }
    for (int i = 0; i < nm; i++) {
        read[i] = ks[m[i]].read[0];
        write[i] = ks[m[i]].write[0];
        /* Operands are copied into the stage at start, results out of it at
         * the wait; ZeRO-1's results differ in size from their operands. */
        inplace[i] = !is_shard_op(g->nodes[ks[m[i]].node].op);
    }
    *out = (kernel){.kind = K_COLL, .node = ks[m[0]].node, .nmembers = nm, .nread = nm, .read = read,
                    .nwrite = nm, .write = write, .inplace_ok = inplace};
    return 0;
}

int cpu_bucket_collectives(const exec_graph *g, kernel *ks, int *nk, size_t cap) {
    int n = *nk, no = 0, nm = 0, rc = 0;
    int32_t *m = core_malloc((size_t)(n ? n : 1) * 4);
    uint8_t *open_out = core_calloc((size_t)(g->n ? g->n : 1), 1); /* results of the open bucket */
    kernel *out = core_calloc((size_t)(n ? n : 1), sizeof *out);
    if (!m || !open_out || !out) {
        rc = -1;
        goto done;
    }
    size_t bytes = 0;
    int at = 0; /* where the open bucket goes in out: after its last member */
    for (int j = 0; j <= n && rc == 0; j++) {
        int coll = j < n && is_coll(g, &ks[j]);
        int flush = nm > 0 && j == n;
        if (!flush && nm > 0 && coll)
            flush = !compatible(g, &ks[m[0]], &ks[j]) || bytes + value_bytes(&g->nodes[ks[j].node]) > cap;
        for (int i = 0; !flush && nm > 0 && j < n && i < ks[j].nread; i++) flush = open_out[ks[j].read[i]];
        if (flush) {
            kernel merged;
            if (nm == 1) {
                merged = ks[m[0]];
                memset(&ks[m[0]], 0, sizeof ks[m[0]]);
            } else {
                if (merge(g, ks, m, nm, &merged)) rc = -1;
                for (int i = 0; i < nm && rc == 0; i++) {
                    core_free(ks[m[i]].read), core_free(ks[m[i]].write), core_free(ks[m[i]].inplace_ok);
                    memset(&ks[m[i]], 0, sizeof ks[m[i]]);
                }
            }
            if (rc) break;
            memmove(&out[at + 1], &out[at], (size_t)(no - at) * sizeof *out);
            out[at] = merged;
            no++;
            for (int i = 0; i < merged.nwrite; i++) open_out[merged.write[i]] = 0;
            nm = 0;
            bytes = 0;
        }
        if (j == n) break;
        if (coll && cap > 0) {
            m[nm++] = j;
            bytes += value_bytes(&g->nodes[ks[j].node]);
            open_out[ks[j].write[0]] = 1;
            at = no;
        } else {
            out[no++] = ks[j];
            memset(&ks[j], 0, sizeof ks[j]);
        }
    }
done:
    if (rc == 0) {
        memcpy(ks, out, (size_t)no * sizeof *out);
        *nk = no;
    } else if (out) {
        cpu_kernels_free(out, no); /* the kernels not yet moved stay in ks, freed by the caller */
    }
    core_free(m);
    core_free(open_out);
    if (rc == 0) core_free(out);
    return rc;
}

void cpu_coll_plan_free(coll_plan *cp, int nk) {
    for (int j = 0; cp->stage && j < nk; j++) dist_buffer_free(cp->stage[j]);
    core_free(cp->stage);
    core_free(cp->req);
    core_free(cp->wait_start);
    core_free(cp->wait);
    memset(cp, 0, sizeof *cp);
}

int cpu_coll_plan(const exec_graph *g, const kernel *k, int nk, coll_plan *cp) {
    memset(cp, 0, sizeof *cp);
    int ncoll = 0;
    for (int j = 0; j < nk; j++) ncoll += k[j].kind == K_COLL;
    if (!ncoll) return 0;
    int32_t *first_read = core_malloc((size_t)(g->n ? g->n : 1) * 4), *wait_at = core_malloc((size_t)nk * 4);
    cp->stage = core_calloc((size_t)nk, sizeof *cp->stage);
    cp->req = core_malloc((size_t)nk * sizeof *cp->req);
    cp->wait_start = core_calloc((size_t)nk + 2, 4);
    cp->wait = core_malloc((size_t)ncoll * 4);
    int rc = -1;
    if (!first_read || !wait_at || !cp->stage || !cp->req || !cp->wait_start || !cp->wait) goto done;
    for (int v = 0; v < g->n; v++) first_read[v] = nk; /* unread: a root, waited for at the end */
    for (int j = nk - 1; j >= 0; j--)
        for (int i = 0; i < k[j].nread; i++) first_read[k[j].read[i]] = j;
    /* Wait lists as one array sliced by wait_start (counting sort); index nk is the end of the run. */
    for (int j = 0; j < nk; j++) {
        cp->req[j] = -1;
        if (k[j].kind != K_COLL) continue;
        int32_t w = nk;
        for (int i = 0; i < k[j].nwrite; i++)
            if (first_read[k[j].write[i]] < w) w = first_read[k[j].write[i]];
        wait_at[j] = w;
        cp->wait_start[w + 1]++;
        const gnode *y = &g->nodes[k[j].node];
        if (is_shard_op(y->op)) { /* every rank's chunk */
            size_t b = (size_t)(shard_world(y) * kernel_chunk(g, &k[j])) * dtype_size((lt_dtype)y->dtype);
            if (!(cp->stage[j] = dist_buffer_alloc(b))) goto done;
        } else if (k[j].nmembers > 1 || (y->op == LT_OP_ALL_REDUCE && dist_buffer_shared())) {
            size_t b = 0;
            for (int i = 0; i < k[j].nwrite; i++) b += value_bytes(&g->nodes[k[j].write[i]]);
            if (!(cp->stage[j] = dist_buffer_alloc(b))) goto done;
        }
    }
    for (int j = 0; j <= nk; j++) cp->wait_start[j + 1] += cp->wait_start[j];
    int32_t *fill = core_malloc((size_t)(nk + 1) * 4);
    if (!fill) goto done;
    memcpy(fill, cp->wait_start, (size_t)(nk + 1) * 4);
    for (int j = 0; j < nk; j++)
        if (k[j].kind == K_COLL) cp->wait[fill[wait_at[j]]++] = j;
    core_free(fill);
    rc = 0;
done:
    core_free(first_read);
    core_free(wait_at);
    if (rc) cpu_coll_plan_free(cp, nk);
    return rc;
}

static int start(const gnode *y, void *buf, int64_t n) {
    enum dist_coll kind = y->op == LT_OP_BROADCAST ? DIST_BROADCAST : y->op == LT_OP_REDUCE_SCATTER ? DIST_REDUCE_SCATTER
                        : y->op == LT_OP_ALL_GATHER ? DIST_ALL_GATHER : DIST_ALL_REDUCE;
    int r = dist_start(kind, buf, n, (lt_dtype)y->dtype, (int)y->ia[0]);
    LT_ASSERT(r >= 0); /* the sync checked the group is open; only OOM is left, and dist_start runs blocking then */
    return r;
}

void cpu_coll_start(const exec_graph *g, const kernel *kn, coll_plan *cp, int j, void *const *rp, void *const *wp) {
    const gnode *y = &g->nodes[kn->node];
    char *stage = cp->stage[j];
    if (stage) dist_buffer_ready(stage); /* the other ranks are done with its last contents */
    if (is_shard_op(y->op)) {
        int64_t cc = kernel_chunk(g, kn), off = 0, w = shard_world(y), me = dist_rank();
        size_t es = dtype_size((lt_dtype)y->dtype);
        for (int i = 0; i < kn->nread; i++) {
            const gnode *x = &g->nodes[kn->write[i]];
            int64_t c = shard_chunk(g, x), n = shard_whole(g, x);
            for (int64_t r = 0; r < w; r++) {
                if (x->op == LT_OP_ALL_GATHER && r != me) continue; /* all-gather: this rank's chunk only */
                char *to = stage + (size_t)(r * cc + off) * es;
                int64_t have = x->op == LT_OP_ALL_GATHER ? c : chunk_have(n, r, c);
                if (have) memcpy(to, (const char *)rp[i] + (size_t)(x->op == LT_OP_ALL_GATHER ? 0 : r * c) * es, (size_t)have * es);
                memset(to + (size_t)have * es, 0, (size_t)(c - have) * es);
            }
            off += c;
        }
        cp->req[j] = start(y, stage, cc);
        return;
    }
    if (!stage) { /* one member: in place on its result */
        if (wp[0] != rp[0]) memcpy(wp[0], rp[0], value_bytes(y));
        cp->req[j] = start(y, wp[0], y->numel);
        return;
    }
    size_t off = 0;
    int64_t n = 0;
    for (int i = 0; i < kn->nread; i++) {
        const gnode *x = &g->nodes[kn->write[i]];
        memcpy(stage + off, rp[i], value_bytes(x));
        off += value_bytes(x);
        n += x->numel;
    }
    cp->req[j] = start(y, stage, n);
}

void cpu_coll_wait(const exec_graph *g, const kernel *kn, coll_plan *cp, int j, char *const *sp,
                   const int32_t *slot_of) {
    if (cp->req[j] < 0) return;
    dist_wait(cp->req[j]);
    cp->req[j] = -1;
    char *stage = cp->stage[j];
    if (!stage) return;
    const gnode *y = &g->nodes[kn->node];
    if (is_shard_op(y->op)) { /* reduce-scatter: the chunks at the start; all-gather: each rank's, in place */
        int64_t cc = kernel_chunk(g, kn), off = 0, w = shard_world(y);
        size_t es = dtype_size((lt_dtype)y->dtype);
        for (int i = 0; i < kn->nwrite; i++) {
            const gnode *x = &g->nodes[kn->write[i]];
            char *out = sp[slot_of[kn->write[i]]];
            int64_t c = shard_chunk(g, x), n = x->numel;
            if (x->op == LT_OP_REDUCE_SCATTER && c) memcpy(out, stage + (size_t)off * es, (size_t)c * es);
            for (int64_t r = 0; x->op == LT_OP_ALL_GATHER && r < w; r++) {
                int64_t have = chunk_have(n, r, c);
                if (have) memcpy(out + (size_t)(r * c) * es, stage + (size_t)(r * cc + off) * es, (size_t)have * es);
            }
            off += c;
        }
        return;
    }
    size_t off = 0;
    for (int i = 0; i < kn->nwrite; i++) {
        const gnode *x = &g->nodes[kn->write[i]];
        memcpy(sp[slot_of[kn->write[i]]], stage + off, value_bytes(x));
        off += value_bytes(x);
    }
}
