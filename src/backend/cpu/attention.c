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
    int64_t D, Dp, Tp, ld;    /* Dp, Tp: D and T rounded up to 16; ld: floats between rows of q, k, v, g */
    const float *q, *k, *v, *g; /* the operands, or copies with rows padded to Dp (D not a multiple of 16) */
    float *kt, *vt;             /* (Dp, Tp): k and v transposed, zero past T (vt: backward only) */
    float *lse, *di, *dq, *dk, *dv; /* backward: per row (T), dq (T, Dp), the key tile's dk and dv (BK, Dp) */
} prob;

static int64_t up16(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* The floats prob_load takes from a thread's memory. */
static size_t prob_floats(const att *a, int bwd) {
    int64_t T = a->g.T, Dp = up16(a->g.D), Tp = up16(T), rows = up16(T * Dp);
    int64_t n = (a->g.D == Dp ? 0 : (3 + bwd) * rows) + Dp * Tp;
    if (bwd) n += Dp * Tp + 2 * up16(T) + rows + 2 * BK * Dp;
    return (size_t)n;
}

static float *take(float **next, int64_t n) {
    float *p = *next;
    *next += up16(n); /* 64-byte steps: the pieces stay aligned */
    return p;
}

/* kt (D rows of Tp) = x^T, zero past T. */
static void transpose(const float *x, int64_t T, int64_t D, int64_t ld, int64_t Tp, float *kt) {
    for (int64_t c = 0; c < D; c++) {
        float *r = kt + c * Tp;
        for (int64_t j = 0; j < T; j++) r[j] = x[j * ld + c];
        for (int64_t j = T; j < Tp; j++) r[j] = 0;
    }
}

/* Problem bh's operands (forward: in q, k, v; backward: g, q, k, v, out)
 * into p, copies and buffers in mem (prob_floats(a, bwd) floats). */
static void prob_load(const att *a, void *const *in, int64_t bh, int bwd, float *mem, prob *p) {
    int64_t T = a->g.T, D = a->g.D, TD = T * D;
    const float *src[4] = {(const float *)in[bwd] + bh * TD, (const float *)in[bwd + 1] + bh * TD,
                           (const float *)in[bwd + 2] + bh * TD, bwd ? (const float *)in[0] + bh * TD : NULL};
    float *next = mem;
    p->D = D, p->Dp = up16(D), p->Tp = up16(T), p->ld = D;
    if (D != p->Dp) {
        p->ld = p->Dp;
        for (int o = 0; o < 3 + bwd; o++) {
            float *c = take(&next, T * p->Dp);
            for (int64_t i = 0; i < T; i++) {
                memcpy(c + i * p->Dp, src[o] + i * D, (size_t)D * sizeof *c);
                memset(c + i * p->Dp + D, 0, (size_t)(p->Dp - D) * sizeof *c);
            }
            src[o] = c;
        }
    }
    p->q = src[0], p->k = src[1], p->v = src[2], p->g = src[3];
    transpose(p->k, T, D, p->ld, p->Tp, p->kt = take(&next, p->Dp * p->Tp));
    if (!bwd) return;
    transpose(p->v, T, D, p->ld, p->Tp, p->vt = take(&next, p->Dp * p->Tp));
    p->lse = take(&next, T), p->di = take(&next, T), p->dq = take(&next, T * p->Dp);
    p->dk = take(&next, 2 * BK * p->Dp), p->dv = p->dk + BK * p->Dp;
}

#define ISA_EACH "attention_body.h"
#include "isa_copies.h"

static int attention(const att *a, void *const *in, float *out, int bwd) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return (bwd ? backward_avx512 : forward_avx512)(a, in, out);
    case 1: return (bwd ? backward_avx2 : forward_avx2)(a, in, out);
    default: break;
    }
#endif
    return (bwd ? backward_base : forward_base)(a, in, out);
}

int cpu_attention_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out) {
    const gnode *q = &g->nodes[y->in[y->op == LT_OP_ATTENTION ? 0 : 1]];
    att a = {nn_att_of(y, q->ndim, q->shape, q->numel, sc), 0};
    a.scale = (float)a.g.scale;
    if (a.g.D > DMAX) return -1;
    return attention(&a, in, out, y->op == LT_OP_ATTENTION_BWD);
}
