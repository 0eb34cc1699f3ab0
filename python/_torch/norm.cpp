// Normalization: aten's native_batch_norm / native_layer_norm and their
// backward ops, as the core's batch norm (BN_STATS + BN_APPLY, running
// stats updated in place) and layer norm with their exact backward ops.
//
// save_mean of batch norm is a view of the core's (2, C) batch statistics
// [mean; biased var] (its storage's base IS them), so the backward hands
// the core the very statistics of the forward; save_invstd is what torch
// defines, 1/sqrt(var + eps). The core's layer norm backward recomputes the
// row statistics from x with eps, which torch does not pass to the
// backward: the forward leaves it on the mean output's Store.
#include "bridge.h"

#include <ATen/ops/as_strided_native.h>

namespace ltt {
namespace {

// Row r of a wrapped (2, ...) tensor, as a torch view sharing its storage.
at::Tensor row(const at::Tensor &t, int64_t r) {
    std::vector<int64_t> size(t.sizes().begin() + 1, t.sizes().end()), stride(t.strides().begin() + 1, t.strides().end());
    return at::native::as_strided_tensorimpl(t, size, stride, r * t.stride(0));
}

at::Tensor empty0(c10::ScalarType st, const char *op) {
    int64_t zero = 0;
    return wrap(lt_zeros(lt_type(st, op), 1, &zero), op);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor &input, const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
    const c10::optional<at::Tensor> &running_mean, const c10::optional<at::Tensor> &running_var, bool training,
    double momentum, double eps) {
    static const char op[] = "native_batch_norm";
    Val x(input, op), w(weight, op), b(bias, op), rm(running_mean, op), rv(running_var, op);
    lt_tensor *stats = nullptr;
    at::Tensor y = wrap(lt_batch_norm_ex(x, w, b, rm, rv, training, momentum, eps, &stats), op);
    if (!stats) {  // evaluation with running stats: torch's CPU kernel returns empty save_mean / save_invstd
        c10::ScalarType st = running_mean.has_value() ? running_mean->scalar_type() : input.scalar_type();
        return std::make_tuple(y, empty0(st, op), empty0(st, op));
    }
    at::Tensor s = wrap(stats, op);
    Own var(check(lt_select(stats, 0, 1), op)), ve(check(lt_add_scalar(var, eps), op));
    return std::make_tuple(y, row(s, 0), wrap(lt_rsqrt(ve), op));
}

// The (2, C) batch statistics behind save_mean, if it is native_batch_norm's.
lt_tensor *stats_of(const c10::optional<at::Tensor> &save_mean, int64_t C) {
    if (!save_mean.has_value() || !save_mean->defined()) return nullptr;
    Store *s = store_of(*save_mean);
    if (!s || !s->base || save_mean->storage_offset() != 0 || save_mean->dim() != 1) return nullptr;
    lt_tensor *b = s->base;
    if (lt_ndim(b) != 2 || lt_shape(b)[0] != 2 || lt_shape(b)[1] != C) return nullptr;
    return b;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor &grad_out, const at::Tensor &input, const c10::optional<at::Tensor> &weight,
    const c10::optional<at::Tensor> &running_mean, const c10::optional<at::Tensor> &running_var,
    const c10::optional<at::Tensor> &save_mean, const c10::optional<at::Tensor> &save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask) {
    static const char op[] = "native_batch_norm_backward";
    Val g(grad_out, op), x(input, op), w(weight, op);
    bool have_running = running_mean.has_value() && running_mean->defined();
    lt_tensor *stats = nullptr;
    Own recomputed;
    if (train || !have_running) {  // the forward used batch statistics
        stats = stats_of(save_mean, input.size(1));
        if (!stats) {  // save_mean from elsewhere: the statistics of input again (the same kernel, the same values)
            Own y(lt_batch_norm_ex(x, nullptr, nullptr, nullptr, nullptr, true, 0.0, eps, &recomputed.h));
            stats = check(recomputed.h, op);
        }
    }
    Val rm(stats ? c10::optional<at::Tensor>() : running_mean, op), rv(stats ? c10::optional<at::Tensor>() : running_var, op);
    at::Tensor dx, dw, db;
    if (output_mask[0]) dx = wrap(lt_batch_norm_backward_input(g, x, w, stats, rm, rv, eps), op);
    if (output_mask[1] || output_mask[2]) {
        at::Tensor r = wrap(lt_batch_norm_backward_params(g, x, stats, rm, rv, eps), op);
        if (output_mask[1]) dw = row(r, 0);
        if (output_mask[2]) db = row(r, 1);
    }
    return std::make_tuple(dx, dw, db);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor &input,
                                                                 c10::SymIntArrayRef normalized_shape,
                                                                 const c10::optional<at::Tensor> &weight,
                                                                 const c10::optional<at::Tensor> &bias, double eps) {
    static const char op[] = "native_layer_norm";
    int nnorm = (int)normalized_shape.size();
    c10::IntArrayRef ns = c10::asIntArrayRefSlow(normalized_shape);
    TORCH_CHECK(nnorm >= 1 && nnorm <= input.dim() && input.sizes().slice(input.dim() - nnorm).equals(ns),
                "lazytensor: ", op, ": normalized_shape ", ns, " is not the trailing shape of the input ", input.sizes());
    Val x(input, op), w(weight, op), b(bias, op);
    at::Tensor y = wrap(lt_layer_norm(x, nnorm, w, b, eps), op);
    at::Tensor s = wrap(lt_layer_norm_stats(x, nnorm, eps), op);
    store_of(s)->eps = eps;
    return std::make_tuple(y, row(s, 0), row(s, 1));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor &grad_out, const at::Tensor &input, c10::SymIntArrayRef normalized_shape, const at::Tensor &mean,
    const at::Tensor &rstd, const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
    std::array<bool, 3> output_mask) {
    static const char op[] = "native_layer_norm_backward";
    Store *s = store_of(mean);
    TORCH_CHECK(s && !std::isnan(s->eps), "lazytensor: ", op,
                ": 'mean' must be the output of native_layer_norm on the lazytensor device (its eps is not passed)");
    int nnorm = (int)normalized_shape.size();
    Val g(grad_out, op), x(input, op), w(weight, op);
    at::Tensor dx, dw, db;
    if (output_mask[0]) dx = wrap(lt_layer_norm_backward_input(g, x, w, nnorm, s->eps), op);
    if (output_mask[1] || output_mask[2]) {
        at::Tensor r = wrap(lt_layer_norm_backward_params(g, x, nnorm, s->eps), op);
        if (output_mask[1] && weight.has_value() && weight->defined()) dw = row(r, 0);
        if (output_mask[2] && bias.has_value() && bias->defined()) db = row(r, 1);
    }
    return std::make_tuple(dx, dw, db);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("native_batch_norm", TORCH_FN(native_batch_norm));
    m.impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
    m.impl("native_layer_norm", TORCH_FN(native_layer_norm));
    m.impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
}

}  // namespace ltt
