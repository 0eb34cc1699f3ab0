/* The per-run loops of bn_blocked.c, compiled once per instruction set
 * (included through isa_copies.h, ISA_SUF the suffix) and, inside, once
 * per activation type (bn_blocked_rows.h): a v16 is one zmm under
 * AVX-512, two ymm under AVX2; on the baseline its four xmm do not all fit
 * in registers with the accumulators. Not a normal header (no include
 * guard, on purpose). */
#define BN_FN(x) CAT3(x, ISA_SUF, )

/* The bfloat16 bits of each lane of *f, as bf16_from_f32 (core.h): round
 * to nearest even, a NaN stays a quiet NaN. (Vectors go by pointer: the
 * baseline copy may not pass a 64-byte vector by value.) */
static inline void BN_FN(bf16_bits)(const v16 *f, vu16 *bits) {
    vu16 u = (vu16)*f, nan = (vu16)((u & 0x7fffffffu) > 0x7f800000u);
    *bits = (((u >> 16) | 0x40u) & nan) | (((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) & ~nan);
}

#define A float
#define LDV(p) V16(p)
#define STV(p, v) (V16(p) = (v))
#define RNDV(t) (void)0
#define BT(x) CAT3(x, ISA_SUF, _f32)
#include "bn_blocked_rows.h"
#undef A
#undef LDV
#undef STV
#undef RNDV
#undef BT

/* Widening is exact: a bfloat16 is a float's top half. */
#define A uint16_t
#define LDV(p) ((v16)(__builtin_convertvector(*(const vh16 *)(p), vu16) << 16))
#define STV(p, v)                                                                                                      \
    do {                                                                                                               \
        v16 v_ = (v);                                                                                                  \
        vu16 b_;                                                                                                       \
        BN_FN(bf16_bits)(&v_, &b_);                                                                                    \
        *(vh16 *)(p) = __builtin_convertvector(b_, vh16);                                                              \
    } while (0)
#define RNDV(t)                                                                                                        \
    do {                                                                                                               \
        vu16 b_;                                                                                                       \
        BN_FN(bf16_bits)(&(t), &b_);                                                                                   \
        (t) = (v16)(b_ << 16);                                                                                         \
    } while (0)
#define BT(x) CAT3(x, ISA_SUF, _bf16)
#include "bn_blocked_rows.h"
#undef A
#undef LDV
#undef STV
#undef RNDV
#undef BT

/* [0] float32 activations, [1] bfloat16. */
static const bn_rows BN_FN(bn_rows)[2] = {
    {CAT3(run_sums, ISA_SUF, _f32), CAT3(run_apply, ISA_SUF, _f32), CAT3(run_dx, ISA_SUF, _f32)},
    {CAT3(run_sums, ISA_SUF, _bf16), CAT3(run_apply, ISA_SUF, _bf16), CAT3(run_dx, ISA_SUF, _bf16)},
};

#undef BN_FN
