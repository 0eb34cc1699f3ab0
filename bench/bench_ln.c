/* Layer norm's row statistics on the cpu backend (issue 17): the forward
 * kernel's work per row (moments, then x rstd + bias scaled and shifted)
 * with PyTorch 1.13's moments (cpu_ln_moments: Welford per lane, chunks,
 * a cascade, as PyTorch computes them, so float32 overflow matches) against
 * the plain two-pass float mean and variance the kernel used before, in one
 * run: the two alternate, medians of 101 runs each, one thread, rows in
 * cache (128K floats in all). Then the three layer norm ops through the cpu
 * backend at a GPT's shape, (4096, 384), float32 and bfloat16 activations
 * (float32 parameters): one op per mark_step, the best of 20 (wall and
 * process CPU time: on a shared machine the CPU time moves less; run with
 * OMP_WAIT_POLICY=passive so that waiting threads do not spin), and the
 * bytes read and written once per wall second.
 * Usage: bench_ln [n ...]  (row lengths; default 64 100 384 768 1024 4096) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/nn.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/simd.h"
#include "bench_time.h"

#define REPS 101

/* The kernel's old statistics (vectorized sums, in float). */
static void two_pass(const float *x, int64_t n, float *m, float *rstd) {
    float s = 0, q = 0;
    OMP_SIMD_SUM(s)
    for (int64_t k = 0; k < n; k++) s += x[k];
    float mu = s / (float)n;
    OMP_SIMD_SUM(q)
    for (int64_t k = 0; k < n; k++) q += (x[k] - mu) * (x[k] - mu);
    *m = mu;
    *rstd = 1.0f / sqrtf(q / (float)n + 1e-5f);
}

static void forward(int pytorch, const float *x, const float *w, const float *b, float *out, int64_t rows, int64_t n) {
    for (int64_t r0 = 0; r0 < rows; r0 += CPU_LN_ROWS) {
        float m[CPU_LN_ROWS], v[CPU_LN_ROWS];
        int nr = rows - r0 < CPU_LN_ROWS ? (int)(rows - r0) : CPU_LN_ROWS;
        if (pytorch) {
            cpu_ln_moments(x + r0 * n, nr, n, m, v);
            for (int q = 0; q < nr; q++) v[q] = 1.0f / sqrtf(v[q] + 1e-5f);
        } else {
            for (int q = 0; q < nr; q++) two_pass(x + (r0 + q) * n, n, &m[q], &v[q]);
        }
        for (int q = 0; q < nr; q++) {
            const float *xr = x + (r0 + q) * n;
            float *o = out + (r0 + q) * n, bias = -v[q] * m[q];
            for (int64_t k = 0; k < n; k++) o[k] = (xr[k] * v[q] + bias) * w[k] + b[k];
        }
    }
}

/* LAYER_NORM, LN_BWD_INPUT and LN_BWD_PARAMS at (4096, 384). */
static void ops(void) {
    static const char *names[3] = {"LAYER_NORM", "LN_BWD_INPUT", "LN_BWD_PARAMS"};
    int64_t s[2] = {4096, 384};
    printf("\n%-14s %6s %10s %10s %8s\n", "op (4096,384)", "dtype", "wall ms", "cpu ms", "GB/s");
    lt_manual_seed(1);
    for (int bf = 0; bf < 2; bf++) {
        lt_dtype dt = bf ? LT_BF16 : LT_F32;
        lt_tensor *x0 = lt_randn(LT_F32, 2, s), *g0 = lt_randn(LT_F32, 2, s);
        lt_tensor *x = lt_to_dtype(x0, dt), *g = lt_to_dtype(g0, dt);
        lt_tensor *w = lt_randn(LT_F32, 1, s + 1), *b = lt_randn(LT_F32, 1, s + 1);
        lt_mark_step();
        for (int op = 0; op < 3; op++) {
            double best = 1e9, cbest = 1e9;
            for (int it = 0; it < 21; it++) {
                double t0 = bench_now_s(), c0 = bench_cpu_s();
                lt_tensor *y = op == 0 ? lt_layer_norm(x, 1, w, b, 1e-5)
                               : op == 1 ? nn_layer_norm_backward_input(g, x, w, 1, 1e-5)
                                         : nn_layer_norm_backward_params(g, x, 1, 1e-5);
                lt_mark_step();
                double t = bench_now_s() - t0, ct = bench_cpu_s() - c0;
                if (it > 0 && t < best) best = t; /* the first compiles */
                if (it > 0 && ct < cbest) cbest = ct;
                lt_free(y);
            }
            double act = (double)(s[0] * s[1]) * (bf ? 2 : 4), bytes = act * (op == 1 ? 3 : 2);
            printf("%-14s %6s %10.3f %10.3f %8.2f\n", names[op], bf ? "bf16" : "fp32", best * 1e3, cbest * 1e3,
                   bytes / best / 1e9);
        }
        lt_free(x0), lt_free(g0), lt_free(x), lt_free(g), lt_free(w), lt_free(b);
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    static const int64_t dflt[] = {64, 100, 384, 768, 1024, 4096};
    int nn = argc > 1 ? argc - 1 : (int)(sizeof dflt / sizeof *dflt);
    printf("%8s %6s %12s %12s %8s\n", "n", "rows", "two-pass us", "pytorch us", "ratio");
    for (int i = 0; i < nn; i++) {
        int64_t n = argc > 1 ? atoll(argv[i + 1]) : dflt[i], rows = n > 0 && n < 131072 ? 131072 / n : 1;
        float *x = malloc(sizeof *x * (size_t)(rows * n)), *o = malloc(sizeof *o * (size_t)(rows * n));
        float *w = malloc(sizeof *w * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
        if (!x || !o || !w || !b || n < 1) return 1;
        for (int64_t k = 0; k < rows * n; k++) x[k] = (float)((k * 2654435761u) % 1000) / 100.0f - 5;
        for (int64_t k = 0; k < n; k++) w[k] = 1, b[k] = 0;
        double t[2][REPS];
        for (int it = 0; it < REPS; it++)
            for (int p = 0; p < 2; p++) {
                double t0 = bench_now_s();
                forward(p, x, w, b, o, rows, n);
                t[p][it] = bench_now_s() - t0;
            }
        qsort(t[0], REPS, sizeof t[0][0], cmp);
        qsort(t[1], REPS, sizeof t[1][0], cmp);
        printf("%8lld %6lld %12.1f %12.1f %8.2f\n", (long long)n, (long long)rows, t[0][REPS / 2] * 1e6,
               t[1][REPS / 2] * 1e6, t[1][REPS / 2] / t[0][REPS / 2]);
        free(x), free(o), free(w), free(b);
    }
    ops();
    return 0;
}
