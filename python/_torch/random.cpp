// Random fills on the device from the core's generator (lt_manual_seed;
// torch.manual_seed seeds it too): uniform_ (torch.rand), normal_
// (torch.randn), bernoulli_ with a float p (dropout's mask in torch 1.13's
// _dropout_impl, stochastic depth). One RANDOM node each, its seed a
// runtime parameter: a new mask every step never recompiles. The values
// are not CPU eager's (issue 27 allows that); a torch.Generator argument
// has no meaning on this device and is refused.
#include "bridge.h"

namespace ltt {
namespace {

void no_generator(const c10::optional<at::Generator> &gen, const char *op) {
    TORCH_CHECK(!gen.has_value() || !gen->defined(), "lazytensor: ", op,
                ": a torch.Generator cannot drive the lazytensor device's random numbers (seed it with "
                "torch.manual_seed or lazytensor.torch.manual_seed)");
}

at::Tensor &fill(at::Tensor &self, lt_tensor *h, const char *op) {
    check(h, op);
    try {
        assign(self, h, op);
    } catch (...) {
        lt_free(h);
        throw;
    }
    lt_free(h);
    return self;
}

at::Tensor &uniform_(at::Tensor &self, double from, double to, c10::optional<at::Generator> gen) {
    static const char op[] = "uniform_";
    no_generator(gen, op);
    return fill(self, lt_rand_uniform(lt_type(self.scalar_type(), op), (int)self.dim(), self.sizes().data(), from, to),
                op);
}

at::Tensor &normal_(at::Tensor &self, double mean, double std, c10::optional<at::Generator> gen) {
    static const char op[] = "normal_";
    no_generator(gen, op);
    return fill(self, lt_rand_normal(lt_type(self.scalar_type(), op), (int)self.dim(), self.sizes().data(), mean, std),
                op);
}

at::Tensor &bernoulli_float(at::Tensor &self, double p, c10::optional<at::Generator> gen) {
    static const char op[] = "bernoulli_";
    no_generator(gen, op);
    return fill(self, lt_rand_bernoulli(lt_type(self.scalar_type(), op), (int)self.dim(), self.sizes().data(), p), op);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("uniform_", TORCH_FN(uniform_));
    m.impl("normal_", TORCH_FN(normal_));
    m.impl("bernoulli_.float", TORCH_FN(bernoulli_float));
}

}  // namespace ltt
