/* What every benchmark times with: a monotonic clock and the median of a
 * sample (sorted in place). Header-only: the CLI compiles trace_loops.h,
 * which uses it, without linking the benchmarks. */
#ifndef LT_BENCH_TIME_H
#define LT_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline double bench_now_s(void) { return bench_now_ns() * 1e-9; }

/* CPU seconds of the whole process (every thread): on a shared machine a
 * kernel's CPU time moves much less than its wall time, which waits for
 * the scheduler. (Run with OMP_WAIT_POLICY=passive so that threads waiting
 * at a barrier sleep instead of spinning, or the spin counts too.) */
static inline double bench_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts t[0..n) and returns its median (t[0] is then the minimum). */
static inline double bench_median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, bench_cmp);
    return t[n / 2];
}

#endif
