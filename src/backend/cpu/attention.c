/* Fast kernels of ATTENTION and ATTENTION_BWD (issue 16), float32 or
 * bfloat16 (issue 30: autocast's q, k, v). Same semantics as
 * src/backend/ref/ref_nn_transformer.c.
 *
 * Attention is tiled in the manner of FlashAttention: a tile of BQ query
 * rows meets the keys BK at a time, with an online softmax (running max
 * and sum, the accumulator rescaled when the max grows), so no (T, T)
 * matrix exists, only BQ x BK tiles on the stack. The backward recomputes
 * the tiles: a first sweep gives each row's log-sum-exp, a second forms the
 * probabilities and accumulates dk, dv (per key tile) and dq (per problem).
 * The loops are in attention_body.h, compiled per instruction set.
 *
 * On bfloat16, softmax, its statistics and every sum run in float32 and
 * the outputs are rounded to bfloat16 once. A CPU with AVX512-BF16 runs
 * the products as bfloat16 dot products, the probabilities P and dS
 * rounded to bfloat16 per tile before they are multiplied, as PyTorch's
 * CPU flash attention does; elsewhere the operands are widened to float32
 * as a problem's operands are copied in (once per problem: T D values
 * against the T^2 D of the products) and the float32 loops run. */
#include "cpu.h"

#include "../ref/ref_nn.h"
#include "simd.h"

#include <math.h>
#include <string.h>

#define BQ 64
#define BK 64
#define MR 6 /* rows of C in registers: 6 x 4 accumulators, 4 rows of B, a broadcast */
#define DMAX 128 /* head dims above this run the reference kernel (tiles live on the stack) */
#define SMAX 512  /* the backward keeps its first sweep's score tiles for T up to this (1 MB a thread) */

typedef struct att {
    nn_att g;
    float scale;
    int bwd;     /* ATTENTION_BWD */
    int bf16;    /* the operands and outputs bfloat16 (else float32) */
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
    const float *q, *k, *v, *g;     /* the operands, or float32 copies with rows padded to Dp (bfloat16, or D not
                                       a multiple of 16) */
    int64_t ldq, ldk, ldv, ldg;     /* floats between their rows */
    float *kt, *vt;                 /* (Dp, Tp): k and v transposed, zero past T (vt: backward only) */
    float *lse, *di, *dq, *dk, *dv; /* backward: per row (T), dq (T, Dp), the key tile's dk and dv (BK, Dp) */
    float *sk;                      /* backward: the score tiles of its first sweep (BQ x BK each, att_kept), or NULL */
    /* The AVX512-BF16 copy (AT_DP): bfloat16 pairs in 32-bit words, the
     * operands vdpbf16ps multiplies (a word of A against a word of B). */
    int64_t kw, Dw;                 /* words of a row's D values, (D + 1) / 2, and that rounded up to 16 */
    const uint32_t *qw, *gw;        /* q, dO: T rows of Dw words, pairs along D, zero past D */
    uint32_t *ktw, *vtw;            /* k and v as those words, transposed: (Dw, Tp), zero past T */
    uint32_t *kp, *vp, *qp, *gp;    /* rows 2r and 2r + 1 paired along D: (Tp / 2, Dp), zero past T (vp: forward) */
} prob;

static int64_t up16(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* The floats of the backward's kept score tiles: tile (i0 / BQ, j0 / BK)
 * of a row of them per query tile. The second sweep reads them in place of
 * recomputing q k^T (a fifth of its products) while they stay in the
 * caches; 0 (recompute) for long T. */
static int64_t att_kept(const att *a) {
    int64_t nt = (a->g.T + BQ - 1) / BQ;
    return a->bwd && a->g.T <= SMAX ? nt * nt * BQ * BK : 0;
}

/* The floats (or words) the AVX512-BF16 copy's prob_load takes. */
static int64_t prob_words(const att *a) {
    int64_t T = a->g.T, Dp = up16(a->g.D), Tp = up16(T), Dw = up16((a->g.D + 1) / 2), rows = up16(T * Dw);
    int64_t pairs = Tp / 2 * Dp, n = 2 * rows + Dw * Tp; /* the k and v words before their transpose, q, kt */
    if (a->bwd) return n + Dw * Tp + rows + 3 * pairs + 2 * up16(T) + up16(T * Dp) + 2 * BK * Dp + att_kept(a);
    return n + pairs;
}

/* The floats prob_load takes from a thread's memory (bfloat16: either
 * copy's, the one to run chosen at run time). */
static size_t prob_floats(const att *a) {
    int64_t T = a->g.T, Dp = up16(a->g.D), Tp = up16(T), rows = up16(T * Dp);
    int64_t n = (a->g.D == Dp && !a->bf16 ? 0 : (3 + a->bwd) * rows) + Dp * Tp;
    if (a->bwd) n += Dp * Tp + 2 * up16(T) + rows + 2 * BK * Dp + att_kept(a);
    if (a->bf16 && prob_words(a) > n) n = prob_words(a);
    return (size_t)n;
}

/* Operand i's rows of problem bh (float or bfloat16), and the elements
 * between them: a contiguous (..., T, D) operand, or the base of its view
 * (kernel.views). */
static const void *operand(const att *a, void *const *in, int i, int64_t bh, int64_t *ld) {
    const char *base = in[i];
    size_t es = a->bf16 ? 2 : 4;
    if (!(a->views >> i & 1)) {
        *ld = a->g.D;
        return base + (size_t)(bh * a->g.T * a->g.D) * es;
    }
    const int64_t *str = a->vstr[i];
    int64_t off = a->voff[i], r = bh;
    for (int d = a->nd - 3; d >= 0; d--) {
        off += r % a->shape[d] * str[d];
        r /= a->shape[d];
    }
    *ld = str[a->nd - 2];
    return base + (size_t)off * es;
}

static float *take(float **next, int64_t n) {
    float *p = *next;
    *next += up16(n); /* 64-byte steps: the pieces stay aligned */
    return p;
}

/* The part of a product (attention_body.h's mm) a tile on the causal
 * diagonal (i0 = j0: query row i sees keys up to i) needs, per block of MR
 * rows of C and row i of C: TRI_COLS, C's columns up to i (the rest of
 * the block's 16-column strips left as they were: the caller masks them);
 * TRI_KHI, A's columns (k) up to i; TRI_KLO, k from i on. The products
 * skipped under TRI_KHI and TRI_KLO are of masked probabilities, zero.
 * Half of a diagonal tile's work. */
enum { TRI_NONE, TRI_COLS, TRI_KHI, TRI_KLO };

#define AT_IDX(...) __VA_ARGS__ /* a shuffle's lane list as one macro argument */
#define ISA_EACH "attention_body.h"
#include "isa_copies.h"

/* On bfloat16, AVX-512 CPUs with AVX512-BF16 (vdpbf16ps: 32 products a
 * vector where FMA does 16) run a fourth copy of the loops, which
 * multiplies bfloat16 pairs with float32 sums; without it, the copies above
 * widen bfloat16 to float32. */
#if defined(HAVE_ISA) && __GNUC__ >= 10
#define HAVE_DPBF16 1
#define ISA_AVX512BF16 "avx512f,avx512vl,avx512bw,avx512dq,fma,avx512bf16,prefer-vector-width=512"
TARGET_PUSH(ISA_AVX512BF16)
#define AT_DP 1
#define ISA_SUF _dpbf16
#include "attention_body.h"
#undef ISA_SUF
#undef AT_DP
TARGET_POP()

static int has_dpbf16(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
}
#endif

/* buf: nt threads' buffers (prob_floats each). */
static void attention(const att *a, void *const *in, void *out, float *buf, int nt) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2:
#ifdef HAVE_DPBF16
        if (a->bf16 && has_dpbf16()) {
            (a->bwd ? backward_dpbf16 : forward_dpbf16)(a, in, out, buf, nt);
            return;
        }
#endif
        (a->bwd ? backward_avx512 : forward_avx512)(a, in, out, buf, nt);
        return;
    case 1: (a->bwd ? backward_avx2 : forward_avx2)(a, in, out, buf, nt); return;
    default: break;
    }
#endif
    (a->bwd ? backward_base : forward_base)(a, in, out, buf, nt);
}

static att att_of(const exec_graph *g, const gnode *y, const double *sc, uint8_t views) {
    const gnode *q = &g->nodes[y->in[y->op == LT_OP_ATTENTION ? 0 : 1]];
    att a = {nn_att_of(y, q->ndim, q->shape, q->numel, sc), 0, y->op == LT_OP_ATTENTION_BWD, y->dtype == LT_BF16,
             q->ndim, q->shape, views, {0}, {0}};
    a.scale = (float)a.g.scale;
    for (int i = 0; i < 4; i++)
        if (views >> i & 1) {
            const gnode *v = &g->nodes[y->in[i]];
            a.vstr[i] = v->ia, a.voff[i] = v->ia[v->ndim];
        }
    return a;
}

int cpu_attention_ok(const exec_graph *g, const gnode *y) {
    if ((y->op != LT_OP_ATTENTION && y->op != LT_OP_ATTENTION_BWD) || (y->dtype != LT_F32 && y->dtype != LT_BF16))
        return 0;
    for (int i = 0; i < y->nin; i++)
        if (g->nodes[y->in[i]].dtype != y->dtype) return 0;
    return y->shape[y->ndim - 1] <= DMAX;
}

int cpu_attention_view_ok(const exec_graph *g, const gnode *y, int i) {
    const gnode *v = &g->nodes[y->in[i]], *q = &g->nodes[y->in[y->op == LT_OP_ATTENTION ? 0 : 1]];
    if (!cpu_attention_ok(g, y) || v->op != LT_OP_AS_STRIDED || v->ndim != q->ndim || v->ndim < 2) return 0;
    return v->ia[v->ndim - 1] == 1 || v->shape[v->ndim - 1] == 1; /* a head's rows: D contiguous elements */
}

size_t cpu_attention_scratch(const exec_graph *g, const gnode *y) {
    double sc[2] = {0, 0};
    att a = att_of(g, y, sc, 0);
    return !cpu_attention_ok(g, y) ? 0 : (size_t)NUM_THREADS() * prob_floats(&a) * sizeof(float);
}

int cpu_attention_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out,
                      uint8_t views, cpu_scratch scratch) {
    if (!cpu_attention_ok(g, y)) return -1;
    att a = att_of(g, y, sc, views);
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
