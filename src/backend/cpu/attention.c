/* Fast float32 kernels of ATTENTION and ATTENTION_BWD (issue 16). Same
 * semantics as src/backend/ref/ref_nn_transformer.c.
 *
 * Attention is tiled in the manner of FlashAttention: a tile of BQ query
 * rows meets the keys BK at a time, with an online softmax (running max
 * and sum, the accumulator rescaled when the max grows), so no (T, T)
 * matrix exists, only a BQ x BK tile on the stack. The backward recomputes
 * the tiles: a first sweep gives each row's log-sum-exp, a second forms the
 * probabilities and accumulates dq (per tile) and dk, dv (per problem).
 * The loops are in attention_body.h, compiled per instruction set. */
#include "cpu.h"

#include "../ref/ref_nn.h"
#include "simd.h"

#include <math.h>

#define BQ 32
#define BK 64
#define DMAX 128 /* head dims above this run the reference kernel (tiles live on the stack) */

typedef struct att {
    nn_att g;
    float scale;
} att;

static float att_drop(const att *a, int64_t bh, int64_t i, int64_t j) { return (float)nn_att_drop(&a->g, bh, i, j); }

/* The keys a query tile sees: all, or up to its last row (causal). */
static int64_t att_kend(const att *a, int64_t i0, int64_t ni) { return a->g.causal ? i0 + ni : a->g.T; }

/* 16 floats as one value (one zmm, two ymm), any alignment. */
typedef float v16 __attribute__((vector_size(64), aligned(4), may_alias));
#define V16(p) (*(v16 *)(p))

#define ISA_EACH "attention_body.h"
#include "isa_copies.h"

static void attention(const att *a, void *const *in, float *out, int bwd) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: (bwd ? backward_avx512 : forward_avx512)(a, in, out); return;
    case 1: (bwd ? backward_avx2 : forward_avx2)(a, in, out); return;
    default: break;
    }
#endif
    (bwd ? backward_base : forward_base)(a, in, out);
}

int cpu_attention_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out) {
    const gnode *q = &g->nodes[y->in[y->op == LT_OP_ATTENTION ? 0 : 1]];
    att a = {nn_att_of(y, q->ndim, q->shape, q->numel, sc), 0};
    a.scale = (float)a.g.scale;
    if (a.g.D > DMAX) return -1;
    attention(&a, in, out, y->op == LT_OP_ATTENTION_BWD);
    return 0;
}
