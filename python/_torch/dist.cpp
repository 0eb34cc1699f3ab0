// Collectives on device tensors for lazytensor.xla (xm.all_reduce,
// xm.optimizer_step, broadcast_master_param): each tensor is one in-place
// collective node of the core (lt_all_reduce_ / lt_broadcast_), traced into
// the step's graph like any in-place op, so a step of N ranks stays one
// compiled graph per rank and the core buckets and overlaps the collectives.
// Nothing is registered in aten: these are Python functions of _bridge.
#include "bridge.h"

#include <torch/extension.h>

namespace ltt {

static int dist_init(const char *op) {
    check_status(lt_dist_init(), op);
    return lt_dist_world_size();
}

static lt_reduce_op reduce_op(const std::string &name) {
    if (name == "sum") return LT_REDUCE_SUM;
    if (name == "mean") return LT_REDUCE_MEAN;
    if (name == "max") return LT_REDUCE_MAX;
    if (name == "min") return LT_REDUCE_MIN;
    TORCH_CHECK(false, "lazytensor: all_reduce_: op '", name, "' is not one of sum, mean, max, min");
    return LT_REDUCE_SUM;  // not reached
}

// Each tensor := the reduction over the ranks of each rank's tensor, in
// place (through views). A world of one traces nothing.
static void all_reduce_(const std::vector<at::Tensor> &tensors, const std::string &op) {
    lt_reduce_op o = reduce_op(op);
    if (dist_init("all_reduce_") == 1) return;
    for (const at::Tensor &t : tensors) {
        Val v(t, "all_reduce_");
        check(lt_all_reduce_(v, o), "all_reduce_");
    }
}

// Each tensor := rank root's tensor, in place.
static void broadcast_(const std::vector<at::Tensor> &tensors, int root) {
    int world = dist_init("broadcast_");
    TORCH_CHECK(root >= 0 && root < world, "lazytensor: broadcast_: root ", root, " is not a rank of a world of ",
                world);
    if (world == 1) return;
    for (const at::Tensor &t : tensors) {
        Val v(t, "broadcast_");
        check(lt_broadcast_(v, root), "broadcast_");
    }
}

void def_dist(pybind11::module &m) {
    m.def("dist_rank", [] {
        dist_init("dist_rank");
        return lt_dist_rank();
    });
    m.def("dist_world_size", [] { return dist_init("dist_world_size"); });
    m.def("all_reduce_", &all_reduce_);
    m.def("broadcast_", &broadcast_);
    m.def("dist_abort", [](int code) { lt_dist_abort(code); });
}

}  // namespace ltt
