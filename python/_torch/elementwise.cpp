// Elementwise kernels: arithmetic, comparisons, logic, where / masked_fill,
// unary math. Activations and their backward ops are in activation.cpp.
//
// Each kernel is one core call where the core has the op (lerp_ is the
// seed's benchmark: one lt_lerp_). Python numbers stay runtime scalars: a
// Python number reaches a Tensor overload as a CPU "wrapped number", which
// is read as a Scalar here, never turned into a data leaf. Integer tensors
// with integer scalars keep their dtype (lt_*_int), as torch's do.
#include "elementwise.h"


#include <cmath>

namespace ltt {

bool wrapped_scalar(const at::Tensor &t, c10::Scalar &s) {
    if (!t.defined() || !t.device().is_cpu() || t.dim() != 0 || !t.unsafeGetTensorImpl()->is_wrapped_number())
        return false;
    s = t.item();
    return true;
}

static void check_castable(lt_tensor *h, const at::Tensor &dst, const char *op) {
    c10::ScalarType r = torch_type(lt_dtype_of(h));
    if (c10::canCast(r, dst.scalar_type())) return;
    lt_free(h);
    TORCH_CHECK(false, "lazytensor: ", op, ": result type ", r, " can't be cast to the desired output type ",
                dst.scalar_type());
}

at::Tensor &write(at::Tensor &self, lt_tensor *h, const char *op) {
    check(h, op);
    check_castable(h, self, op);
    try {
        assign(self, h, op);
    } catch (...) {
        lt_free(h);
        throw;
    }
    lt_free(h);
    return self;
}

at::Tensor &write_out(at::Tensor &out, lt_tensor *h, const char *op) {
    check(h, op);
    check_castable(h, out, op);
    try {
        assign_out(out, h, op);
    } catch (...) {
        lt_free(h);
        throw;
    }
    lt_free(h);
    return out;
}

// ---- scalars -------------------------------------------------------------------
static bool integral(const c10::Scalar &s) { return s.isIntegral(false) || s.isBoolean(); }
static bool is_float(const at::Tensor &t) { return at::isFloatingType(t.scalar_type()); }

// bool tensor OP bool scalar is bool in torch; the _int forms give int64.
static lt_tensor *bool_result(lt_tensor *h, const at::Tensor &self, const c10::Scalar &s) {
    if (!h || self.scalar_type() != at::kBool || !s.isBoolean()) return h;
    lt_tensor *b = lt_to_dtype(h, LT_BOOL);
    lt_free(h);
    return b;
}

// self + alpha s: one node, the scalar a runtime parameter.
static lt_tensor *add_scalar(const at::Tensor &self, const c10::Scalar &s, const c10::Scalar &alpha, const char *op) {
    Val a(self, op);
    if (!is_float(self) && integral(s) && integral(alpha))
        return bool_result(lt_add_scalar_int(a, s.toLong() * alpha.toLong()), self, s);
    return lt_add_scalar(a, num(s) * num(alpha));
}

static lt_tensor *mul_scalar(const at::Tensor &self, const c10::Scalar &s, const char *op) {
    Val a(self, op);
    if (!is_float(self) && integral(s)) return bool_result(lt_mul_scalar_int(a, s.toLong()), self, s);
    return lt_mul_scalar(a, num(s));
}

// A scalar operand of an op the core has no scalar form of: a 0-d FILL
// node (its value a runtime parameter, fused into the consumer), of the
// dtype torch gives the wrapped number against `like`.
static lt_tensor *scalar_node(const c10::Scalar &s, const at::Tensor &like, const char *op) {
    lt_dtype d;
    if (s.isBoolean()) d = LT_BOOL;
    else if (s.isIntegral(false)) d = LT_I64;
    else d = is_float(like) ? lt_type(like.scalar_type(), op) : lt_type(c10::typeMetaToScalarType(c10::get_default_dtype()), op);
    return check(lt_full(num(s), d, 0, nullptr), op);
}

// torch's alpha rules (add/sub): an integral result takes an integral alpha, bool a bool one.
static void check_alpha(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha, const char *op) {
    c10::ScalarType r = at::result_type(self, other);
    TORCH_CHECK(!(at::isIntegralType(r, /*includeBool=*/true) && alpha.isFloatingPoint()),
                "For integral input tensors, argument alpha must not be a floating point number.");
    TORCH_CHECK(r == at::kBool || !alpha.isBoolean() || alpha.toBool(),
                "Boolean alpha only supported for Boolean results.");
}

static void check_sub(bool a_bool, bool b_bool) {
    TORCH_CHECK(!(a_bool && b_bool), "Subtraction, the `-` operator, with two bool tensors is not supported. "
                                     "Use the `^` or `logical_xor()` operator instead.");
    TORCH_CHECK(!a_bool && !b_bool, "Subtraction, the `-` operator, with a bool tensor is not supported. "
                                    "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

// ---- add / sub / rsub ------------------------------------------------------------
static lt_tensor *add_h(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha, const char *op) {
    c10::Scalar s;
    if (wrapped_scalar(other, s)) return add_scalar(self, s, alpha, op);
    check_alpha(self, other, alpha, op);
    Val a(self, op), b(other, op);
    double al = num(alpha);
    return al == 1 ? lt_add(a, b) : lt_add_scaled(a, b, al);
}

static at::Tensor add(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha) {
    return wrap(add_h(self, other, alpha, "add"), "add");
}
// SGD's param.add_(grad, alpha=-lr): one lt_add_scaled_, lr a runtime scalar.
static at::Tensor &add_(at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha) {
    c10::Scalar s;
    if (is_float(self) && !wrapped_scalar(other, s) && other.device().type() == kDevice &&
        at::result_type(self, other) == self.scalar_type()) {
        Val a(self, "add_"), b(other, "add_");
        double al = num(alpha);
        check(al == 1 ? lt_add_(a, b) : lt_add_scaled_(a, b, al), "add_");
        return self;
    }
    return write(self, add_h(self, other, alpha, "add_"), "add_");
}
static at::Tensor &add_out(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha, at::Tensor &out) {
    return write_out(out, add_h(self, other, alpha, "add.out"), "add.out");
}
static at::Tensor add_s(const at::Tensor &self, const c10::Scalar &other, const c10::Scalar &alpha) {
    return wrap(add_scalar(self, other, alpha, "add"), "add");
}
static at::Tensor &add_s_(at::Tensor &self, const c10::Scalar &other, const c10::Scalar &alpha) {
    if (is_float(self)) {
        Val a(self, "add_");
        check(lt_add_scalar_(a, num(other) * num(alpha)), "add_");
        return self;
    }
    return write(self, add_scalar(self, other, alpha, "add_"), "add_");
}

static lt_tensor *sub_h(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha, const char *op) {
    c10::Scalar s;
    if (wrapped_scalar(other, s)) {
        check_sub(self.scalar_type() == at::kBool, s.isBoolean());
        return add_scalar(self, s, -alpha, op);
    }
    check_sub(self.scalar_type() == at::kBool, other.scalar_type() == at::kBool);
    check_alpha(self, other, alpha, op);
    Val a(self, op), b(other, op);
    double al = num(alpha);
    return al == 1 ? lt_sub(a, b) : lt_add_scaled(a, b, -al);
}
static at::Tensor sub(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha) {
    return wrap(sub_h(self, other, alpha, "sub"), "sub");
}
static at::Tensor &sub_(at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha) {
    return write(self, sub_h(self, other, alpha, "sub_"), "sub_");
}
static at::Tensor &sub_out(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha, at::Tensor &out) {
    return write_out(out, sub_h(self, other, alpha, "sub.out"), "sub.out");
}
static at::Tensor sub_s(const at::Tensor &self, const c10::Scalar &other, const c10::Scalar &alpha) {
    check_sub(self.scalar_type() == at::kBool, other.isBoolean());
    return wrap(add_scalar(self, other, -alpha, "sub"), "sub");
}
static at::Tensor &sub_s_(at::Tensor &self, const c10::Scalar &other, const c10::Scalar &alpha) {
    check_sub(self.scalar_type() == at::kBool, other.isBoolean());
    return write(self, add_scalar(self, other, -alpha, "sub_"), "sub_");
}

// rsub: other - alpha self. A scalar other takes two nodes (-alpha self, + other).
static lt_tensor *rsub_scalar(const at::Tensor &self, const c10::Scalar &other, const c10::Scalar &alpha, const char *op) {
    check_sub(other.isBoolean(), self.scalar_type() == at::kBool);
    Own m(mul_scalar(self, -alpha, op));
    check(m, op);
    if (!is_float(self) && integral(other)) return lt_add_scalar_int(m, other.toLong());
    return lt_add_scalar(m, num(other));
}
static at::Tensor rsub(const at::Tensor &self, const at::Tensor &other, const c10::Scalar &alpha) {
    c10::Scalar s;
    if (wrapped_scalar(other, s)) return wrap(rsub_scalar(self, s, alpha, "rsub"), "rsub");
    return wrap(sub_h(other, self, alpha, "rsub"), "rsub");
}
static at::Tensor rsub_s(const at::Tensor &self, const c10::Scalar &other, const c10::Scalar &alpha) {
    return wrap(rsub_scalar(self, other, alpha, "rsub"), "rsub");
}

// ---- mul / div ----------------------------------------------------------------------
static lt_tensor *mul_h(const at::Tensor &self, const at::Tensor &other, const char *op) {
    c10::Scalar s;
    if (wrapped_scalar(other, s)) return mul_scalar(self, s, op);
    Val a(self, op), b(other, op);
    return lt_mul(a, b);
}
static at::Tensor mul(const at::Tensor &self, const at::Tensor &other) { return wrap(mul_h(self, other, "mul"), "mul"); }
static at::Tensor &mul_(at::Tensor &self, const at::Tensor &other) {
    c10::Scalar s;
    if (is_float(self) && wrapped_scalar(other, s)) {
        Val a(self, "mul_");
        check(lt_mul_scalar_(a, num(s)), "mul_");
        return self;
    }
    return write(self, mul_h(self, other, "mul_"), "mul_");
}
static at::Tensor &mul_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) {
    return write_out(out, mul_h(self, other, "mul.out"), "mul.out");
}
static at::Tensor mul_s(const at::Tensor &self, const c10::Scalar &other) {
    return wrap(mul_scalar(self, other, "mul"), "mul");
}
static at::Tensor &mul_s_(at::Tensor &self, const c10::Scalar &other) {
    if (is_float(self)) {
        Val a(self, "mul_");
        check(lt_mul_scalar_(a, num(other)), "mul_");
        return self;
    }
    return write(self, mul_scalar(self, other, "mul_"), "mul_");
}

// True division. By a scalar: x / s exactly as torch (not x * (1 / s)),
// through a 0-d FILL operand.
static lt_tensor *div_h(const at::Tensor &self, const at::Tensor &other, const char *op) {
    c10::Scalar s;
    if (wrapped_scalar(other, s)) {
        Val a(self, op);
        Own b(scalar_node(s, self, op));
        return lt_div(a, b);
    }
    Val a(self, op), b(other, op);
    return lt_div(a, b);
}
static at::Tensor div(const at::Tensor &self, const at::Tensor &other) { return wrap(div_h(self, other, "div"), "div"); }
static at::Tensor &div_(at::Tensor &self, const at::Tensor &other) {
    return write(self, div_h(self, other, "div_"), "div_");
}
static at::Tensor &div_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) {
    return write_out(out, div_h(self, other, "div.out"), "div.out");
}
static lt_tensor *div_scalar(const at::Tensor &self, const c10::Scalar &s, const char *op) {
    Val a(self, op);
    Own b(scalar_node(s, self, op));
    return lt_div(a, b);
}
static at::Tensor div_s(const at::Tensor &self, const c10::Scalar &other) {
    return wrap(div_scalar(self, other, "div"), "div");
}
static at::Tensor &div_s_(at::Tensor &self, const c10::Scalar &other) {
    return write(self, div_scalar(self, other, "div_"), "div_");
}
// rounding_mode 'trunc' / 'floor' (integers stay integers; floor_divide is 'floor').
static bool trunc_mode(c10::string_view mode, c10::ScalarType result) {
    TORCH_CHECK(mode == "trunc" || mode == "floor",
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode, "'");
    TORCH_CHECK(result != at::kBool, "\"div_", mode, "_cpu\" not implemented for 'Bool'");
    return mode == "trunc";
}
static lt_tensor *div_scalar_mode_h(const at::Tensor &self, const c10::Scalar &other,
                                    c10::optional<c10::string_view> mode, const char *op) {
    if (!mode.has_value()) return div_scalar(self, other, op);
    bool trunc = trunc_mode(*mode, at::result_type(self, other));
    Val a(self, op);
    Own b(scalar_node(other, self, op));
    return trunc ? lt_div_trunc(a, b) : lt_div_floor(a, b);
}
static lt_tensor *div_mode_h(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode,
                             const char *op) {
    c10::Scalar s;
    if (wrapped_scalar(other, s)) return div_scalar_mode_h(self, s, mode, op);
    if (!mode.has_value()) return div_h(self, other, op);
    bool trunc = trunc_mode(*mode, at::result_type(self, other));
    Val a(self, op), b(other, op);
    return trunc ? lt_div_trunc(a, b) : lt_div_floor(a, b);
}
static at::Tensor div_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode) {
    return wrap(div_mode_h(self, other, mode, "div"), "div");
}
static at::Tensor &div_mode_(at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode) {
    return write(self, div_mode_h(self, other, mode, "div_"), "div_");
}
static at::Tensor &div_mode_out(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode,
                                at::Tensor &out) {
    return write_out(out, div_mode_h(self, other, mode, "div.out"), "div.out");
}
static at::Tensor div_s_mode(const at::Tensor &self, const c10::Scalar &other, c10::optional<c10::string_view> mode) {
    return wrap(div_scalar_mode_h(self, other, mode, "div"), "div");
}
static at::Tensor &div_s_mode_(at::Tensor &self, const c10::Scalar &other, c10::optional<c10::string_view> mode) {
    return write(self, div_scalar_mode_h(self, other, mode, "div_"), "div_");
}
static at::Tensor floor_divide(const at::Tensor &self, const at::Tensor &other) {
    return wrap(div_mode_h(self, other, c10::string_view("floor"), "floor_divide"), "floor_divide");
}
static at::Tensor &floor_divide_(at::Tensor &self, const at::Tensor &other) {
    return write(self, div_mode_h(self, other, c10::string_view("floor"), "floor_divide_"), "floor_divide_");
}
static at::Tensor &floor_divide_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) {
    return write_out(out, div_mode_h(self, other, c10::string_view("floor"), "floor_divide.out"), "floor_divide.out");
}

// ---- pow, maximum / minimum, clamp ------------------------------------------------------
static lt_tensor *pow_scalar(const at::Tensor &self, const c10::Scalar &e, const char *op) {
    Val a(self, op);
    if (!is_float(self) && integral(e)) {
        TORCH_CHECK(e.toLong() >= 0, "Integers to negative integer powers are not allowed.");
        return bool_result(lt_pow_scalar_int(a, e.toLong()), self, e);
    }
    return lt_pow_scalar(a, num(e));
}
static lt_tensor *pow_h(const at::Tensor &self, const at::Tensor &e, const char *op) {
    c10::Scalar s;
    if (wrapped_scalar(e, s)) return pow_scalar(self, s, op);
    Val a(self, op), b(e, op);
    return lt_pow(a, b);
}
static at::Tensor pow_tt(const at::Tensor &self, const at::Tensor &e) { return wrap(pow_h(self, e, "pow"), "pow"); }
static at::Tensor &pow_tt_(at::Tensor &self, const at::Tensor &e) { return write(self, pow_h(self, e, "pow_"), "pow_"); }
static at::Tensor &pow_tt_out(const at::Tensor &self, const at::Tensor &e, at::Tensor &out) {
    return write_out(out, pow_h(self, e, "pow.out"), "pow.out");
}
static at::Tensor pow_ts(const at::Tensor &self, const c10::Scalar &e) { return wrap(pow_scalar(self, e, "pow"), "pow"); }
static at::Tensor &pow_ts_(at::Tensor &self, const c10::Scalar &e) {
    return write(self, pow_scalar(self, e, "pow_"), "pow_");
}
static at::Tensor &pow_ts_out(const at::Tensor &self, const c10::Scalar &e, at::Tensor &out) {
    return write_out(out, pow_scalar(self, e, "pow.out"), "pow.out");
}
static at::Tensor pow_st(const c10::Scalar &base, const at::Tensor &e) {
    Own b(scalar_node(base, e, "pow"));
    Val x(e, "pow");
    return wrap(lt_pow(b, x), "pow");
}

#define BINARY(name, core)                                                                          \
    static at::Tensor name(const at::Tensor &self, const at::Tensor &other) {                       \
        Val a(self, #name), b(other, #name);                                                        \
        return wrap(core(a, b), #name);                                                             \
    }                                                                                               \
    static at::Tensor &name##_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) { \
        Val a(self, #name ".out"), b(other, #name ".out");                                          \
        return write_out(out, core(a, b), #name ".out");                                            \
    }
BINARY(maximum, lt_maximum)
BINARY(minimum, lt_minimum)

// clamp(min?, max?): an integer tensor with integer bounds stays integer.
static lt_tensor *clamp_h(const at::Tensor &self, const c10::optional<c10::Scalar> &lo,
                          const c10::optional<c10::Scalar> &hi, const char *op) {
    TORCH_CHECK(lo.has_value() || hi.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
    Val a(self, op);
    double l = lo ? num(*lo) : -INFINITY, h = hi ? num(*hi) : INFINITY;
    if (!is_float(self) && (!lo || integral(*lo)) && (!hi || integral(*hi))) return lt_clamp_int(a, l, h);
    return lt_clamp(a, l, h);
}
static at::Tensor clamp(const at::Tensor &self, const c10::optional<c10::Scalar> &lo, const c10::optional<c10::Scalar> &hi) {
    return wrap(clamp_h(self, lo, hi, "clamp"), "clamp");
}
static at::Tensor &clamp_(at::Tensor &self, const c10::optional<c10::Scalar> &lo, const c10::optional<c10::Scalar> &hi) {
    if (is_float(self) && (lo || hi)) {
        Val a(self, "clamp_");
        check(lt_clamp_(a, lo ? num(*lo) : -INFINITY, hi ? num(*hi) : INFINITY), "clamp_");
        return self;
    }
    return write(self, clamp_h(self, lo, hi, "clamp_"), "clamp_");
}
static at::Tensor &clamp_out(const at::Tensor &self, const c10::optional<c10::Scalar> &lo,
                             const c10::optional<c10::Scalar> &hi, at::Tensor &out) {
    return write_out(out, clamp_h(self, lo, hi, "clamp.out"), "clamp.out");
}
static at::Tensor clamp_min(const at::Tensor &self, const c10::Scalar &lo) { return ltt::clamp(self, lo, c10::nullopt); }
static at::Tensor &clamp_min_(at::Tensor &self, const c10::Scalar &lo) { return ltt::clamp_(self, lo, c10::nullopt); }
static at::Tensor &clamp_min_out(const at::Tensor &self, const c10::Scalar &lo, at::Tensor &out) {
    return ltt::clamp_out(self, lo, c10::nullopt, out);
}
static at::Tensor clamp_max(const at::Tensor &self, const c10::Scalar &hi) { return ltt::clamp(self, c10::nullopt, hi); }
static at::Tensor &clamp_max_(at::Tensor &self, const c10::Scalar &hi) { return ltt::clamp_(self, c10::nullopt, hi); }
static at::Tensor &clamp_max_out(const at::Tensor &self, const c10::Scalar &hi, at::Tensor &out) {
    return ltt::clamp_out(self, c10::nullopt, hi, out);
}

// Tensor bounds: clamp_min is maximum, clamp_max minimum (NaN propagates, as
// torch's clamp); clamp with both is one node per bound.
static lt_tensor *clamp_t_h(const at::Tensor &self, const c10::optional<at::Tensor> &lo,
                            const c10::optional<at::Tensor> &hi, const char *op) {
    bool l = lo.has_value() && lo->defined(), h = hi.has_value() && hi->defined();
    TORCH_CHECK(l || h, "torch.clamp: At least one of 'min' or 'max' must not be None");
    Val a(self, op), vl(lo, op), vh(hi, op);
    if (!h) return lt_maximum(a, vl);
    if (!l) return lt_minimum(a, vh);
    Own m(check(lt_maximum(a, vl), op));
    return lt_minimum(m, vh);
}
static at::Tensor clamp_t(const at::Tensor &self, const c10::optional<at::Tensor> &lo,
                          const c10::optional<at::Tensor> &hi) {
    return wrap(clamp_t_h(self, lo, hi, "clamp"), "clamp");
}
static at::Tensor &clamp_t_(at::Tensor &self, const c10::optional<at::Tensor> &lo, const c10::optional<at::Tensor> &hi) {
    return write(self, clamp_t_h(self, lo, hi, "clamp_"), "clamp_");
}
static at::Tensor &clamp_t_out(const at::Tensor &self, const c10::optional<at::Tensor> &lo,
                               const c10::optional<at::Tensor> &hi, at::Tensor &out) {
    return write_out(out, clamp_t_h(self, lo, hi, "clamp.out"), "clamp.out");
}
static at::Tensor clamp_min_t(const at::Tensor &self, const at::Tensor &lo) { return clamp_t(self, lo, c10::nullopt); }
static at::Tensor &clamp_min_t_(at::Tensor &self, const at::Tensor &lo) { return clamp_t_(self, lo, c10::nullopt); }
static at::Tensor &clamp_min_t_out(const at::Tensor &self, const at::Tensor &lo, at::Tensor &out) {
    return clamp_t_out(self, lo, c10::nullopt, out);
}
static at::Tensor clamp_max_t(const at::Tensor &self, const at::Tensor &hi) { return clamp_t(self, c10::nullopt, hi); }
static at::Tensor &clamp_max_t_(at::Tensor &self, const at::Tensor &hi) { return clamp_t_(self, c10::nullopt, hi); }
static at::Tensor &clamp_max_t_out(const at::Tensor &self, const at::Tensor &hi, at::Tensor &out) {
    return clamp_t_out(self, c10::nullopt, hi, out);
}

// ---- lerp, addcmul, addcdiv: one core call, the in-place forms included ------------------
static at::Tensor lerp(const at::Tensor &self, const at::Tensor &end, const c10::Scalar &w) {
    Val a(self, "lerp"), b(end, "lerp");
    return wrap(lt_lerp(a, b, num(w)), "lerp");
}
// THE benchmark of the seed: x.lerp_(g, 0.1) is one lt_lerp_.
static at::Tensor &lerp_(at::Tensor &self, const at::Tensor &end, const c10::Scalar &w) {
    Val a(self, "lerp_"), b(end, "lerp_");
    check(lt_lerp_(a, b, num(w)), "lerp_");
    return self;
}
static at::Tensor &lerp_out(const at::Tensor &self, const at::Tensor &end, const c10::Scalar &w, at::Tensor &out) {
    Val a(self, "lerp.out"), b(end, "lerp.out");
    return write_out(out, lt_lerp(a, b, num(w)), "lerp.out");
}

// lerp with a tensor weight: one lt_lerp_tensor (a CPU 0-d weight enters as data).
static at::Tensor lerp_t(const at::Tensor &self, const at::Tensor &end, const at::Tensor &w) {
    Val a(self, "lerp"), b(end, "lerp"), c(w, "lerp");
    return wrap(lt_lerp_tensor(a, b, c), "lerp");
}
static at::Tensor &lerp_t_(at::Tensor &self, const at::Tensor &end, const at::Tensor &w) {
    Val a(self, "lerp_"), b(end, "lerp_"), c(w, "lerp_");
    check(lt_lerp_tensor_(a, b, c), "lerp_");
    return self;
}
static at::Tensor &lerp_t_out(const at::Tensor &self, const at::Tensor &end, const at::Tensor &w, at::Tensor &out) {
    Val a(self, "lerp.out"), b(end, "lerp.out"), c(w, "lerp.out");
    return write_out(out, lt_lerp_tensor(a, b, c), "lerp.out");
}

#define TERNARY(name)                                                                                            \
    static at::Tensor name(const at::Tensor &self, const at::Tensor &t1, const at::Tensor &t2, const c10::Scalar &v) { \
        Val a(self, #name), b(t1, #name), c(t2, #name);                                                          \
        return wrap(lt_##name(a, b, c, num(v)), #name);                                                          \
    }                                                                                                            \
    static at::Tensor &name##_(at::Tensor &self, const at::Tensor &t1, const at::Tensor &t2, const c10::Scalar &v) { \
        Val a(self, #name "_"), b(t1, #name "_"), c(t2, #name "_");                                              \
        check(lt_##name##_(a, b, c, num(v)), #name "_");                                                         \
        return self;                                                                                             \
    }                                                                                                            \
    static at::Tensor &name##_out(const at::Tensor &self, const at::Tensor &t1, const at::Tensor &t2,            \
                                  const c10::Scalar &v, at::Tensor &out) {                                       \
        Val a(self, #name ".out"), b(t1, #name ".out"), c(t2, #name ".out");                                     \
        return write_out(out, lt_##name(a, b, c, num(v)), #name ".out");                                        \
    }
TERNARY(addcmul)
TERNARY(addcdiv)

// ---- comparisons: bool results ---------------------------------------------------------
#define COMPARE(name)                                                                               \
    static lt_tensor *name##_h(const at::Tensor &self, const at::Tensor &other, const char *op) {   \
        c10::Scalar s;                                                                              \
        Val a(self, op);                                                                            \
        if (wrapped_scalar(other, s)) return lt_##name##_scalar(a, num(s));                          \
        Val b(other, op);                                                                           \
        return lt_##name(a, b);                                                                     \
    }                                                                                               \
    static at::Tensor name##_t(const at::Tensor &self, const at::Tensor &other) {                   \
        return wrap(name##_h(self, other, #name), #name);                                           \
    }                                                                                               \
    static at::Tensor &name##_t_(at::Tensor &self, const at::Tensor &other) {                       \
        return write(self, name##_h(self, other, #name "_"), #name "_");                            \
    }                                                                                               \
    static at::Tensor &name##_t_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) { \
        return write_out(out, name##_h(self, other, #name ".out"), #name ".out");                   \
    }                                                                                               \
    static at::Tensor name##_s(const at::Tensor &self, const c10::Scalar &other) {                  \
        Val a(self, #name);                                                                         \
        return wrap(lt_##name##_scalar(a, num(other)), #name);                                      \
    }                                                                                               \
    static at::Tensor &name##_s_(at::Tensor &self, const c10::Scalar &other) {                      \
        Val a(self, #name "_");                                                                     \
        return write(self, lt_##name##_scalar(a, num(other)), #name "_");                           \
    }                                                                                               \
    static at::Tensor &name##_s_out(const at::Tensor &self, const c10::Scalar &other, at::Tensor &out) { \
        Val a(self, #name ".out");                                                                  \
        return write_out(out, lt_##name##_scalar(a, num(other)), #name ".out");                     \
    }
COMPARE(eq)
COMPARE(ne)
COMPARE(lt)
COMPARE(le)
COMPARE(gt)
COMPARE(ge)

// ---- logic: bool tensors; logical_* of other dtypes test against zero ------------------
static lt_tensor *truth(lt_tensor *a) { return a && lt_dtype_of(a) == LT_BOOL ? a : lt_ne_scalar(a, 0); }

static lt_tensor *logical_h(const at::Tensor &self, const at::Tensor &other, bool conj, const char *op) {
    Val a(self, op), b(other, op);
    lt_tensor *x = truth(a), *y = truth(b);
    lt_tensor *r = conj ? lt_mul(x, y) : lt_maximum(x, y);  // and / or of bools
    if (x != a.get()) lt_free(x);
    if (y != b.get()) lt_free(y);
    return r;
}
static at::Tensor logical_and(const at::Tensor &self, const at::Tensor &other) {
    return wrap(logical_h(self, other, true, "logical_and"), "logical_and");
}
static at::Tensor &logical_and_(at::Tensor &self, const at::Tensor &other) {
    return write(self, logical_h(self, other, true, "logical_and_"), "logical_and_");
}
static at::Tensor &logical_and_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) {
    return write_out(out, logical_h(self, other, true, "logical_and.out"), "logical_and.out");
}
static at::Tensor logical_or(const at::Tensor &self, const at::Tensor &other) {
    return wrap(logical_h(self, other, false, "logical_or"), "logical_or");
}
static at::Tensor &logical_or_(at::Tensor &self, const at::Tensor &other) {
    return write(self, logical_h(self, other, false, "logical_or_"), "logical_or_");
}
static at::Tensor &logical_or_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) {
    return write_out(out, logical_h(self, other, false, "logical_or.out"), "logical_or.out");
}
static at::Tensor logical_not(const at::Tensor &self) {
    Val a(self, "logical_not");
    return wrap(lt_eq_scalar(a, 0), "logical_not");
}
static at::Tensor &logical_not_(at::Tensor &self) {
    Val a(self, "logical_not_");
    return write(self, lt_eq_scalar(a, 0), "logical_not_");
}
static at::Tensor &logical_not_out(const at::Tensor &self, at::Tensor &out) {
    Val a(self, "logical_not.out");
    return write_out(out, lt_eq_scalar(a, 0), "logical_not.out");
}
// Bitwise ops of integer and bool tensors (a Python int operand: a 0-d FILL
// node, its value a runtime parameter); the .Scalar forms and & | ^ ~ reach these.
static lt_tensor *bitwise_h(lt_tensor *(*fn)(lt_tensor *, lt_tensor *), const at::Tensor &self, const at::Tensor &other,
                            const char *op) {
    c10::Scalar s;
    Val a(self, op);
    if (wrapped_scalar(other, s)) {
        Own b(scalar_node(s, self, op));
        return fn(a, b);
    }
    Val b(other, op);
    return fn(a, b);
}
#define BITWISE(name)                                                                                     \
    static at::Tensor name(const at::Tensor &self, const at::Tensor &other) {                            \
        return wrap(bitwise_h(lt_##name, self, other, #name), #name);                                     \
    }                                                                                                     \
    static at::Tensor &name##_(at::Tensor &self, const at::Tensor &other) {                              \
        return write(self, bitwise_h(lt_##name, self, other, #name "_"), #name "_");                      \
    }                                                                                                     \
    static at::Tensor &name##_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out) {    \
        return write_out(out, bitwise_h(lt_##name, self, other, #name ".out"), #name ".out");             \
    }
BITWISE(bitwise_and)
BITWISE(bitwise_or)
BITWISE(bitwise_xor)

static at::Tensor isnan(const at::Tensor &self) {
    Val a(self, "isnan");
    return wrap(lt_ne(a, a), "isnan");
}
static at::Tensor isinf(const at::Tensor &self) {
    Val a(self, "isinf");
    if (!is_float(self)) return wrap(lt_eq_scalar(a, INFINITY), "isinf");  // all false, in one node
    Own m(check(lt_abs(a), "isinf"));
    return wrap(lt_eq_scalar(m, INFINITY), "isinf");
}

// ---- where, masked_fill -----------------------------------------------------------------
static at::Tensor where(const at::Tensor &cond, const at::Tensor &self, const at::Tensor &other) {
    TORCH_CHECK(cond.scalar_type() == at::kBool, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                cond.scalar_type());
    Val c(cond, "where"), a(self, "where"), b(other, "where");
    return wrap(lt_where(c, a, b), "where");
}

static void check_mask(const at::Tensor &mask, const char *op) {
    TORCH_CHECK(mask.scalar_type() == at::kBool, op, " only supports boolean masks, but got mask with dtype ",
                mask.scalar_type());
}
static at::Tensor masked_fill_s(const at::Tensor &self, const at::Tensor &mask, const c10::Scalar &v) {
    check_mask(mask, "masked_fill");
    Val a(self, "masked_fill"), m(mask, "masked_fill");
    return wrap(lt_masked_fill(a, m, num(v)), "masked_fill");
}
static at::Tensor &masked_fill_s_(at::Tensor &self, const at::Tensor &mask, const c10::Scalar &v) {
    check_mask(mask, "masked_fill_");
    Val a(self, "masked_fill_"), m(mask, "masked_fill_");
    return write(self, lt_masked_fill(a, m, num(v)), "masked_fill_");
}
// A 0-d value tensor: a CPU one is read as a scalar; a device one is selected with where.
static lt_tensor *masked_fill_t_h(const at::Tensor &self, const at::Tensor &mask, const at::Tensor &v, const char *op) {
    check_mask(mask, op);
    TORCH_CHECK(v.dim() == 0, op, " only supports a 0-dimensional value tensor, but got tensor with ", v.dim(),
                " dimension(s).");
    Val a(self, op), m(mask, op);
    if (v.device().is_cpu()) return lt_masked_fill(a, m, num(v.item()));
    Val x(v, op);
    lt_tensor *r = check(lt_where(m, x, a), op);
    if (lt_dtype_of(r) == lt_dtype_of(a)) return r;
    lt_tensor *c = lt_to_dtype(r, lt_dtype_of(a));
    lt_free(r);
    return c;
}
static at::Tensor masked_fill_t(const at::Tensor &self, const at::Tensor &mask, const at::Tensor &v) {
    return wrap(masked_fill_t_h(self, mask, v, "masked_fill"), "masked_fill");
}
static at::Tensor &masked_fill_t_(at::Tensor &self, const at::Tensor &mask, const at::Tensor &v) {
    return write(self, masked_fill_t_h(self, mask, v, "masked_fill_"), "masked_fill_");
}

// ---- unary math: the core's out-of-place and `_` forms ----------------------------------
UNARY(neg)
UNARY(exp)
UNARY(log)
UNARY(sqrt)
UNARY(rsqrt)
UNARY(abs)
UNARY(erf)
UNARY(bitwise_not)

static at::Tensor sign(const at::Tensor &self) {
    Val a(self, "sign");
    return wrap(lt_sign(a), "sign");
}
static at::Tensor &sign_(at::Tensor &self) {
    Val a(self, "sign_");
    return write(self, lt_sign(a), "sign_");
}
static at::Tensor &sign_out(const at::Tensor &self, at::Tensor &out) {
    Val a(self, "sign.out");
    return write_out(out, lt_sign(a), "sign.out");
}
// torch's reciprocal is 1 / x; pow(x, -1) is that division, correctly rounded.
static at::Tensor reciprocal(const at::Tensor &self) {
    Val a(self, "reciprocal");
    return wrap(lt_pow_scalar(a, -1), "reciprocal");
}
static at::Tensor &reciprocal_(at::Tensor &self) {
    Val a(self, "reciprocal_");
    return write(self, lt_pow_scalar(a, -1), "reciprocal_");
}
static at::Tensor &reciprocal_out(const at::Tensor &self, at::Tensor &out) {
    Val a(self, "reciprocal.out");
    return write_out(out, lt_pow_scalar(a, -1), "reciprocal.out");
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("add.Tensor", TORCH_FN(add));
    m.impl("add_.Tensor", TORCH_FN(add_));
    m.impl("add.out", TORCH_FN(add_out));
    m.impl("add.Scalar", TORCH_FN(add_s));
    m.impl("add_.Scalar", TORCH_FN(add_s_));
    m.impl("sub.Tensor", TORCH_FN(sub));
    m.impl("sub_.Tensor", TORCH_FN(sub_));
    m.impl("sub.out", TORCH_FN(sub_out));
    m.impl("sub.Scalar", TORCH_FN(sub_s));
    m.impl("sub_.Scalar", TORCH_FN(sub_s_));
    m.impl("rsub.Tensor", TORCH_FN(rsub));
    m.impl("rsub.Scalar", TORCH_FN(rsub_s));
    m.impl("mul.Tensor", TORCH_FN(mul));
    m.impl("mul_.Tensor", TORCH_FN(mul_));
    m.impl("mul.out", TORCH_FN(mul_out));
    m.impl("mul.Scalar", TORCH_FN(mul_s));
    m.impl("mul_.Scalar", TORCH_FN(mul_s_));
    m.impl("div.Tensor", TORCH_FN(div));
    m.impl("div_.Tensor", TORCH_FN(div_));
    m.impl("div.out", TORCH_FN(div_out));
    m.impl("div.Scalar", TORCH_FN(div_s));
    m.impl("div_.Scalar", TORCH_FN(div_s_));
    m.impl("div.Tensor_mode", TORCH_FN(div_mode));
    m.impl("div_.Tensor_mode", TORCH_FN(div_mode_));
    m.impl("div.out_mode", TORCH_FN(div_mode_out));
    m.impl("div.Scalar_mode", TORCH_FN(div_s_mode));
    m.impl("div_.Scalar_mode", TORCH_FN(div_s_mode_));
    m.impl("floor_divide", TORCH_FN(floor_divide));
    m.impl("floor_divide_.Tensor", TORCH_FN(floor_divide_));
    m.impl("floor_divide.out", TORCH_FN(floor_divide_out));
    m.impl("pow.Tensor_Tensor", TORCH_FN(pow_tt));
    m.impl("pow_.Tensor", TORCH_FN(pow_tt_));
    m.impl("pow.Tensor_Tensor_out", TORCH_FN(pow_tt_out));
    m.impl("pow.Tensor_Scalar", TORCH_FN(pow_ts));
    m.impl("pow_.Scalar", TORCH_FN(pow_ts_));
    m.impl("pow.Tensor_Scalar_out", TORCH_FN(pow_ts_out));
    m.impl("pow.Scalar", TORCH_FN(pow_st));
    m.impl("maximum", TORCH_FN(maximum));
    m.impl("maximum.out", TORCH_FN(maximum_out));
    m.impl("minimum", TORCH_FN(minimum));
    m.impl("minimum.out", TORCH_FN(minimum_out));
    m.impl("clamp", TORCH_FN(clamp));
    m.impl("clamp_", TORCH_FN(clamp_));
    m.impl("clamp.out", TORCH_FN(clamp_out));
    m.impl("clamp_min", TORCH_FN(clamp_min));
    m.impl("clamp_min_", TORCH_FN(clamp_min_));
    m.impl("clamp_min.out", TORCH_FN(clamp_min_out));
    m.impl("clamp_max", TORCH_FN(clamp_max));
    m.impl("clamp_max_", TORCH_FN(clamp_max_));
    m.impl("clamp_max.out", TORCH_FN(clamp_max_out));
    m.impl("clamp.Tensor", TORCH_FN(clamp_t));
    m.impl("clamp_.Tensor", TORCH_FN(clamp_t_));
    m.impl("clamp.Tensor_out", TORCH_FN(clamp_t_out));
    m.impl("clamp_min.Tensor", TORCH_FN(clamp_min_t));
    m.impl("clamp_min_.Tensor", TORCH_FN(clamp_min_t_));
    m.impl("clamp_min.Tensor_out", TORCH_FN(clamp_min_t_out));
    m.impl("clamp_max.Tensor", TORCH_FN(clamp_max_t));
    m.impl("clamp_max_.Tensor", TORCH_FN(clamp_max_t_));
    m.impl("clamp_max.Tensor_out", TORCH_FN(clamp_max_t_out));
    m.impl("lerp.Scalar", TORCH_FN(lerp));
    m.impl("lerp_.Scalar", TORCH_FN(lerp_));
    m.impl("lerp.Scalar_out", TORCH_FN(lerp_out));
    m.impl("lerp.Tensor", TORCH_FN(lerp_t));
    m.impl("lerp_.Tensor", TORCH_FN(lerp_t_));
    m.impl("lerp.Tensor_out", TORCH_FN(lerp_t_out));
    m.impl("addcmul", TORCH_FN(addcmul));
    m.impl("addcmul_", TORCH_FN(addcmul_));
    m.impl("addcmul.out", TORCH_FN(addcmul_out));
    m.impl("addcdiv", TORCH_FN(addcdiv));
    m.impl("addcdiv_", TORCH_FN(addcdiv_));
    m.impl("addcdiv.out", TORCH_FN(addcdiv_out));
#define REG_COMPARE(name)                                      \
    m.impl(#name ".Tensor", TORCH_FN(name##_t));               \
    m.impl(#name "_.Tensor", TORCH_FN(name##_t_));             \
    m.impl(#name ".Tensor_out", TORCH_FN(name##_t_out));       \
    m.impl(#name ".Scalar", TORCH_FN(name##_s));               \
    m.impl(#name "_.Scalar", TORCH_FN(name##_s_));             \
    m.impl(#name ".Scalar_out", TORCH_FN(name##_s_out));
    REG_COMPARE(eq) REG_COMPARE(ne) REG_COMPARE(lt) REG_COMPARE(le) REG_COMPARE(gt) REG_COMPARE(ge)
    m.impl("logical_and", TORCH_FN(logical_and));
    m.impl("logical_and_", TORCH_FN(logical_and_));
    m.impl("logical_and.out", TORCH_FN(logical_and_out));
    m.impl("logical_or", TORCH_FN(logical_or));
    m.impl("logical_or_", TORCH_FN(logical_or_));
    m.impl("logical_or.out", TORCH_FN(logical_or_out));
    m.impl("logical_not", TORCH_FN(logical_not));
    m.impl("logical_not_", TORCH_FN(logical_not_));
    m.impl("logical_not.out", TORCH_FN(logical_not_out));
#define REG_BITWISE(name)                                  \
    m.impl(#name ".Tensor", TORCH_FN(name));               \
    m.impl(#name "_.Tensor", TORCH_FN(name##_));           \
    m.impl(#name ".Tensor_out", TORCH_FN(name##_out));
    REG_BITWISE(bitwise_and) REG_BITWISE(bitwise_or) REG_BITWISE(bitwise_xor)
    m.impl("isnan", TORCH_FN(isnan));
    m.impl("isinf", TORCH_FN(isinf));
    m.impl("where.self", TORCH_FN(where));
    m.impl("masked_fill.Scalar", TORCH_FN(masked_fill_s));
    m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_s_));
    m.impl("masked_fill.Tensor", TORCH_FN(masked_fill_t));
    m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_t_));
#define REG_UNARY(name)                                \
    m.impl(#name, TORCH_FN(name));                     \
    m.impl(#name "_", TORCH_FN(name##_));              \
    m.impl(#name ".out", TORCH_FN(name##_out));
    REG_UNARY(neg) REG_UNARY(exp) REG_UNARY(log) REG_UNARY(sqrt) REG_UNARY(rsqrt) REG_UNARY(abs) REG_UNARY(erf)
    REG_UNARY(sign) REG_UNARY(reciprocal) REG_UNARY(bitwise_not)
    m.impl("sgn", TORCH_FN(sign));  // real dtypes: sign (abs's backward calls it)
    m.impl("sgn_", TORCH_FN(sign_));
    m.impl("sgn.out", TORCH_FN(sign_out));
}

}  // namespace ltt
