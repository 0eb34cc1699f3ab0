/* The cpu backend against the memory-bandwidth floor: a fused elementwise
 * group, and an AdamW-like update over 11M float32 parameters written with
 * the public in-place ops (one mark_step per step, runtime scalars).
 * Usage: bench_cpu [iters]  (LT_NUM_THREADS sets the threads) */
#define _POSIX_C_SOURCE 200809L
#include "lazytensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/omp_policy.h"
#include "bench_time.h"


#define N 11000000

int main(int argc, char **argv) {
    lt_omp_policy(argv); /* the CLI's thread policy (core/omp_policy.h) */
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    size_t bytes = (size_t)N * 4;
    /* Copy bandwidth: memcpy of one 44 MB array into another (read + write). */
    char *src = malloc(bytes), *dst = malloc(bytes);
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    double best = 1e9;
    for (int i = 0; i < iters; i++) {
        double t0 = bench_now_s();
        memcpy(dst, src, bytes);
        double t = bench_now_s() - t0;
        if (t < best) best = t;
    }
    double copy_bw = 2.0 * (double)bytes / best / 1e9;
    printf("memcpy bandwidth (read+write)        %8.2f GB/s\n", copy_bw);
    free(src);
    free(dst);

    int64_t shape[1] = {N};
    lt_manual_seed(1);
    lt_tensor *a = lt_randn(LT_F32, 1, shape), *b = lt_randn(LT_F32, 1, shape), *c = lt_randn(LT_F32, 1, shape);
    lt_mark_step();
    /* Fused groups, 3 reads and 1 write: out = relu(a * b + c) * 0.5 + c
     * (float math), then with sigmoid(c) for the last term (double math). */
    for (int sig = 0; sig < 2; sig++) {
        best = 1e9;
        for (int i = 0; i < iters + 1; i++) {
            double t0 = bench_now_s();
            lt_tensor *ab = lt_mul(a, b), *s = lt_add(ab, c), *r = lt_relu(s), *h = lt_mul_scalar(r, 0.5);
            lt_tensor *sg = sig ? lt_sigmoid(c) : NULL, *out = lt_add(h, sig ? sg : c);
            lt_free(ab), lt_free(s), lt_free(r), lt_free(h), lt_free(sg);
            lt_mark_step();
            double t = bench_now_s() - t0;
            if (i > 0 && t < best) best = t; /* the first compiles */
            lt_free(out);
        }
        double fused_bw = 4.0 * (double)bytes / best / 1e9;
        printf("fused elementwise (3 in, 1 out)%s %8.2f GB/s  %6.2f ms  (%.2fx the floor)\n",
               sig ? ", sigmoid" : "         ", fused_bw, best * 1e3, copy_bw / fused_bw);
    }

    /* AdamW as torch.optim.AdamW (foreach=False) with the public in-place ops. */
    lt_tensor *p = a, *g = b, *m = lt_zeros(LT_F32, 1, shape), *v = lt_zeros(LT_F32, 1, shape);
    lt_mark_step();
    double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
    best = 1e9;
    double a0 = lt_metric("InputOutputAliasCount");
    for (int step = 1; step <= iters + 1; step++) {
        double t0 = bench_now_s();
        double bc1 = 1 - pow(b1, step), bc2 = 1 - pow(b2, step), step_size = lr / bc1;
        lt_mul_scalar_(p, 1 - lr * wd);
        lt_lerp_(m, g, 1 - b1);
        lt_mul_scalar_(v, b2);
        lt_addcmul_(v, g, g, 1 - b2);
        lt_tensor *sq = lt_sqrt(v), *den0 = lt_mul_scalar(sq, 1 / sqrt(bc2)), *den = lt_add_scalar(den0, eps);
        lt_addcdiv_(p, m, den, -step_size);
        lt_free(sq), lt_free(den0), lt_free(den);
        lt_mark_step();
        double t = bench_now_s() - t0;
        if (step > 1 && t < best) best = t;
    }
    double moved = 7.0 * (double)bytes; /* read p, g, m, v; write p, m, v */
    double floor_s = moved / (copy_bw * 1e9);
    printf("AdamW step, 11M params               %8.2f ms  floor %.2f ms  (%.2fx the floor, %.2f GB/s)\n",
           best * 1e3, floor_s * 1e3, best / floor_s, moved / best / 1e9);
    printf("  FusedKernels %.0f, InputOutputAliasCount +%.0f, FallbackOps %.0f, PeakBytes %.0f MB\n",
           lt_metric("FusedKernels"), lt_metric("InputOutputAliasCount") - a0, lt_metric("FallbackOps"),
           lt_metric("PeakBytes") / 1e6);
    if (lt_error()) printf("error: %s\n", lt_error_message());
    lt_free(a), lt_free(b), lt_free(c), lt_free(m), lt_free(v);
    return 0;
}
