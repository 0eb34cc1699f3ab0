/* Reductions and softmax on the cpu backend: the NCHW cases of a ResNet
 * step and the big flat ones, each timed alone (one mark_step per run, the
 * input materialized), reported as input bandwidth.
 * Usage: bench_reduce [iters]  (LT_NUM_THREADS sets the threads, LT_BACKEND=ref compares)
 * On a loaded machine the wall time includes waits for a core; the process
 * CPU time (meaningful with LT_NUM_THREADS=1) does not. */
#define _POSIX_C_SOURCE 200809L
#include "lazytensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clk(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { SUM, MEAN, MAX, ARGMAX, SOFTMAX, LOG_SOFTMAX };

typedef struct bcase {
    const char *name;
    int bf16; /* the input in bfloat16 (autocast's bias gradients) */
    int op, nd;
    int64_t shape[4];
    int naxes, axes[4];
} bcase;

static lt_tensor *run(const bcase *c, lt_tensor *x) {
    switch (c->op) {
    case SUM: return lt_sum(x, c->naxes, c->axes, false);
    case MEAN: return lt_mean(x, c->naxes, c->axes, false);
    case MAX: return lt_max(x, c->naxes, c->axes, false);
    case ARGMAX: return lt_argmax(x, c->axes[0], false);
    case SOFTMAX: return lt_softmax(x, c->axes[0]);
    default: return lt_log_softmax(x, c->axes[0]);
    }
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    static const bcase C[] = {
        {"sum (N,H,W) of (32,64,56,56): BN/bias grad", 0, SUM, 4, {32, 64, 56, 56}, 3, {0, 2, 3}},
        {"mean (H,W) of (32,2048,7,7): global pool", 0, MEAN, 4, {32, 2048, 7, 7}, 2, {2, 3}},
        {"sum all of (11M)", 0, SUM, 1, {11000000}, 0, {0}},
        {"sum dim 0 of (4096,1000): linear bias grad", 0, SUM, 2, {4096, 1000}, 1, {0}},
        {"sum dim 0 of (4096,1536): GPT MLP bias grad", 0, SUM, 2, {4096, 1536}, 1, {0}},
        {"sum dim 0 of (4096,384): GPT bias grad", 0, SUM, 2, {4096, 384}, 1, {0}},
        {"  the same (4096,1536) in bfloat16", 1, SUM, 2, {4096, 1536}, 1, {0}},
        {"  the same (4096,384) in bfloat16", 1, SUM, 2, {4096, 384}, 1, {0}},
        {"max dim 1 of (4096,1000)", 0, MAX, 2, {4096, 1000}, 1, {1}},
        {"argmax dim 1 of (4096,1000)", 0, ARGMAX, 2, {4096, 1000}, 1, {1}},
        {"softmax dim 1 of (4096,1000)", 0, SOFTMAX, 2, {4096, 1000}, 1, {1}},
        {"log_softmax dim 1 of (4096,1000)", 0, LOG_SOFTMAX, 2, {4096, 1000}, 1, {1}},
    };
    lt_manual_seed(1);
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        const bcase *c = &C[i];
        lt_tensor *x = lt_randn(LT_F32, c->nd, c->shape);
        if (c->bf16) {
            lt_tensor *h = lt_to_dtype(x, LT_BF16);
            lt_free(x);
            x = h;
        }
        lt_mark_step();
        double best = 1e9, cbest = 1e9;
        for (int it = 0; it < iters + 1; it++) {
            double t0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
            lt_tensor *y = run(c, x);
            lt_mark_step();
            double t = clk(CLOCK_MONOTONIC) - t0, ct = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
            if (it > 0 && t < best) best = t; /* the first compiles */
            if (it > 0 && ct < cbest) cbest = ct;
            lt_free(y);
        }
        double bytes = (double)lt_numel(x) * (c->bf16 ? 2 : 4);
        printf("%-46s %8.3f ms  %7.2f GB/s   cpu %8.3f ms\n", c->name, best * 1e3, bytes / best / 1e9, cbest * 1e3);
        lt_free(x);
    }
    printf("  FallbackOps %.0f\n", lt_metric("FallbackOps"));
    if (lt_error()) printf("error: %s\n", lt_error_message());
    return 0;
}
