/* Fast float32 kernels of the transformer ops (issue 16): layer norm and
 * its backward ops, the total norm (attention: attention.c). Same
 * semantics as src/backend/ref/ref_nn_transformer.c. */
#include "cpu.h"

#include "../ref/ref_nn.h"

#include <math.h>

/* ---- layer norm: rows of `inner` contiguous floats ---- */

static int64_t ln_inner(const gnode *x, int64_t nnorm) {
    int64_t inner = 1;
    for (int d = x->ndim - (int)nnorm; d < x->ndim; d++) inner *= x->shape[d];
    return inner;
}

/* Mean and rstd of rows [r0, r0 + nr), nr <= CPU_LN_ROWS, as PyTorch
 * computes them, in float (ln_moments.c: a row holding 1e30 is NaN there). */
static int ln_stats(const float *x, int64_t r0, int64_t rows, int64_t n, double eps, float *m, float *rstd) {
    int nr = rows - r0 < CPU_LN_ROWS ? (int)(rows - r0) : CPU_LN_ROWS;
    float var[CPU_LN_ROWS];
    cpu_ln_moments(x + r0 * n, nr, n, m, var);
    for (int q = 0; q < nr; q++) rstd[q] = 1.0f / sqrtf(var[q] + (float)eps);
    return nr;
}

/* LAYER_NORM (x[, w][, b]) ia [nnorm, has_w, has_b] */
static void layer_norm(const gnode *y, const gnode *xn, void *const *in, double eps, float *out) {
    const float *x = in[0], *w = y->ia[1] ? in[1] : NULL, *b = y->ia[2] ? in[1 + (y->ia[1] != 0)] : NULL;
    int64_t n = ln_inner(xn, y->ia[0]), rows = xn->numel / n;
#pragma omp parallel for schedule(static)
    for (int64_t r0 = 0; r0 < rows; r0 += CPU_LN_ROWS) {
        float m[CPU_LN_ROWS], rs[CPU_LN_ROWS];
        int nr = ln_stats(x, r0, rows, n, eps, m, rs);
        for (int q = 0; q < nr; q++) {
            const float *xr = x + (r0 + q) * n;
            float *o = out + (r0 + q) * n, a = rs[q], bias = -a * m[q]; /* PyTorch's form: x rstd + (-rstd mean) */
            if (w && b) { /* the common case, a loop without branches */
#pragma omp simd
                for (int64_t k = 0; k < n; k++) o[k] = (xr[k] * a + bias) * w[k] + b[k];
            } else {
                for (int64_t k = 0; k < n; k++) o[k] = (xr[k] * a + bias) * (w ? w[k] : 1.0f) + (b ? b[k] : 0.0f);
            }
        }
    }
}

/* LN_BWD_INPUT (g, x[, w]) ia [nnorm, has_w]: the reference's centred form
 * (ref_ln_bwd_input says why), its sums and the centring in double. */
static void ln_bwd_input(const gnode *y, const gnode *xn, void *const *in, double eps, float *out) {
    const float *g = in[0], *x = in[1], *w = y->ia[1] ? in[2] : NULL;
    int64_t n = ln_inner(xn, y->ia[0]), rows = xn->numel / n;
#pragma omp parallel for schedule(static)
    for (int64_t r0 = 0; r0 < rows; r0 += CPU_LN_ROWS) {
        float ms[CPU_LN_ROWS], as[CPU_LN_ROWS];
        int nr = ln_stats(x, r0, rows, n, eps, ms, as);
        for (int q = 0; q < nr; q++) {
            const float *xr = x + (r0 + q) * n, *gr = g + (r0 + q) * n;
            float *o = out + (r0 + q) * n;
            double a = as[q], mu = 0, db = 0, ds = 0;
            if (w) { /* o holds w * g first: the loops stay free of branches */
#pragma omp simd
                for (int64_t k = 0; k < n; k++) o[k] = gr[k] * w[k];
            } else {
                memcpy(o, gr, (size_t)n * sizeof *o);
            }
#pragma omp simd reduction(+ : mu, db)
            for (int64_t k = 0; k < n; k++) {
                mu += xr[k];
                db += o[k];
            }
            mu /= (double)n;
#pragma omp simd reduction(+ : ds)
            for (int64_t k = 0; k < n; k++) ds += o[k] * (xr[k] - mu);
            double b = -ds * a * a * a / (double)n, c = -db * a / (double)n;
            if (!isfinite(ds) || !isfinite(db)) b = c = NAN; /* an inf g makes its row NaN, as in PyTorch */
#pragma omp simd
            for (int64_t k = 0; k < n; k++) o[k] = (float)(a * o[k] + b * (xr[k] - mu) + c);
        }
    }
}

/* LN_BWD_PARAMS (g, x) ia [nnorm] -> (2, inner): per-chunk partial sums in
 * double, added in chunk order (the same result for any thread count).
 * -1 without memory for them (nothing written: the reference runs). */
#define LN_CHUNKS 32
static int ln_bwd_params(const gnode *y, const gnode *xn, void *const *in, double eps, float *out) {
    const float *g = in[0], *x = in[1];
    int64_t n = ln_inner(xn, y->ia[0]), rows = n ? xn->numel / n : 0;
    double *part = core_calloc((size_t)(LN_CHUNKS * 2 * n), sizeof *part);
    if (!part) return -1;
    int64_t per = (rows + LN_CHUNKS - 1) / LN_CHUNKS;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < LN_CHUNKS; c++) {
        double *pw = part + (size_t)c * 2 * (size_t)n, *pb = pw + n;
        int64_t r1 = (c + 1) * per < rows ? (c + 1) * per : rows;
        for (int64_t r0 = c * per; r0 < r1; r0 += CPU_LN_ROWS) {
            float m[CPU_LN_ROWS], rs[CPU_LN_ROWS];
            int nr = ln_stats(x, r0, r1, n, eps, m, rs);
            for (int q = 0; q < nr; q++) {
                const float *xr = x + (r0 + q) * n, *gr = g + (r0 + q) * n;
                float a = rs[q], bias = -a * m[q];
                for (int64_t k = 0; k < n; k++) { /* x a + bias with one rounding (fmaf), as the reference's ln_xhat */
                    float xh = (float)((double)xr[k] * a + bias);
                    pw[k] += (double)(gr[k] * xh);
                    pb[k] += gr[k];
                }
            }
        }
    }
    for (int64_t k = 0; k < 2 * n; k++) {
        double s = 0;
        for (int c = 0; c < LN_CHUNKS; c++) s += part[(size_t)c * 2 * (size_t)n + (size_t)k];
        out[k] = (float)s;
    }
    core_free(part);
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

int cpu_transformer_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out) {
    const gnode *x = &g->nodes[y->in[0]];
    switch (y->op) { /* float32 operands (cpu_nn_run checked) */
    case LT_OP_LAYER_NORM: layer_norm(y, x, in, sc[0], out); return 0;
    case LT_OP_LN_BWD_INPUT: ln_bwd_input(y, &g->nodes[y->in[1]], in, sc[0], out); return 0;
    case LT_OP_LN_BWD_PARAMS: return ln_bwd_params(y, &g->nodes[y->in[1]], in, sc[0], out);
    case LT_OP_GRAD_NORM: grad_norm(g, y, in, out); return 0;
    default: return -1;
    }
}
