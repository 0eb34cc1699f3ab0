// Losses: nll_loss (the second half of F.cross_entropy) and mse_loss, their
// backward ops and .out forms. Class weights have no core op: such calls
// take the counted CPU fallback.
#include "bridge.h"

#include <ATen/native/CPUFallback.h>
#include <ATen/ops/mse_loss_backward_ops.h>
#include <ATen/ops/nll_loss_backward_ops.h>
#include <ATen/ops/nll_loss_forward_ops.h>

namespace ltt {
namespace {

bool has(const c10::optional<at::Tensor> &t) { return t.has_value() && t->defined(); }

// torch's Reduction enum (0 none, 1 mean, 2 sum) is the core's.
void nll_h(const at::Tensor &self, const at::Tensor &target, int64_t reduction, int64_t ignore_index,
           lt_tensor **out, lt_tensor **total_weight, const char *op) {
    Val x(self, op), t(target, op);
    *out = check(lt_nll_loss_forward(x, t, (int)reduction, ignore_index, total_weight), op);
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor &self, const at::Tensor &target,
                                                    const c10::optional<at::Tensor> &weight, int64_t reduction,
                                                    int64_t ignore_index) {
    if (has(weight))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::nll_loss_forward>::call(self, target, weight,
                                                                                             reduction, ignore_index);
    lt_tensor *out, *tw;
    nll_h(self, target, reduction, ignore_index, &out, &tw, "nll_loss_forward");
    at::Tensor o = wrap(out, "nll_loss_forward");
    return std::make_tuple(o, wrap(tw, "nll_loss_forward"));
}

std::tuple<at::Tensor &, at::Tensor &> nll_loss_forward_out(const at::Tensor &self, const at::Tensor &target,
                                                            const c10::optional<at::Tensor> &weight,
                                                            int64_t reduction, int64_t ignore_index,
                                                            at::Tensor &output, at::Tensor &total_weight) {
    if (has(weight))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::nll_loss_forward_output>::call(
            self, target, weight, reduction, ignore_index, output, total_weight);
    lt_tensor *out, *tw;
    nll_h(self, target, reduction, ignore_index, &out, &tw, "nll_loss_forward.output");
    Own w(tw);
    out_of(output, out, "nll_loss_forward.output");
    assign_out(total_weight, w, "nll_loss_forward.output");
    return std::forward_as_tuple(output, total_weight);
}

lt_tensor *nll_bwd_h(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target, int64_t reduction,
                     int64_t ignore_index, const at::Tensor &total_weight, const char *op) {
    // total_weight only divides a mean
    Val g(grad, op), x(self, op), t(target, op),
        w(reduction == 1 ? c10::optional<at::Tensor>(total_weight) : c10::nullopt, op);
    return check(lt_nll_loss_backward(g, x, t, w, (int)reduction, ignore_index), op);
}

at::Tensor nll_loss_backward(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                             const c10::optional<at::Tensor> &weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor &total_weight) {
    if (has(weight))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::nll_loss_backward>::call(
            grad, self, target, weight, reduction, ignore_index, total_weight);
    return wrap(nll_bwd_h(grad, self, target, reduction, ignore_index, total_weight, "nll_loss_backward"),
                "nll_loss_backward");
}

at::Tensor &nll_loss_backward_out(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                                  const c10::optional<at::Tensor> &weight, int64_t reduction, int64_t ignore_index,
                                  const at::Tensor &total_weight, at::Tensor &grad_input) {
    if (has(weight))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::nll_loss_backward_grad_input>::call(
            grad, self, target, weight, reduction, ignore_index, total_weight, grad_input);
    out_of(grad_input,
           nll_bwd_h(grad, self, target, reduction, ignore_index, total_weight, "nll_loss_backward.grad_input"),
           "nll_loss_backward.grad_input");
    return grad_input;
}

// ---- mse_loss ----------------------------------------------------------------
lt_tensor *mse_h(const at::Tensor &self, const at::Tensor &target, int64_t reduction, const char *op) {
    Val a(self, op), b(target, op);
    return check(lt_mse_loss_ex(a, b, (int)reduction), op);
}

at::Tensor mse_loss(const at::Tensor &self, const at::Tensor &target, int64_t reduction) {
    return wrap(mse_h(self, target, reduction, "mse_loss"), "mse_loss");
}

at::Tensor &mse_loss_out(const at::Tensor &self, const at::Tensor &target, int64_t reduction, at::Tensor &out) {
    out_of(out, mse_h(self, target, reduction, "mse_loss.out"), "mse_loss.out");
    return out;
}

// The core's backward takes a and b of one shape and dtype (F.mse_loss
// broadcasts before it calls aten); anything else is rare and falls back.
bool mse_bwd_native(const at::Tensor &self, const at::Tensor &target) {
    return self.sizes().equals(target.sizes()) && self.scalar_type() == target.scalar_type();
}

lt_tensor *mse_bwd_h(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target, int64_t reduction,
                     const char *op) {
    Val g(grad, op), a(self, op), b(target, op);
    return check(lt_mse_loss_backward(g, a, b, (int)reduction), op);
}

at::Tensor mse_loss_backward(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                             int64_t reduction) {
    if (!mse_bwd_native(self, target))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::mse_loss_backward>::call(grad, self, target,
                                                                                              reduction);
    return wrap(mse_bwd_h(grad, self, target, reduction, "mse_loss_backward"), "mse_loss_backward");
}

at::Tensor &mse_loss_backward_out(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                                  int64_t reduction, at::Tensor &grad_input) {
    if (!mse_bwd_native(self, target))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::mse_loss_backward_grad_input>::call(
            grad, self, target, reduction, grad_input);
    out_of(grad_input, mse_bwd_h(grad, self, target, reduction, "mse_loss_backward.grad_input"),
           "mse_loss_backward.grad_input");
    return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
    m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
    m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
    m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
    m.impl("mse_loss", TORCH_FN(mse_loss));
    m.impl("mse_loss.out", TORCH_FN(mse_loss_out));
    m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
    m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_loss_backward_out));
}

}  // namespace ltt
