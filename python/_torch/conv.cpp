// Convolution: aten's convolution and convolution_backward (what F.conv1d /
// F.conv2d and nn.Conv*d reach, grouped and depthwise included) as
// lt_conv2d and its two backward ops. A 1-d convolution is a 2-d one over
// a height of 1 (views, no node). Transposed and 3-d convolutions have no
// core op yet: they run through the counted CPU fallback.
#include "bridge.h"

#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>

namespace ltt {
namespace {

// conv geometry in the core's 2-d form; conv1d puts the 1-d values in W.
struct Geom {
    int64_t stride[2], padding[2], dilation[2];
    bool one_d;
};

int64_t pick(c10::IntArrayRef v, size_t i, int64_t def) {
    if (v.empty()) return def;
    return v.size() == 1 ? v[0] : v[i];
}

Geom geom(int64_t spatial, c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation) {
    Geom g;
    g.one_d = spatial == 1;
    for (size_t i = 0; i < 2; i++) {
        if (g.one_d && i == 0) {
            g.stride[0] = 1, g.padding[0] = 0, g.dilation[0] = 1;
            continue;
        }
        size_t k = g.one_d ? 0 : i;
        g.stride[i] = pick(stride, k, 1);
        g.padding[i] = pick(padding, k, 0);
        g.dilation[i] = pick(dilation, k, 1);
    }
    return g;
}

// (N, C, L) -> (N, C, 1, L) for a 1-d convolution; the handle itself otherwise.
lt_tensor *as_2d(lt_tensor *h, bool one_d, Own &keep, const char *op) {
    if (!one_d) return h;
    keep.h = check(lt_unsqueeze(h, 2), op);
    return keep.h;
}

at::Tensor wrap_1d(lt_tensor *h, bool one_d, const char *op) {
    if (!one_d) return wrap(h, op);
    Own y(h);
    return wrap(check(lt_squeeze(y, 2), op), op);
}

// Integer inputs too: the core sums exactly and wraps, as torch's CPU kernel
// (they have no backward: integer tensors take no gradient).
bool supported(const at::Tensor &input, const at::Tensor &weight, bool transposed) {
    c10::ScalarType t = input.scalar_type();
    bool integer = t == at::kLong || t == at::kInt || t == at::kByte;
    return !transposed && (weight.dim() == 4 || weight.dim() == 3) && input.dim() == weight.dim() &&
           (at::isFloatingType(t) || integer);
}

at::Tensor conv_fallback(const at::Tensor &input, const at::Tensor &weight, const c10::optional<at::Tensor> &bias,
                         c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                         bool transposed, c10::IntArrayRef output_padding, int64_t groups) {
    return at::native::call_fallback_fn<&ltt::fallback, ATEN_OP(convolution)>::call(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
}

at::Tensor convolution(const at::Tensor &input, const at::Tensor &weight, const c10::optional<at::Tensor> &bias,
                       c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups) {
    static const char op[] = "convolution";
    if (!supported(input, weight, transposed))
        return conv_fallback(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
    c10::ScalarType t = input.scalar_type();
    bool dilated = false;
    for (int64_t d : dilation) dilated |= d != 1;
    // torch's CPU has no dilated kernel for int32 / uint8: its error
    TORCH_CHECK(!dilated || (t != at::kInt && t != at::kByte), "\"slow_conv_dilated<>\" not implemented for '",
                t == at::kInt ? "Int" : "Byte", "'");
    Geom g = geom(weight.dim() - 2, stride, padding, dilation);
    Val x(input, op), w(weight, op), b(bias, op);
    Own kx, kw;
    lt_tensor *x2 = as_2d(x, g.one_d, kx, op), *w2 = as_2d(w, g.one_d, kw, op);
    return wrap_1d(lt_conv2d(x2, w2, b, g.stride, g.padding, g.dilation, groups), g.one_d, op);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor &grad_output, const at::Tensor &input, const at::Tensor &weight,
    at::OptionalSymIntArrayRef bias_sizes, c10::IntArrayRef stride, c10::IntArrayRef padding,
    c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
    static const char op[] = "convolution_backward";
    TORCH_CHECK(supported(input, weight, transposed), "lazytensor: ", op,
                ": only non-transposed 1-d and 2-d floating convolutions have a device backward");
    Geom g = geom(weight.dim() - 2, stride, padding, dilation);
    Val go(grad_output, op), x(input, op), w(weight, op);
    Own kg, kx, kw;
    lt_tensor *g2 = as_2d(go, g.one_d, kg, op);
    at::Tensor dx, dw, db;
    if (output_mask[0]) {
        lt_tensor *w2 = as_2d(w, g.one_d, kw, op);
        dx = wrap_1d(lt_conv2d_backward_input(g2, w2, lt_shape(as_2d(x, g.one_d, kx, op)), g.stride, g.padding,
                                              g.dilation, groups),
                     g.one_d, op);
    }
    if (output_mask[1]) {
        lt_tensor *x2 = kx.h ? kx.h : as_2d(x, g.one_d, kx, op);
        int64_t ws[4];
        for (int i = 0; i < 4; i++) ws[i] = 1;
        if (g.one_d) ws[0] = weight.size(0), ws[1] = weight.size(1), ws[3] = weight.size(2);
        else
            for (int i = 0; i < 4; i++) ws[i] = weight.size(i);
        dw = wrap_1d(lt_conv2d_backward_weight(g2, x2, ws, g.stride, g.padding, g.dilation, groups), g.one_d, op);
    }
    if (output_mask[2]) {
        int axes[3] = {0, 2, 3};
        db = wrap(lt_sum(g2, 3, axes, false), op);
    }
    return std::make_tuple(dx, dw, db);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("convolution", TORCH_FN(convolution));
    m.impl("convolution_backward", TORCH_FN(convolution_backward));
}

}  // namespace ltt
