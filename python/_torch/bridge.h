// The PyTorch device bridge (DESIGN 16): aten kernels for torch's
// PrivateUse1 dispatch key, each a translation into the lt_ C API.
//
// A device tensor's torch Storage carries a Store in its DataPtr context:
// the lazytensor handle that IS the storage (the "base"). torch's own view
// kernels make aliasing tensors (sizes, strides, offset over that storage);
// a kernel reads or writes such a tensor as lt_as_strided of the base, so
// views and in-place ops go through the core's functionalization.
//
// No numerics live here: what a kernel needs that the core lacks is added
// to the core first (include/lazytensor.h), then called.
#pragma once

#include <ATen/ATen.h>
#include <cmath>
#include <torch/library.h>

#include "lazytensor.h"

namespace ltt {

// A storage of the device. base is NULL until the storage is first read or
// written (torch.empty allocates bytes before anyone says what they hold).
struct Store {
    lt_tensor *base = nullptr;
    size_t nbytes = 0;
    // native_layer_norm's eps on its mean output's storage: torch passes
    // mean and rstd to the backward, not eps, which the core's backward
    // ops take (they recompute the statistics). norm.cpp.
    double eps = NAN;  // NAN: not a layer norm's (any finite eps is valid, as in torch)
};

constexpr c10::DeviceType kDevice = c10::DeviceType::PrivateUse1;

lt_dtype lt_type(c10::ScalarType t, const char *op);  // throws for a dtype the core lacks
c10::ScalarType torch_type(lt_dtype d);
Store *store_of(const at::Tensor &t);                 // NULL for a tensor not on the device

// The lazytensor value of a device tensor, for the length of one kernel:
// the base itself when t is the whole storage in its natural layout (the
// common case: no handle is made), else a new as_strided view of the base.
class Val {
public:
    Val(const at::Tensor &t, const char *op);
    Val(const c10::optional<at::Tensor> &t, const char *op);  // undefined -> NULL
    ~Val() { if (own_) lt_free(h_); }
    Val(const Val &) = delete;
    Val &operator=(const Val &) = delete;
    operator lt_tensor *() const { return h_; }
    lt_tensor *get() const { return h_; }
private:
    lt_tensor *h_ = nullptr;
    bool own_ = false;
};

// Throws a c10::Error naming op with the core's pending error (and clears
// it) when h is NULL; returns h otherwise.
lt_tensor *check(lt_tensor *h, const char *op);
void check_status(int rc, const char *op);
// A new device tensor that owns the new handle h (h is consumed, also on error).
at::Tensor wrap(lt_tensor *h, const char *op);
// dst := src (src broadcasts and casts to dst), through dst's view: the
// kernel behind copy_, out= results and in-place ops the core has no _ form of.
void assign(const at::Tensor &dst, lt_tensor *src, const char *op);
// The result of an out= kernel: resized as torch's resize_output does, then assigned.
at::Tensor &assign_out(at::Tensor &out, lt_tensor *src, const char *op);

// The counted CPU fallback (fallback.cpp), for a kernel handed arguments the
// core does not take (e.g. class weights):
//   return at::native::call_fallback_fn<&ltt::fallback, at::_ops::op>::call(args...);
void fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack);

// A handle a kernel made, freed however the kernel ends (release() keeps it).
struct Own {
    lt_tensor *h;
    explicit Own(lt_tensor *t = nullptr) : h(t) {}
    ~Own() { lt_free(h); }
    Own(const Own &) = delete;
    Own &operator=(const Own &) = delete;
    operator lt_tensor *() const { return h; }
    lt_tensor *release() {
        lt_tensor *t = h;
        h = nullptr;
        return t;
    }
};

// out := h (consumed) for an out= kernel.
inline at::Tensor &out_of(at::Tensor &out, lt_tensor *h, const char *op) {
    Own o(check(h, op));
    return assign_out(out, o, op);
}

// Python scalars are runtime parameters of the core (a schedule never recompiles).
inline double num(const c10::Scalar &s) { return s.toDouble(); }
// Dims normalized to [0, ndim).
int dim_of(int64_t d, int64_t ndim, const char *op);
std::vector<int64_t> shape_of(lt_tensor *h);

}  // namespace ltt
