/* Blocked activations. oneDNN's convolutions run on channel-blocked data
 * (nChw16c: 16 channels innermost); converting every activation in and out
 * of our plain NCHW at every conv cost a ResNet-20 step 27 ms of 130
 * (122 reorders). Here a value keeps the blocked layout when everything that
 * touches it can work on it: the convs (their primitive then reads and
 * writes it directly), the batch-norm kernels (blocked loops in
 * bn_blocked.c, with their ReLU epilogue), max pooling and its backward (pool_blocked.c), global
 * average pooling and its backward (nn_fast.c), and fused elementwise groups whose operands all have the
 * group's shape (index i is the same element in every operand, whatever
 * the layout). Values that must agree (the operands and outputs of one
 * batch-norm, max-pooling or fused kernel) form a class; a class is blocked only if all
 * its values are 4-D float32 or bfloat16 (autocast's activations) with a
 * multiple of 16 channels, none is a root, a parameter or read by any
 * other kernel, and a conv touches it. */
#include "cpu.h"

static int32_t find(int32_t *p, int32_t x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
}

static void join(int32_t *p, int32_t a, int32_t b) {
    a = find(p, a), b = find(p, b);
    if (a != b) p[a < b ? b : a] = a < b ? a : b;
}

static int eligible(const gnode *v) {
    return v->op != LT_OP_DATA && (v->dtype == LT_F32 || v->dtype == LT_BF16) && v->ndim == 4 &&
           v->shape[1] % 16 == 0 && v->numel > 0;
}

/* The activation operands of a conv kernel: the node's input i (or -1: its
 * output) for which oneDNN takes any layout. 0 if y is not such a conv. */
static int conv_acts(const exec_graph *g, const gnode *y, int acts[2]) {
    if (!cpu_dnnl_covers(g, y)) return 0;
    switch (y->op) {
    case LT_OP_CONV2D: /* x -> y */
    case LT_OP_CONV2D_BWD_INPUT: acts[0] = 0, acts[1] = -1; return 2; /* g -> dx */
    case LT_OP_CONV2D_BWD_WEIGHT: acts[0] = 0, acts[1] = 1; return 2; /* g, x -> dw */
    default: return 0;
    }
}

/* Max pooling (nn_fast.c, pool_blocked.c): x and y, or g, x and dx, share one layout. */
static int is_maxpool(const exec_graph *g, const gnode *y) {
    return (y->op == LT_OP_MAX_POOL2D || y->op == LT_OP_MAX_POOL2D_BWD) && cpu_pool_ok(g, y);
}

/* Global average pooling or its backward (nn_fast.c): its image side (x,
 * or dx) may have either layout; the (N, C, 1, 1) side is the same bytes
 * in both, so it joins no class. (Else ResNet's last stage went plain.) */
static int is_global_avg(const exec_graph *g, const gnode *y) {
    if (y->op != LT_OP_ADAPTIVE_AVG_POOL2D && y->op != LT_OP_ADAPTIVE_AVG_POOL2D_BWD) return 0;
    const gnode *o = y->op == LT_OP_ADAPTIVE_AVG_POOL2D ? y : &g->nodes[y->in[0]];
    return cpu_pool_ok(g, y) && o->shape[2] == 1 && o->shape[3] == 1;
}

/* A fused group on which the layout does not matter: every load and store
 * has the group's shape (or is one scalar). */
static int fused_any_layout(const exec_graph *g, const kernel *kn) {
    const tprog *p = kn->prog;
    if (p->ndim != 4) return 0;
    for (int i = 0; i < kn->nread; i++) {
        const gnode *x = &g->nodes[kn->read[i]];
        if (x->numel == 1) continue;
        if (x->ndim != 4 || memcmp(x->shape, p->shape, 4 * 8)) return 0;
    }
    return 1;
}

int cpu_layouts(const exec_graph *g, kernel *k, int nk, uint8_t *blk) {
    int n = g->n;
    int32_t *cls = core_malloc((size_t)(n ? n : 1) * 4);
    uint8_t *plain = core_calloc((size_t)(n ? n : 1), 1), *conv = core_calloc((size_t)(n ? n : 1), 1);
    if (!cls || !plain || !conv) {
        core_free(cls), core_free(plain), core_free(conv);
        return -1;
    }
    for (int32_t v = 0; v < n; v++) {
        cls[v] = v;
        plain[v] = !eligible(&g->nodes[v]);
    }
    for (int r = 0; r < g->nroots; r++) plain[g->roots[r]] = 1;
    for (int j = 0; j < nk; j++) {
        kernel *kn = &k[j];
        const gnode *y = &g->nodes[kn->node];
        int acts[2], na = kn->kind == K_REF ? conv_acts(g, y, acts) : 0;
        if (na) { /* the weights stay plain; the activations may be either */
            for (int i = 0; i < kn->nread; i++) plain[kn->read[i]] |= i != acts[0] && i != acts[1];
            plain[kn->node] |= acts[1] >= 0; /* the weight gradient */
            for (int a = 0; a < na; a++) conv[acts[a] < 0 ? kn->node : y->in[acts[a]]] = 1;
            continue;
        }
        /* Batch norm (nn_fast.c, bn_blocked.c): reads 0 and 1 (x, or g and
         * x) and every output of the node's shape share one layout; the
         * statistics and parameters are 1-D/2-D. Other dtype mixes run the
         * reference kernel: plain. */
        int bn = (kn->kind == K_REF || kn->kind == K_BN_BWD || kn->kind == K_BN_ACT) && cpu_bn_ok(g, y);
        if (kn->kind == K_REF && is_global_avg(g, y)) continue; /* its image side follows its class */
        int pool = kn->kind == K_REF && is_maxpool(g, y); /* x and y, or g, x and dx: one layout */
        if (bn || pool || (kn->kind == K_FUSED && fused_any_layout(g, kn))) {
            int32_t first = -1;
            for (int i = 0; i < kn->nread; i++) {
                int32_t v = kn->read[i];
                /* past the node's operands: K_BN_ACT's residual, K_BN_BWD's a
                 * and b (and the bias of its mask from x, 1-D) */
                int big = bn     ? i < (y->op == LT_OP_BN_STATS || y->op == LT_OP_BN_APPLY ? 1 : 2) ||
                                   (i >= y->nin && g->nodes[v].ndim == 4)
                          : pool ? 1
                                 : g->nodes[v].numel > 1;
                if (!big) {
                    plain[v] |= g->nodes[v].ndim == 4; /* a 4-D operand read per channel would need the layout */
                    continue;
                }
                if (first < 0) first = v;
                else join(cls, first, v);
            }
            for (int w = 0; w < kn->nwrite; w++) {
                int32_t v = kn->write[w];
                if (g->nodes[v].ndim != 4) continue; /* batch norm's (2, C) outputs */
                if (first < 0) first = v;
                else join(cls, first, v);
            }
            continue;
        }
        /* Any other kernel reads and writes plain NCHW. */
        for (int i = 0; i < kn->nread; i++) plain[kn->read[i]] = 1;
        for (int w = 0; w < kn->nwrite; w++) plain[kn->write[w]] = 1;
    }
    /* A class is blocked if no member must be plain and a conv touches it. */
    uint8_t *cplain = core_calloc((size_t)(n ? n : 1), 1), *cconv = core_calloc((size_t)(n ? n : 1), 1);
    int rc = -1;
    if (cplain && cconv) {
        for (int32_t v = 0; v < n; v++) {
            int32_t c = find(cls, v);
            cplain[c] |= plain[v];
            cconv[c] |= conv[v];
        }
        for (int32_t v = 0; v < n; v++) {
            int32_t c = find(cls, v);
            blk[v] = !cplain[c] && cconv[c];
        }
        for (int j = 0; j < nk; j++) { /* batch norm's and max pooling's loops follow the layout of their class */
            const gnode *y = &g->nodes[k[j].node];
            if ((cpu_bn_ok(g, y) && (k[j].kind == K_REF || k[j].kind == K_BN_BWD || k[j].kind == K_BN_ACT)) ||
                (is_maxpool(g, y) && k[j].kind == K_REF))
                k[j].blocked = blk[k[j].read[0]];
            if (is_global_avg(g, y) && k[j].kind == K_REF) /* x, or dx */
                k[j].blocked = blk[y->op == LT_OP_ADAPTIVE_AVG_POOL2D ? k[j].read[0] : k[j].node];
        }
        rc = 0;
    }
    core_free(cls), core_free(plain), core_free(conv), core_free(cplain), core_free(cconv);
    return rc;
}
