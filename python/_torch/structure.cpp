// Structure and indexing: cat, clone, flip, index_select / index_add, gather /
// scatter_add (gather's backward), embedding and its dense backward,
// a[index] with one integer index tensor and its accumulating put.
#include "bridge.h"

#include <ATen/native/CPUFallback.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/_index_put_impl_ops.h>
#include <ATen/ops/index_add_ops.h>
#include <ATen/ops/index_ops.h>

namespace ltt {
namespace {

// ---- cat ---------------------------------------------------------------------
// torch's rules: the result dtype is at::native::result_type over every
// tensor; 1-D empty tensors are skipped (legacy behavior) wherever they are.
lt_tensor *cat_h(const at::ITensorListRef &tensors, int64_t dim, const char *op) {
    std::vector<at::Tensor> all(tensors.begin(), tensors.end());
    TORCH_CHECK(!all.empty(), "torch.cat(): expected a non-empty list of Tensors");
    at::ScalarType st = at::native::result_type(tensors);
    lt_dtype dt = lt_type(st, op);
    std::vector<std::unique_ptr<Val>> vals;
    std::vector<lt_tensor *> hs;
    const at::Tensor *first = nullptr;
    for (const at::Tensor &t : all) {
        if (t.dim() == 1 && t.numel() == 0) continue;
        TORCH_CHECK(t.dim() > 0, "zero-dimensional tensor cannot be concatenated");
        if (!first) first = &t;
        vals.emplace_back(new Val(t, op));
        hs.push_back(vals.back()->get());
    }
    if (hs.empty()) {  // every tensor skipped: torch answers an empty (0) tensor
        int64_t zero = 0;
        return check(lt_zeros(dt, 1, &zero), op);
    }
    int d = dim_of(dim, first->dim(), op);
    Own r(check(lt_cat((int)hs.size(), hs.data(), d), op));
    if (lt_dtype_of(r) == dt) {
        lt_tensor *h = r.h;
        r.h = nullptr;
        return h;
    }
    return check(lt_to_dtype(r, dt), op);
}

at::Tensor cat(const at::ITensorListRef &tensors, int64_t dim) { return wrap(cat_h(tensors, dim, "cat"), "cat"); }
at::Tensor &cat_out(const at::ITensorListRef &tensors, int64_t dim, at::Tensor &out) {
    return out_of(out, cat_h(tensors, dim, "cat.out"), "cat.out");
}

// ---- clone -------------------------------------------------------------------
// The core's copy is contiguous. A preserved layout that is not (channels
// last, a permuted tensor) goes through torch's own clone: empty_like keeps
// the strides and copy_ writes through them, still on the device.
at::Tensor clone(const at::Tensor &self, c10::optional<at::MemoryFormat> memory_format) {
    at::MemoryFormat mf = memory_format.value_or(at::MemoryFormat::Preserve);
    bool contiguous_result = mf == at::MemoryFormat::Contiguous ||
                             (mf == at::MemoryFormat::Preserve &&
                              (self.is_contiguous() || !self.is_non_overlapping_and_dense()) &&
                              self.suggest_memory_format() == at::MemoryFormat::Contiguous);
    if (!contiguous_result) return at::native::clone(self, memory_format);
    Val v(self, "clone");
    return wrap(lt_clone(v), "clone");
}

// flip: one core node (cumsum's backward in torch is flip, cumsum, flip).
at::Tensor flip(const at::Tensor &self, at::IntArrayRef dims) {
    Val v(self, "flip");
    std::vector<int> ds;
    for (int64_t d : dims) ds.push_back(dim_of(d, self.dim(), "flip"));
    return wrap(lt_flip(v, (int)ds.size(), ds.data()), "flip");
}

// ---- index_select, index_add -------------------------------------------------------
lt_tensor *index_select_h(const at::Tensor &self, int64_t dim, const at::Tensor &index, const char *op) {
    TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
    Val a(self, op), i(index, op);
    return check(lt_index_select(a, dim_of(dim, self.dim(), op), i), op);
}

at::Tensor index_select(const at::Tensor &self, int64_t dim, const at::Tensor &index) {
    return wrap(index_select_h(self, dim, index, "index_select"), "index_select");
}
at::Tensor &index_select_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, at::Tensor &out) {
    return out_of(out, index_select_h(self, dim, index, "index_select.out"), "index_select.out");
}

// index_select's backward is zeros(...).index_add_(dim, index, grad). The
// core adds without a scale: another alpha takes the fallback.
bool unit(const at::Scalar &alpha) { return alpha.isIntegral(true) ? alpha.toLong() == 1 : alpha.toDouble() == 1.0; }

lt_tensor *index_add_h(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
                       const char *op) {
    Val a(self, op), i(index, op), s(source, op);
    return check(lt_index_add(a, dim_of(dim, self.dim(), op), i, s), op);
}

at::Tensor &index_add_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
                          const at::Scalar &alpha, at::Tensor &out) {
    if (!unit(alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::index_add_out>::call(self, dim, index, source,
                                                                                          alpha, out);
    return out_of(out, index_add_h(self, dim, index, source, "index_add.out"), "index_add.out");
}

at::Tensor index_add(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
                     const at::Scalar &alpha) {
    if (!unit(alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::index_add>::call(self, dim, index, source, alpha);
    return wrap(index_add_h(self, dim, index, source, "index_add"), "index_add");
}

at::Tensor &index_add_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
                       const at::Scalar &alpha) {
    if (!unit(alpha))
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::index_add_>::call(self, dim, index, source, alpha);
    Own r(index_add_h(self, dim, index, source, "index_add_"));
    assign(self, r, "index_add_");
    return self;
}

// ---- gather, scatter_add -------------------------------------------------------
lt_tensor *gather_h(const at::Tensor &self, int64_t dim, const at::Tensor &index, const char *op) {
    Val a(self, op), i(index, op);
    return check(lt_gather(a, dim_of(dim, self.dim(), op), i), op);
}

at::Tensor gather(const at::Tensor &self, int64_t dim, const at::Tensor &index, bool sparse_grad) {
    return wrap(gather_h(self, dim, index, "gather"), "gather");
}
at::Tensor &gather_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, bool sparse_grad,
                       at::Tensor &out) {
    return out_of(out, gather_h(self, dim, index, "gather.out"), "gather.out");
}

lt_tensor *scatter_add_h(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
                         const char *op) {
    Val a(self, op), i(index, op), s(src, op);
    return check(lt_scatter_add(a, dim_of(dim, self.dim(), op), i, s), op);
}

at::Tensor scatter_add(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src) {
    return wrap(scatter_add_h(self, dim, index, src, "scatter_add"), "scatter_add");
}
at::Tensor &scatter_add_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src) {
    Own r(scatter_add_h(self, dim, index, src, "scatter_add_"));
    assign(self, r, "scatter_add_");
    return self;
}
at::Tensor &scatter_add_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
                            at::Tensor &out) {
    return out_of(out, scatter_add_h(self, dim, index, src, "scatter_add.out"), "scatter_add.out");
}

// ---- embedding -----------------------------------------------------------------
at::Tensor embedding(const at::Tensor &weight, const at::Tensor &indices, int64_t padding_idx,
                     bool scale_grad_by_freq, bool sparse) {
    TORCH_CHECK(weight.dim() == 2, "'weight' must be 2-D");
    Val w(weight, "embedding"), i(indices, "embedding");
    return wrap(lt_embedding(w, i), "embedding");
}

// The core's backward adds every row: padding_idx (a row that gets no
// gradient) and scale_grad_by_freq take the fallback.
at::Tensor embedding_dense_backward(const at::Tensor &grad, const at::Tensor &indices, c10::SymInt num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
    if (padding_idx >= 0 || scale_grad_by_freq)
        return at::native::call_fallback_fn_symint<&ltt::fallback, at::_ops::embedding_dense_backward>::call(
            grad, indices, num_weights, padding_idx, scale_grad_by_freq);
    const char *op = "embedding_dense_backward";
    Val g(grad, op), i(indices, op);
    return wrap(lt_embedding_backward(g, i, num_weights.expect_int()), op);
}

// ---- advanced indexing: a[index], a[index] += v ---------------------------------
// The core takes one integer index tensor at one dim (leading dims taken
// whole); boolean masks (a data-dependent shape) and several index tensors
// take the fallback, with the indices brought to the CPU first (torch's
// cpu_fallback moves self but not a list of optional tensors).
using Indices = c10::List<c10::optional<at::Tensor>>;

// The dim of the one integer index tensor, or -1.
int64_t single_index(const at::Tensor &self, const Indices &indices) {
    int64_t at = -1;
    for (int64_t i = 0; i < (int64_t)indices.size(); i++) {
        c10::optional<at::Tensor> t = indices.get(i);
        if (!t.has_value() || !t->defined()) continue;
        if (at >= 0) return -1;
        if (t->scalar_type() != at::kLong) return -1;  // torch 1.13 refuses int32 here (the fallback says so)
        if (t->device().type() != kDevice && !t->device().is_cpu()) return -1;
        at = i;
    }
    return at < self.dim() ? at : -1;
}

Indices cpu_indices(const Indices &indices) {
    Indices r;
    for (size_t i = 0; i < indices.size(); i++) {
        c10::optional<at::Tensor> t = indices.get(i);
        r.push_back(t.has_value() && t->defined() ? c10::optional<at::Tensor>(t->cpu()) : t);
    }
    return r;
}

// The index's handle: a device tensor's value, or a CPU tensor's data.
lt_tensor *index_handle(const at::Tensor &t, std::unique_ptr<Val> &val, Own &keep, const char *op) {
    if (t.device().type() == kDevice || t.dim() == 0) {
        val.reset(new Val(t, op));
        return val->get();
    }
    at::Tensor c = t.contiguous();
    keep.h = check(lt_from_data(c.data_ptr(), lt_type(c.scalar_type(), op), (int)c.dim(), c.sizes().data()), op);
    return keep.h;
}

at::Tensor index(const at::Tensor &self, const Indices &indices) {
    int64_t d = single_index(self, indices);
    if (d < 0) return at::native::call_fallback_fn<&ltt::fallback, at::_ops::index_Tensor>::call(self, cpu_indices(indices));
    const char *op = "index.Tensor";
    std::unique_ptr<Val> iv;
    Own keep(nullptr);
    lt_tensor *ix = index_handle(*indices.get(d), iv, keep, op);
    Val a(self, op);
    return wrap(lt_index(a, (int)d, ix), op);
}

// index_put_ with accumulate (index's backward, a[i] += v): values broadcast
// to the indexed shape, as torch's.
at::Tensor &index_put_impl_(at::Tensor &self, const Indices &indices, const at::Tensor &values, bool accumulate,
                            bool unsafe) {
    int64_t d = accumulate ? single_index(self, indices) : -1;
    if (d < 0 || values.scalar_type() != self.scalar_type())
        return at::native::call_fallback_fn<&ltt::fallback, at::_ops::_index_put_impl_>::call(
            self, cpu_indices(indices), values, accumulate, unsafe);
    const char *op = "_index_put_impl_";
    std::unique_ptr<Val> iv;
    Own keep(nullptr);
    lt_tensor *ix = index_handle(*indices.get(d), iv, keep, op);
    std::vector<int64_t> shape(self.sizes().begin(), self.sizes().begin() + d);
    std::vector<int64_t> is = shape_of(ix);
    shape.insert(shape.end(), is.begin(), is.end());
    shape.insert(shape.end(), self.sizes().begin() + d + 1, self.sizes().end());
    Val a(self, op), v(values, op);
    Own ve(values.sizes().equals(shape) ? nullptr : check(lt_expand(v, (int)shape.size(), shape.data()), op));
    Own r(check(lt_index_put_add(a, (int)d, ix, ve.h ? ve.h : v.get()), op));
    assign(self, r, op);
    return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("cat", TORCH_FN(cat));
    m.impl("cat.out", TORCH_FN(cat_out));
    m.impl("clone", TORCH_FN(clone));
    m.impl("flip", TORCH_FN(flip));
    m.impl("index_select", TORCH_FN(index_select));
    m.impl("index_select.out", TORCH_FN(index_select_out));
    m.impl("index_add.out", TORCH_FN(index_add_out));
    m.impl("index_add", TORCH_FN(index_add));
    m.impl("index_add_", TORCH_FN(index_add_));
    m.impl("gather", TORCH_FN(gather));
    m.impl("gather.out", TORCH_FN(gather_out));
    m.impl("scatter_add", TORCH_FN(scatter_add));
    m.impl("scatter_add_", TORCH_FN(scatter_add_));
    m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
    m.impl("embedding", TORCH_FN(embedding));
    m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
    m.impl("index.Tensor", TORCH_FN(index));
    m.impl("_index_put_impl_", TORCH_FN(index_put_impl_));
}

}  // namespace ltt
