/* The per-run loops of bn_blocked.c, compiled once per instruction set
 * (included through isa_copies.h, ISA_SUF the suffix) and, inside, once
 * per activation type (bn_blocked_rows.h, through blk_typed.h): a v16 is one zmm under
 * AVX-512, two ymm under AVX2; on the baseline its four xmm do not all fit
 * in registers with the accumulators. Not a normal header (no include
 * guard, on purpose). */
#define BN_FN(x) CAT3(x, ISA_SUF, )

/* A run's two lane sums added to its channel block's: acc[i] += r0[i], acc[16 + i] += r1[i].
 * By pointer: a 64-byte vector passed by value changes the ABI outside
 * AVX-512, which GCC warns about (-Wpsabi) wherever the call is not inlined
 * (a Debug build). */
static inline void BN_FN(add_lanes)(double *acc, const v16 *r0, const v16 *r1) {
    float s0[16], s1[16];
    memcpy(s0, r0, sizeof s0);
    memcpy(s1, r1, sizeof s1);
    for (int i = 0; i < 16; i++) {
        acc[i] += s0[i];
        acc[16 + i] += s1[i];
    }
}

#define ROWS "bn_blocked_rows.h"
#include "blk_typed.h"
#undef ROWS

/* [0] float32 activations, [1] bfloat16. */
static const bn_rows BN_FN(bn_rows)[2] = {
    {CAT3(run_sums, ISA_SUF, _f32), CAT3(run_moments, ISA_SUF, _f32), CAT3(run_apply, ISA_SUF, _f32), CAT3(run_dx, ISA_SUF, _f32),
     CAT3(run_gsums, ISA_SUF, _f32), CAT3(run_gdx, ISA_SUF, _f32)},
    {CAT3(run_sums, ISA_SUF, _bf16), CAT3(run_moments, ISA_SUF, _bf16), CAT3(run_apply, ISA_SUF, _bf16), CAT3(run_dx, ISA_SUF, _bf16),
     CAT3(run_gsums, ISA_SUF, _bf16), CAT3(run_gdx, ISA_SUF, _bf16)},
};

#undef BN_FN
