/* What the vectorized cpu loops share: OpenMP simd, the vector variants of
 * libm in glibc's libmvec, and the instruction sets compiled in. */
#ifndef LT_CPU_SIMD_H
#define LT_CPU_SIMD_H

#include "../../core/isa.h"

#include <math.h>
#include <stdint.h>
#ifdef HAVE_ISA
#include <immintrin.h> /* the AVX-512 bfloat16 loads and stores of blk_typed.h */
#endif
#ifdef _OPENMP
#include <omp.h>
#define THREAD_NUM() omp_get_thread_num()
#define NUM_THREADS() omp_get_max_threads()
#define OMP_SIMD _Pragma("omp simd")
#define OMP_SIMD_SUM(v) _Pragma(OMP_STR(omp simd reduction(+ : v)))
#define OMP_SIMD_MAX(v, f) _Pragma(OMP_STR(omp simd reduction(max : v) reduction(| : f)))
#define OMP_STR(x) #x
#else
#define THREAD_NUM() 0
#define NUM_THREADS() 1
#define OMP_SIMD /* without OpenMP, gcc -O2 may still vectorize */
#define OMP_SIMD_SUM(v)
#define OMP_SIMD_MAX(v, f)
#endif

/* Declaring these `simd` (as glibc's own header does under -ffast-math)
 * lets gcc call libmvec's variants (_ZGVeN16v_expf under AVX-512, ...) from
 * vectorized loops without giving up IEEE semantics elsewhere. The files
 * using them are compiled with -fno-math-errno (CMakeLists.txt) so that
 * sqrt vectorizes too. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SIMD_DECL __attribute__((simd("notinbranch")))
double exp(double) SIMD_DECL;
double log(double) SIMD_DECL;
double pow(double, double) SIMD_DECL;
double tanh(double) SIMD_DECL;
float expf(float) SIMD_DECL;
float logf(float) SIMD_DECL;
float powf(float, float) SIMD_DECL;
float tanhf(float) SIMD_DECL;
#endif

/* The 16 channels of a block of nChw16c (layout.c) as one value, kept in
 * registers (float[16] accumulators went through memory on every step):
 * one zmm under AVX-512, two ymm under AVX2. vi16 holds the lane masks of
 * comparisons (-1 / 0) and lane indices. */
typedef float v16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t vi16 __attribute__((vector_size(64), aligned(4), may_alias));
/* The same 16 lanes as bits (vu16), and 16 bfloat16 values (vh16): the
 * blocked loops on bfloat16 activations widen and round through them. */
typedef uint32_t vu16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef uint16_t vh16 __attribute__((vector_size(32), aligned(2), may_alias));
#define V16(p) (*(v16 *)(p)) /* 16 floats at p, any alignment */
/* m ? a : b per lane, m a comparison's mask (GCC's C has no vector ?:). */
#define VSEL(m, a, b) ((v16)(((vi16)(a) & (m)) | ((vi16)(b) & ~(m))))

#define CAT3_(a, b, c) a##b##c
#define CAT3(a, b, c) CAT3_(a, b, c)

/* The typed loops of reductions and softmax (reduce_body.h), one table per
 * type and instruction set; x points at the first element of a run. */
typedef struct rkern {
    double (*sum)(const void *x, int64_t n);
    double (*max)(const void *x, int64_t n, double s); /* of s * x, s = +-1 */
    void (*csum)(double *acc, const void *x, int64_t n, int64_t rows, int64_t ld);
    void (*cmax)(double *acc, const void *x, int64_t n, double s);
    int64_t (*argrow)(const void *x, int64_t n, double s);
    void (*argcol)(double *best, int64_t *idx, const void *x, int64_t n, double s, int64_t k);
    void (*softmax)(void *out, const void *x, int64_t n, int logsm);
} rkern;
/* The table for dtype (LT_F32, LT_F64 or LT_BF16: no arg-reductions or
 * softmax) on this machine (reduce.c). */
const rkern *cpu_rkern(int dtype);

#endif
