/* GELU and its derivative for float registers. erf is a rational
 * approximation on [-4, 4] (Eigen's generic_fast_erf_float, within 7e-8
 * of erf) without libm calls, so the forward's tile loop vectorizes
 * (glibc's vector erf needs -ffast-math, which the build does not use);
 * exp and tanh are libm's float functions. test_cpu_vs_ref compares them
 * with the double reference. */
#ifndef LT_CPU_GELU_F32_H
#define LT_CPU_GELU_F32_H

#include <math.h>
#include <stdint.h>

static inline float gf_erf(float x) {
    x = x < -4.0f ? -4.0f : x;
    x = x > 4.0f ? 4.0f : x;
    float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 - 2.10102402082508e-06f;
    p = p * x2 - 5.69250639462346e-05f;
    p = p * x2 - 7.34990630326855e-04f;
    p = p * x2 - 2.95459980854025e-03f;
    p = p * x2 - 1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 - 2.13374055278905e-04f;
    q = q * x2 - 1.68282697438203e-03f;
    q = q * x2 - 7.37332916720468e-03f;
    q = q * x2 - 1.42647390514189e-02f;
    return x * p / q;
}

/* One function per form: a branch in the loop body keeps it scalar. */
static inline float gf_tanh_inner(float x) { return tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)); }

static inline float gf_gelu_erf(float x) { return 0.5f * x * (1.0f + gf_erf(x * 0.7071067811865476f)); }
static inline float gf_gelu_tanh(float x) { return 0.5f * x * (1.0f + gf_tanh_inner(x)); }

static inline float gf_gelu_grad_erf(float x) {
    return 0.5f * (1.0f + gf_erf(x * 0.7071067811865476f)) + x * expf(-0.5f * x * x) * 0.3989422804014327f;
}
/* With t = tanh(z): 1 + t and 1 - t^2 from e = exp(-2|z|) (1 + t = 2e / (1 + e)
 * for z < 0, 1 - t^2 = 4e / (1 + e)^2), not by subtracting from 1: where
 * t is near -1 (x below -3) the subtraction left ~5e-7 of absolute error
 * in a derivative of ~1e-6, and a gradient g of hundreds multiplies it.
 * x * x last, as PyTorch: past |x| = 1.8e19 it overflows and the result is
 * NaN (0 * inf). */
static inline float gf_gelu_grad_tanh(float x) {
    float z = 0.7978845608028654f * (x + 0.044715f * x * x * x), e = expf(-2.0f * fabsf(z)), r = 1.0f / (1.0f + e);
    float opt = z < 0 ? 2.0f * e * r : 2.0f * r; /* 1 + t */
    float sech2 = 4.0f * e * r * r;               /* 1 - t^2 */
    return 0.5f * opt + 0.5f * x * sech2 * 0.7978845608028654f * (1.0f + 0.134145f * (x * x));
}

#endif
