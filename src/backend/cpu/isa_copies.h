/* Instantiates typed.h (with the kernel body named by BODY) once per
 * instruction set: _base always, and _avx2 / _avx512 where the compiler
 * supports per-function targets. The caller picks one at run time
 * (cpu_isa()). Included by each file with multi-ISA kernels, after defining
 * BODY; not a normal header (no include guard, on purpose). */
#define ISA_SUF _base
#include "typed.h"
#undef ISA_SUF
#ifdef HAVE_ISA
TARGET_PUSH(ISA_AVX2)
#define ISA_SUF _avx2
#include "typed.h"
#undef ISA_SUF
TARGET_POP()
TARGET_PUSH(ISA_AVX512)
#define ISA_SUF _avx512
#include "typed.h"
#undef ISA_SUF
TARGET_POP()
#endif
