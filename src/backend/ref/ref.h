/* The reference backend: a naive, obviously correct kernel for every op,
 * run one node at a time (DESIGN 2.10). Every faster path is tested
 * against it. */
#ifndef LT_REF_H
#define LT_REF_H

#include "../../exec/exec.h"

#include <math.h>

typedef struct ref_arg {
    const void *data;
    lt_dtype dtype;
    int ndim;
    const int64_t *shape;
    int64_t numel;
} ref_arg;

/* Element access with conversion, never undefined behaviour: integer loads
 * of out-of-range floats saturate (NaN gives 0); integer stores follow x86
 * (st_f). */
static inline double ld_f(const void *p, lt_dtype d, int64_t i) {
    switch (d) {
    case LT_F32: return ((const float *)p)[i];
    case LT_F64: return ((const double *)p)[i];
    case LT_I32: return ((const int32_t *)p)[i];
    case LT_I64: return (double)((const int64_t *)p)[i];
    case LT_BOOL: case LT_U8: return ((const uint8_t *)p)[i];
    case LT_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    }
    return 0;
}
static inline int64_t ld_i(const void *p, lt_dtype d, int64_t i) {
    switch (d) {
    case LT_F32: case LT_F64: case LT_BF16: {
        double v = ld_f(p, d, i);
        if (v != v) return 0;
        if (v >= 9.2233720368547758e18) return INT64_MAX;
        if (v <= -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)v;
    }
    case LT_I32: return ((const int32_t *)p)[i];
    case LT_I64: return ((const int64_t *)p)[i];
    case LT_BOOL: case LT_U8: return ((const uint8_t *)p)[i];
    }
    return 0;
}
static inline void st_i(void *p, lt_dtype d, int64_t i, int64_t v) {
    switch (d) {
    case LT_F32: ((float *)p)[i] = (float)v; break;
    case LT_F64: ((double *)p)[i] = (double)v; break;
    case LT_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case LT_I64: ((int64_t *)p)[i] = v; break;
    case LT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case LT_BF16: ((uint16_t *)p)[i] = bf16_from_f32((float)v); break;
    case LT_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break; /* wraps modulo 256 */
    }
}
static inline void st_f(void *p, lt_dtype d, int64_t i, double v) {
    switch (d) {
    case LT_F32: ((float *)p)[i] = (float)v; break;
    case LT_F64: ((double *)p)[i] = v; break;
    /* through float, as PyTorch converts a double to bfloat16 */
    case LT_BF16: ((uint16_t *)p)[i] = bf16_from_f32((float)v); break;
    case LT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    /* A NaN or out-of-range value gives the type's minimum, what x86's
     * conversion instructions (cvttss2si and kin) return and so what
     * PyTorch gives on this CPU; C leaves the cast undefined. */
    case LT_I32: ((int32_t *)p)[i] = v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN; break;
    case LT_I64: ((int64_t *)p)[i] = v >= -0x1p63 && v < 0x1p63 ? (int64_t)v : INT64_MIN; break;
    /* as torch's CPU: truncated to int32 (as above), then its low byte */
    case LT_U8: ((uint8_t *)p)[i] = (uint8_t)(uint32_t)(v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN); break;
    }
}
/* Copies element i of (src, sd) to element j of (dst, dd), converting. */
static inline void cp_elem(void *dst, lt_dtype dd, int64_t j, const void *src, lt_dtype sd, int64_t i) {
    if (dtype_is_float(sd)) st_f(dst, dd, j, ld_f(src, sd, i));
    else st_i(dst, dd, j, ld_i(src, sd, i));
}

/* GELU and its derivative (issue 16), in double, shared by the reference
 * and the cpu tile kernels so that both compute the same function.
 * tanh_form: PyTorch's approximate='tanh'. */
/* torch's floor division of floating values (div rounding_mode='floor'),
 * in the operands' type: double and float forms, shared with the cpu
 * backend. A zero divisor gives IEEE's a / b. */
#define REF_DIV_FLOOR(T, FMOD, FLOOR, COPYSIGN)                            \
    static inline T ref_div_floor_##T(T a, T b) {                           \
        if (b == 0) return a / b;                                           \
        T mod = FMOD(a, b), div = (a - mod) / b;                            \
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                     \
        if (div == 0) return COPYSIGN((T)0, a / b);                         \
        T fl = FLOOR(div);                                                  \
        return div - fl > (T)0.5 ? fl + 1 : fl;                             \
    }
REF_DIV_FLOOR(double, fmod, floor, copysign)
REF_DIV_FLOOR(float, fmodf, floorf, copysignf)
#undef REF_DIV_FLOOR

/* torch's lerp with a tensor weight: the side by |weight| (Lerp.h), in
 * double; shared with the cpu tiles. */
static inline double ref_lerp(double a, double b, double w) {
    return fabs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w);
}

static inline double ref_gelu(double x, int tanh_form) {
    if (tanh_form) return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
}
static inline double ref_gelu_grad(double x, int tanh_form, int single) {
    if (tanh_form) {
        /* single: computed in float (f32, bf16), x * x overflows past
         * sqrt(FLT_MAX), (1 - t^2) is exactly 0 and 0 * inf is NaN, as in
         * PyTorch's float kernel and the cpu tile's */
        if (single && x * x >= 0x1.ffffffp127) return NAN;
        double t = tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3 * 0.044715 * x * x);
    }
    return 0.5 * (1.0 + erf(x * 0.7071067811865476)) + x * exp(-0.5 * x * x) * 0.3989422804014327;
}

/* Kernels. `sc` holds the node's scalars with runtime values resolved. */
/* Any op's reference kernel (the dispatch of ref.c; other backends fall back to it). */
void ref_run_node(const gnode *y, const ref_arg *in, const double *sc, void *out);
/* Scratch of the kernels that accumulate in double (conv, pooling backward,
 * as_strided backward, cross-entropy rows). An executor reserves it for a
 * whole graph before running (0, or -1 with LT_ERR_OOM), so no kernel
 * allocates and none can fail halfway; ref_scratch hands it out zeroed. */
int ref_scratch_reserve(const exec_graph *g);
double *ref_scratch(int64_t n);
void ref_elementwise(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_reduce(const gnode *y, const ref_arg *in, const double *sc, void *out);
void ref_cumsum(const gnode *y, const ref_arg *in, void *out);
void ref_softmax(const gnode *y, const ref_arg *in, void *out);
void ref_matmul(const gnode *y, const ref_arg *in, void *out);
void ref_cat(const gnode *y, const ref_arg *in, void *out);
void ref_flip(const gnode *y, const ref_arg *in, void *out);
void ref_as_strided(const gnode *y, const ref_arg *in, void *out);
void ref_as_strided_scatter(const gnode *y, const ref_arg *in, void *out);
void ref_as_strided_backward(const gnode *y, const ref_arg *in, void *out); /* ref_grad.c */
void ref_fill(const gnode *y, const double *sc, void *out);
void ref_collective(const gnode *y, const ref_arg *in, void *out); /* ref_dist.c: blocking MPI */
void ref_shard_collective(const gnode *y, const ref_arg *in, void *out);
void ref_shard(const gnode *y, const ref_arg *in, void *out);

#endif
