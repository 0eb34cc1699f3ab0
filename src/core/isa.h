/* The instruction sets vectorized loops are compiled for and the one this
 * CPU runs. The build has no -march (CI machines differ): a loop is compiled
 * once per instruction set, inside TARGET_PUSH(ISA_...) / TARGET_POP(), and
 * the copy is chosen at run time by core_isa(). Used by the cpu backend's
 * kernels and by the image resampler (src/data/resize.c). */
#ifndef LT_CORE_ISA_H
#define LT_CORE_ISA_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAVE_ISA 1
#define ISA_AVX2 "avx2,fma"
#define ISA_AVX512 "avx512f,avx512vl,avx512bw,avx512dq,fma,prefer-vector-width=512"
#endif

/* `#pragma GCC target` does not expand macros; _Pragma does. */
#define PRAGMA_(x) _Pragma(#x)
#define TARGET_PUSH(isa) _Pragma("GCC push_options") PRAGMA_(GCC target(isa))
#define TARGET_POP() _Pragma("GCC pop_options")

/* The instruction set the vectorized loops use, chosen once from the CPU:
 * 2 AVX-512, 1 AVX2 + FMA, 0 baseline. core_set_isa caps it (tests run
 * every copy; -1 lifts the cap). */
int core_isa(void);
void core_set_isa(int level);

#endif
