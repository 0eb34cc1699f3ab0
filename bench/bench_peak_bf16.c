/* The machine's arithmetic peaks, to put every GFLOP/s figure in the README
 * against: a register-only loop of float32 FMAs (vfmadd231ps zmm: 16 lanes,
 * 32 flops) and one of bfloat16 dot products (vdpbf16ps zmm: 16 lanes, each
 * a pair of products added to a float32 accumulator, 64 flops), 12
 * independent accumulators each so that latency never limits, on every
 * OpenMP thread. Needs AVX-512 (and AVX512-BF16 for the second loop);
 * elsewhere it says so and exits 0.
 *     build/bench_peak_bf16 (bench_peak: the float32 FMA peak per ISA, in detail) */
#include "bench_time.h"

#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define ITERS 20000000L
#define ACC 12
/* Twelve named accumulators: an array indexed in a loop can live in memory at -O2. */
#define EACH(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)i);
#define SUM(i) s = _mm512_add_ps(s, a##i);

__attribute__((target("avx512f"))) static float fma_loop(long iters) {
    __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f), s = _mm512_setzero_ps();
    EACH(DECL)
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, x, y);
    for (long k = 0; k < iters; k++) {
        EACH(STEP)
    }
#undef STEP
    EACH(SUM)
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static float dp_loop(long iters) {
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3c00); /* 1, 2^-7 */
    __m512 s = _mm512_setzero_ps();
    EACH(DECL)
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
    for (long k = 0; k < iters; k++) {
        EACH(STEP)
    }
#undef STEP
    EACH(SUM)
    return _mm512_reduce_add_ps(s);
}

/* GFLOP/s of loop on every thread at once (median of 3). */
static double peak(float (*loop)(long), double flops_per_insn) {
    double t[3];
    volatile float sink = 0;
    int nt = 1;
    for (int r = 0; r < 3; r++) {
        double t0 = bench_now_s();
#pragma omp parallel
        {
#ifdef _OPENMP
#pragma omp single
            nt = omp_get_num_threads();
#endif
            float v = loop(ITERS / 4);
#pragma omp critical
            sink += v;
        }
        t[r] = bench_now_s() - t0;
    }
    (void)sink;
    return (double)nt * (ITERS / 4) * ACC * flops_per_insn / bench_median(t, 3) * 1e-9;
}

int main(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        puts("bench_peak_bf16: no AVX-512 on this CPU: nothing to measure");
        return 0;
    }
    double f = peak(fma_loop, 32);
    printf("fp32 FMA peak (vfmadd231ps zmm):   %8.1f GFLOP/s\n", f);
    if (__builtin_cpu_supports("avx512bf16")) {
        double b = peak(dp_loop, 64);
        printf("bf16 dot peak (vdpbf16ps zmm):     %8.1f GFLOP/s  (%.2fx fp32)\n", b, b / f);
    } else {
        puts("bf16 dot peak: no AVX512-BF16 on this CPU");
    }
    return 0;
}
#else
int main(void) {
    puts("bench_peak_bf16: needs gcc on x86-64");
    return 0;
}
#endif
