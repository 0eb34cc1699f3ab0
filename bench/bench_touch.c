/* What a first touch of memory costs on this machine, the cost behind a
 * first training step (its activations are new memory): a fresh block
 * written once (first touch) and again (warm), and the first touch done by
 * a side thread while two threads do arithmetic (does it overlap?). Wall seconds; new blocks each time.
 * Usage: bench_touch [MiB]   (default 512) */
#define _POSIX_C_SOURCE 200809L
#include "core/core.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"

static size_t n;
static double side_s;

static void *touch(void *arg) {
    (void)arg;
    double t0 = bench_now_s();
    char *p = core_huge_alloc(n);
    if (p) memset(p, 1, n); /* kept: the block must stay fresh for nobody else */
    side_s = bench_now_s() - t0;
    return p;
}

static double arithmetic(void) {
    double t0 = bench_now_s(), s = 0;
#pragma omp parallel for reduction(+ : s) num_threads(2)
    for (long i = 0; i < 200000000L; i++) s += 1.0 / (double)(i + 1);
    if (s < 0) printf("?");
    return bench_now_s() - t0;
}

int main(int argc, char **argv) {
    n = (size_t)(argc > 1 ? atol(argv[1]) : 512) << 20;
    char *p = core_huge_alloc(n);
    if (!p) return 1;
    double t0 = bench_now_s();
    memset(p, 1, n);
    double t1 = bench_now_s();
    memset(p, 2, n);
    double t2 = bench_now_s();
    printf("%zu MiB: first touch %.3f s, warm %.3f s\n", n >> 20, t1 - t0, t2 - t1);
    double alone = arithmetic();
    pthread_t th;
    if (pthread_create(&th, NULL, touch, NULL)) return 1;
    double beside = arithmetic();
    void *r;
    pthread_join(th, &r);
    printf("two threads of arithmetic %.3f s alone, %.3f s beside a first touch on a side thread (which took %.3f s)\n",
           alone, beside, side_s);
    core_free(r);
    core_free(p);
    return 0;
}
