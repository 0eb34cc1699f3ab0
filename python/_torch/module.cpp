// lazytensor.torch._bridge: the Python functions of the device (mark_step,
// sync, metrics, seeding, exchange with lazytensor.Tensor). The aten kernels
// register themselves when the module loads (TORCH_LIBRARY_IMPL in the other
// translation units).
#include "bridge.h"

#include <torch/extension.h>

#include <map>
#include <sstream>

namespace ltt {
std::map<std::string, int64_t> fallback_counts();
void fallback_reset();
void def_dist(pybind11::module &m);  // dist.cpp
}

using namespace ltt;

static void sync_tensors(const std::vector<at::Tensor> &tensors) {
    // Syncs what the tensors need: reading one element of each storage
    // would do the same but compile one graph per tensor, so every base
    // is synced together through lt_mark_step's graph instead.
    for (const at::Tensor &t : tensors)
        TORCH_CHECK(store_of(t), "lazytensor: sync: a tensor on ", t.device(), " is not on the lazytensor device");
    lt_mark_step();
    check_status(0, "sync");
}

static std::string metrics_report() {
    std::ostringstream o;
    o << lt_metrics_report();
    for (const auto &kv : fallback_counts())
        o << "Counter: " << kv.first << "\n  Value: " << kv.second << "\n";
    return o.str();
}

PYBIND11_MODULE(_bridge, m) {
    m.doc() = "The lazytensor device of PyTorch (aten kernels for PrivateUse1).";
    m.def("mark_step", [] {
        lt_mark_step();
        check_status(0, "mark_step");
    });
    m.def("sync", &sync_tensors);
    m.def("metrics_report", &metrics_report);
    m.def("metric", [](const std::string &name) { return lt_metric(name.c_str()); });
    m.def("metrics_reset", [] {
        lt_metrics_reset();
        fallback_reset();
    });
    m.def("fallback_counts", &fallback_counts);
    m.def("manual_seed", [](uint64_t seed) { lt_manual_seed(seed); });
    // Spans on the core's Chrome trace (LT_TRACE_FILE): torch_xla.debug.profiler.
    m.def("trace_begin", [](const std::string &name) { lt_trace_begin(name.c_str()); });
    m.def("trace_end", [] { lt_trace_end(); });
    def_dist(m);
    // lazytensor.Tensor <-> torch tensor without a copy: each side gets a
    // new handle aliasing the other's storage (lt_detach), so writes through
    // either are seen by both.
    m.def("_to_lt_handle", [](const at::Tensor &t) {
        Val v(t, "to_lt");
        return (uintptr_t)check(lt_detach(v), "to_lt");
    });
    m.def("_from_lt_handle", [](uintptr_t h) {
        TORCH_CHECK(h, "lazytensor: from_lt: a NULL handle");
        return wrap(lt_detach(reinterpret_cast<lt_tensor *>(h)), "from_lt");
    });
}
