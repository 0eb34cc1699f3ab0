/* core_isa(): which copy of the vectorized loops this CPU runs (isa.h).
 * Atomic: the image decoder threads ask too, and may ask first. */
#include "isa.h"

#include <stdatomic.h>

static atomic_int isa_forced = -1; /* core_set_isa: tests run every copy */
void core_set_isa(int level) { atomic_store(&isa_forced, level); }

/* 2: AVX-512, 1: AVX2 + FMA, 0: the x86-64 baseline (SSE2). */
static int detect(void) {
    int best = 0;
#ifdef HAVE_ISA
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = 1;
    if (best == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
        best = 2;
#endif
    return best;
}

int core_isa(void) {
    static atomic_int best = -1; /* threads racing here all store the same value */
    int b = atomic_load_explicit(&best, memory_order_relaxed);
    if (b < 0) atomic_store_explicit(&best, b = detect(), memory_order_relaxed);
    int forced = atomic_load_explicit(&isa_forced, memory_order_relaxed);
    return forced >= 0 && forced < b ? forced : b;
}
