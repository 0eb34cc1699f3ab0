/* Instantiates ISA_EACH (default typed.h, which instantiates the kernel body
 * named by BODY for float and double) once per instruction set: _base
 * always, and _avx2 / _avx512 where the compiler supports per-function
 * targets, with ISA_SUF the name suffix. The caller picks one at run time
 * (core_isa()). Included by each file with multi-ISA kernels, after defining
 * BODY or ISA_EACH; not a normal header (no include guard, on purpose). */
#ifndef ISA_EACH
#define ISA_EACH "typed.h"
#endif
#define ISA_SUF _base
#include ISA_EACH
#undef ISA_SUF
#ifdef HAVE_ISA
TARGET_PUSH(ISA_AVX2)
#define ISA_SUF _avx2
#include ISA_EACH
#undef ISA_SUF
TARGET_POP()
TARGET_PUSH(ISA_AVX512)
#define ISA_SUF _avx512
#include ISA_EACH
#undef ISA_SUF
TARGET_POP()
#endif
