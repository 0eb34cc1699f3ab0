/* Max-pool backward on the ResNet stem's geometry (x (N, 64, 112, 112),
 * 3x3, stride 2, pad 1): the plain NCHW kernel (what a plain layout runs,
 * and what every ResNet ran before blocked pooling) against the
 * channel-blocked one (pool_blocked.c), and both against the floor: the
 * bytes the kernel must move (read x and g, write dx) over the memcpy
 * bandwidth measured in the same run. Same for the forward.
 * Each time is the median wall time, then the median CPU time of all
 * threads together (bench_time.h: comparable on a busy machine).
 * bf16: the same on bfloat16 activations (autocast's), bytes counted at 2.
 * Usage: bench_pool [N] [iters] [bf16]  (defaults 32 5; LT_NUM_THREADS threads) */
#define _POSIX_C_SOURCE 200809L
#include "lazytensor.h"

#include "api/nn.h"
#include "backend/cpu/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/omp_policy.h"
#include "bench_time.h"

typedef struct times {
    double wall, cpu; /* medians, seconds */
} times;

/* The medians of `iters` runs of the plain kernel (its operands are the
 * graph's parameters, so they stay plain), or of the blocked one. */
static times run(int blocked, int bwd, lt_tensor *g, lt_tensor *x, const int64_t *k, const int64_t *s,
                 const int64_t *p, int bf16, const void *gb, const void *xb, void *out, int iters) {
    double w[32], c[32];
    const int64_t *xs = lt_shape(x), *os = lt_shape(g), ia[6] = {k[0], k[1], s[0], s[1], p[0], p[1]};
    for (int i = 0; i < iters + 1; i++) {
        double t0 = bench_now_s(), c0 = bench_cpu_s();
        if (blocked && bwd) pool_blk_max_bwd(xs, os, ia, bf16, gb, xb, out);
        else if (blocked) pool_blk_max(xs, os, ia, bf16, xb, out);
        else {
            lt_tensor *r = bwd ? nn_max_pool2d_backward(g, x, k, s, p) : lt_max_pool2d(x, k, s, p);
            lt_mark_step();
            lt_free(r);
        }
        w[i] = bench_now_s() - t0, c[i] = bench_cpu_s() - c0;
    }
    return (times){bench_median(w + 1, iters), bench_median(c + 1, iters)}; /* the first compiles */
}

int main(int argc, char **argv) {
    lt_omp_policy(argv); /* the CLI's thread policy (core/omp_policy.h) */
    int64_t N = argc > 1 ? atoll(argv[1]) : 32;
    int iters = argc > 2 ? atoi(argv[2]) : 5;
    if (iters < 1) iters = 1;
    if (iters > 31) iters = 31;
    int bf16 = argc > 3 && strcmp(argv[3], "bf16") == 0;
    size_t es = bf16 ? 2 : 4;
    int64_t xs[4] = {N, 64, 112, 112}, os[4] = {N, 64, 56, 56}, k[2] = {3, 3}, st[2] = {2, 2}, pd[2] = {1, 1};
    size_t nx = (size_t)(N * 64 * 112 * 112), ny = nx / 4;
    char *xb = malloc(nx * es), *dxb = malloc(nx * es), *gb = malloc(ny * es), *yb = malloc(ny * es);
    if (!xb || !dxb || !gb || !yb) return 1;
    lt_manual_seed(3);
    lt_tensor *x = lt_randn(LT_F32, 4, xs), *g = lt_randn(LT_F32, 4, os);
    if (bf16) {
        lt_tensor *xh = lt_to_dtype(x, LT_BF16), *gh = lt_to_dtype(g, LT_BF16);
        lt_free(x), lt_free(g);
        x = xh, g = gh;
    }
    lt_to_host(x, xb, nx * es); /* the blocked kernel gets the same values (their order does not matter here) */
    lt_to_host(g, gb, ny * es);
    memset(dxb, 0, nx * es), memset(yb, 0, ny * es);
    double best = 1e9;
    for (int i = 0; i < iters; i++) {
        double t0 = bench_now_s();
        memcpy(dxb, xb, nx * es);
        double t = bench_now_s() - t0;
        if (t < best) best = t;
    }
    double bw = 2.0 * (double)(nx * es) / best;
    printf("memcpy bandwidth (read+write) %.2f GB/s; x (%lld, 64, 112, 112) %s, 3x3 s2 p1\n", bw / 1e9, (long long)N,
           bf16 ? "bfloat16" : "float32");
    for (int bwd = 0; bwd < 2; bwd++) {
        times tp = run(0, bwd, g, x, k, st, pd, bf16, gb, xb, NULL, iters);
        times tb = run(1, bwd, g, x, k, st, pd, bf16, gb, xb, bwd ? dxb : yb, iters);
        double moved = (double)((bwd ? 2 * nx + ny : nx + ny) * es);
        printf("max pool %s: plain %.2f ms (cpu %.2f), blocked %.2f ms (cpu %.2f): %.1fx faster (cpu %.1fx), "
               "%.2f GB/s, floor %.2f ms\n",
               bwd ? "backward" : "forward ", tp.wall * 1e3, tp.cpu * 1e3, tb.wall * 1e3, tb.cpu * 1e3,
               tp.wall / tb.wall, tp.cpu / tb.cpu, moved / tb.wall / 1e9, moved / bw * 1e3);
    }
    lt_free(x), lt_free(g);
    free(xb), free(dxb), free(gb), free(yb);
    return 0;
}
