/* Fast float32 kernels of ATTENTION and ATTENTION_BWD (issue 16). Same
 * semantics as src/backend/ref/ref_nn_transformer.c.
 *
 * Attention is tiled in the manner of FlashAttention: a tile of BQ query
 * rows meets the keys BK at a time, with an online softmax (running max
 * and sum, the accumulator rescaled when the max grows), so no (T, T)
 * matrix exists, only BQ x BK tiles on the stack. The backward recomputes
 * the tiles: a first sweep gives each row's log-sum-exp, a second forms the
 * probabilities and accumulates dk, dv (per key tile) and dq (per problem).
 * The loops are in attention_body.h, compiled per instruction set. */
#include "cpu.h"

#include "../ref/ref_nn.h"
#include "simd.h"

#include <math.h>
#include <string.h>

#define BQ 64
#define BK 64
#define MR 6 /* rows of C in registers: 6 x 4 accumulators, 4 rows of B, a broadcast */
#define DMAX 128 /* head dims above this run the reference kernel (tiles live on the stack) */

typedef struct att {
    nn_att g;
    float scale;
    int bwd;     /* ATTENTION_BWD */
    int nd;      /* dims of q (..., T, D) */
    const int64_t *shape;
    uint8_t views;          /* bit i: operand i is read through its view (kernel.views) */
    const int64_t *vstr[4]; /* those views' strides and offsets (AS_STRIDED ia) */
    int64_t voff[4];
} att;

static float att_drop(const att *a, int64_t bh, int64_t i, int64_t j) { return (float)nn_att_drop(&a->g, bh, i, j); }

/* The keys a query tile sees: all, or up to its last row (causal). */
static int64_t att_kend(const att *a, int64_t i0, int64_t ni) { return a->g.causal ? i0 + ni : a->g.T; }

/* How many keys of the tile [j0, j0 + nj) query row i sees (<= 0: none). */
static int64_t att_lim(const att *a, int64_t i, int64_t j0, int64_t nj) {
    return a->g.causal && i + 1 - j0 < nj ? i + 1 - j0 : nj;
}

/* One (T, D) problem as the loops read it. */
typedef struct prob {
    int64_t D, Dp, Tp;              /* Dp, Tp: D and T rounded up to 16 */
    const float *q, *k, *v, *g;     /* the operands, or copies with rows padded to Dp (D not a multiple of 16) */
    int64_t ldq, ldk, ldv, ldg;     /* floats between their rows */
    float *kt, *vt;                 /* (Dp, Tp): k and v transposed, zero past T (vt: backward only) */
    float *lse, *di, *dq, *dk, *dv; /* backward: per row (T), dq (T, Dp), the key tile's dk and dv (BK, Dp) */
} prob;

static int64_t up16(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* The floats prob_load takes from a thread's memory. */
static size_t prob_floats(const att *a) {
    int64_t T = a->g.T, Dp = up16(a->g.D), Tp = up16(T), rows = up16(T * Dp);
    int64_t n = (a->g.D == Dp ? 0 : (3 + a->bwd) * rows) + Dp * Tp;
    if (a->bwd) n += Dp * Tp + 2 * up16(T) + rows + 2 * BK * Dp;
    return (size_t)n;
}

/* Operand i's rows of problem bh, and the floats between them: a
 * contiguous (..., T, D) operand, or the base of its view (kernel.views). */
static const float *operand(const att *a, void *const *in, int i, int64_t bh, int64_t *ld) {
    const float *base = in[i];
    if (!(a->views >> i & 1)) {
        *ld = a->g.D;
        return base + bh * a->g.T * a->g.D;
    }
    const int64_t *str = a->vstr[i];
    int64_t off = a->voff[i], r = bh;
    for (int d = a->nd - 3; d >= 0; d--) {
        off += r % a->shape[d] * str[d];
        r /= a->shape[d];
    }
    *ld = str[a->nd - 2];
    return base + off;
}

static float *take(float **next, int64_t n) {
    float *p = *next;
    *next += up16(n); /* 64-byte steps: the pieces stay aligned */
    return p;
}

#define AT_IDX(...) __VA_ARGS__ /* a shuffle's lane list as one macro argument */
#define ISA_EACH "attention_body.h"
#include "isa_copies.h"

/* buf: nt threads' buffers (prob_floats each). */
static void attention(const att *a, void *const *in, float *out, float *buf, int nt) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: (a->bwd ? backward_avx512 : forward_avx512)(a, in, out, buf, nt); return;
    case 1: (a->bwd ? backward_avx2 : forward_avx2)(a, in, out, buf, nt); return;
    default: break;
    }
#endif
    (a->bwd ? backward_base : forward_base)(a, in, out, buf, nt);
}

static att att_of(const exec_graph *g, const gnode *y, const double *sc, uint8_t views) {
    const gnode *q = &g->nodes[y->in[y->op == LT_OP_ATTENTION ? 0 : 1]];
    att a = {nn_att_of(y, q->ndim, q->shape, q->numel, sc), 0, y->op == LT_OP_ATTENTION_BWD, q->ndim, q->shape, views,
             {0}, {0}};
    a.scale = (float)a.g.scale;
    for (int i = 0; i < 4; i++)
        if (views >> i & 1) {
            const gnode *v = &g->nodes[y->in[i]];
            a.vstr[i] = v->ia, a.voff[i] = v->ia[v->ndim];
        }
    return a;
}

int cpu_attention_view_ok(const exec_graph *g, const gnode *y, int i) {
    const gnode *v = &g->nodes[y->in[i]], *q = &g->nodes[y->in[y->op == LT_OP_ATTENTION ? 0 : 1]];
    if (y->dtype != LT_F32 || v->op != LT_OP_AS_STRIDED || v->dtype != LT_F32 || v->ndim != q->ndim || v->ndim < 2 ||
        q->shape[q->ndim - 1] > DMAX)
        return 0;
    return v->ia[v->ndim - 1] == 1 || v->shape[v->ndim - 1] == 1; /* a head's rows: D contiguous floats */
}

size_t cpu_attention_scratch(const exec_graph *g, const gnode *y) {
    double sc[2] = {0, 0};
    att a = att_of(g, y, sc, 0);
    return y->dtype != LT_F32 || a.g.D > DMAX ? 0 : (size_t)NUM_THREADS() * prob_floats(&a) * sizeof(float);
}

int cpu_attention_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out,
                      uint8_t views, cpu_scratch scratch) {
    att a = att_of(g, y, sc, views);
    if (a.g.D > DMAX) return -1;
    size_t per = prob_floats(&a) * sizeof(float);
    /* As many threads as the run memory has buffers for (more threads than
     * at compile time: no more), else memory of its own. */
    int nt = per ? (int)(scratch.n / per < (size_t)NUM_THREADS() ? scratch.n / per : (size_t)NUM_THREADS()) : 1;
    float *buf = nt > 0 ? (float *)(void *)scratch.p : core_aligned_alloc(per);
    if (!buf) return -1;
    attention(&a, in, out, buf, nt > 0 ? nt : 1);
    if (nt == 0) core_free(buf);
    return 0;
}
