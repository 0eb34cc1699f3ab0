/* Fast float32 kernels of the transformer ops (issue 16): layer norm and
 * its backward ops, attention and its backward, the total norm. Same
 * semantics as src/backend/ref/ref_nn_transformer.c.
 *
 * Attention is tiled in the manner of FlashAttention: a tile of BQ query
 * rows meets the keys BK at a time, with an online softmax (running max
 * and sum, the accumulator rescaled when the max grows), so no (T, T)
 * matrix exists, only a BQ x BK tile on the stack. The backward recomputes
 * the tiles: a first sweep gives each row's log-sum-exp, a second forms the
 * probabilities and accumulates dq (per tile) and dk, dv (per problem). */
#include "cpu.h"

#include "../ref/ref_nn.h"

#include <math.h>

#define BQ 32
#define BK 64
#define DMAX 256 /* head dims above this run the reference kernel */

/* ---- layer norm: rows of `inner` contiguous floats ---- */

static int64_t ln_inner(const gnode *x, int64_t nnorm) {
    int64_t inner = 1;
    for (int d = x->ndim - (int)nnorm; d < x->ndim; d++) inner *= x->shape[d];
    return inner;
}

static void ln_stats(const float *x, int64_t n, double eps, float *m, float *rstd) {
    float s = 0, q = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t k = 0; k < n; k++) s += x[k];
    float mu = s / (float)n;
#pragma omp simd reduction(+ : q)
    for (int64_t k = 0; k < n; k++) q += (x[k] - mu) * (x[k] - mu);
    *m = mu;
    *rstd = (float)(1.0 / sqrt((double)(q / (float)n) + eps));
}

/* LAYER_NORM (x[, w][, b]) ia [nnorm, has_w, has_b] */
static void layer_norm(const gnode *y, const gnode *xn, void *const *in, double eps, float *out) {
    const float *x = in[0], *w = y->ia[1] ? in[1] : NULL, *b = y->ia[2] ? in[1 + (y->ia[1] != 0)] : NULL;
    int64_t n = ln_inner(xn, y->ia[0]), rows = xn->numel / n;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *o = out + r * n, m, rs;
        ln_stats(xr, n, eps, &m, &rs);
#pragma omp simd
        for (int64_t k = 0; k < n; k++) o[k] = (xr[k] - m) * rs * (w ? w[k] : 1.0f) + (b ? b[k] : 0.0f);
    }
}

/* LN_BWD_INPUT (g, x[, w]) ia [nnorm, has_w] */
static void ln_bwd_input(const gnode *y, const gnode *xn, void *const *in, double eps, float *out) {
    const float *g = in[0], *x = in[1], *w = y->ia[1] ? in[2] : NULL;
    int64_t n = ln_inner(xn, y->ia[0]), rows = xn->numel / n;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *gr = g + r * n;
        float *o = out + r * n, m, rs, sg = 0, sgx = 0;
        ln_stats(xr, n, eps, &m, &rs);
#pragma omp simd reduction(+ : sg, sgx)
        for (int64_t k = 0; k < n; k++) {
            float wg = gr[k] * (w ? w[k] : 1.0f);
            sg += wg;
            sgx += wg * (xr[k] - m) * rs;
        }
        float mg = sg / (float)n, mgx = sgx / (float)n;
#pragma omp simd
        for (int64_t k = 0; k < n; k++) o[k] = rs * (gr[k] * (w ? w[k] : 1.0f) - mg - (xr[k] - m) * rs * mgx);
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
        for (int64_t r = c * per; r < r1; r++) {
            const float *xr = x + r * n, *gr = g + r * n;
            float m, rs;
            ln_stats(xr, n, eps, &m, &rs);
            for (int64_t k = 0; k < n; k++) {
                pw[k] += (double)(gr[k] * (xr[k] - m) * rs);
                pb[k] += gr[k];
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

/* ---- attention ---- */

typedef struct att {
    nn_att g;
    float scale;
} att;

static float att_drop(const att *a, int64_t bh, int64_t i, int64_t j) { return (float)nn_att_drop(&a->g, bh, i, j); }

/* Scores of query rows [i0, i0 + ni) against keys [j0, j0 + nj) into s
 * (ni x BK); masked entries are -inf. */
static void att_scores(const att *a, const float *q, const float *k, int64_t i0, int64_t ni, int64_t j0, int64_t nj,
                       float *s) {
    int64_t D = a->g.D;
    for (int64_t i = 0; i < ni; i++) {
        const float *qi = q + (i0 + i) * D;
        for (int64_t j = 0; j < nj; j++) {
            if (a->g.causal && j0 + j > i0 + i) {
                s[i * BK + j] = -INFINITY;
                continue;
            }
            const float *kj = k + (j0 + j) * D;
            float d = 0;
#pragma omp simd reduction(+ : d)
            for (int64_t c = 0; c < D; c++) d += qi[c] * kj[c];
            s[i * BK + j] = d * a->scale;
        }
    }
}

/* The keys a query tile sees: all, or up to its last row (causal). */
static int64_t att_kend(const att *a, int64_t i0, int64_t ni) { return a->g.causal ? i0 + ni : a->g.T; }

/* One query tile of problem bh: o rows, and, if lse is given, each row's
 * log-sum-exp (the backward's first sweep; then v is not read). */
static void att_tile_fwd(const att *a, int64_t bh, const float *q, const float *k, const float *v, int64_t i0,
                         int64_t ni, float *o, float *lse) {
    int64_t D = a->g.D, kend = att_kend(a, i0, ni);
    float s[BQ * BK], m[BQ], l[BQ], acc[BQ * DMAX];
    for (int64_t i = 0; i < ni; i++) m[i] = -INFINITY, l[i] = 0;
    if (!lse) memset(acc, 0, (size_t)(ni * D) * sizeof *acc);
    for (int64_t j0 = 0; j0 < kend; j0 += BK) {
        int64_t nj = kend - j0 < BK ? kend - j0 : BK;
        att_scores(a, q, k, i0, ni, j0, nj, s);
        for (int64_t i = 0; i < ni; i++) {
            float *si = s + i * BK, mx = m[i];
            for (int64_t j = 0; j < nj; j++) mx = si[j] > mx ? si[j] : mx;
            if (mx == -INFINITY) continue; /* every key of this tile is masked */
            float corr = expf(m[i] - mx), sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j < nj; j++) sum += (si[j] = expf(si[j] - mx));
            l[i] = l[i] * corr + sum;
            m[i] = mx;
            if (lse) continue;
            float *ai = acc + i * D;
#pragma omp simd
            for (int64_t c = 0; c < D; c++) ai[c] *= corr;
            for (int64_t j = 0; j < nj; j++) {
                float w = si[j] * att_drop(a, bh, i0 + i, j0 + j);
                if (w == 0) continue;
                const float *vj = v + (j0 + j) * D;
#pragma omp simd
                for (int64_t c = 0; c < D; c++) ai[c] += w * vj[c];
            }
        }
    }
    for (int64_t i = 0; i < ni; i++) {
        if (lse) {
            lse[i] = m[i] + logf(l[i]);
            continue;
        }
        float inv = 1.0f / l[i];
        for (int64_t c = 0; c < D; c++) o[(i0 + i) * D + c] = acc[i * D + c] * inv;
    }
}

static void attention(const att *a, void *const *in, float *out) {
    int64_t nt = (a->g.T + BQ - 1) / BQ, TD = a->g.T * a->g.D;
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < a->g.BH * nt; t++) {
        int64_t bh = t / nt, i0 = t % nt * BQ, ni = a->g.T - i0 < BQ ? a->g.T - i0 : BQ;
        const float *q = (const float *)in[0] + bh * TD, *k = (const float *)in[1] + bh * TD;
        att_tile_fwd(a, bh, q, k, (const float *)in[2] + bh * TD, i0, ni, out + bh * TD, NULL);
    }
}

/* ATTENTION_BWD (g, q, k, v, out) -> [dq; dk; dv]. Problems in parallel; the
 * query tiles of one problem in order, since they all add into its dk, dv. */
static void attention_bwd(const att *a, void *const *in, float *out) {
    int64_t TD = a->g.T * a->g.D, D = a->g.D, total = a->g.BH * TD;
#pragma omp parallel for schedule(dynamic)
    for (int64_t bh = 0; bh < a->g.BH; bh++) {
        const float *g = (const float *)in[0] + bh * TD, *q = (const float *)in[1] + bh * TD;
        const float *k = (const float *)in[2] + bh * TD, *v = (const float *)in[3] + bh * TD;
        const float *o = (const float *)in[4] + bh * TD;
        float *dq = out + bh * TD, *dk = out + total + bh * TD, *dv = out + 2 * total + bh * TD;
        memset(dk, 0, (size_t)TD * sizeof *dk);
        memset(dv, 0, (size_t)TD * sizeof *dv);
        float s[BQ * BK], lse[BQ], di[BQ], dqa[BQ * DMAX];
        for (int64_t i0 = 0; i0 < a->g.T; i0 += BQ) {
            int64_t ni = a->g.T - i0 < BQ ? a->g.T - i0 : BQ, kend = att_kend(a, i0, ni);
            att_tile_fwd(a, bh, q, k, NULL, i0, ni, NULL, lse);
            for (int64_t i = 0; i < ni; i++) {
                float d = 0;
                const float *gi = g + (i0 + i) * D, *oi = o + (i0 + i) * D;
#pragma omp simd reduction(+ : d)
                for (int64_t c = 0; c < D; c++) d += gi[c] * oi[c];
                di[i] = d;
            }
            memset(dqa, 0, (size_t)(ni * D) * sizeof *dqa);
            for (int64_t j0 = 0; j0 < kend; j0 += BK) {
                int64_t nj = kend - j0 < BK ? kend - j0 : BK;
                att_scores(a, q, k, i0, ni, j0, nj, s);
                for (int64_t i = 0; i < ni; i++) {
                    const float *gi = g + (i0 + i) * D, *qi = q + (i0 + i) * D;
                    float *dqi = dqa + i * D;
                    for (int64_t j = 0; j < nj; j++) {
                        float pij = expf(s[i * BK + j] - lse[i]);
                        if (pij == 0) continue; /* masked (exp(-inf)) or underflow: contributes nothing */
                        float mij = att_drop(a, bh, i0 + i, j0 + j), dpd = 0;
                        const float *vj = v + (j0 + j) * D, *kj = k + (j0 + j) * D;
                        float *dvj = dv + (j0 + j) * D, *dkj = dk + (j0 + j) * D, pm = pij * mij;
#pragma omp simd reduction(+ : dpd)
                        for (int64_t c = 0; c < D; c++) {
                            dpd += gi[c] * vj[c];
                            dvj[c] += pm * gi[c];
                        }
                        float ds = a->scale * pij * (dpd * mij - di[i]);
#pragma omp simd
                        for (int64_t c = 0; c < D; c++) {
                            dqi[c] += ds * kj[c];
                            dkj[c] += ds * qi[c];
                        }
                    }
                }
            }
            memcpy(dq + i0 * D, dqa, (size_t)(ni * D) * sizeof *dqa);
        }
    }
}

/* ---- total norm ---- */

static void grad_norm(const exec_graph *g, const gnode *y, void *const *in, float *out) {
    double s = 0;
    for (int i = 0; i < y->nin; i++) {
        const float *x = in[i];
        int64_t n = g->nodes[y->in[i]].numel;
#pragma omp parallel for reduction(+ : s) schedule(static)
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
    case LT_OP_ATTENTION: case LT_OP_ATTENTION_BWD: {
        const gnode *q = y->op == LT_OP_ATTENTION ? x : &g->nodes[y->in[1]];
        att a = {nn_att_of(y, q->ndim, q->shape, q->numel, sc), 0};
        a.scale = (float)a.g.scale;
        if (a.g.D > DMAX) return -1;
        if (y->op == LT_OP_ATTENTION) attention(&a, in, out);
        else attention_bwd(&a, in, out);
        return 0;
    }
    case LT_OP_GRAD_NORM: grad_norm(g, y, in, out); return 0;
    default: return -1;
    }
}
