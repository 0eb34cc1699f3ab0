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
    int bwd; /* ATTENTION_BWD */
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
static size_t prob_floats(const att *a) {
    int64_t T = a->g.T, Dp = up16(a->g.D), Tp = up16(T), rows = up16(T * Dp);
    int64_t n = (a->g.D == Dp ? 0 : (3 + a->bwd) * rows) + Dp * Tp;
    if (a->bwd) n += Dp * Tp + 2 * up16(T) + rows + 2 * BK * Dp;
    return (size_t)n;
}

static float *take(float **next, int64_t n) {
    float *p = *next;
    *next += up16(n); /* 64-byte steps: the pieces stay aligned */
    return p;
}

#define ISA_EACH "attention_body.h"
#include "isa_copies.h"

static void attention(const att *a, void *const *in, float *out, float *buf) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: (a->bwd ? backward_avx512 : forward_avx512)(a, in, out, buf); return;
    case 1: (a->bwd ? backward_avx2 : forward_avx2)(a, in, out, buf); return;
    default: break;
    }
#endif
    (a->bwd ? backward_base : forward_base)(a, in, out, buf);
}

static att att_of(const exec_graph *g, const gnode *y, const double *sc) {
    const gnode *q = &g->nodes[y->in[y->op == LT_OP_ATTENTION ? 0 : 1]];
    att a = {nn_att_of(y, q->ndim, q->shape, q->numel, sc), 0, y->op == LT_OP_ATTENTION_BWD};
    a.scale = (float)a.g.scale;
    return a;
}

/* Every thread's operand copies and buffers (the shape is all it needs). */
static size_t scratch_bytes(const att *a) {
    return (size_t)NUM_THREADS() * prob_floats(a) * sizeof(float);
}

size_t cpu_attention_scratch(const exec_graph *g, const gnode *y) {
    double sc[2] = {0, 0};
    att a = att_of(g, y, sc);
    return y->dtype != LT_F32 || a.g.D > DMAX ? 0 : scratch_bytes(&a);
}

int cpu_attention_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out,
                      cpu_scratch scratch) {
    att a = att_of(g, y, sc);
    if (a.g.D > DMAX) return -1;
    size_t need = scratch_bytes(&a);
    /* More threads than at compile time: memory of its own. */
    float *buf = need <= scratch.n ? (float *)(void *)scratch.p : core_aligned_alloc(need);
    if (!buf) return -1;
    attention(&a, in, out, buf);
    if (buf != (float *)(void *)scratch.p) core_free(buf);
    return 0;
}
