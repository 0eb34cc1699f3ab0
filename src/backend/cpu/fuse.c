/* Fusion: maximal groups of same-shape elementwise nodes become one tile
 * program that reads each input once and stores only the members that a
 * later kernel or a root needs.
 *
 * Scheduling rule. Every kernel ("unit") gets a number when it is created,
 * in post-order, and units run in that order; a group runs at its creation
 * point. A node may join (or merge) groups only if everything it and they
 * read comes from a unit numbered below the merged group, so the unit order
 * stays topological with no graph walk: linear time. DATA leaves are ready
 * before every unit. */
#include "cpu.h"

#include <math.h>

#define MAX_MEMBERS 40
#define MAX_EXT 20

typedef struct fstate {
    const exec_graph *g;
    int32_t *parent; /* union-find over group members; -1 for non-members */
    int32_t *uid;    /* per node: its unit number (group members: see root), -1 leaves */
    int32_t *maxdep; /* per group root: highest unit number its members read */
    int32_t *size;   /* per group root: members */
    int32_t *next;   /* per group root: external operand edges (bounds the loads) */
    int8_t *T;       /* per node: register type if a member */
} fstate;

static int32_t find(fstate *s, int32_t x) {
    while (s->parent[x] != x) x = s->parent[x] = s->parent[s->parent[x]];
    return x;
}

static int32_t unit_of(fstate *s, int32_t x) {
    if (s->parent[x] >= 0) return s->uid[find(s, x)];
    return s->uid[x];
}

static int same_shape(const gnode *a, const gnode *b) {
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, (size_t)a->ndim * 8);
}

/* Can node k join the union of groups roots[0..nr)? Then returns the new
 * root's maxdep via *dep. */
static int can_merge(fstate *s, int32_t k, const int32_t *roots, int nr, int32_t *dep, int32_t *minu) {
    const gnode *y = &s->g->nodes[k];
    int32_t mu = INT32_MAX, md = -1, sz = 1, ne = 0;
    for (int i = 0; i < nr; i++) {
        if (s->uid[roots[i]] < mu) mu = s->uid[roots[i]];
        if (s->maxdep[roots[i]] > md) md = s->maxdep[roots[i]];
        sz += s->size[roots[i]];
        ne += s->next[roots[i]];
    }
    for (int i = 0; i < y->nin; i++) {
        int32_t x = y->in[i], r = s->parent[x] >= 0 ? find(s, x) : -1, inside = 0;
        for (int j = 0; j < nr; j++) inside |= r == roots[j];
        if (inside) continue;
        ne++;
        int32_t u = unit_of(s, x);
        if (u > md) md = u;
    }
    *dep = md;
    *minu = mu;
    return md < mu && sz <= MAX_MEMBERS && ne <= MAX_EXT;
}

static void assign_units(fstate *s, int32_t *nunits) {
    const exec_graph *g = s->g;
    int32_t nu = 0;
    for (int32_t k = 0; k < g->n; k++) {
        const gnode *y = &g->nodes[k];
        s->parent[k] = -1;
        if (y->op == LT_OP_DATA) {
            s->uid[k] = -1;
            continue;
        }
        int t = tile_member_type(g, y);
        s->T[k] = (int8_t)t;
        if (t < 0) {
            s->uid[k] = nu++;
            continue;
        }
        int32_t roots[3];
        int nr = 0;
        for (int i = 0; i < y->nin; i++) {
            int32_t x = y->in[i];
            if (s->parent[x] < 0 || s->T[x] != t || !same_shape(&g->nodes[x], y)) continue;
            int32_t r = find(s, x), dup = 0;
            for (int j = 0; j < nr; j++) dup |= roots[j] == r;
            if (!dup) roots[nr++] = r;
        }
        int32_t dep, mu;
        int chosen = -1; /* -1: none; nr: all; else one root */
        if (nr && can_merge(s, k, roots, nr, &dep, &mu)) chosen = nr;
        for (int j = nr - 1; chosen < 0 && j >= 0; j--)
            if (can_merge(s, k, &roots[j], 1, &dep, &mu)) chosen = j;
        s->parent[k] = k;
        if (chosen < 0) { /* a new group of one */
            int32_t none = 0;
            can_merge(s, k, &none, 0, &dep, &mu);
            s->uid[k] = nu++;
            s->maxdep[k] = dep;
            s->size[k] = 1;
            s->next[k] = 0;
            for (int i = 0; i < y->nin; i++) s->next[k]++;
            continue;
        }
        int32_t *rs = chosen == nr ? roots : &roots[chosen];
        int nrs = chosen == nr ? nr : 1;
        int32_t top = rs[0], sz = 1, ne = 0;
        for (int j = 0; j < nrs; j++) {
            sz += s->size[rs[j]];
            ne += s->next[rs[j]];
        }
        for (int i = 0; i < y->nin; i++) {
            int32_t r = s->parent[y->in[i]] >= 0 ? find(s, y->in[i]) : -1, inside = 0;
            for (int j = 0; j < nrs; j++) inside |= r == rs[j];
            ne += !inside;
        }
        for (int j = 0; j < nrs; j++) s->parent[rs[j]] = top;
        s->parent[k] = top;
        s->uid[top] = mu;
        s->maxdep[top] = dep;
        s->size[top] = sz;
        s->next[top] = ne;
    }
    *nunits = nu;
}

static int32_t *dup_ints(const int32_t *v, int n) {
    int32_t *p = core_malloc((size_t)(n ? n : 1) * sizeof *p);
    if (p && n) memcpy(p, v, (size_t)n * sizeof *p);
    return p;
}

/* The tile program of one group. members: ascending node indices. */
static int build_group(fstate *s, const int32_t *members, int nm, const uint8_t *ext_use, kernel *kn,
                       int32_t *scratch /* g->n ints, -1 filled; restored */) {
    const exec_graph *g = s->g;
    const gnode *y0 = &g->nodes[members[0]];
    int32_t root = find(s, members[0]);
    tprog *p = core_calloc(1, sizeof *p);
    if (!p) return -1;
    kn->kind = K_FUSED;
    kn->node = members[nm - 1];
    kn->prog = p;
    kn->nmembers = nm;
    p->rtype = (uint8_t)s->T[members[0]];
    p->ndim = y0->ndim;
    memcpy(p->shape, y0->shape, (size_t)y0->ndim * 8);
    p->numel = y0->numel;
    p->loads = core_calloc(MAX_EXT + 1, sizeof *p->loads);
    p->ins = core_calloc((size_t)nm, sizeof *p->ins);
    p->stores = core_calloc((size_t)nm, sizeof *p->stores);
    int32_t *reads = core_malloc((MAX_EXT + 1) * sizeof *reads);
    int32_t *writes = core_malloc((size_t)nm * sizeof *writes);
    int32_t *lastuse = core_malloc((size_t)nm * sizeof *lastuse); /* per member: last instruction reading it */
    kn->read = reads;
    kn->write = writes;
    kn->inplace_ok = core_calloc(MAX_EXT + 1, 1);
    if (!p->loads || !p->ins || !p->stores || !reads || !writes || !lastuse || !kn->inplace_ok) {
        core_free(lastuse);
        return -1;
    }
    /* scratch[v]: load register of an external value, or ~instruction of a member. */
    for (int j = 0; j < nm; j++) scratch[members[j]] = ~j;
    for (int j = 0; j < nm; j++) {
        lastuse[j] = -1;
        const gnode *y = &g->nodes[members[j]];
        for (int i = 0; i < y->nin; i++) {
            int32_t x = y->in[i];
            if (s->parent[x] >= 0 && find(s, x) == root) {
                lastuse[~scratch[x]] = j;
                continue;
            }
            if (scratch[x] >= 0) continue;
            LT_ASSERT(p->nload < MAX_EXT + 1);
            const gnode *xn = &g->nodes[x];
            tload *l = &p->loads[p->nload];
            l->value = x;
            l->dtype = xn->dtype;
            if (xn->numel == p->numel) {
                l->mode = LOAD_SAME;
                kn->inplace_ok[p->nload] = 1;
            } else if (xn->numel == 1) {
                l->mode = LOAD_SCALAR;
            } else {
                l->mode = LOAD_GENERAL;
                int64_t st = 1;
                for (int d = p->ndim - 1; d >= 0; d--) {
                    int xd = d - (p->ndim - xn->ndim);
                    l->str[d] = (xd < 0 || xn->shape[xd] == 1) ? 0 : st;
                    if (xd >= 0) st *= xn->shape[xd];
                }
            }
            reads[p->nload] = x;
            scratch[x] = p->nload++;
        }
    }
    /* Registers: loads first, then members by linear scan; a stored member
     * keeps its register to the end, where the stores run. */
    int8_t reg_of[MAX_MEMBERS];
    int8_t free_regs[TILE_MAX_REGS];
    int nfree = 0, nregs = p->nload;
    for (int j = 0; j < nm; j++) {
        int32_t m = members[j];
        const gnode *y = &g->nodes[m];
        tins *t = &p->ins[j];
        t->op = y->op;
        t->dtype = y->dtype;
        t->round = y->dtype == LT_BF16 && lastuse[j] >= 0;
        t->node = m;
        for (int i = 0; i < 3; i++) t->src[i] = -1;
        for (int i = 0; i < y->nin; i++) {
            int32_t x = y->in[i];
            t->src[i] = scratch[x] >= 0 ? (int8_t)scratch[x] : reg_of[~scratch[x]];
        }
        int8_t r = nfree ? free_regs[--nfree] : (int8_t)nregs++;
        LT_ASSERT(nregs <= TILE_MAX_REGS);
        t->dst = reg_of[j] = r;
        int stored = ext_use[m];
        if (stored) {
            p->stores[p->nstore] = (tstore){m, r, y->dtype};
            writes[p->nstore++] = m;
        }
        if (!stored && lastuse[j] < 0) free_regs[nfree++] = r; /* dead on arrival (DCE keeps few) */
        for (int i = 0; i < y->nin; i++) {
            int32_t x = y->in[i];
            if (scratch[x] >= 0) continue;
            int mj = ~scratch[x];
            if (lastuse[mj] == j && !ext_use[x]) {
                int8_t fr = reg_of[mj], dup = 0;
                for (int q = 0; q < nfree; q++) dup |= free_regs[q] == fr;
                if (!dup) free_regs[nfree++] = fr;
            }
        }
    }
    p->nins = nm;
    p->nregs = nregs;
    kn->nread = p->nload;
    kn->nwrite = p->nstore;
    for (int j = 0; j < nm; j++) scratch[members[j]] = -1;
    for (int j = 0; j < p->nload; j++) scratch[reads[j]] = -1;
    core_free(lastuse);
    return 0;
}

/* A view whose elements lie in order from its offset on (a reshape, or a
 * slice along the first dims: the q, k, v gradients out of one
 * ATTENTION_BWD) is its operand's bytes from there (plan.c byte_off), no
 * copy. A root at an offset is copied: the run returns whole buffers. */
static int contiguous_view(const exec_graph *g, int32_t k) {
    const gnode *y = &g->nodes[k];
    int64_t st = 1;
    for (int d = y->ndim - 1; d >= 0; d--) {
        if (y->shape[d] != 1 && y->ia[d] != st) return 0;
        st *= y->shape[d];
    }
    if (y->ia[y->ndim] == 0) return 1;
    for (int r = 0; r < g->nroots; r++)
        if (g->roots[r] == k) return 0;
    return 1;
}

static int build_single(const exec_graph *g, int32_t k, kernel *kn) {
    const gnode *y = &g->nodes[k];
    kn->node = k;
    kn->kind = K_REF;
    if (y->op == LT_OP_MATMUL) {
        const gnode *a = &g->nodes[y->in[0]], *b = &g->nodes[y->in[1]];
        if (a->dtype == LT_F32 && b->dtype == LT_F32 && y->dtype == LT_F32) kn->kind = K_MATMUL;
    } else if (y->op == LT_OP_AS_STRIDED) {
        kn->kind = contiguous_view(g, k) ? K_VIEW : K_STRIDED;
    } else if (y->op == LT_OP_AS_STRIDED_SCATTER) {
        kn->kind = K_SCATTER;
    } else if (g_ops[y->op].flags & COLLECTIVE) {
        kn->kind = K_COLL;
    } else if (y->nin == 1 && cpu_reduce_ok(y, &g->nodes[y->in[0]])) {
        kn->kind = K_REDUCE;
    }
    kn->nread = y->nin;
    kn->read = dup_ints(y->in, y->nin);
    kn->nwrite = 1;
    kn->write = dup_ints(&k, 1);
    kn->inplace_ok = core_calloc((size_t)(y->nin ? y->nin : 1), 1);
    if (!kn->read || !kn->write || !kn->inplace_ok) return -1;
    /* A scatter whose base dies may write its window into the base. */
    if (kn->kind == K_SCATTER) kn->inplace_ok[0] = 1;
    /* A collective copies its operand into its result and runs there (but
     * ZeRO-1's pair, whose result differs in size: coll.c). */
    if (kn->kind == K_COLL) kn->inplace_ok[0] = y->op == LT_OP_ALL_REDUCE || y->op == LT_OP_BROADCAST;
    /* Batch norm's outputs depend on inputs at the same index only (after
     * the channel's sums, read first): one may take the place of a dying x
     * (BN_APPLY: the eval forward's conv output) or g, x (BN_BWD_INPUT). */
    if (y->op == LT_OP_BN_APPLY) kn->inplace_ok[0] = 1;
    if (y->op == LT_OP_BN_BWD_INPUT) kn->inplace_ok[0] = kn->inplace_ok[1] = 1;
    /* A gradient added into a window of the rest (the engine's
     * add_into_window) lands in the rest's place. */
    if (y->op == LT_OP_AS_STRIDED_BACKWARD && y->nin == 2) kn->inplace_ok[1] = 1;
    return 0;
}

/* Do the K_REF kernels a (BN_BWD_INPUT, batch statistics) and p
 * (BN_BWD_PARAMS) sum the same g, x and statistics? (Their eps, a runtime
 * scalar, is compared when they run.) */
static int bn_twins(const exec_graph *g, const kernel *ka, const kernel *kp) {
    const gnode *a = &g->nodes[ka->node], *p = &g->nodes[kp->node];
    if (a->op != LT_OP_BN_BWD_INPUT || p->op != LT_OP_BN_BWD_PARAMS || !a->ia[0] || !p->ia[0]) return 0;
    for (int i = 0; i < 3; i++)
        if (a->in[i] != p->in[i]) return 0;
    return cpu_bn_ok(g, a) && cpu_bn_ok(g, p);
}

/* Do the K_REF kernels a (LN_BWD_INPUT) and p (LN_BWD_PARAMS) read the
 * same g and x (as the kernels read them: after fuse_ln_casts both read
 * the bfloat16 gradient, or neither) over the same dims? Each recomputes
 * the rows' statistics; paired, one pass over g and x (cpu_ln_bwd_pair).
 * Their eps is compared when they run. */
static int ln_twins(const exec_graph *g, const kernel *ka, const kernel *kp) {
    const gnode *a = &g->nodes[ka->node], *p = &g->nodes[kp->node];
    if (a->op != LT_OP_LN_BWD_INPUT || p->op != LT_OP_LN_BWD_PARAMS || a->ia[0] != p->ia[0]) return 0;
    if (ka->read[0] != kp->read[0] || ka->read[1] != kp->read[1] || (ka->casts & 1) != (kp->casts & 1)) return 0;
    return cpu_ln_ok(g, a) && cpu_ln_ok(g, p);
}

static void kernel_clear(kernel *k) {
    if (k->prog) {
        core_free(k->prog->loads);
        core_free(k->prog->ins);
        core_free(k->prog->stores);
        core_free(k->prog);
    }
    core_free(k->read);
    core_free(k->write);
    core_free(k->inplace_ok);
    memset(k, 0, sizeof *k);
}

/* Drops the holes (node -1) a pass left in the kernel list. */
static void squeeze_holes(kernel *ks, int *nk) {
    int m = 0;
    for (int j = 0; j < *nk; j++)
        if (ks[j].node >= 0) ks[m++] = ks[j];
    *nk = m;
}

/* For the passes below: which kernel writes each value (-1: none), how
 * many kernels read it, and whether it is a root. They rewrite a pair of
 * kernels at a time, leaving holes (node -1) that squeeze_holes removes at
 * the end. -1 when out of memory. */
static int kernel_map(const exec_graph *g, const kernel *ks, int nk, int32_t **made_by, int32_t **readers,
                      uint8_t **is_root) {
    size_t n = (size_t)(g->n ? g->n : 1);
    int32_t *mb = core_malloc(n * 4), *rd = core_calloc(n, 4);
    uint8_t *ir = core_calloc(n, 1);
    *made_by = mb, *readers = rd, *is_root = ir;
    if (!mb || !rd || !ir) return -1;
    for (int32_t v = 0; v < g->n; v++) mb[v] = -1;
    for (int j = 0; j < nk; j++) {
        for (int w = 0; w < ks[j].nwrite; w++) mb[ks[j].write[w]] = j;
        for (int i = 0; i < ks[j].nread; i++) rd[ks[j].read[i]]++;
    }
    for (int r = 0; r < g->nroots; r++) ir[g->roots[r]] = 1;
    return 0;
}

/* Pairs every K_REF kernel a with its twin p (twins(g, a, p)) into one
 * kernel of `kind` at the earlier of the two places (every operand is
 * ready there) that reads a's operands and writes a's output, then p's,
 * and drops the later one: batch norm's and layer norm's backward ops,
 * whose two kernels share one pass over g and x. */
static int pair_twins(const exec_graph *g, kernel *ks, int *nk,
                      int (*twins)(const exec_graph *, const kernel *, const kernel *), uint8_t kind) {
    int32_t *made_by, *readers;
    uint8_t *is_root;
    int rc = kernel_map(g, ks, *nk, &made_by, &readers, &is_root);
    for (int j = 0; j < *nk && rc == 0; j++) {
        if (ks[j].kind != K_REF) continue;
        for (int q = 0; q < *nk; q++) { /* holes are K_FUSED (cleared), never K_REF */
            if (q == j || ks[q].kind != K_REF || !twins(g, &ks[j], &ks[q])) continue;
            int first = j < q ? j : q, ready = 1;
            for (int i = 0; i < ks[j].nread; i++) ready &= made_by[ks[j].read[i]] < first;
            if (!ready) continue;
            int32_t w[2] = {ks[j].write[0], ks[q].write[0]}, *writes = dup_ints(w, 2);
            if (!writes) {
                rc = -1;
                break;
            }
            int32_t node = ks[j].node, *reads = ks[j].read, nread = ks[j].nread;
            uint8_t *inplace = ks[j].inplace_ok, casts = ks[j].casts;
            /* The plan may put any output over a dying input of its size:
             * the sums (2, C), written as channels finish, must not be. */
            memset(inplace, 0, (size_t)nread);
            ks[j].read = NULL, ks[j].inplace_ok = NULL;
            kernel_clear(&ks[j]);
            kernel_clear(&ks[q]);
            ks[j + q - first].node = -1; /* a hole, squeezed out below */
            ks[first] = (kernel){.kind = kind, .node = node, .nread = nread, .read = reads, .nwrite = 2,
                                 .write = writes, .inplace_ok = inplace, .casts = casts};
            made_by[w[0]] = made_by[w[1]] = first;
            break;
        }
    }
    squeeze_holes(ks, nk);
    core_free(made_by), core_free(readers), core_free(is_root);
    return rc;
}

/* The BN_APPLY that load register `reg` of group kn reads, if it is a
 * batch norm of activations of type dt made by an earlier K_REF kernel and
 * read by nothing else (so it need not be stored); else -1. */
static int32_t lone_bn_load(const exec_graph *g, const kernel *ks, const kernel *kn, int reg, int dt,
                            const int32_t *made_by, const int32_t *readers, const uint8_t *is_root) {
    if (reg < 0 || reg >= kn->prog->nload || kn->prog->loads[reg].mode != LOAD_SAME) return -1;
    int32_t v = kn->read[reg];
    const gnode *y = &g->nodes[v];
    if (y->op != LT_OP_BN_APPLY || y->dtype != dt || readers[v] != 1 || is_root[v] || made_by[v] < 0 ||
        ks[made_by[v]].kind != K_REF || made_by[v] >= kn - ks || !cpu_bn_ok(g, y))
        return -1;
    return v;
}

/* Batch norm's forward epilogue: a group that is exactly relu(bn) or
 * relu(bn + r) (r of bn's shape and dtype, float32 or bfloat16, as the
 * add and the relu), where bn is a BN_APPLY read
 * by that group only, becomes one K_BN_ACT kernel at the group's place:
 * the normalized values go from registers into the add and the ReLU, and
 * bn is never written out and read back (two passes over the activation
 * of each of ResNet's batch norms). */
static int fuse_bn_act(const exec_graph *g, kernel *ks, int *nk) {
    int32_t *made_by, *readers;
    uint8_t *is_root;
    int rc = kernel_map(g, ks, *nk, &made_by, &readers, &is_root);
    for (int q = 0; rc == 0 && q < *nk; q++) {
        kernel *kn = &ks[q];
        const tprog *p = kn->prog;
        if (kn->kind != K_FUSED || !p || p->rtype != LT_F32 || p->nstore != 1 || p->nins > 2) continue;
        const tins *last = &p->ins[p->nins - 1];
        int dt = last->dtype;
        if (last->op != LT_OP_RELU || (dt != LT_F32 && dt != LT_BF16) || p->stores[0].value != last->node) continue;
        int32_t bn = -1, res = -1;
        if (p->nins == 1) {
            bn = lone_bn_load(g, ks, kn, last->src[0], dt, made_by, readers, is_root);
        } else {
            const tins *add = &p->ins[0];
            if (add->op != LT_OP_ADD || add->dtype != dt || last->src[0] != add->dst) continue;
            for (int side = 0; side < 2 && bn < 0; side++) {
                int other = add->src[1 - side];
                if (other < 0 || other >= p->nload || other == add->src[side]) continue;
                const tload *l = &p->loads[other];
                if (l->mode != LOAD_SAME || l->dtype != dt) continue;
                bn = lone_bn_load(g, ks, kn, add->src[side], dt, made_by, readers, is_root);
                res = l->value;
            }
        }
        if (bn < 0) continue;
        kernel *kb = &ks[made_by[bn]];
        int nr = kb->nread + (res >= 0);
        int32_t *reads = core_malloc((size_t)nr * 4), *writes = dup_ints(&last->node, 1);
        uint8_t *inplace = core_calloc((size_t)nr, 1);
        if (!reads || !writes || !inplace) {
            core_free(reads), core_free(writes), core_free(inplace);
            rc = -1;
            break;
        }
        memcpy(reads, kb->read, (size_t)kb->nread * 4);
        if (res >= 0) reads[nr - 1] = res;
        inplace[0] = 1; /* x, and r: each element is read before its own output is written */
        if (res >= 0) inplace[nr - 1] = 1;
        kernel_clear(kn);
        kernel_clear(kb);
        kb->node = -1; /* a hole, squeezed out below */
        *kn = (kernel){.kind = K_BN_ACT, .node = bn, .nread = nr, .read = reads, .nwrite = 1, .write = writes,
                       .inplace_ok = inplace};
    }
    squeeze_holes(ks, nk);
    core_free(made_by), core_free(readers), core_free(is_root);
    return rc;
}

/* The value a group that is one CAST to dtype dt reads whole (an
 * elementwise dtype change and nothing else), else -1. */
static int32_t lone_cast_source(const kernel *kn, int dt) {
    const tprog *p = kn->prog;
    if (kn->kind != K_FUSED || !p || p->nins != 1 || p->nload != 1 || p->nstore != 1) return -1;
    if (p->ins[0].op != LT_OP_CAST || p->ins[0].dtype != dt || p->loads[0].mode != LOAD_SAME) return -1;
    return p->loads[0].value;
}

/* Autocast's layer norms run in float32 between bfloat16 linears: the
 * forward's output is cast to bfloat16 for the next linear (its only
 * reader), and the backward's gradient arrives as a bfloat16 matmul result
 * cast to float32. Each such cast is a pass over an activation (a GPT
 * step: 13 of each, 8 and 5 ms of its 680). The layer-norm kernel takes
 * them in (kernel.casts): it writes its output rounded to bfloat16, as the
 * cast did, and reads the bfloat16 gradient widened, exactly the cast's
 * float32 values. A cast that other kernels read too stays for them. */
static int fuse_ln_casts(const exec_graph *g, kernel *ks, int *nk) {
    int32_t *made_by, *readers;
    uint8_t *is_root;
    int rc = kernel_map(g, ks, *nk, &made_by, &readers, &is_root);
    for (int q = 0; rc == 0 && q < *nk; q++) {
        kernel *kl = &ks[q];
        if (kl->kind != K_REF || kl->node < 0) continue;
        const gnode *y = &g->nodes[kl->node];
        int op = y->op;
        if ((op != LT_OP_LAYER_NORM && op != LT_OP_LN_BWD_INPUT && op != LT_OP_LN_BWD_PARAMS) ||
            !cpu_ln_ok(g, y) || g->nodes[y->in[0]].dtype != LT_F32)
            continue;
        int32_t gv = kl->read[0], src = made_by[gv] >= 0 ? lone_cast_source(&ks[made_by[gv]], LT_F32) : -1;
        if (op != LT_OP_LAYER_NORM && src >= 0 && g->nodes[src].dtype == LT_BF16) {
            kl->read[0] = src;
            kl->casts |= 1;
            readers[src]++;
            if (--readers[gv] == 0 && !is_root[gv]) {
                kernel_clear(&ks[made_by[gv]]);
                ks[made_by[gv]].node = -1; /* a hole, squeezed out below */
            }
        }
        int32_t v = kl->write[0];
        if (op == LT_OP_LN_BWD_PARAMS || readers[v] != 1 || is_root[v]) continue;
        for (int c = q + 1; c < *nk; c++) {
            if (lone_cast_source(&ks[c], LT_BF16) != v) continue;
            kl->write[0] = ks[c].prog->stores[0].value;
            kl->casts |= 0x80;
            kernel_clear(&ks[c]);
            ks[c].node = -1;
            break;
        }
    }
    squeeze_holes(ks, nk);
    core_free(made_by), core_free(readers), core_free(is_root);
    return rc;
}

/* Is value v a 2-D transpose of a contiguous matrix, made by a K_STRIDED
 * kernel (AS_STRIDED ia [1, rows, 0])? Returns that matrix, or -1. */
static int32_t transposed_of(const exec_graph *g, const kernel *ks, const int32_t *made_by, int32_t v) {
    const gnode *y = &g->nodes[v];
    if (y->op != LT_OP_AS_STRIDED || y->ndim != 2 || made_by[v] < 0 ||
        ks[made_by[v]].kind != K_STRIDED)
        return -1;
    if (y->ia[0] != 1 || y->ia[1] != y->shape[0] || y->ia[2] != 0 || y->shape[0] < 2 || y->shape[1] < 2) return -1;
    return g->nodes[y->in[0]].numel == y->numel ? y->in[0] : -1;
}

/* The base that operand i of kernel kn can read in place instead of the
 * strided copy made of it, and the kernel's bit for that read; -1 if none.
 * A 2-D matmul of a transposed matrix (a linear layer's weight gradient,
 * g^T x) reads the matrix itself and lets the GEMM transpose it: the copy
 * is a strided pass over a large activation gradient (float32: K_MATMUL,
 * dnnl_sgemm's transpose flags; bfloat16: oneDNN's matmul primitive reads
 * a 'ba' operand, dnnl.c's matmul_new). Attention reads its q, k, v (and
 * the backward its output gradient) through their views: the heads of a
 * GPT's qkv projection are strided windows of it, and their copies (eight
 * of 6 MB per layer and step) cost more than the kernel's own passes over
 * them. */
static int32_t read_through(const exec_graph *g, const kernel *ks, const int32_t *made_by, kernel *kn, int i,
                            uint8_t **bits) {
    int32_t v = kn->read[i];
    if (kn->kind != K_MATMUL && kn->kind != K_REF) return -1;
    const gnode *y = &g->nodes[kn->node];
    if (kn->kind == K_MATMUL || (y->op == LT_OP_MATMUL && g->nodes[y->in[0]].dtype == LT_BF16)) {
        if (i >= 2 || !cpu_dnnl_has_sgemm() || g->nodes[y->in[0]].ndim != 2 || g->nodes[y->in[1]].ndim != 2) return -1;
        *bits = &kn->trans;
        return transposed_of(g, ks, made_by, v);
    }
    if ((y->op != LT_OP_ATTENTION && y->op != LT_OP_ATTENTION_BWD) || i >= (y->op == LT_OP_ATTENTION ? 3 : 4) ||
        made_by[v] < 0 || ks[made_by[v]].kind != K_STRIDED || !cpu_attention_view_ok(g, y, i))
        return -1;
    *bits = &kn->views;
    return g->nodes[v].in[0];
}

/* Kernels read bases in place (read_through); a strided copy is dropped
 * once no other kernel reads it. */
static int reads_through_views(const exec_graph *g, kernel *ks, int *nk) {
    int32_t *made_by, *readers;
    uint8_t *is_root;
    int rc = kernel_map(g, ks, *nk, &made_by, &readers, &is_root);
    for (int q = 0; rc == 0 && q < *nk; q++) {
        kernel *kn = &ks[q];
        for (int i = 0; i < kn->nread && i < 8; i++) {
            uint8_t *bits;
            int32_t v = kn->read[i], src = read_through(g, ks, made_by, kn, i, &bits);
            if (src < 0) continue;
            kn->read[i] = src;
            *bits |= (uint8_t)(1u << i);
            readers[src]++;
            if (--readers[v] == 0 && !is_root[v]) {
                kernel_clear(&ks[made_by[v]]);
                ks[made_by[v]].node = -1; /* a hole, squeezed out below */
            }
        }
    }
    squeeze_holes(ks, nk);
    core_free(made_by), core_free(readers), core_free(is_root);
    return rc;
}

/* Is load register `reg` of program p the scalar 0 (a FILL of 0, which is
 * baked into the graph, never a runtime scalar)? */
static int zero_load(const exec_graph *g, const tprog *p, int reg) {
    if (reg < 0 || reg >= p->nload || p->loads[reg].mode != LOAD_SCALAR) return 0;
    const gnode *z = &g->nodes[p->loads[reg].value];
    return z->op == LT_OP_FILL && z->sc_slot[0] < 0 && z->sc[0] == 0 && !signbit(z->sc[0]);
}

/* The value of p's load register `reg` if it is a whole activation of type dt, else -1. */
static int32_t act_load(const tprog *p, int reg, int dt) {
    if (reg < 0 || reg >= p->nload || p->loads[reg].mode != LOAD_SAME || p->loads[reg].dtype != dt) return -1;
    return p->loads[reg].value;
}

/* Is group kn exactly ReLU's backward where(out <= 0, 0, a) or, with the
 * gradient add before it, where(out <= 0, 0, a + b), in activations of type
 * dt, storing only that? Then out, a and b (or -1). The where may also be
 * THRESHOLD_BWD (a, out) with a constant threshold 0, the same function
 * (PyTorch's autograd emits it: the device's ResNets fuse as the CLI's). */
static int relu_grad_group(const exec_graph *g, const kernel *kn, int dt, int32_t v[3]) {
    const tprog *p = kn->prog;
    if (kn->kind != K_FUSED || !p || p->rtype != LT_F32 || p->nstore != 1 || p->nins < 1 || p->nins > 3) return 0;
    const tins *wh = &p->ins[p->nins - 1], *le = NULL, *add = NULL;
    if (wh->dtype != dt || p->stores[0].value != wh->node) return 0;
    int thr = wh->op == LT_OP_THRESHOLD_BWD;
    if (thr) {
        const gnode *t = &g->nodes[wh->node];
        if (t->sc_slot[0] >= 0 || t->sc[0] != 0) return 0;
    } else if (wh->op != LT_OP_WHERE || !zero_load(g, p, wh->src[1])) {
        return 0;
    }
    for (int j = 0; j < p->nins - 1; j++) {
        const tins *t = &p->ins[j];
        if (t->op == LT_OP_LE && !le && !thr) le = t;
        else if (t->op == LT_OP_ADD && !add) add = t;
        else return 0;
    }
    int8_t grad = thr ? wh->src[0] : wh->src[2];
    if (thr) {
        v[0] = act_load(p, wh->src[1], dt);
    } else {
        if (!le || le->dtype != LT_BOOL || le->dst != wh->src[0] || !zero_load(g, p, le->src[1])) return 0;
        v[0] = act_load(p, le->src[0], dt);
    }
    if (add) {
        if (add->dtype != dt || add->dst != grad) return 0;
        v[1] = act_load(p, add->src[0], dt), v[2] = act_load(p, add->src[1], dt);
        return v[0] >= 0 && v[1] >= 0 && v[2] >= 0;
    }
    v[1] = act_load(p, grad, dt), v[2] = -1;
    return v[0] >= 0 && v[1] >= 0;
}

/* Can the K_BN_BWD kb (BN_BWD_INPUT (g, x, stats, [w]) with batch
 * statistics) recompute the ReLU mask of out from x instead of reading out?
 * Yes if out is made by a K_BN_ACT without a residual (relu(bn) alone) of
 * the same x, statistics and weight: the forward's node, else -1. (With
 * a residual the mask needs it too: reading out is cheaper.) */
static int32_t mask_source(const exec_graph *g, const kernel *ks, const int32_t *made_by, const kernel *kb,
                           int32_t out) {
    int32_t f = made_by[out];
    if (f < 0 || ks[f].kind != K_BN_ACT) return -1;
    const gnode *a = &g->nodes[ks[f].node], *y = &g->nodes[kb->node];
    if (ks[f].nread != a->nin || a->op != LT_OP_BN_APPLY || !a->ia[0] || !y->ia[0]) return -1;
    if (a->in[0] != y->in[1] || a->in[1] != y->in[2] || a->ia[1] != y->ia[1]) return -1;
    if (a->ia[1] && a->in[2] != y->in[3]) return -1;
    return ks[f].node;
}

/* Batch norm's backward prologue: a K_BN_BWD whose g is made by a group
 * that is exactly ReLU's backward (+ the gradient add before it:
 * relu_grad_group) computes g itself where it reads it, in its statistics
 * pass and its dx pass, at the group's place (or its own, if g has no other
 * reader): g is written only if something else reads it (the residual
 * branch), and then by the statistics pass, which the dx pass reads back.
 * ResNet's backward then passes over each activation twice (sums, dx), not
 * three times. */
static int fuse_bn_relu_bwd(const exec_graph *g, kernel *ks, int *nk) {
    int32_t *made_by, *readers;
    uint8_t *is_root;
    int rc = kernel_map(g, ks, *nk, &made_by, &readers, &is_root);
    for (int q = 0; rc == 0 && q < *nk; q++) {
        kernel *kb = &ks[q];
        if (kb->kind != K_BN_BWD || kb->nread > g->nodes[kb->node].nin) continue;
        int32_t gv = kb->read[0], f = made_by[gv], v[3];
        if (f < 0 || !relu_grad_group(g, &ks[f], g->nodes[gv].dtype, v)) continue;
        int alone = readers[gv] == 1 && !is_root[gv], ready = 1;
        for (int i = 1; i < kb->nread; i++) ready &= made_by[kb->read[i]] < f;
        if (!ready && !alone) continue; /* g's other readers may run before the batch norm */
        int32_t src = v[2] < 0 && g_config.bn_fuse >= 2 ? mask_source(g, ks, made_by, kb, v[0]) : -1, bias = -1;
        if (src >= 0 && g->nodes[src].ia[2]) bias = g->nodes[src].in[2 + g->nodes[src].ia[1]];
        int nr = kb->nread + 1 + (v[2] >= 0) + (bias >= 0), nw = 2 + !alone;
        int32_t *reads = core_malloc((size_t)nr * 4), *writes = core_malloc((size_t)nw * 4);
        uint8_t *inplace = core_calloc((size_t)nr, 1); /* g's sums pass writes gm while a, b, x are read again later */
        if (!reads || !writes || !inplace) {
            core_free(reads), core_free(writes), core_free(inplace);
            rc = -1;
            break;
        }
        memcpy(reads, kb->read, (size_t)kb->nread * 4);
        reads[0] = src >= 0 ? kb->read[1] : v[0]; /* out, or x (the mask from x: out is not read) */
        reads[kb->nread] = v[1];
        if (v[2] >= 0) reads[kb->nread + 1] = v[2];
        if (bias >= 0) reads[kb->nread + 1] = bias;
        memcpy(writes, kb->write, 2 * 4);
        if (!alone) writes[2] = gv;
        int32_t node = kb->node;
        int at = ready ? f : q;
        kernel_clear(&ks[f]);
        kernel_clear(kb);
        ks[ready ? q : f].node = -1; /* a hole, squeezed out below */
        ks[at] = (kernel){.kind = K_BN_BWD, .node = node, .nread = nr, .read = reads, .nwrite = nw, .write = writes,
                          .inplace_ok = inplace, .xmask = src + 1};
    }
    squeeze_holes(ks, nk);
    core_free(made_by), core_free(readers), core_free(is_root);
    return rc;
}

void cpu_kernels_free(kernel *k, int nk) {
    if (!k) return;
    for (int i = 0; i < nk; i++) kernel_clear(&k[i]);
    core_free(k);
}

int cpu_fuse(const exec_graph *g, kernel **out, int *nk) {
    size_t n = (size_t)(g->n ? g->n : 1);
    fstate s = {g, core_malloc(n * 4), core_malloc(n * 4), core_malloc(n * 4), core_malloc(n * 4),
                core_malloc(n * 4), core_calloc(n, 1)};
    int32_t *scratch = core_malloc(n * 4), *unit_node = NULL, *members = core_malloc(n * 4);
    int32_t *bucket_next = core_malloc(n * 4), *bucket_head = core_malloc(n * 4);
    uint8_t *ext_use = core_calloc(n, 1);
    kernel *ks = NULL;
    int rc = -1, nkern = 0;
    if (!s.parent || !s.uid || !s.maxdep || !s.size || !s.next || !s.T || !scratch || !members || !bucket_next ||
        !bucket_head || !ext_use)
        goto done;
    int32_t nu;
    assign_units(&s, &nu);
    /* Who needs a member's value outside its group: roots and other units. */
    for (int r = 0; r < g->nroots; r++) ext_use[g->roots[r]] = 1;
    for (int32_t k = 0; k < g->n; k++) {
        const gnode *y = &g->nodes[k];
        int32_t rk = s.parent[k] >= 0 ? find(&s, k) : -1;
        for (int i = 0; i < y->nin; i++) {
            int32_t x = y->in[i];
            if (s.parent[x] >= 0 && (rk < 0 || find(&s, x) != rk)) ext_use[x] = 1;
        }
    }
    /* Members per group root, in ascending order (push in reverse). */
    for (int32_t k = 0; k < g->n; k++) bucket_head[k] = -1;
    for (int32_t k = g->n - 1; k >= 0; k--) {
        if (s.parent[k] < 0) continue;
        int32_t r = find(&s, k);
        bucket_next[k] = bucket_head[r];
        bucket_head[r] = k;
    }
    unit_node = core_malloc((size_t)(nu ? nu : 1) * 4);
    ks = core_calloc((size_t)(nu ? nu : 1), sizeof *ks);
    if (!unit_node || !ks) goto done;
    for (int32_t u = 0; u < nu; u++) unit_node[u] = -1;
    for (int32_t k = 0; k < g->n; k++) {
        if (g->nodes[k].op == LT_OP_DATA) continue;
        if (s.parent[k] < 0) unit_node[s.uid[k]] = k;
        else if (find(&s, k) == k) unit_node[s.uid[k]] = k;
    }
    for (int32_t k = 0; k < g->n; k++) scratch[k] = -1;
    for (int32_t u = 0; u < nu; u++) {
        int32_t k = unit_node[u];
        if (k < 0) continue; /* the number of a group that merged into an older one */
        kernel *kn = &ks[nkern++];
        if (s.parent[k] < 0) {
            if (build_single(g, k, kn)) goto done;
            continue;
        }
        int nm = 0;
        for (int32_t m = bucket_head[k]; m >= 0; m = bucket_next[m]) members[nm++] = m;
        if (build_group(&s, members, nm, ext_use, kn, scratch)) goto done;
    }
    if (pair_twins(g, ks, &nkern, bn_twins, K_BN_BWD) || reads_through_views(g, ks, &nkern) ||
        fuse_ln_casts(g, ks, &nkern) || pair_twins(g, ks, &nkern, ln_twins, K_LN_BWD))
        goto done;
    if (g_config.bn_fuse && (fuse_bn_act(g, ks, &nkern) || fuse_bn_relu_bwd(g, ks, &nkern))) goto done;
    if (cpu_bucket_collectives(g, ks, &nkern, g_config.dist_bucket_bytes)) goto done;
    rc = 0;
done:
    if (rc) {
        cpu_kernels_free(ks, nkern);
        ks = NULL;
    }
    *out = ks;
    *nk = nkern;
    core_free(s.parent);
    core_free(s.uid);
    core_free(s.maxdep);
    core_free(s.size);
    core_free(s.next);
    core_free(s.T);
    core_free(scratch);
    core_free(unit_node);
    core_free(members);
    core_free(bucket_next);
    core_free(bucket_head);
    core_free(ext_use);
    return rc;
}
