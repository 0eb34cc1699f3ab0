/* Fast float32 kernels of CROSS_ENTROPY and CROSS_ENTROPY_BWD: logits
 * (N, C) float32, targets (N) int64. PyTorch's formulas, as the reference
 * (src/backend/ref/ref_nn_loss.c) computes them per element in double:
 * here a row's max, exponentials and sums are vector loops in float (the
 * sums over rows in double), rows in parallel. Targets are checked in one
 * serial pass first (ignore_index -100 skips a row; any other value
 * outside [0, C) is reported, as the reference does). */
#include "cpu.h"

#include "../../exec/exec.h"
#include "simd.h"

#include <math.h>

/* Whether a row's target counts (ignore_index or an invalid one: no). */
static int valid(int op, int64_t cls, int64_t C) {
    if (LT_LIKELY(cls >= 0 && cls < C)) return 1;
    if (!exec_index_ok(cls, C, 1)) exec_index_error(op, cls, C);
    return 0;
}

static int64_t count_valid(int op, const int64_t *t, int64_t N, int64_t C) {
    int64_t cnt = 0;
    for (int64_t n = 0; n < N; n++) cnt += valid(op, t[n], C);
    return cnt;
}

/* A row's max (0 when every logit is -inf, as the reference) and the log
 * of its sum of exp(x - max). */
static void row_lse(const float *x, int64_t C, float *mx, float *logs) {
    float m = -INFINITY, s = 0;
    int nan = 0;
    OMP_SIMD_MAX(m, nan) for (int64_t c = 0; c < C; c++) {
        m = x[c] > m ? x[c] : m;
        nan |= x[c] != x[c];
    }
    if (nan) m = NAN; /* as the reference's max: a NaN logit makes the row NaN */
    if (m == -INFINITY) m = 0;
    OMP_SIMD_SUM(s) for (int64_t c = 0; c < C; c++) s += expf(x[c] - m);
    *mx = m, *logs = logf(s);
}

/* CROSS_ENTROPY (logits, target) -> () mean over the valid rows; sc [label smoothing]. */
static void cross_entropy(const float *x, const int64_t *t, int64_t N, int64_t C, double ls, float *out) {
    double total = 0;
    int64_t cnt = count_valid(LT_OP_CROSS_ENTROPY, t, N, C);
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int64_t n = 0; n < N; n++) {
        int64_t cls = t[n];
        if (cls < 0 || cls >= C) continue;
        const float *xr = x + n * C;
        float m, logs, sx = 0;
        row_lse(xr, C, &m, &logs);
        double lse = (double)m + logs; /* -logp[c] = lse - x[c] */
        if (ls != 0) {
            OMP_SIMD_SUM(sx) for (int64_t c = 0; c < C; c++) sx += xr[c];
        }
        total += (1 - ls) * (lse - xr[cls]) + (ls != 0 ? ls / (double)C * ((double)C * lse - sx) : 0.0);
    }
    *out = (float)(total / (double)cnt); /* all ignored: 0/0 = NaN, as PyTorch */
}

/* CROSS_ENTROPY_BWD (g, logits, target) -> (N, C): gy - softmax(x) sum(gy),
 * gy = gt at the target plus gs everywhere in a valid row (0 in an ignored
 * one), the reference's order of operations. */
static void cross_entropy_bwd(float g, const float *x, const int64_t *t, int64_t N, int64_t C, double ls,
                              float *out) {
    double cnt = (double)count_valid(LT_OP_CROSS_ENTROPY_BWD, t, N, C);
    float gt = (float)-(g * (1 - ls) / cnt), gs = ls != 0 ? (float)-(g * (ls / (double)C) / cnt) : 0.0f;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const float *xr = x + n * C;
        float *o = out + n * C, m, logs;
        int64_t cls = t[n];
        int ok = cls >= 0 && cls < C;
        float sum = ok ? (float)((double)gt + (double)C * gs) : 0.0f, base = ok ? gs : 0.0f;
        row_lse(xr, C, &m, &logs);
        OMP_SIMD for (int64_t c = 0; c < C; c++) o[c] = base - expf(xr[c] - m - logs) * sum;
        if (ok) o[cls] = gt + gs - expf(xr[cls] - m - logs) * sum;
    }
}

int cpu_cross_entropy_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out) {
    int bwd = y->op == LT_OP_CROSS_ENTROPY_BWD;
    const gnode *x = &g->nodes[y->in[bwd]], *t = &g->nodes[y->in[bwd + 1]];
    if (y->dtype != LT_F32 || x->dtype != LT_F32 || t->dtype != LT_I64 || (bwd && g->nodes[y->in[0]].dtype != LT_F32))
        return -1;
    int64_t N = x->shape[0], C = x->shape[1];
    if (bwd)
        cross_entropy_bwd(*(const float *)in[0], in[1], in[2], N, C, sc[0], out);
    else
        cross_entropy(in[0], in[1], N, C, sc[0], out);
    return 0;
}
