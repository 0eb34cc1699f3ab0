// Matrix products: mm, bmm, addmm, baddbmm, dot, mv (torch.matmul and
// F.linear are composites of these). Integer products are the core's exact
// int64 arithmetic, as torch's CPU kernels.
//
// F.linear on 2-D input is addmm(bias, x, w.t()) and on more dims
// matmul(x, w.t()) (an mm of a reshape) + bias: w.t() arrives as a
// transposed view of the weight's storage. The core's LINEAR reads its
// weight transposed in place, so a float product whose right operand is a
// transposed contiguous tensor is lowered to LINEAR over the weight itself:
// no strided copy of the weight per step.
#include "bridge.h"

#include <ATen/native/CPUFallback.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/baddbmm_ops.h>

namespace ltt {
namespace {

void check_same_dtype(const at::Tensor &a, const at::Tensor &b, const char *what) {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected ", what, " to have the same dtype, but got: ",
                a.scalar_type(), " != ", b.scalar_type());
}

// b (K, O) is the transpose of a contiguous (O, K) tensor: LINEAR takes that
// tensor as its weight.
bool linear_weight(const at::Tensor &a, const at::Tensor &b) {
    return b.dim() == 2 && at::isFloatingType(a.scalar_type()) && a.scalar_type() == b.scalar_type() &&
           !b.is_contiguous() && b.t().is_contiguous();
}

// a (N, K) @ b (K, O) [+ bias (O)], bias NULL or 1-D.
lt_tensor *mm_h(const at::Tensor &a, const at::Tensor &b, const at::Tensor *bias, const char *op) {
    Val va(a, op);
    if (linear_weight(a, b)) {
        Val w(b.t(), op);
        c10::optional<at::Tensor> ob;
        if (bias) ob = *bias;
        Val vb(ob, op);
        return check(lt_linear(va, w, vb), op);
    }
    Val vb(b, op);
    Own p(check(lt_matmul(va, vb), op));
    if (!bias) return p.release();
    Val vbias(*bias, op);
    return check(lt_add(vbias, p), op);
}

at::Tensor mm(const at::Tensor &a, const at::Tensor &b) {
    TORCH_CHECK(a.dim() == 2, "self must be a matrix");
    TORCH_CHECK(b.dim() == 2, "mat2 must be a matrix");
    check_same_dtype(a, b, "self and mat2");
    return wrap(mm_h(a, b, nullptr, "mm"), "mm");
}

at::Tensor &mm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
    TORCH_CHECK(a.dim() == 2, "self must be a matrix");
    TORCH_CHECK(b.dim() == 2, "mat2 must be a matrix");
    check_same_dtype(a, b, "self and mat2");
    return out_of(out, mm_h(a, b, nullptr, "mm.out"), "mm.out");
}

lt_tensor *bmm_h(const at::Tensor &a, const at::Tensor &b, const char *op) {
    TORCH_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
    TORCH_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
    TORCH_CHECK(a.size(0) == b.size(0), "batch1 and batch2 must have same number of batches, got ", a.size(0),
                " and ", b.size(0));
    check_same_dtype(a, b, "batch1 and batch2");
    Val va(a, op), vb(b, op);
    return check(lt_matmul(va, vb), op);
}

at::Tensor bmm(const at::Tensor &a, const at::Tensor &b) { return wrap(bmm_h(a, b, "bmm"), "bmm"); }
at::Tensor &bmm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
    return out_of(out, bmm_h(a, b, "bmm.out"), "bmm.out");
}

bool is_one(const at::Scalar &s) { return s.isIntegral(true) ? s.toLong() == 1 : s.toDouble() == 1.0; }
bool is_zero(const at::Scalar &s) { return s.isIntegral(true) ? s.toLong() == 0 : s.toDouble() == 0.0; }

// beta self + alpha product, torch's rules: beta 0 ignores self (its NaNs
// too); self broadcasts to the product's shape, never the other way.
// Scalars are runtime parameters of the core (MUL_SCALAR attributes).
lt_tensor *combine(const at::Tensor &self, lt_tensor *prod, const at::Scalar &beta, const at::Scalar &alpha,
                   const char *op) {
    Own p(prod);
    std::vector<int64_t> ps = shape_of(prod);
    TORCH_CHECK(at::is_expandable_to(self.sizes(), ps), op, ": self of shape ", self.sizes(),
                " cannot be broadcast to the product's ", c10::IntArrayRef(ps));
    Own ap(is_one(alpha) ? nullptr : check(lt_mul_scalar(p, num(alpha)), op));
    lt_tensor *a = ap.h ? ap.h : p.h;
    if (is_zero(beta)) {
        if (ap.h) return ap.release();
        return p.release();
    }
    Val vs(self, op);
    Own bs(is_one(beta) ? nullptr : check(lt_mul_scalar(vs, num(beta)), op));
    return check(lt_add(bs.h ? bs.h : vs.get(), a), op);
}

// Integers with another alpha or beta: the core's scalar multiply makes
// float32 of an integer tensor (Python's rule), torch keeps integers.
bool native_scales(const at::Tensor &self, const at::Scalar &beta, const at::Scalar &alpha) {
    return at::isFloatingType(self.scalar_type()) || ((is_one(beta) || is_zero(beta)) && is_one(alpha));
}

lt_tensor *addmm_h(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                   const at::Scalar &alpha, const char *op) {
    TORCH_CHECK(m1.dim() == 2, "mat1 must be a matrix, got ", m1.dim(), "-D tensor");
    TORCH_CHECK(m2.dim() == 2, "mat2 must be a matrix, got ", m2.dim(), "-D tensor");
    TORCH_CHECK(m1.size(1) == m2.size(0), "mat1 and mat2 shapes cannot be multiplied (", m1.size(0), "x", m1.size(1),
                " and ", m2.size(0), "x", m2.size(1), ")");
    check_same_dtype(m1, m2, "mat1 and mat2");
    check_same_dtype(self, m2, "self and mat2");
    // F.linear's case: one LINEAR node with its bias
    if (is_one(beta) && is_one(alpha) && self.dim() == 1 && self.size(0) == m2.size(1) && linear_weight(m1, m2))
        return mm_h(m1, m2, &self, op);
    return combine(self, mm_h(m1, m2, nullptr, op), beta, alpha, op);
}

at::Tensor addmm(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                 const at::Scalar &alpha) {
    if (!native_scales(self, beta, alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::addmm>::call(self, m1, m2, beta, alpha);
    return wrap(addmm_h(self, m1, m2, beta, alpha, "addmm"), "addmm");
}

at::Tensor &addmm_out(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                      const at::Scalar &alpha, at::Tensor &out) {
    if (!native_scales(self, beta, alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::addmm_out>::call(self, m1, m2, beta, alpha, out);
    return out_of(out, addmm_h(self, m1, m2, beta, alpha, "addmm.out"), "addmm.out");
}

at::Tensor &addmm_(at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                   const at::Scalar &alpha) {
    if (!native_scales(self, beta, alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::addmm_>::call(self, m1, m2, beta, alpha);
    TORCH_CHECK(self.dim() == 2 && self.size(0) == m1.size(0) && self.size(1) == m2.size(1), "addmm_: self of shape ",
                self.sizes(), " is not the product's (", m1.size(0), ", ", m2.size(1), ")");
    Own r(addmm_h(self, m1, m2, beta, alpha, "addmm_"));
    assign(self, r, "addmm_");
    return self;
}

lt_tensor *baddbmm_h(const at::Tensor &self, const at::Tensor &b1, const at::Tensor &b2, const at::Scalar &beta,
                     const at::Scalar &alpha, const char *op) {
    TORCH_CHECK(b1.size(2) == b2.size(1), "Expected size for first two dimensions of batch2 tensor to be: [",
                b1.size(0), ", ", b1.size(2), "] but got: [", b2.size(0), ", ", b2.size(1), "].");
    check_same_dtype(self, b1, "self and batch1");
    return combine(self, bmm_h(b1, b2, op), beta, alpha, op);
}

at::Tensor baddbmm(const at::Tensor &self, const at::Tensor &b1, const at::Tensor &b2, const at::Scalar &beta,
                   const at::Scalar &alpha) {
    if (!native_scales(self, beta, alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::baddbmm>::call(self, b1, b2, beta, alpha);
    return wrap(baddbmm_h(self, b1, b2, beta, alpha, "baddbmm"), "baddbmm");
}

at::Tensor &baddbmm_out(const at::Tensor &self, const at::Tensor &b1, const at::Tensor &b2, const at::Scalar &beta,
                        const at::Scalar &alpha, at::Tensor &out) {
    if (!native_scales(self, beta, alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::baddbmm_out>::call(self, b1, b2, beta, alpha,
                                                                                       out);
    return out_of(out, baddbmm_h(self, b1, b2, beta, alpha, "baddbmm.out"), "baddbmm.out");
}

at::Tensor &baddbmm_(at::Tensor &self, const at::Tensor &b1, const at::Tensor &b2, const at::Scalar &beta,
                     const at::Scalar &alpha) {
    if (!native_scales(self, beta, alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::baddbmm_>::call(self, b1, b2, beta, alpha);
    TORCH_CHECK(self.dim() == 3 && self.size(0) == b1.size(0) && self.size(1) == b1.size(1) &&
                    self.size(2) == b2.size(2),
                "baddbmm_: self of shape ", self.sizes(), " is not the product's");
    Own r(baddbmm_h(self, b1, b2, beta, alpha, "baddbmm_"));
    assign(self, r, "baddbmm_");
    return self;
}

at::Tensor dot(const at::Tensor &a, const at::Tensor &b) {
    TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                "D tensors");
    TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
                "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                b.numel(), " elements respectively");
    check_same_dtype(a, b, "both vectors");
    Val va(a, "dot"), vb(b, "dot");
    return wrap(lt_matmul(va, vb), "dot");
}

at::Tensor mv(const at::Tensor &a, const at::Tensor &v) {
    TORCH_CHECK(a.dim() == 2 && v.dim() == 1, "vector + matrix @ vector expected, got ", a.dim(), ", ", v.dim());
    check_same_dtype(a, v, "self and vec");
    Val va(a, "mv"), vv(v, "mv");
    return wrap(lt_matmul(va, vv), "mv");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("mm", TORCH_FN(mm));
    m.impl("mm.out", TORCH_FN(mm_out));
    m.impl("bmm", TORCH_FN(bmm));
    m.impl("bmm.out", TORCH_FN(bmm_out));
    m.impl("addmm", TORCH_FN(addmm));
    m.impl("addmm.out", TORCH_FN(addmm_out));
    m.impl("addmm_", TORCH_FN(addmm_));
    m.impl("baddbmm", TORCH_FN(baddbmm));
    m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
    m.impl("baddbmm_", TORCH_FN(baddbmm_));
    m.impl("dot", TORCH_FN(dot));
    m.impl("mv", TORCH_FN(mv));
}

}  // namespace ltt
