/* Fast kernels of the transformer ops (issue 16): layer norm and its
 * backward ops, the total norm (attention: attention.c). Same semantics as
 * src/backend/ref/ref_nn_transformer.c. Layer norm's activations (x, g and
 * the output of x's shape) are float32, or bfloat16 with float32
 * parameters (autocast's mixed layer norm): bfloat16 rows are widened into
 * a per-thread float buffer, CPU_LN_ROWS at a time, and every loop below
 * runs in float32 as for float32 input; results are rounded once. Under
 * autocast a float32 layer norm's output is cast to bfloat16 for the next
 * linear, and its backward reads a bfloat16 gradient cast to float32:
 * fuse.c folds those casts into the kernel (kernel.casts), which then
 * writes or reads that operand as bfloat16, with the same roundings. The
 * row loops are in ln_body.h, compiled per instruction set. */
#include "cpu.h"

#include "../ref/ref_nn.h"
#include "simd.h"

#include <math.h>

/* The row loops of one instruction set (ln_body.h). */
typedef struct lnkern {
    void (*widen)(float *dst, const uint16_t *h, int64_t n);
    void (*narrow)(uint16_t *h, const float *v, int64_t n);
    void (*fwd_row)(float *o, const float *x, float a, float bias, const float *w, const float *b, int64_t n);
    void (*bwd_input_row)(float *o, const float *g, const float *x, const float *w, double a, int64_t n);
    void (*bwd_params_rows)(double *pw, double *pb, const float *g, const float *x, const float *a,
                            const float *bias, int nr, int64_t n);
} lnkern;

#define ISA_EACH "ln_body.h"
#include "isa_copies.h"

static const lnkern *ln_kern(void) {
#ifdef HAVE_ISA
    switch (core_isa()) {
    case 2: return &ln_kern_avx512;
    case 1: return &ln_kern_avx2;
    default: break;
    }
#endif
    return &ln_kern_base;
}

/* ---- layer norm: rows of `inner` contiguous values ---- */

static int64_t ln_inner(const gnode *x, int64_t nnorm) {
    int64_t inner = 1;
    for (int d = x->ndim - (int)nnorm; d < x->ndim; d++) inner *= x->shape[d];
    return inner;
}

/* Which activations of a layer-norm kernel are bfloat16: x, g (the
 * backward's gradient) and the output; by their nodes' dtypes, or casts
 * (kernel.casts: bit 0, operand 0 (LAYER_NORM's x, the backward's g) is
 * the bfloat16 value the node's float32 operand was cast from; bit 7, the
 * output is written as its cast to bfloat16). */
typedef struct lnio {
    int x, g, out;
} lnio;
static lnio ln_io(const exec_graph *g, const gnode *y, uint8_t casts) {
    int fwd = y->op == LT_OP_LAYER_NORM, op0 = g->nodes[y->in[0]].dtype == LT_BF16 || (casts & 1);
    lnio io = {fwd ? op0 : g->nodes[y->in[1]].dtype == LT_BF16, fwd ? 0 : op0, y->dtype == LT_BF16 || casts >> 7};
    return io;
}

/* Per-thread float rows for bfloat16 activations: x's CPU_LN_ROWS rows,
 * g's, and one output row (3 blocks). NULL when all are float32 (none
 * needed) or out of memory (*oom set: the reference runs). */
#define LN_BUF_ROWS (2 * CPU_LN_ROWS + 1)
static float *ln_buf(lnio io, int64_t n, int *oom) {
    *oom = 0;
    if (!io.x && !io.g && !io.out) return NULL;
    float *b = core_malloc((size_t)NUM_THREADS() * LN_BUF_ROWS * (size_t)n * sizeof *b);
    *oom = !b;
    return b;
}
static float *ln_mine(float *buf, int64_t n) {
    return buf ? buf + (size_t)THREAD_NUM() * LN_BUF_ROWS * (size_t)n : NULL;
}

/* The thread's blocks for x's rows and for g's, NULL for float32. */
static float *ln_xbuf(float *mine, int bf16) { return bf16 ? mine : NULL; }
static float *ln_gbuf(float *mine, int bf16, int64_t n) { return bf16 ? mine + CPU_LN_ROWS * n : NULL; }

/* Rows [r0, r0 + nr) of a as floats: a itself (float32), or widened into
 * tmp (bfloat16). */
static const float *ln_rows(const lnkern *k, const void *a, float *tmp, int64_t r0, int nr, int64_t n) {
    if (!tmp) return (const float *)a + r0 * n;
    k->widen(tmp, (const uint16_t *)a + r0 * n, nr * n);
    return tmp;
}

/* Row r's output: out itself (float32), or the buffer's output row, stored
 * rounded to bfloat16 by ln_put. */
static float *ln_out(void *out, float *mine, int bf16, int64_t r, int64_t n) {
    return bf16 ? mine + 2 * CPU_LN_ROWS * n : (float *)out + r * n;
}
static void ln_put(const lnkern *k, void *out, const float *mine, int bf16, int64_t r, int64_t n) {
    if (bf16) k->narrow((uint16_t *)out + r * n, mine + 2 * CPU_LN_ROWS * n, n);
}

/* Mean and rstd of the nr <= CPU_LN_ROWS rows at x, as PyTorch computes
 * them, in float (ln_moments.c: a row holding 1e30 is NaN there). */
static void ln_stats(const float *x, int nr, int64_t n, double eps, float *m, float *rstd) {
    float var[CPU_LN_ROWS];
    cpu_ln_moments(x, nr, n, m, var);
    for (int q = 0; q < nr; q++) rstd[q] = 1.0f / sqrtf(var[q] + (float)eps);
}

static int ln_block(int64_t r0, int64_t rows) { return rows - r0 < CPU_LN_ROWS ? (int)(rows - r0) : CPU_LN_ROWS; }

/* LAYER_NORM (x[, w][, b]) ia [nnorm, has_w, has_b] */
static int layer_norm(const gnode *y, const gnode *xn, lnio io, void *const *in, double eps, void *out) {
    const float *w = y->ia[1] ? in[1] : NULL, *b = y->ia[2] ? in[1 + (y->ia[1] != 0)] : NULL;
    int64_t n = ln_inner(xn, y->ia[0]), rows = xn->numel / n;
    const lnkern *k = ln_kern();
    int oom;
    float *buf = ln_buf(io, n, &oom);
    if (oom) return -1;
#pragma omp parallel for schedule(static)
    for (int64_t r0 = 0; r0 < rows; r0 += CPU_LN_ROWS) {
        float m[CPU_LN_ROWS], rs[CPU_LN_ROWS], *mine = ln_mine(buf, n);
        int nr = ln_block(r0, rows);
        const float *x = ln_rows(k, in[0], ln_xbuf(mine, io.x), r0, nr, n);
        ln_stats(x, nr, n, eps, m, rs);
        for (int q = 0; q < nr; q++) { /* PyTorch's form: x rstd + (-rstd mean) */
            k->fwd_row(ln_out(out, mine, io.out, r0 + q, n), x + q * n, rs[q], -rs[q] * m[q], w, b, n);
            ln_put(k, out, mine, io.out, r0 + q, n);
        }
    }
    core_free(buf);
    return 0;
}

/* LN_BWD_INPUT (g, x[, w]) ia [nnorm, has_w]: the reference's centred form
 * (ref_ln_bwd_input says why), its sums and the centring in double. */
static int ln_bwd_input(const gnode *y, const gnode *xn, lnio io, void *const *in, double eps, void *out) {
    const float *w = y->ia[1] ? in[2] : NULL;
    int64_t n = ln_inner(xn, y->ia[0]), rows = xn->numel / n;
    const lnkern *k = ln_kern();
    int oom;
    float *buf = ln_buf(io, n, &oom);
    if (oom) return -1;
#pragma omp parallel for schedule(static)
    for (int64_t r0 = 0; r0 < rows; r0 += CPU_LN_ROWS) {
        float ms[CPU_LN_ROWS], as[CPU_LN_ROWS], *mine = ln_mine(buf, n);
        int nr = ln_block(r0, rows);
        const float *x = ln_rows(k, in[1], ln_xbuf(mine, io.x), r0, nr, n);
        const float *g = ln_rows(k, in[0], ln_gbuf(mine, io.g, n), r0, nr, n);
        ln_stats(x, nr, n, eps, ms, as);
        for (int q = 0; q < nr; q++) {
            k->bwd_input_row(ln_out(out, mine, io.out, r0 + q, n), g + q * n, x + q * n, w, as[q], n);
            ln_put(k, out, mine, io.out, r0 + q, n);
        }
    }
    core_free(buf);
    return 0;
}

/* LN_BWD_PARAMS (g, x) ia [nnorm] -> (2, inner), float32: per-chunk partial
 * sums in double, added in chunk order (the same result for any thread
 * count). With dx, the rows' LN_BWD_INPUT too (w: its weight or NULL), from
 * the same widened rows and statistics: a row's dx depends on that row
 * alone, so any split of the rows gives ln_bwd_input's values. -1 without
 * memory for the sums (nothing written: the reference runs). */
#define LN_CHUNKS 32
static int ln_bwd_params(const gnode *y, const gnode *xn, lnio io, void *const *in, double eps, float *out,
                         void *dx, const float *w) {
    int64_t n = ln_inner(xn, y->ia[0]), rows = n ? xn->numel / n : 0;
    int oom;
    float *buf = ln_buf(io, n, &oom);
    double *part = oom ? NULL : core_calloc((size_t)(LN_CHUNKS * 2 * n), sizeof *part);
    if (!part) {
        core_free(buf);
        return -1;
    }
    int64_t per = (rows + LN_CHUNKS - 1) / LN_CHUNKS;
    const lnkern *k = ln_kern();
#pragma omp parallel for schedule(static)
    for (int c = 0; c < LN_CHUNKS; c++) {
        double *pw = part + (size_t)c * 2 * (size_t)n, *pb = pw + n;
        int64_t r1 = (c + 1) * per < rows ? (c + 1) * per : rows;
        float *mine = ln_mine(buf, n);
        for (int64_t r0 = c * per; r0 < r1; r0 += CPU_LN_ROWS) {
            float m[CPU_LN_ROWS], rs[CPU_LN_ROWS], bias[CPU_LN_ROWS];
            int nr = ln_block(r0, r1);
            const float *x = ln_rows(k, in[1], ln_xbuf(mine, io.x), r0, nr, n);
            const float *g = ln_rows(k, in[0], ln_gbuf(mine, io.g, n), r0, nr, n);
            ln_stats(x, nr, n, eps, m, rs);
            for (int q = 0; q < nr; q++) bias[q] = -rs[q] * m[q];
            for (int q = 0; dx && q < nr; q++) {
                k->bwd_input_row(ln_out(dx, mine, io.out, r0 + q, n), g + q * n, x + q * n, w, rs[q], n);
                ln_put(k, dx, mine, io.out, r0 + q, n);
            }
            k->bwd_params_rows(pw, pb, g, x, rs, bias, nr, n);
        }
    }
    for (int64_t i = 0; i < 2 * n; i++) {
        double s = 0;
        for (int c = 0; c < LN_CHUNKS; c++) s += part[(size_t)c * 2 * (size_t)n + (size_t)i];
        out[i] = (float)s;
    }
    core_free(part);
    core_free(buf);
    return 0;
}

/* ---- total norm ---- */

/* One parallel region for every operand (a GPT has ~76 gradients: a region
 * each cost more than the sums); static splits, so the result does not
 * depend on timing. */
static void grad_norm(const exec_graph *g, const gnode *y, void *const *in, float *out) {
    double s = 0;
#pragma omp parallel reduction(+ : s)
    for (int i = 0; i < y->nin; i++) {
        const float *x = in[i];
        int64_t n = g->nodes[y->in[i]].numel;
#pragma omp for schedule(static) nowait
        for (int64_t e = 0; e < n; e++) s += (double)x[e] * x[e];
    }
    *out = (float)sqrt(s);
}

int cpu_transformer_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out,
                        uint8_t casts) {
    const gnode *x = &g->nodes[y->in[y->op == LT_OP_LAYER_NORM ? 0 : 1]];
    switch (y->op) { /* cpu_ln_ok's dtypes, or float32 throughout (GRAD_NORM); cpu_nn_run checked */
    case LT_OP_LAYER_NORM: return layer_norm(y, x, ln_io(g, y, casts), in, sc[0], out);
    case LT_OP_LN_BWD_INPUT: return ln_bwd_input(y, x, ln_io(g, y, casts), in, sc[0], out);
    case LT_OP_LN_BWD_PARAMS: return ln_bwd_params(y, x, ln_io(g, y, casts), in, sc[0], out, NULL, NULL);
    case LT_OP_GRAD_NORM: grad_norm(g, y, in, out); return 0;
    default: return -1;
    }
}

int cpu_ln_bwd_pair(const exec_graph *g, const gnode *y, void *const *in, double eps, void *dx, float *dwb,
                    uint8_t casts) {
    return ln_bwd_params(y, &g->nodes[y->in[1]], ln_io(g, y, casts), in, eps, dwb, dx, y->ia[1] ? in[2] : NULL);
}

int cpu_ln_ok(const exec_graph *g, const gnode *y) {
    int nact = y->op == LT_OP_LAYER_NORM ? 1 : y->op == LT_OP_LN_BWD_INPUT || y->op == LT_OP_LN_BWD_PARAMS ? 2 : 0;
    if (!nact) return 0;
    int act = g->nodes[y->in[0]].dtype;
    if (act != LT_F32 && act != LT_BF16) return 0;
    for (int i = 0; i < y->nin; i++)
        if (g->nodes[y->in[i]].dtype != (i < nact ? act : LT_F32)) return 0;
    return y->dtype == (y->op == LT_OP_LN_BWD_PARAMS ? LT_F32 : act);
}
