// Activations and the backward ops torch's autograd calls for them: each
// one core call (the core's *_BWD ops), so a step's backward stays one
// node per aten call.
#include "elementwise.h"

namespace ltt {

static void check_float(const at::Tensor &t, const char *op) {
    TORCH_CHECK(at::isFloatingType(t.scalar_type()), "\"", op, "\" not implemented for '", t.scalar_type(), "'");
}

// relu / relu_, hardtanh (ReLU6) and their backward.
static at::Tensor relu(const at::Tensor &self) {
    Val a(self, "relu");
    return wrap(lt_relu(a), "relu");
}
static at::Tensor &relu_(at::Tensor &self) {
    Val a(self, "relu_");
    check(lt_relu_(a), "relu_");
    return self;
}
static at::Tensor threshold_backward(const at::Tensor &g, const at::Tensor &self, const c10::Scalar &threshold) {
    Val dg(g, "threshold_backward"), x(self, "threshold_backward");
    return wrap(lt_threshold_backward(dg, x, num(threshold)), "threshold_backward");
}
static at::Tensor &threshold_backward_out(const at::Tensor &g, const at::Tensor &self, const c10::Scalar &threshold,
                                          at::Tensor &out) {
    Val dg(g, "threshold_backward.grad_input"), x(self, "threshold_backward.grad_input");
    return write_out(out, lt_threshold_backward(dg, x, num(threshold)), "threshold_backward.grad_input");
}

// hardtanh of an integer tensor stays integer, its bounds truncated (torch's clamp of the same dtype).
static lt_tensor *hardtanh_h(const at::Tensor &self, const c10::Scalar &lo, const c10::Scalar &hi, const char *op) {
    TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
    Val a(self, op);
    if (!at::isFloatingType(self.scalar_type())) return lt_clamp_int(a, (double)lo.toLong(), (double)hi.toLong());
    return lt_clamp(a, num(lo), num(hi));
}
static at::Tensor hardtanh(const at::Tensor &self, const c10::Scalar &lo, const c10::Scalar &hi) {
    return wrap(hardtanh_h(self, lo, hi, "hardtanh"), "hardtanh");
}
static at::Tensor &hardtanh_(at::Tensor &self, const c10::Scalar &lo, const c10::Scalar &hi) {
    if (!at::isFloatingType(self.scalar_type())) return write(self, hardtanh_h(self, lo, hi, "hardtanh_"), "hardtanh_");
    Val a(self, "hardtanh_");
    check(lt_clamp_(a, num(lo), num(hi)), "hardtanh_");
    return self;
}
static at::Tensor &hardtanh_out(const at::Tensor &self, const c10::Scalar &lo, const c10::Scalar &hi, at::Tensor &out) {
    return write_out(out, hardtanh_h(self, lo, hi, "hardtanh.out"), "hardtanh.out");
}
static at::Tensor hardtanh_backward(const at::Tensor &g, const at::Tensor &self, const c10::Scalar &lo,
                                   const c10::Scalar &hi) {
    Val dg(g, "hardtanh_backward"), x(self, "hardtanh_backward");
    return wrap(lt_hardtanh_backward(dg, x, num(lo), num(hi)), "hardtanh_backward");
}

// sigmoid / tanh: the core's forms; their backward reads the forward's output.
UNARY(sigmoid)
UNARY(tanh)

// silu, hardswish, hardsigmoid: floating tensors; the in-place forms write
// the new value through self (a rebind, no copy, for a plain tensor).
#define ACTIVATION(name)                                                                          \
    static at::Tensor name(const at::Tensor &self) {                                              \
        check_float(self, #name);                                                                 \
        Val a(self, #name);                                                                       \
        return wrap(lt_##name(a), #name);                                                         \
    }                                                                                             \
    static at::Tensor &name##_(at::Tensor &self) {                                                \
        check_float(self, #name "_");                                                             \
        Val a(self, #name "_");                                                                   \
        return write(self, lt_##name(a), #name "_");                                              \
    }                                                                                             \
    static at::Tensor &name##_out(const at::Tensor &self, at::Tensor &out) {                      \
        check_float(self, #name ".out");                                                          \
        Val a(self, #name ".out");                                                                \
        return write_out(out, lt_##name(a), #name ".out");                                        \
    }
ACTIVATION(silu)
ACTIVATION(hardswish)
ACTIVATION(hardsigmoid)

#define BACKWARD(name)                                                                             \
    static at::Tensor name##_backward(const at::Tensor &g, const at::Tensor &x) {                  \
        Val dg(g, #name "_backward"), v(x, #name "_backward");                                     \
        return wrap(lt_##name##_backward(dg, v), #name "_backward");                               \
    }
BACKWARD(silu)
BACKWARD(hardswish)
BACKWARD(hardsigmoid)
BACKWARD(sigmoid)
BACKWARD(tanh)

static bool tanh_form(c10::string_view approximate, const char *op) {
    TORCH_CHECK(approximate == "none" || approximate == "tanh", op, ": approximate argument must be either none or tanh.");
    return approximate == "tanh";
}
static at::Tensor gelu(const at::Tensor &self, c10::string_view approximate) {
    check_float(self, "GeluKernelImpl");
    Val a(self, "gelu");
    return wrap(lt_gelu(a, tanh_form(approximate, "gelu")), "gelu");
}
static at::Tensor &gelu_(at::Tensor &self, c10::string_view approximate) {
    check_float(self, "GeluKernelImpl");
    Val a(self, "gelu_");
    return write(self, lt_gelu(a, tanh_form(approximate, "gelu_")), "gelu_");
}
static at::Tensor &gelu_out(const at::Tensor &self, c10::string_view approximate, at::Tensor &out) {
    check_float(self, "GeluKernelImpl");
    Val a(self, "gelu.out");
    return write_out(out, lt_gelu(a, tanh_form(approximate, "gelu.out")), "gelu.out");
}
static at::Tensor gelu_backward(const at::Tensor &g, const at::Tensor &self, c10::string_view approximate) {
    Val dg(g, "gelu_backward"), x(self, "gelu_backward");
    return wrap(lt_gelu_backward(dg, x, tanh_form(approximate, "gelu_backward")), "gelu_backward");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("relu", TORCH_FN(relu));
    m.impl("relu_", TORCH_FN(relu_));
    m.impl("threshold_backward", TORCH_FN(threshold_backward));
    m.impl("threshold_backward.grad_input", TORCH_FN(threshold_backward_out));
    m.impl("hardtanh", TORCH_FN(hardtanh));
    m.impl("hardtanh_", TORCH_FN(hardtanh_));
    m.impl("hardtanh.out", TORCH_FN(hardtanh_out));
    m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward));
    m.impl("sigmoid", TORCH_FN(sigmoid));
    m.impl("sigmoid_", TORCH_FN(sigmoid_));
    m.impl("sigmoid.out", TORCH_FN(sigmoid_out));
    m.impl("tanh", TORCH_FN(tanh));
    m.impl("tanh_", TORCH_FN(tanh_));
    m.impl("tanh.out", TORCH_FN(tanh_out));
    m.impl("sigmoid_backward", TORCH_FN(sigmoid_backward));
    m.impl("tanh_backward", TORCH_FN(tanh_backward));
    m.impl("silu", TORCH_FN(silu));
    m.impl("silu_", TORCH_FN(silu_));
    m.impl("silu.out", TORCH_FN(silu_out));
    m.impl("silu_backward", TORCH_FN(silu_backward));
    m.impl("hardswish", TORCH_FN(hardswish));
    m.impl("hardswish_", TORCH_FN(hardswish_));
    m.impl("hardswish.out", TORCH_FN(hardswish_out));
    m.impl("hardswish_backward", TORCH_FN(hardswish_backward));
    m.impl("hardsigmoid", TORCH_FN(hardsigmoid));
    m.impl("hardsigmoid_", TORCH_FN(hardsigmoid_));
    m.impl("hardsigmoid.out", TORCH_FN(hardsigmoid_out));
    m.impl("hardsigmoid_backward", TORCH_FN(hardsigmoid_backward));
    m.impl("gelu", TORCH_FN(gelu));
    m.impl("gelu_", TORCH_FN(gelu_));
    m.impl("gelu.out", TORCH_FN(gelu_out));
    m.impl("gelu_backward", TORCH_FN(gelu_backward));
}

}  // namespace ltt
