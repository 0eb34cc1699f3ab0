/* The machine's float32 FMA peak: a loop of fused multiply-adds on
 * registers only (12 independent accumulators per thread, enough to cover
 * the FMA latency of two pipes), no memory traffic, on every OpenMP thread
 * at once. The execution table in the README divides each step's FLOPs by
 * its time and by this number.
 * Usage: bench_peak [seconds-per-try]  (LT_NUM_THREADS / OMP_NUM_THREADS set
 * the threads). Prints GFLOP/s per ISA the CPU has, best of 5 tries, per
 * second of wall time and per CPU-second of one thread (on a busy machine
 * the second still says what one core can do). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_time.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define NACC 12 /* accumulators, below */

/* FMAs per call: iters * NACC vectors of 16 (AVX-512) or 8 (AVX2) floats. */
/* Twelve named accumulators (an array stays in memory at -O2: the loop
 * then measures store forwarding, not the FMA pipes). */
#define ACC12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f"))) static float fma512(int64_t iters) {
    __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f), s = _mm512_setzero_ps();
#define DECL(i) __m512 r##i = _mm512_set1_ps((float)i);
#define STEP(i) r##i = _mm512_fmadd_ps(r##i, a, b);
#define SUM(i) s = _mm512_add_ps(s, r##i);
    ACC12(DECL)
    for (int64_t it = 0; it < iters; it++) {
        ACC12(STEP)
    }
    ACC12(SUM)
#undef DECL
#undef STEP
#undef SUM
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma256(int64_t iters) {
    __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f), s = _mm256_setzero_ps();
#define DECL(i) __m256 r##i = _mm256_set1_ps((float)i);
#define STEP(i) r##i = _mm256_fmadd_ps(r##i, a, b);
#define SUM(i) s = _mm256_add_ps(s, r##i);
    ACC12(DECL)
    for (int64_t it = 0; it < iters; it++) {
        ACC12(STEP)
    }
    ACC12(SUM)
#undef DECL
#undef STEP
#undef SUM
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

/* GFLOP/s of `iters` iterations on every thread, per second of wall time
 * (and in *cpu, per CPU-second of one thread); sink keeps the sums live. */
static double run(int wide, int64_t iters, volatile float *sink, double *cpu) {
    int lanes = wide ? 16 : 8, nt = 1;
    double t0 = bench_now_s(), c0 = bench_cpu_s();
#pragma omp parallel
    {
        float s = wide ? fma512(iters) : fma256(iters);
#ifdef _OPENMP
#pragma omp critical
        {
            *sink += s;
            nt = omp_get_num_threads();
        }
#else
        *sink += s;
#endif
    }
    double dt = bench_now_s() - t0, flops = (double)iters * NACC * lanes * 2 * nt;
    *cpu = flops / (bench_cpu_s() - c0) / 1e9;
    return flops / dt / 1e9;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    volatile float sink = 0;
    __builtin_cpu_init();
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    for (int wide = 1; wide >= 0; wide--) {
        if (wide ? !__builtin_cpu_supports("avx512f") : !__builtin_cpu_supports("fma")) continue;
        int64_t iters = 1000000;
        double c, r = run(wide, iters, &sink, &c); /* calibrate: iterations for `secs` */
        iters = (int64_t)(iters * (secs / ((double)iters * NACC * (wide ? 16 : 8) * 2 * threads / (r * 1e9))));
        if (iters < 1000) iters = 1000;
        double best = 0, best_cpu = 0;
        for (int t = 0; t < 5; t++) {
            double g = run(wide, iters, &sink, &c);
            if (g > best) best = g;
            if (c > best_cpu) best_cpu = c;
        }
        printf("fp32 FMA peak, %s, %d threads: %.1f GFLOP/s wall, %.1f GFLOP/s per CPU-second (best of 5)\n",
               wide ? "AVX-512" : "AVX2", threads, best, best_cpu);
    }
    return sink == 12345.0f; /* never: keeps the sums live */
}
#else
int main(void) {
    puts("bench_peak: x86-64 with GCC or clang only");
    return 0;
}
#endif
