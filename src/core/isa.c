/* core_isa(): which copy of the vectorized loops this CPU runs (isa.h). */
#include "isa.h"

static int isa_forced = -1; /* core_set_isa: tests run every copy */
void core_set_isa(int level) { isa_forced = level; }

/* 2: AVX-512, 1: AVX2 + FMA, 0: the x86-64 baseline (SSE2). */
int core_isa(void) {
    static int best = -1;
    if (best < 0) {
        best = 0;
#ifdef HAVE_ISA
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = 1;
        if (best == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
            best = 2;
#endif
    }
    return isa_forced >= 0 && isa_forced < best ? isa_forced : best;
}
