// Ops without a lazytensor kernel: synced, run by torch's CPU kernel, copied
// back (at::native::cpu_fallback), counted per op as PyTorch/XLA's aten::
// counters, warned about once per op. LT_TORCH_FALLBACK=error makes a
// fallback an error naming the op. A safety net, not coverage.
#include "bridge.h"

#include <ATen/native/CPUFallback.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace ltt {

static std::mutex g_mu;  // fallbacks may run on torch's autograd thread
static std::map<std::string, int64_t> g_counts;

static bool fallback_is_error() {
    static const bool on = [] {
        const char *e = std::getenv("LT_TORCH_FALLBACK");
        return e && std::strcmp(e, "error") == 0;
    }();
    return on;
}

std::map<std::string, int64_t> fallback_counts() {
    std::lock_guard<std::mutex> g(g_mu);
    return g_counts;
}

void fallback_reset() {
    std::lock_guard<std::mutex> g(g_mu);
    g_counts.clear();
}

void fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
    const std::string &name = op.schema().operator_name().name;
    TORCH_CHECK(!fallback_is_error(), "lazytensor: ", name,
                " has no lazytensor kernel and LT_TORCH_FALLBACK=error forbids running it on the CPU");
    bool first;
    {
        std::lock_guard<std::mutex> g(g_mu);
        first = g_counts[name]++ == 0;
    }
    if (first)
        std::fprintf(stderr, "lazytensor: %s has no lazytensor kernel; it runs on the CPU (synced and copied "
                             "back), counted as %s in metrics_report()\n", name.c_str(), name.c_str());
    at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
    m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

}  // namespace ltt
