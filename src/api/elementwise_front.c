/* The elementwise ops behind a front end's kernels (the PyTorch device,
 * python/_torch/elementwise.cpp): one node per call, through
 * api_elementwise like the ops of elementwise.c. */
#include "api.h"

lt_tensor *lt_add_scaled(lt_tensor *a, lt_tensor *b, double alpha) {
    lt_tensor *in[2] = {a, b};
    return api_elementwise("lt_add_scaled", LT_OP_ADD_SCALED, 2, in, 1, &alpha, NULL);
}
lt_tensor *lt_add_scaled_(lt_tensor *a, lt_tensor *b, double alpha) {
    lt_tensor *in[2] = {a, b};
    return api_elementwise("lt_add_scaled_", LT_OP_ADD_SCALED, 2, in, 1, &alpha, a);
}

/* Integral scalars: ADD_SCALAR ... nodes of an integer dtype (ir_integral_scalar). */
lt_tensor *lt_add_scalar_int(lt_tensor *a, int64_t s) {
    double d = (double)s;
    return api_elementwise_as("lt_add_scalar_int", LT_OP_ADD_SCALAR, 1, &a, 1, &d, NULL, 1);
}
lt_tensor *lt_mul_scalar_int(lt_tensor *a, int64_t s) {
    double d = (double)s;
    return api_elementwise_as("lt_mul_scalar_int", LT_OP_MUL_SCALAR, 1, &a, 1, &d, NULL, 1);
}
lt_tensor *lt_pow_scalar_int(lt_tensor *a, int64_t exponent) {
    double d = (double)exponent;
    if (a && a->magic == LT_HANDLE_MAGIC && !dtype_is_float((lt_dtype)a->dtype) && exponent < 0)
        return err_set(LT_ERR_ARG, "lt_pow_scalar_int: an integer tensor ('a', %s) to a negative integer power (%lld)",
                       dtype_name((lt_dtype)a->dtype), (long long)exponent);
    return api_elementwise_as("lt_pow_scalar_int", LT_OP_POW_SCALAR, 1, &a, 1, &d, NULL, 1);
}
lt_tensor *lt_clamp_int(lt_tensor *a, double lo, double hi) {
    double s[2] = {lo, hi};
    for (int i = 0; i < 2; i++)
        if (s[i] != floor(s[i]) && !isinf(s[i]))
            return err_set(LT_ERR_ARG, "lt_clamp_int: argument '%s' (%g) is neither an integer nor infinite",
                           i ? "hi" : "lo", s[i]);
    return api_elementwise_as("lt_clamp_int", LT_OP_CLAMP, 1, &a, 2, s, NULL, 1);
}

#define CMP_SCALAR(name, OPN)                                                                 \
    lt_tensor *lt_##name##_scalar(lt_tensor *a, double s) {                                   \
        return api_elementwise("lt_" #name "_scalar", LT_OP_##OPN##_SCALAR, 1, &a, 1, &s, NULL); \
    }
CMP_SCALAR(eq, EQ) CMP_SCALAR(ne, NE) CMP_SCALAR(lt, LT) CMP_SCALAR(le, LE) CMP_SCALAR(gt, GT) CMP_SCALAR(ge, GE)

lt_tensor *lt_masked_fill(lt_tensor *a, lt_tensor *mask, double value) {
    lt_tensor *in[2] = {a, mask};
    return api_elementwise("lt_masked_fill", LT_OP_MASKED_FILL, 2, in, 1, &value, NULL);
}
lt_tensor *lt_sign(lt_tensor *a) { return api_elementwise("lt_sign", LT_OP_SIGN, 1, &a, 0, NULL, NULL); }

/* Activations take floating tensors only, as torch's kernels. */
static lt_tensor *activation(const char *fn, int op, lt_tensor *x) {
    if (x && x->magic == LT_HANDLE_MAGIC && !dtype_is_float((lt_dtype)x->dtype))
        return err_set(LT_ERR_DTYPE, "%s: argument 'a' must be a floating dtype, got %s", fn,
                       dtype_name((lt_dtype)x->dtype));
    return api_elementwise(fn, op, 1, &x, 0, NULL, NULL);
}
lt_tensor *lt_silu(lt_tensor *a) { return activation("lt_silu", LT_OP_SILU, a); }
lt_tensor *lt_hardswish(lt_tensor *a) { return activation("lt_hardswish", LT_OP_HARDSWISH, a); }
lt_tensor *lt_hardsigmoid(lt_tensor *a) { return activation("lt_hardsigmoid", LT_OP_HARDSIGMOID, a); }

#define BACKWARD(name, OPN)                                                                   \
    lt_tensor *lt_##name##_backward(lt_tensor *g, lt_tensor *x) {                             \
        lt_tensor *in[2] = {g, x};                                                            \
        return api_elementwise("lt_" #name "_backward", LT_OP_##OPN##_BWD, 2, in, 0, NULL, NULL); \
    }
BACKWARD(silu, SILU) BACKWARD(hardswish, HARDSWISH) BACKWARD(hardsigmoid, HARDSIGMOID)
BACKWARD(sigmoid, SIGMOID) BACKWARD(tanh, TANH)

lt_tensor *lt_threshold_backward(lt_tensor *g, lt_tensor *x, double threshold) {
    lt_tensor *in[2] = {g, x};
    return api_elementwise("lt_threshold_backward", LT_OP_THRESHOLD_BWD, 2, in, 1, &threshold, NULL);
}
lt_tensor *lt_hardtanh_backward(lt_tensor *g, lt_tensor *x, double lo, double hi) {
    lt_tensor *in[2] = {g, x};
    double s[2] = {lo, hi};
    return api_elementwise("lt_hardtanh_backward", LT_OP_HARDTANH_BWD, 2, in, 2, s, NULL);
}

lt_tensor *lt_div_trunc(lt_tensor *a, lt_tensor *b) {
    lt_tensor *in[2] = {a, b};
    return api_elementwise("lt_div_trunc", LT_OP_DIV_TRUNC, 2, in, 0, NULL, NULL);
}
lt_tensor *lt_div_floor(lt_tensor *a, lt_tensor *b) {
    lt_tensor *in[2] = {a, b};
    return api_elementwise("lt_div_floor", LT_OP_DIV_FLOOR, 2, in, 0, NULL, NULL);
}

/* GELU_BWD (nn_gelu_backward, what lt_gelu's autograd records) for a front end. */
lt_tensor *lt_gelu_backward(lt_tensor *g, lt_tensor *x, bool tanh_form) {
    lt_tensor *in[2] = {g, x};
    double s = tanh_form;
    return api_elementwise("lt_gelu_backward", LT_OP_GELU_BWD, 2, in, 1, &s, NULL);
}
