/* Reference elementwise kernels: broadcasting by an N-d index counter, the
 * math in double (float dtypes) or int64 (integer and bool dtypes). */
#include "ref.h"

/* A scalar compared with a float32 / bfloat16 tensor is first cast to the
 * tensor's dtype (torch wraps it as a 0-d tensor of that type). */
static double ref_scalar_in(double s, int single) {
    return single == 2 ? (double)bf16_to_f32(bf16_from_f32((float)s)) : single ? (double)(float)s : s;
}

/* single: the compute dtype is float32 (1) or bfloat16 (2) (where the double
 * result would not overflow as float math does). */
static double f_apply(int op, const double *x, const double *s, int single) {
    double a = x[0], b = x[1];
    switch (op) { /* elementwise ops only, hence the default */
    case LT_OP_ADD: return a + b;
    case LT_OP_SUB: return a - b;
    case LT_OP_MUL: return a * b;
    case LT_OP_DIV: return a / b;
    case LT_OP_MAXIMUM: return (a != a || b != b) ? NAN : (a > b ? a : b);
    case LT_OP_MINIMUM: return (a != a || b != b) ? NAN : (a < b ? a : b);
    case LT_OP_POW: return pow(a, b);
    case LT_OP_EQ: return a == b;
    case LT_OP_NE: return a != b;
    case LT_OP_LT: return a < b;
    case LT_OP_LE: return a <= b;
    case LT_OP_GT: return a > b;
    case LT_OP_GE: return a >= b;
    case LT_OP_ADD_SCALAR: return a + s[0];
    case LT_OP_MUL_SCALAR: return a * s[0];
    case LT_OP_POW_SCALAR: /* PyTorch computes 0.5 and -0.5 as sqrt and rsqrt */
        return s[0] == 0.5 ? sqrt(a) : s[0] == -0.5 ? 1.0 / sqrt(a) : pow(a, s[0]);
    case LT_OP_CLAMP: /* torch.clamp: a NaN input or bound gives NaN */
        if (a != a || s[0] != s[0] || s[1] != s[1]) return a + s[0] + s[1];
        if (a < s[0]) a = s[0];
        if (a > s[1]) a = s[1];
        return a;
    case LT_OP_NEG: return -a;
    case LT_OP_EXP: return exp(a);
    case LT_OP_LOG: return log(a);
    case LT_OP_SQRT: return sqrt(a);
    case LT_OP_RSQRT: return 1.0 / sqrt(a);
    case LT_OP_ABS: return fabs(a);
    case LT_OP_RELU: return a > 0 || a != a ? a : 0.0;
    case LT_OP_TANH: return tanh(a);
    case LT_OP_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case LT_OP_ERF: return erf(a);
    case LT_OP_GELU: return ref_gelu(a, s[0] != 0);
    case LT_OP_GELU_BWD: return a * ref_gelu_grad(b, s[0] != 0, single); /* (g, x) */
    /* The PyTorch device's family: torch's CPU formulas. */
    case LT_OP_ADD_SCALED: return a + s[0] * b;
    case LT_OP_EQ_SCALAR: return a == ref_scalar_in(s[0], single);
    case LT_OP_NE_SCALAR: return a != ref_scalar_in(s[0], single);
    case LT_OP_LT_SCALAR: return a < ref_scalar_in(s[0], single);
    case LT_OP_LE_SCALAR: return a <= ref_scalar_in(s[0], single);
    case LT_OP_GT_SCALAR: return a > ref_scalar_in(s[0], single);
    case LT_OP_GE_SCALAR: return a >= ref_scalar_in(s[0], single);
    case LT_OP_MASKED_FILL: return b != 0 ? s[0] : a;
    case LT_OP_SIGN: return (double)((0 < a) - (a < 0)); /* torch's: 0 for NaN and -0 */
    case LT_OP_SILU: return a / (1.0 + exp(-a));
    case LT_OP_SILU_BWD: { /* (g, x) */
        double sg = 1.0 / (1.0 + exp(-b));
        return a * sg * (1.0 + b * (1.0 - sg));
    }
    case LT_OP_HARDSWISH: return a * fmin(fmax(a + 3.0, 0.0), 6.0) / 6.0;
    case LT_OP_HARDSWISH_BWD: return b < -3.0 ? 0.0 : b <= 3.0 ? a * (b / 3.0 + 0.5) : a;
    case LT_OP_HARDSIGMOID: return fmin(fmax(a + 3.0, 0.0), 6.0) / 6.0;
    case LT_OP_HARDSIGMOID_BWD: return b > -3.0 && b < 3.0 ? a * (double)(1.0f / 6.0f) : 0.0; /* torch's constant */
    case LT_OP_THRESHOLD_BWD: return b <= ref_scalar_in(s[0], single) ? 0.0 : a;
    case LT_OP_HARDTANH_BWD: return b <= ref_scalar_in(s[0], single) || b >= ref_scalar_in(s[1], single) ? 0.0 : a;
    case LT_OP_SIGMOID_BWD: return a * (1.0 - b) * b;
    case LT_OP_TANH_BWD: return a * (1.0 - b * b);
    case LT_OP_DIV_TRUNC: /* the quotient rounded to float first, as torch's float32 (bfloat16: in float) */
        return trunc(single ? (double)(float)(a / b) : a / b);
    case LT_OP_DIV_FLOOR: return single ? (double)ref_div_floor_float((float)a, (float)b) : ref_div_floor_double(a, b);
    case LT_OP_CAST: return a;
    case LT_OP_LERP: /* PyTorch's two-sided formula */
        return s[0] < 0.5 ? a + s[0] * (b - a) : b - (b - a) * (1.0 - s[0]);
    case LT_OP_WHERE: return x[0] != 0 ? x[1] : x[2];
    case LT_OP_LERP_TENSOR: return ref_lerp(a, b, x[2]);
    case LT_OP_ADDCMUL: return a + s[0] * b * x[2];
    case LT_OP_ADDCDIV: return a + s[0] * (b / x[2]);
    default: /* not elementwise: the dispatch in ref.c never sends it here */
        break;
    }
    LT_ASSERT(0 && "not elementwise");
    return 0;
}

static int64_t ipow(int64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : b == -1 ? (e & 1 ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)b;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}

/* Integer math wraps like two's complement (unsigned arithmetic), as PyTorch's does in practice. */
static int64_t i_apply(int op, const int64_t *x, const double *s, int boolean) {
    int64_t a = x[0], b = x[1];
    switch (op) { /* elementwise ops only, hence the default */
    case LT_OP_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case LT_OP_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case LT_OP_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case LT_OP_MAXIMUM: return a > b ? a : b;
    case LT_OP_MINIMUM: return a < b ? a : b;
    case LT_OP_POW: return ipow(a, b);
    case LT_OP_EQ: return a == b;
    case LT_OP_NE: return a != b;
    case LT_OP_LT: return a < b;
    case LT_OP_LE: return a <= b;
    case LT_OP_GT: return a > b;
    case LT_OP_GE: return a >= b;
    case LT_OP_NEG: return (int64_t)(0 - (uint64_t)a);
    case LT_OP_ABS: return a < 0 ? (int64_t)(0 - (uint64_t)a) : a;
    case LT_OP_RELU: return a > 0 ? a : 0;
    case LT_OP_CAST: return a;
    case LT_OP_WHERE: return x[0] ? x[1] : x[2];
    /* Integral scalars (lt_add_scalar_int ...: the node's dtype is an integer type). */
    case LT_OP_ADD_SCALAR: return (int64_t)((uint64_t)a + (uint64_t)(int64_t)s[0]);
    case LT_OP_MUL_SCALAR: return (int64_t)((uint64_t)a * (uint64_t)(int64_t)s[0]);
    case LT_OP_POW_SCALAR: return ipow(a, (int64_t)s[0]);
    case LT_OP_CLAMP: /* as torch.clamp: lower bound first, then upper */
        if (s[0] == s[0] && (double)a < s[0]) a = (int64_t)s[0];
        if (s[1] == s[1] && (double)a > s[1]) a = (int64_t)s[1];
        return a;
    /* The PyTorch device's family. The scalar comparisons are exact (in double). */
    case LT_OP_ADD_SCALED: return (int64_t)((uint64_t)a + (uint64_t)(int64_t)s[0] * (uint64_t)b);
    case LT_OP_EQ_SCALAR: return (double)a == s[0];
    case LT_OP_NE_SCALAR: return (double)a != s[0];
    case LT_OP_LT_SCALAR: return (double)a < s[0];
    case LT_OP_LE_SCALAR: return (double)a <= s[0];
    case LT_OP_GT_SCALAR: return (double)a > s[0];
    case LT_OP_GE_SCALAR: return (double)a >= s[0];
    case LT_OP_MASKED_FILL: return b ? (int64_t)s[0] : a;
    case LT_OP_SIGN: return (a > 0) - (a < 0);
    case LT_OP_THRESHOLD_BWD: return (double)b <= s[0] ? 0 : a;
    case LT_OP_HARDTANH_BWD: return (double)b <= s[0] || (double)b >= s[1] ? 0 : a;
    case LT_OP_DIV_TRUNC: /* C's division truncates; torch raises for b == 0 */
        if (b == 0) return 0;
        return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
    case LT_OP_DIV_FLOOR: {
        if (b == 0) return 0;
        if (b == -1) return (int64_t)(0 - (uint64_t)a);
        int64_t q = a / b;
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
    }
    case LT_OP_ADDCMUL: /* PyTorch truncates value to the integer type first */
        return (int64_t)((uint64_t)a + (uint64_t)(int64_t)s[0] * (uint64_t)b * (uint64_t)x[2]);
    case LT_OP_BITWISE_AND: return a & b;
    case LT_OP_BITWISE_OR: return a | b;
    case LT_OP_BITWISE_XOR: return a ^ b;
    case LT_OP_BITWISE_NOT: return boolean ? !a : ~a; /* the store narrows (uint8: ~5 is 250) */
    default: /* float-only ops never take the integer path */
        break;
    }
    LT_ASSERT(0 && "no integer form");
    return 0;
}

/* An operand in the compute dtype: PyTorch casts every operand to it before
 * the math, so a float64 0-d operand of a float32 op (or an int32 beyond
 * 2^24) is rounded first (addcdiv's gradient (v t1) / (t2 t2) with a bool
 * t1 and a float64 0-d t2 divides in float32). */
static double in_compute(double v, lt_dtype from, lt_dtype cd) {
    if (from == cd || (cd != LT_F32 && cd != LT_BF16)) return v;
    return cd == LT_F32 ? (double)(float)v : (double)bf16_to_f32(bf16_from_f32((float)v));
}

void ref_elementwise(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    int nd = y->ndim, nin = y->nin;
    lt_dtype dts[3];
    unsigned zmask = 0;
    int64_t bstride[3][LT_MAX_DIMS]; /* input strides aligned to the output, 0 where broadcast */
    for (int j = 0; j < nin; j++) {
        dts[j] = in[j].dtype;
        zmask |= (unsigned)(in[j].ndim == 0) << j;
        int64_t st = 1;
        for (int d = nd - 1; d >= 0; d--) {
            int jd = d - (nd - in[j].ndim);
            if (jd < 0 || in[j].shape[jd] == 1) {
                bstride[j][d] = 0;
            } else {
                bstride[j][d] = st;
            }
            if (jd >= 0) st *= in[j].shape[jd];
        }
    }
    lt_dtype cd = ir_compute_dtype(y->op, nin, dts, zmask);
    if (ir_integral_scalar(y->op, (lt_dtype)y->dtype)) cd = (lt_dtype)y->dtype;
    if (y->op == LT_OP_WHERE) dts[0] = LT_BOOL;
    int fl = dtype_is_float(cd);
    int64_t idx[LT_MAX_DIMS] = {0}, off[3] = {0, 0, 0};
    for (int64_t i = 0; i < y->numel; i++) {
        if (fl) {
            double x[3] = {0, 0, 0};
            for (int j = 0; j < nin; j++) x[j] = in_compute(ld_f(in[j].data, in[j].dtype, off[j]), in[j].dtype, cd);
            st_f(out, (lt_dtype)y->dtype, i, f_apply(y->op, x, sc, cd == LT_F32 ? 1 : cd == LT_BF16 ? 2 : 0));
        } else {
            int64_t x[3] = {0, 0, 0};
            for (int j = 0; j < nin; j++) x[j] = ld_i(in[j].data, in[j].dtype, off[j]);
            st_i(out, (lt_dtype)y->dtype, i, i_apply(y->op, x, sc, cd == LT_BOOL));
        }
        for (int d = nd - 1; d >= 0; d--) { /* advance the counter */
            idx[d]++;
            for (int j = 0; j < nin; j++) off[j] += bstride[j][d];
            if (idx[d] < y->shape[d]) break;
            for (int j = 0; j < nin; j++) off[j] -= bstride[j][d] * idx[d];
            idx[d] = 0;
        }
    }
}

void ref_fill(const gnode *y, const double *sc, void *out) {
    for (int64_t i = 0; i < y->numel; i++) st_f(out, (lt_dtype)y->dtype, i, sc[0]);
}
