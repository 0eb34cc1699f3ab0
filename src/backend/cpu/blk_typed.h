/* Instantiates the loops of ROWS (a header name) over channel-blocked
 * activations (nChw16c, layout.c) for both types a blocked value can have:
 * float, and uint16_t holding bfloat16 (autocast's activations). Included
 * once per instruction set by a *_body.h (through isa_copies.h, ISA_SUF the
 * suffix). In ROWS, A is the type, LDV(p) the 16 activations at p as a v16,
 * STV(p, v) stores v rounded to A (STNT(p, v) likewise, streaming where it
 * can, NT_FENCE() after the last), RNDV(t) rounds the v16 t to A in place,
 * LE0R(t) is the lanes' mask of (t rounded to A) <= 0, and BT(name) names
 * the copy (name, ISA_SUF, then _f32 or _bf16). The math is float32 either
 * way. Not a normal header (no include guard, on purpose). */
#define BF16_BITS CAT3(bf16_bits, ISA_SUF, )

/* The bfloat16 bits of each lane of *f, as bf16_from_f32 (core.h): round
 * to nearest even, a NaN stays a quiet NaN. (Vectors go by pointer: the
 * baseline copy may not pass a 64-byte vector by value.) */
static inline void BF16_BITS(const v16 *f, vu16 *bits) {
    vu16 u = (vu16)*f, nan = (vu16)((u & 0x7fffffffu) > 0x7f800000u);
    *bits = (((u >> 16) | 0x40u) & nan) | (((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) & ~nan);
}

#define A float
#define LDV(p) V16(p)
#define STV(p, v) (V16(p) = (v))
/* A streaming store (64-byte aligned p): past the caches, without first
 * reading the line it fills; AVX-512 only, a plain store elsewhere. */
#ifdef __AVX512F__
#define STNT(p, v) __builtin_ia32_movntps512((float *)(p), (v))
#define NT_FENCE() __builtin_ia32_sfence()
#else
#define STNT(p, v) STV(p, v)
#define NT_FENCE() (void)0
#endif
#define RNDV(t) (void)0
#define LE0R(t) ((t) <= 0)
#define BT(x) CAT3(x, ISA_SUF, _f32)
#include ROWS
#undef A
#undef LDV
#undef STV
#undef STNT
#undef NT_FENCE
#undef RNDV
#undef LE0R
#undef BT

/* Widening is exact: a bfloat16 is a float's top half. */
#define A uint16_t
#if defined(__AVX512F__) && defined(HAVE_ISA) /* HAVE_ISA: simd.h included immintrin.h */
/* AVX-512: one widening load and one narrowing store, the rounding in
 * mask registers; the same bits as BF16_BITS. GCC's generic vector code
 * took 6 instructions to widen 16 values and 13 to round and pack them
 * (objdump of run_gdx_avx512_bf16), and these loops run out of arithmetic
 * before memory on bfloat16 (ResNet-50's bf16 batch norm family took as
 * long as the float32 one, which moves twice the bytes). */
#define BF16_R32 CAT3(bf16_r32, ISA_SUF, )
/* The bfloat16 bits of each lane of f, in the low half of the lane. */
static inline __m512i BF16_R32(v16 f) {
    __m512i u = (__m512i)f, hi = _mm512_srli_epi32(u, 16);
    __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
    return _mm512_mask_or_epi32(_mm512_srli_epi32(r, 16), _mm512_cmp_ps_mask((__m512)f, (__m512)f, _CMP_UNORD_Q), hi,
                                _mm512_set1_epi32(0x40));
}
#define LDV(p) ((v16)_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p))), 16))
#define STV(p, v) _mm256_storeu_si256((__m256i *)(p), _mm512_cvtepi32_epi16(BF16_R32(v)))
#define RNDV(t) ((t) = (v16)_mm512_slli_epi32(BF16_R32(t), 16))
#else
#define LDV(p) ((v16)(__builtin_convertvector(*(const vh16 *)(p), vu16) << 16))
#define STV(p, v)                                                                                                      \
    do {                                                                                                               \
        v16 v_ = (v);                                                                                                  \
        vu16 b_;                                                                                                       \
        BF16_BITS(&v_, &b_);                                                                                           \
        *(vh16 *)(p) = __builtin_convertvector(b_, vh16);                                                              \
    } while (0)
#define RNDV(t)                                                                                                        \
    do {                                                                                                               \
        vu16 b_;                                                                                                       \
        BF16_BITS(&(t), &b_);                                                                                          \
        (t) = (v16)(b_ << 16);                                                                                         \
    } while (0)
#endif
/* Whether t rounded to bfloat16 is <= 0, without rounding it: round to
 * nearest even takes exactly the positive floats up to 2^-134 (bits
 * 0x8000) to +0. */
#define LE0R(t) ((t) <= (v16)((vu16){0} + 0x8000u))
#define STNT(p, v) STV(p, v)
#define NT_FENCE() (void)0
#define BT(x) CAT3(x, ISA_SUF, _bf16)
#include ROWS
#undef A
#undef LDV
#undef STV
#undef STNT
#undef NT_FENCE
#undef RNDV
#undef LE0R
#undef BT

#undef BF16_BITS
#undef BF16_R32
