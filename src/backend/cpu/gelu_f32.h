/* GELU and its derivative for float registers, without libm calls, so that
 * every tile loop using them vectorizes inline: erf is a rational
 * approximation on [-4, 4] (Eigen's generic_fast_erf_float, within 7e-8
 * of erf; glibc's vector erf needs -ffast-math, which the build does not
 * use), exp a polynomial with the exponent built in the bits (gf_exp), and
 * tanh's forms come from exp(-2|z|). libmvec's expf and tanhf did vectorize,
 * but as calls that clobber every vector register: the erf's constants and
 * the loop's values were spilled around each one. test_cpu_vs_ref compares
 * these with the double reference, test_transformer sweeps them densely. */
#ifndef LT_CPU_GELU_F32_H
#define LT_CPU_GELU_F32_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Inlined always: the tile loop calling one is large, and past gcc's growth
 * limits a call left in it kept the loop scalar. */
#define GF_INLINE static inline __attribute__((always_inline))

/* The rational function of gf_erf, on [-4, 4]. */
GF_INLINE float gf_erf_rat(float x) {
    float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = fmaf(p, x2, 2.77068142495902e-08f);
    p = fmaf(p, x2, -2.10102402082508e-06f);
    p = fmaf(p, x2, -5.69250639462346e-05f);
    p = fmaf(p, x2, -7.34990630326855e-04f);
    p = fmaf(p, x2, -2.95459980854025e-03f);
    p = fmaf(p, x2, -1.60960333262415e-02f);
    float q = -1.45660718464996e-05f;
    q = fmaf(q, x2, -2.13374055278905e-04f);
    q = fmaf(q, x2, -1.68282697438203e-03f);
    q = fmaf(q, x2, -7.37332916720468e-03f);
    q = fmaf(q, x2, -1.42647390514189e-02f);
    return x * p / q;
}

/* Past +-4, the value at +-4 (the function is odd), selected after the
 * rational is computed: clamping x first (to a constant) let gcc fold a
 * copy of the whole function per bound into the loop. NaN stays NaN. */
GF_INLINE float gf_erf(float x) {
    float v = gf_erf_rat(x), e4 = gf_erf_rat(4.0f);
    v = x < -4.0f ? -e4 : v;
    return x > 4.0f ? e4 : v;
}

/* The float whose bits are u. */
GF_INLINE float gf_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* exp(x) = 2^k exp(r), k = rint(x / ln 2), r = x - k ln 2 with ln 2 in two
 * parts (Cody and Waite: k times the first is exact, so r keeps its low
 * bits), exp(r) on |r| <= ln 2 / 2 by Cephes' expf polynomial: within 1.1
 * ulp of exp over float's whole range (checked against double exp at
 * every float in [-110, 90]), subnormal results included, inf past 88.72,
 * 0 below -103.97, NaN kept. k is rounded by adding 1.5 * 2^23 (the sum's
 * low mantissa bits hold k): no float-to-int conversion (undefined for NaN
 * and out of range) and no rintf (a libm call in the baseline copy). 2^k
 * is applied in two halves, each a normal float, from kb = k + 254 >= 0;
 * out of range, kb is garbage and the selects at the end override it.
 * fmaf: one instruction in the AVX2 and AVX-512 copies, halving the
 * polynomial's work; in the baseline copy (CPUs without AVX2, and clang
 * builds, which have no other copy) a libm call per element, slow but
 * exact: every copy gives the same bits. */
GF_INLINE float gf_exp(float x) {
    float t = fmaf(x, 1.44269504088896341f, 12582912.0f), kf = t - 12582912.0f;
    float r = fmaf(kf, 2.12194440e-4f, fmaf(kf, -0.693359375f, x));
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p, r * r, r) + 1.0f;
    uint32_t u;
    memcpy(&u, &t, 4);
    uint32_t kb = (u & 0x7fffffu) - 0x400000u + 254u, k1 = kb >> 1;
    float y = p * gf_bits(k1 << 23) * gf_bits((kb - k1) << 23);
    /* selects last, not clamps first: a clamp to a constant let gcc fold a
     * copy of the whole computation per constant into the loop */
    y = x < -104.0f ? 0.0f : y;
    return x > 89.0f ? INFINITY : y;
}

/* With z the argument of tanh and e = exp(-2|z|): 1 + tanh(z) is 2e / (1 + e)
 * for z < 0 and 2 / (1 + e) otherwise, never a subtraction from 1 (near
 * t = -1, x below -3, that left ~5e-7 of absolute error in values of
 * ~1e-6). r = 1 / (1 + e). */
GF_INLINE float gf_one_plus_tanh(float z, float e, float r) { return z < 0 ? 2.0f * e * r : 2.0f * r; }

GF_INLINE float gf_tanh_arg(float x) { return 0.7978845608028654f * (x + 0.044715f * x * x * x); }

/* One function per form: a branch in the loop body keeps it scalar. */
GF_INLINE float gf_gelu_erf(float x) { return 0.5f * x * (1.0f + gf_erf(x * 0.7071067811865476f)); }
GF_INLINE float gf_gelu_tanh(float x) {
    float z = gf_tanh_arg(x), e = gf_exp(-2.0f * fabsf(z));
    return 0.5f * x * gf_one_plus_tanh(z, e, 1.0f / (1.0f + e));
}

GF_INLINE float gf_gelu_grad_erf(float x) {
    return 0.5f * (1.0f + gf_erf(x * 0.7071067811865476f)) + x * gf_exp(-0.5f * x * x) * 0.3989422804014327f;
}
/* 1 - t^2 = 4e / (1 + e)^2, from e as 1 + t is (gf_one_plus_tanh): a
 * gradient g of hundreds multiplies its error. x * x last, as PyTorch:
 * past |x| = 1.8e19 it overflows and the result is NaN (0 * inf). */
GF_INLINE float gf_gelu_grad_tanh(float x) {
    float z = gf_tanh_arg(x), e = gf_exp(-2.0f * fabsf(z)), r = 1.0f / (1.0f + e);
    float sech2 = 4.0f * e * r * r; /* 1 - t^2 */
    return 0.5f * gf_one_plus_tanh(z, e, r) + 0.5f * x * sech2 * 0.7978845608028654f * (1.0f + 0.134145f * (x * x));
}

#endif
