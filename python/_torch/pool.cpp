// Pooling: aten's max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d
// and their backward ops, as the core's pooling ops with PyTorch's options
// (ceil_mode, count_include_pad, divisor_override). The indices output is
// its own node (MAX_POOL2D_INDICES), computed only if something reads it:
// the backward recomputes each window's argmax from the input, as the
// core's does. Dilated max pooling runs through the counted CPU fallback.
#include "bridge.h"

#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>

namespace ltt {
namespace {

// kernel_size / stride / padding as torch's pooling reads them: one value
// for both dims, an empty stride meaning the kernel.
struct Win {
    int64_t k[2], s[2], p[2];
};

Win win(c10::IntArrayRef kernel, c10::IntArrayRef stride, c10::IntArrayRef padding, const char *op) {
    TORCH_CHECK(kernel.size() == 1 || kernel.size() == 2, "lazytensor: ", op,
                ": kernel_size must be a single int or a tuple of two ints");
    TORCH_CHECK(stride.size() <= 2 && padding.size() >= 1 && padding.size() <= 2, "lazytensor: ", op,
                ": stride and padding must be a single int or a tuple of two ints");
    Win w;
    for (size_t i = 0; i < 2; i++) {
        w.k[i] = kernel[kernel.size() == 1 ? 0 : i];
        w.s[i] = stride.empty() ? w.k[i] : stride[stride.size() == 1 ? 0 : i];
        w.p[i] = padding[padding.size() == 1 ? 0 : i];
    }
    return w;
}

// The backward ops take 4-d tensors; (C, H, W) inputs pool as (1, C, H, W).
lt_tensor *batched(lt_tensor *h, bool unbatched, Own &keep, const char *op) {
    if (!unbatched) return h;
    keep.h = check(lt_unsqueeze(h, 0), op);
    return keep.h;
}

at::Tensor unbatch(lt_tensor *h, bool unbatched, const char *op) {
    if (!unbatched) return wrap(h, op);
    Own y(h);
    return wrap(check(lt_squeeze(y, 0), op), op);
}

bool dilated(c10::IntArrayRef dilation) {
    for (int64_t d : dilation)
        if (d != 1) return true;
    return false;
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor &self, c10::IntArrayRef kernel_size,
                                                           c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                           c10::IntArrayRef dilation, bool ceil_mode) {
    static const char op[] = "max_pool2d_with_indices";
    if (dilated(dilation))
        return at::native::call_fallback_fn<&ltt::fallback, ATEN_OP(max_pool2d_with_indices)>::call(
            self, kernel_size, stride, padding, dilation, ceil_mode);
    Win w = win(kernel_size, stride, padding, op);
    Val x(self, op);
    at::Tensor y = wrap(lt_max_pool2d_ex(x, w.k, w.s, w.p, ceil_mode), op);
    return std::make_tuple(y, wrap(lt_max_pool2d_indices(x, w.k, w.s, w.p, ceil_mode), op));
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor &grad_output, const at::Tensor &self,
                                            c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                                            c10::IntArrayRef padding, c10::IntArrayRef dilation, bool ceil_mode,
                                            const at::Tensor &indices) {
    static const char op[] = "max_pool2d_with_indices_backward";
    if (dilated(dilation))
        return at::native::call_fallback_fn<&ltt::fallback, ATEN_OP(max_pool2d_with_indices_backward)>::call(
            grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
    Win w = win(kernel_size, stride, padding, op);
    bool u = self.dim() == 3;
    Val g(grad_output, op), x(self, op);
    Own kg, kx;
    return unbatch(lt_max_pool2d_backward(batched(g, u, kg, op), batched(x, u, kx, op), w.k, w.s, w.p, ceil_mode), u,
                   op);
}

int64_t divisor(c10::optional<int64_t> d, const char *op) {
    TORCH_CHECK(!d.has_value() || *d != 0, "lazytensor: ", op, ": divisor must be not zero");
    return d.value_or(0);
}

at::Tensor avg_pool2d(const at::Tensor &self, c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      c10::optional<int64_t> divisor_override) {
    static const char op[] = "avg_pool2d";
    Win w = win(kernel_size, stride, padding, op);
    Val x(self, op);
    return wrap(lt_avg_pool2d_ex(x, w.k, w.s, w.p, ceil_mode, count_include_pad, divisor(divisor_override, op)), op);
}

at::Tensor avg_pool2d_backward(const at::Tensor &grad_output, const at::Tensor &self, c10::IntArrayRef kernel_size,
                               c10::IntArrayRef stride, c10::IntArrayRef padding, bool ceil_mode,
                               bool count_include_pad, c10::optional<int64_t> divisor_override) {
    static const char op[] = "avg_pool2d_backward";
    Win w = win(kernel_size, stride, padding, op);
    bool u = self.dim() == 3;
    int64_t in_shape[4] = {1, 1, 1, 1};
    for (int64_t i = 0; i < self.dim() && i < 4; i++) in_shape[i + (u ? 1 : 0)] = self.size(i);
    Val g(grad_output, op);
    Own kg;
    return unbatch(lt_avg_pool2d_backward(batched(g, u, kg, op), in_shape, w.k, w.s, w.p, ceil_mode,
                                          count_include_pad, divisor(divisor_override, op)),
                   u, op);
}

at::Tensor adaptive_avg_pool2d(const at::Tensor &self, c10::SymIntArrayRef output_size) {
    static const char op[] = "_adaptive_avg_pool2d";
    c10::IntArrayRef os = c10::asIntArrayRefSlow(output_size);
    TORCH_CHECK(os.size() == 2, "lazytensor: ", op, ": output_size must be 2");
    int64_t hw[2] = {os[0], os[1]};
    Val x(self, op);
    return wrap(lt_adaptive_avg_pool2d(x, hw), op);
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor &grad_output, const at::Tensor &self) {
    static const char op[] = "_adaptive_avg_pool2d_backward";
    bool u = self.dim() == 3;
    int64_t in_shape[4] = {1, 1, 1, 1};
    for (int64_t i = 0; i < self.dim() && i < 4; i++) in_shape[i + (u ? 1 : 0)] = self.size(i);
    Val g(grad_output, op);
    Own kg;
    return unbatch(lt_adaptive_avg_pool2d_backward(batched(g, u, kg, op), in_shape), u, op);
}

// aten::adaptive_avg_pool2d above autograd. torch's own (CompositeImplicit)
// computes a 1x1 output as mean over H and W, whose backward is expand and
// div: kernels that read and write plain NCHW, so a ResNet's last stage lost
// the channel-blocked layout of its convolutions (src/backend/cpu/layout.c)
// and the device's ResNet-50 step ran ~20% over the CLI's. Here every size
// is the primitive _adaptive_avg_pool2d, whose backward is the core's one
// kernel, as in the CLI's graph. Same values: both are the window means.
at::Tensor adaptive_avg_pool2d_autograd(const at::Tensor &self, c10::SymIntArrayRef output_size) {
    return at::_ops::_adaptive_avg_pool2d::call(self, output_size);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
    m.impl("adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d_autograd));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices));
    m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_with_indices_backward));
    m.impl("avg_pool2d", TORCH_FN(avg_pool2d));
    m.impl("avg_pool2d_backward", TORCH_FN(avg_pool2d_backward));
    m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
    m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
}

}  // namespace ltt
