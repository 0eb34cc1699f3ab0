// Helpers shared by the elementwise family's translation units
// (elementwise.cpp, activation.cpp).
#pragma once

#include "bridge.h"

#include <ATen/native/CPUFallback.h>

namespace ltt {

// A Python number that reached a Tensor overload (a CPU "wrapped number"):
// true and its value in s. Such a number stays a runtime scalar of the core.
bool wrapped_scalar(const at::Tensor &t, c10::Scalar &s);
// The in-place and out= forms of an op the core has no `_` form of: h (a
// new handle, consumed) is written through self's / out's view; its dtype
// must cast to theirs as torch requires ("result type Float can't be cast
// to the desired output type Long").
at::Tensor &write(at::Tensor &self, lt_tensor *h, const char *op);
at::Tensor &write_out(at::Tensor &out, lt_tensor *h, const char *op);

// The kernels NAME, NAME_ and NAME.out of a unary op the core has as
// lt_NAME and lt_NAME_ (static: one copy per translation unit that uses it).
#define UNARY(name)                                                             \
    static at::Tensor name(const at::Tensor &self) {                            \
        Val a(self, #name);                                                     \
        return wrap(lt_##name(a), #name);                                       \
    }                                                                           \
    static at::Tensor &name##_(at::Tensor &self) {                              \
        Val a(self, #name "_");                                                 \
        check(lt_##name##_(a), #name "_");                                      \
        return self;                                                            \
    }                                                                           \
    static at::Tensor &name##_out(const at::Tensor &self, at::Tensor &out) {    \
        Val a(self, #name ".out");                                              \
        return write_out(out, lt_##name(a), #name ".out");                      \
    }

}  // namespace ltt
