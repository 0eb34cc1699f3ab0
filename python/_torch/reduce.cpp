// Reductions and softmax: sum, mean, amax/amin, max/min (all and .dim),
// argmax/argmin, _softmax / _log_softmax and their backward ops, each with
// the .out form torch's composite code calls; var/std (and var_mean /
// std_mean: the core's VAR or STD and MEAN); cumsum.
#include "bridge.h"

namespace ltt {
namespace {

// Dims of a reduction as the core takes them: an empty or absent list is
// every dim (torch's rule for sum/mean/amax over dim=[]).
std::vector<int> axes_of(at::OptionalIntArrayRef dim, int64_t ndim, const char *op) {
    std::vector<int> axes;
    if (!dim.has_value()) return axes;
    for (int64_t d : *dim) axes.push_back(dim_of(d, ndim, op));
    return axes;
}

// The dtype torch computes a sum in: the requested one, else out's (torch
// infers it from out=), else integers and bool widen to int64.
at::ScalarType sum_type(const at::Tensor &self, c10::optional<at::ScalarType> dtype, const at::Tensor *out) {
    if (dtype.has_value()) return *dtype;
    if (out && out->defined()) return out->scalar_type();
    return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong : self.scalar_type();
}

// self's value cast to st when it differs (one CAST node), else self's.
lt_tensor *as_type(const Val &v, const at::Tensor &self, at::ScalarType st, const char *op, Own &keep) {
    if (self.scalar_type() == st) return v;
    keep.h = check(lt_to_dtype(v, lt_type(st, op)), op);
    return keep.h;
}

lt_tensor *sum_h(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim, at::ScalarType st,
                 const char *op) {
    Val v(self, op);
    Own cast(nullptr);
    lt_tensor *x = as_type(v, self, st, op, cast);
    std::vector<int> axes = axes_of(dim, self.dim(), op);
    return check(lt_sum(x, (int)axes.size(), axes.data(), keepdim), op);
}

at::Tensor sum_all(const at::Tensor &self, c10::optional<at::ScalarType> dtype) {
    return wrap(sum_h(self, c10::nullopt, false, sum_type(self, dtype, nullptr), "sum"), "sum");
}

at::Tensor sum_dim(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                   c10::optional<at::ScalarType> dtype) {
    return wrap(sum_h(self, dim, keepdim, sum_type(self, dtype, nullptr), "sum"), "sum");
}

at::Tensor &sum_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                    c10::optional<at::ScalarType> dtype, at::Tensor &out) {
    return out_of(out, sum_h(self, dim, keepdim, sum_type(self, dtype, &out), "sum.out"), "sum.out");
}

// mean: torch refuses integer inputs unless a floating dtype is asked for
// (the core does too); with dtype the input is cast first, as torch does.
lt_tensor *mean_h(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                  c10::optional<at::ScalarType> dtype, const char *op) {
    at::ScalarType st = dtype.value_or(self.scalar_type());
    TORCH_CHECK(at::isFloatingType(st), "mean(): could not infer output dtype. ",
                (dtype.has_value() ? "Optional" : "Input"), " dtype must be either a floating point or complex dtype. Got: ",
                st);
    Val v(self, op);
    Own cast(nullptr);
    lt_tensor *x = as_type(v, self, st, op, cast);
    std::vector<int> axes = axes_of(dim, self.dim(), op);
    return check(lt_mean(x, (int)axes.size(), axes.data(), keepdim), op);
}

at::Tensor mean_all(const at::Tensor &self, c10::optional<at::ScalarType> dtype) {
    return wrap(mean_h(self, c10::nullopt, false, dtype, "mean"), "mean");
}

at::Tensor mean_dim(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                    c10::optional<at::ScalarType> dtype) {
    return wrap(mean_h(self, dim, keepdim, dtype, "mean"), "mean");
}

at::Tensor &mean_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                     c10::optional<at::ScalarType> dtype, at::Tensor &out) {
    return out_of(out, mean_h(self, dim, keepdim, dtype.has_value() ? dtype : c10::optional<at::ScalarType>(out.scalar_type()), "mean.out"),
                  "mean.out");
}

// var / std with torch's correction (absent: 1); dim absent or empty: every dim.
lt_tensor *var_h(bool is_std, const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction,
                 bool keepdim, const char *op) {
    TORCH_CHECK(at::isFloatingType(self.scalar_type()), op, ": std and var only support floating point and complex dtypes");
    Val v(self, op);
    std::vector<int> axes = axes_of(dim, self.dim(), op);
    double c = (double)correction.value_or(1);
    return check(is_std ? lt_std(v, (int)axes.size(), axes.data(), c, keepdim)
                        : lt_var(v, (int)axes.size(), axes.data(), c, keepdim),
                 op);
}

at::Tensor var(const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction, bool keepdim) {
    return wrap(var_h(false, self, dim, correction, keepdim, "var"), "var");
}
at::Tensor std_(const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction, bool keepdim) {
    return wrap(var_h(true, self, dim, correction, keepdim, "std"), "std");
}
at::Tensor &var_out(const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction, bool keepdim,
                    at::Tensor &out) {
    return out_of(out, var_h(false, self, dim, correction, keepdim, "var.out"), "var.out");
}
at::Tensor &std_out(const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction, bool keepdim,
                    at::Tensor &out) {
    return out_of(out, var_h(true, self, dim, correction, keepdim, "std.out"), "std.out");
}
std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor &self, at::OptionalIntArrayRef dim,
                                            c10::optional<int64_t> correction, bool keepdim) {
    at::Tensor v = wrap(var_h(false, self, dim, correction, keepdim, "var_mean"), "var_mean");
    return {v, wrap(mean_h(self, dim, keepdim, c10::nullopt, "var_mean"), "var_mean")};
}
std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor &self, at::OptionalIntArrayRef dim,
                                            c10::optional<int64_t> correction, bool keepdim) {
    at::Tensor s = wrap(var_h(true, self, dim, correction, keepdim, "std_mean"), "std_mean");
    return {s, wrap(mean_h(self, dim, keepdim, c10::nullopt, "std_mean"), "std_mean")};
}

// cumsum: with dtype the input is cast first, as torch does; integers and
// bool give int64.
lt_tensor *cumsum_h(const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype, const char *op) {
    Val v(self, op);
    Own cast(nullptr);
    lt_tensor *x = dtype.has_value() ? as_type(v, self, *dtype, op, cast) : v.get();
    return check(lt_cumsum(x, dim_of(dim, self.dim(), op), false), op);
}
at::Tensor cumsum(const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype) {
    return wrap(cumsum_h(self, dim, dtype, "cumsum"), "cumsum");
}
at::Tensor &cumsum_(at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype) {
    Own h(cumsum_h(self, dim, dtype, "cumsum_"));
    assign(self, h, "cumsum_");
    return self;
}
at::Tensor &cumsum_out(const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype, at::Tensor &out) {
    return out_of(out, cumsum_h(self, dim, dtype, "cumsum.out"), "cumsum.out");
}

// amax / amin / max() / min(): the core's MAX and MIN (NaN propagates).
lt_tensor *extreme_h(bool is_max, const at::Tensor &self, at::IntArrayRef dim, bool keepdim, const char *op) {
    Val v(self, op);
    std::vector<int> axes = axes_of(dim, self.dim(), op);
    return check(is_max ? lt_max(v, (int)axes.size(), axes.data(), keepdim)
                        : lt_min(v, (int)axes.size(), axes.data(), keepdim),
                 op);
}

at::Tensor amax(const at::Tensor &self, at::IntArrayRef dim, bool keepdim) {
    return wrap(extreme_h(true, self, dim, keepdim, "amax"), "amax");
}
at::Tensor amin(const at::Tensor &self, at::IntArrayRef dim, bool keepdim) {
    return wrap(extreme_h(false, self, dim, keepdim, "amin"), "amin");
}
at::Tensor &amax_out(const at::Tensor &self, at::IntArrayRef dim, bool keepdim, at::Tensor &out) {
    return out_of(out, extreme_h(true, self, dim, keepdim, "amax.out"), "amax.out");
}
at::Tensor &amin_out(const at::Tensor &self, at::IntArrayRef dim, bool keepdim, at::Tensor &out) {
    return out_of(out, extreme_h(false, self, dim, keepdim, "amin.out"), "amin.out");
}

at::Tensor max_all(const at::Tensor &self) {
    TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                                  "reduction dim with the 'dim' argument.");
    return wrap(extreme_h(true, self, {}, false, "max"), "max");
}
at::Tensor min_all(const at::Tensor &self) {
    TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                                  "reduction dim with the 'dim' argument.");
    return wrap(extreme_h(false, self, {}, false, "min"), "min");
}

// argmax / argmin: dim None is the index into the flattened tensor (a 0-d
// result; keepdim gives all-ones dims, as torch). argmax has no bool kernel
// in torch nor in the core; max.dim has one in torch (bool_ok): bool
// compares as 0 < 1, so the indices of an int32 copy are its indices.
lt_tensor *arg_any(bool is_max, const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim, const char *op,
                   bool bool_ok = false) {
    TORCH_CHECK(self.numel() > 0 || (dim.has_value() && self.dim() > 0 && self.size(dim_of(*dim, self.dim(), op)) > 0),
                op, "(): Expected reduction dim to be specified for input.numel() == 0.");
    Val v(self, op);
    Own cast(nullptr);
    lt_tensor *x = bool_ok && self.scalar_type() == at::kBool ? (cast.h = check(lt_to_dtype(v, LT_I32), op)) : v.get();
    if (dim.has_value()) {
        int d = dim_of(*dim, self.dim(), op);
        return check(is_max ? lt_argmax(x, d, keepdim) : lt_argmin(x, d, keepdim), op);
    }
    int64_t n = self.numel();
    Own flat(check(lt_reshape(x, 1, &n), op));
    Own r(check(is_max ? lt_argmax(flat, 0, false) : lt_argmin(flat, 0, false), op));
    if (!keepdim) return r.release();
    std::vector<int64_t> ones((size_t)self.dim(), 1);
    return check(lt_reshape(r, (int)ones.size(), ones.data()), op);
}

at::Tensor argmax(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim) {
    return wrap(arg_any(true, self, dim, keepdim, "argmax"), "argmax");
}
at::Tensor argmin(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim) {
    return wrap(arg_any(false, self, dim, keepdim, "argmin"), "argmin");
}
at::Tensor &argmax_out(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim, at::Tensor &out) {
    return out_of(out, arg_any(true, self, dim, keepdim, "argmax.out"), "argmax.out");
}
at::Tensor &argmin_out(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim, at::Tensor &out) {
    return out_of(out, arg_any(false, self, dim, keepdim, "argmin.out"), "argmin.out");
}

// max.dim / min.dim: the values (MAX / MIN over dim) and the indices
// (ARGMAX / ARGMIN: the first extreme, NaN counting as the extreme, as torch).
void extreme_dim(bool is_max, const at::Tensor &self, int64_t dim, bool keepdim, lt_tensor **values,
                 lt_tensor **indices, const char *op) {
    int d = dim_of(dim, self.dim(), op);
    TORCH_CHECK(self.dim() == 0 || self.size(d) > 0, op, "(): Expected reduction dim ", d,
                " to have non-zero size.");
    *values = extreme_h(is_max, self, {(int64_t)d}, keepdim, op);
    Own v(*values);
    *indices = arg_any(is_max, self, (int64_t)d, keepdim, op, true);
    v.release();
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor &self, int64_t dim, bool keepdim) {
    lt_tensor *v, *i;
    extreme_dim(true, self, dim, keepdim, &v, &i, "max");
    at::Tensor tv = wrap(v, "max");
    return std::make_tuple(tv, wrap(i, "max"));
}
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor &self, int64_t dim, bool keepdim) {
    lt_tensor *v, *i;
    extreme_dim(false, self, dim, keepdim, &v, &i, "min");
    at::Tensor tv = wrap(v, "min");
    return std::make_tuple(tv, wrap(i, "min"));
}

std::tuple<at::Tensor &, at::Tensor &> max_dim_out(const at::Tensor &self, int64_t dim, bool keepdim,
                                                   at::Tensor &values, at::Tensor &indices) {
    lt_tensor *v, *i;
    extreme_dim(true, self, dim, keepdim, &v, &i, "max.dim_max");
    Own iv(i);
    out_of(values, v, "max.dim_max");
    out_of(indices, iv.release(), "max.dim_max");
    return std::forward_as_tuple(values, indices);
}
std::tuple<at::Tensor &, at::Tensor &> min_dim_out(const at::Tensor &self, int64_t dim, bool keepdim,
                                                   at::Tensor &values, at::Tensor &indices) {
    lt_tensor *v, *i;
    extreme_dim(false, self, dim, keepdim, &v, &i, "min.dim_min");
    Own iv(i);
    out_of(values, v, "min.dim_min");
    out_of(indices, iv.release(), "min.dim_min");
    return std::forward_as_tuple(values, indices);
}

// ---- softmax ---------------------------------------------------------------
// half_to_float exists for float16 inputs, which the device does not hold.
lt_tensor *softmax_h(bool log, const at::Tensor &self, int64_t dim, bool half_to_float, const char *op) {
    TORCH_CHECK(!half_to_float, "lazytensor: ", op, ": half_to_float needs a float16 input (not on this device)");
    Val v(self, op);
    int d = dim_of(dim, self.dim(), op);
    return check(log ? lt_log_softmax(v, d) : lt_softmax(v, d), op);
}

at::Tensor softmax(const at::Tensor &self, int64_t dim, bool half_to_float) {
    return wrap(softmax_h(false, self, dim, half_to_float, "_softmax"), "_softmax");
}
at::Tensor log_softmax(const at::Tensor &self, int64_t dim, bool half_to_float) {
    return wrap(softmax_h(true, self, dim, half_to_float, "_log_softmax"), "_log_softmax");
}
at::Tensor &softmax_out(const at::Tensor &self, int64_t dim, bool half_to_float, at::Tensor &out) {
    return out_of(out, softmax_h(false, self, dim, half_to_float, "_softmax.out"), "_softmax.out");
}
at::Tensor &log_softmax_out(const at::Tensor &self, int64_t dim, bool half_to_float, at::Tensor &out) {
    return out_of(out, softmax_h(true, self, dim, half_to_float, "_log_softmax.out"), "_log_softmax.out");
}

lt_tensor *softmax_bwd_h(bool log, const at::Tensor &grad, const at::Tensor &output, int64_t dim,
                         at::ScalarType input_dtype, const char *op) {
    TORCH_CHECK(input_dtype == grad.scalar_type(), "lazytensor: ", op, ": input_dtype ", input_dtype,
                " differs from the gradient's ", grad.scalar_type(), " (a float16 forward, not on this device)");
    Val g(grad, op), o(output, op);
    int d = dim_of(dim, output.dim(), op);
    return check(log ? lt_log_softmax_backward(g, o, d) : lt_softmax_backward(g, o, d), op);
}

at::Tensor softmax_bwd(const at::Tensor &grad, const at::Tensor &output, int64_t dim, at::ScalarType input_dtype) {
    return wrap(softmax_bwd_h(false, grad, output, dim, input_dtype, "_softmax_backward_data"),
                "_softmax_backward_data");
}
at::Tensor log_softmax_bwd(const at::Tensor &grad, const at::Tensor &output, int64_t dim, at::ScalarType input_dtype) {
    return wrap(softmax_bwd_h(true, grad, output, dim, input_dtype, "_log_softmax_backward_data"),
                "_log_softmax_backward_data");
}
at::Tensor &softmax_bwd_out(const at::Tensor &grad, const at::Tensor &output, int64_t dim,
                            at::ScalarType input_dtype, at::Tensor &out) {
    return out_of(out, softmax_bwd_h(false, grad, output, dim, input_dtype, "_softmax_backward_data.out"),
                  "_softmax_backward_data.out");
}
at::Tensor &log_softmax_bwd_out(const at::Tensor &grad, const at::Tensor &output, int64_t dim,
                                at::ScalarType input_dtype, at::Tensor &out) {
    return out_of(out, softmax_bwd_h(true, grad, output, dim, input_dtype, "_log_softmax_backward_data.out"),
                  "_log_softmax_backward_data.out");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("sum", TORCH_FN(sum_all));
    m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
    m.impl("sum.IntList_out", TORCH_FN(sum_out));
    m.impl("mean", TORCH_FN(mean_all));
    m.impl("mean.dim", TORCH_FN(mean_dim));
    m.impl("mean.out", TORCH_FN(mean_out));
    m.impl("var.correction", TORCH_FN(var));
    m.impl("std.correction", TORCH_FN(std_));
    m.impl("var.correction_out", TORCH_FN(var_out));
    m.impl("std.correction_out", TORCH_FN(std_out));
    m.impl("var_mean.correction", TORCH_FN(var_mean));
    m.impl("std_mean.correction", TORCH_FN(std_mean));
    m.impl("cumsum", TORCH_FN(cumsum));
    m.impl("cumsum_", TORCH_FN(cumsum_));
    m.impl("cumsum.out", TORCH_FN(cumsum_out));
    m.impl("amax", TORCH_FN(amax));
    m.impl("amin", TORCH_FN(amin));
    m.impl("amax.out", TORCH_FN(amax_out));
    m.impl("amin.out", TORCH_FN(amin_out));
    m.impl("max", TORCH_FN(max_all));
    m.impl("min", TORCH_FN(min_all));
    m.impl("max.dim", TORCH_FN(max_dim));
    m.impl("min.dim", TORCH_FN(min_dim));
    m.impl("max.dim_max", TORCH_FN(max_dim_out));
    m.impl("min.dim_min", TORCH_FN(min_dim_out));
    m.impl("argmax", TORCH_FN(argmax));
    m.impl("argmin", TORCH_FN(argmin));
    m.impl("argmax.out", TORCH_FN(argmax_out));
    m.impl("argmin.out", TORCH_FN(argmin_out));
    m.impl("_softmax", TORCH_FN(softmax));
    m.impl("_log_softmax", TORCH_FN(log_softmax));
    m.impl("_softmax.out", TORCH_FN(softmax_out));
    m.impl("_log_softmax.out", TORCH_FN(log_softmax_out));
    m.impl("_softmax_backward_data", TORCH_FN(softmax_bwd));
    m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_bwd));
    m.impl("_softmax_backward_data.out", TORCH_FN(softmax_bwd_out));
    m.impl("_log_softmax_backward_data.out", TORCH_FN(log_softmax_bwd_out));
}

}  // namespace ltt
