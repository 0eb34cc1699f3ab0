// The device itself: storages (allocator, Store), the device guard, empty
// tensors, copies between the device and the CPU, resize_, and the view
// kernels torch does not provide for a new backend.
#include "bridge.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace ltt {

// ---- dtypes, errors ----------------------------------------------------------
lt_dtype lt_type(c10::ScalarType t, const char *op) {
    switch (t) {
    case at::kFloat: return LT_F32;
    case at::kDouble: return LT_F64;
    case at::kInt: return LT_I32;
    case at::kLong: return LT_I64;
    case at::kBool: return LT_BOOL;
    case at::kBFloat16: return LT_BF16;
    case at::kByte: return LT_U8;
    default: break;
    }
    TORCH_CHECK_TYPE(false, "lazytensor: ", op, ": dtype ", t,
                     " is not supported on the lazytensor device (float32, float64, bfloat16, int64, int32, uint8, bool)");
}

c10::ScalarType torch_type(lt_dtype d) {
    switch (d) {
    case LT_F32: return at::kFloat;
    case LT_F64: return at::kDouble;
    case LT_I32: return at::kInt;
    case LT_I64: return at::kLong;
    case LT_BOOL: return at::kBool;
    case LT_BF16: return at::kBFloat16;
    case LT_U8: return at::kByte;
    }
    TORCH_INTERNAL_ASSERT(false, "unknown lt_dtype");
}

[[noreturn]] static void raise(const char *op) {
    std::string msg = lt_error() ? lt_error_message() : "failed without an error message";
    lt_clear_error();
    TORCH_CHECK(false, "lazytensor: ", op, ": ", msg);
}

lt_tensor *check(lt_tensor *h, const char *op) {
    if (!h) raise(op);
    return h;
}

void check_status(int rc, const char *op) {
    if (rc != 0 || lt_error()) raise(op);
}

int dim_of(int64_t d, int64_t ndim, const char *op) {
    int64_t n = ndim > 0 ? ndim : 1;
    TORCH_CHECK_INDEX(d >= -n && d < n, "lazytensor: ", op, ": dimension ", d, " out of range for a ", ndim,
                      "-d tensor");
    return (int)(d < 0 ? d + n : d);
}

std::vector<int64_t> shape_of(lt_tensor *h) {
    const int64_t *s = lt_shape(h);
    return std::vector<int64_t>(s, s + lt_ndim(h));
}

// ---- storages ---------------------------------------------------------------
// The DataPtr's data is the Store's own address: torch never dereferences a
// device pointer, and equal pointers still mean the same storage.
static void store_delete(void *ctx) {
    Store *s = static_cast<Store *>(ctx);
    lt_free(s->base);
    delete s;
}

static c10::DataPtr store_ptr(Store *s) {
    return c10::DataPtr(s, s, &store_delete, c10::Device(kDevice, 0));
}

struct StoreAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t nbytes) const override {
        Store *s = new Store;
        s->nbytes = nbytes;
        return store_ptr(s);
    }
    c10::DeleterFnPtr raw_deleter() const override { return &store_delete; }
};
static StoreAllocator g_alloc;
REGISTER_ALLOCATOR(kDevice, &g_alloc);

Store *store_of(const at::Tensor &t) {
    if (!t.defined() || t.device().type() != kDevice) return nullptr;
    const c10::DataPtr &dp = t.unsafeGetTensorImpl()->unsafe_storage().data_ptr();
    TORCH_INTERNAL_ASSERT(dp.get_deleter() == &store_delete, "lazytensor: a device tensor without a lazytensor storage");
    return static_cast<Store *>(dp.get_context());
}

// t is its storage's whole value in its natural layout (the base's shape).
static bool is_natural(const at::Tensor &t, lt_tensor *base) {
    if (t.storage_offset() != 0 || lt_ndim(base) != t.dim() || !t.is_contiguous()) return false;
    const int64_t *s = lt_shape(base);
    for (int64_t i = 0; i < t.dim(); i++)
        if (s[i] != t.size(i)) return false;
    return true;
}

static bool covers_storage(const at::Tensor &t, const Store *s) {
    return t.storage_offset() == 0 && t.is_contiguous() && (size_t)t.numel() * t.element_size() == s->nbytes;
}

// Gives a fresh storage its base: t's shape when t covers the storage, else flat.
static void materialize(Store *s, const at::Tensor &t, const char *op) {
    lt_dtype d = lt_type(t.scalar_type(), op);
    if (covers_storage(t, s)) {
        std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
        s->base = check(lt_zeros(d, (int)shape.size(), shape.data()), op);
    } else {
        int64_t n = (int64_t)(s->nbytes / t.element_size());
        s->base = check(lt_zeros(d, 1, &n), op);
    }
}

Val::Val(const at::Tensor &t, const char *op) {
    Store *s = store_of(t);
    if (!s && t.defined() && t.device().is_cpu() && t.dim() == 0) {
        // A CPU 0-d tensor is a scalar operand, as torch allows for every
        // device: it enters the graph as data (a buffer, not a constant).
        at::Tensor c = t.contiguous();
        h_ = check(lt_from_data(c.data_ptr(), lt_type(c.scalar_type(), op), 0, nullptr), op);
        own_ = true;
        return;
    }
    TORCH_CHECK(t.defined(), "lazytensor: ", op, ": expected a tensor, got an undefined one");
    // torch's own wording for a device mix, as its CUDA kernels raise it
    TORCH_CHECK(s, "Expected all tensors to be on the same device, but found at least two devices, ", kDevice,
                ":0 and ", t.device(), "! (lazytensor: ", op, ")");
    if (!s->base) materialize(s, t, op);
    TORCH_CHECK_TYPE(lt_dtype_of(s->base) == lt_type(t.scalar_type(), op), "lazytensor: ", op, ": a ",
                     t.scalar_type(), " tensor over a storage of ", lt_dtype_name(lt_dtype_of(s->base)),
                     " (reinterpreting a storage as another dtype is not supported)");
    if (is_natural(t, s->base)) {
        h_ = s->base;
        return;
    }
    h_ = check(lt_as_strided(s->base, (int)t.dim(), t.sizes().data(), t.strides().data(), t.storage_offset()), op);
    own_ = true;
}

Val::Val(const c10::optional<at::Tensor> &t, const char *op) {
    if (!t.has_value() || !t->defined()) return;
    Val v(*t, op);
    h_ = v.h_;
    own_ = v.own_;
    v.own_ = false;
}

at::Tensor wrap(lt_tensor *h, const char *op) {
    check(h, op);
    lt_dtype d = lt_dtype_of(h);
    Store *s = new Store;
    s->base = h;
    s->nbytes = (size_t)lt_numel(h) * lt_dtype_size(d);
    c10::Storage storage(c10::Storage::use_byte_size_t(), s->nbytes, store_ptr(s), &g_alloc, /*resizable=*/true);
    at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                            caffe2::TypeMeta::fromScalarType(torch_type(d)));
    t.unsafeGetTensorImpl()->set_sizes_contiguous(c10::IntArrayRef(lt_shape(h), lt_ndim(h)));
    return t;
}

void assign(const at::Tensor &dst, lt_tensor *src, const char *op) {
    Val d(dst, op);
    check(lt_copy_(d, src), op);
}

at::Tensor &assign_out(at::Tensor &out, lt_tensor *src, const char *op) {
    at::native::resize_output(out, c10::IntArrayRef(lt_shape(src), lt_ndim(src)));
    assign(out, src, op);
    return out;
}

// ---- the device guard: one device, one stream, nothing asynchronous ----------
struct Guard final : c10::impl::DeviceGuardImplInterface {
    c10::DeviceType type() const override { return kDevice; }
    c10::Device exchangeDevice(c10::Device) const override { return c10::Device(kDevice, 0); }
    c10::Device getDevice() const override { return c10::Device(kDevice, 0); }
    void setDevice(c10::Device d) const override {
        TORCH_CHECK(d.type() == kDevice && (!d.has_index() || d.index() == 0), "lazytensor: no device ", d,
                    " (the lazytensor device is privateuseone:0)");
    }
    void uncheckedSetDevice(c10::Device) const noexcept override {}
    c10::Stream getStream(c10::Device d) const noexcept override {
        return c10::Stream(c10::Stream::DEFAULT, c10::Device(kDevice, d.index() < 0 ? 0 : d.index()));
    }
    c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
    c10::DeviceIndex deviceCount() const noexcept override { return 1; }
    // Events: the core runs a graph to completion before a value is read.
    void record(void **, const c10::Stream &, const c10::DeviceIndex, const c10::EventFlag) const override {}
    void block(void *, const c10::Stream &) const override {}
    bool queryEvent(void *) const override { return true; }
    void destroyEvent(void *, const c10::DeviceIndex) const noexcept override {}
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

// ---- empty tensors, copies, resize -------------------------------------------
static at::Tensor empty_memory_format(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype,
                                      c10::optional<at::Layout>, c10::optional<at::Device>, c10::optional<bool>,
                                      c10::optional<at::MemoryFormat> memory_format) {
    at::ScalarType st = dtype.value_or(c10::get_default_dtype_as_scalartype());
    // An empty tensor of a dtype the core lacks holds nothing to compute:
    // batch norm's CompositeImplicit wrapper makes a 0-element uint8 "reserve".
    if (c10::multiply_integers(c10::asIntArrayRefSlow(size)) != 0) lt_type(st, "empty");
    return at::detail::empty_generic(c10::asIntArrayRefSlow(size), &g_alloc, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st,
                                     memory_format);
}

static at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                                c10::optional<at::ScalarType> dtype, c10::optional<at::Layout>,
                                c10::optional<at::Device>, c10::optional<bool>) {
    at::ScalarType st = dtype.value_or(c10::get_default_dtype_as_scalartype());
    return at::detail::empty_strided_generic(c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride), &g_alloc,
                                             c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st);
}

// dst := src for any pair of devices among (lazytensor, CPU), casting and
// broadcasting as torch's copy_ does.
static void copy_any(const at::Tensor &dst, const at::Tensor &src, const char *op) {
    bool dst_dev = dst.device().type() == kDevice, src_dev = src.device().type() == kDevice;
    if (dst_dev && src_dev) {
        Val s(src, op);
        assign(dst, s, op);
    } else if (dst_dev) {
        TORCH_CHECK(src.device().is_cpu(), "lazytensor: ", op, ": cannot copy from ", src.device(), " to ",
                    dst.device());
        lt_dtype d = lt_type(dst.scalar_type(), op);
        at::Tensor host = src.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
        lt_tensor *h = check(lt_from_data(host.data_ptr(), d, (int)host.dim(), host.sizes().data()), op);
        Store *s = store_of(dst);
        if (!s->base && covers_storage(dst, s)) {
            s->base = h;  // a fresh storage takes the data as its value
            return;
        }
        try {
            assign(dst, h, op);
        } catch (...) {
            lt_free(h);
            throw;
        }
        lt_free(h);
    } else {
        TORCH_CHECK(dst.device().is_cpu(), "lazytensor: ", op, ": cannot copy from ", src.device(), " to ",
                    dst.device());
        Val s(src, op);
        at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU));
        check_status(lt_to_host(s, host.data_ptr(), (size_t)host.nbytes()), op);
        dst.copy_(host);
    }
}

static at::Tensor &copy_(at::Tensor &self, const at::Tensor &src, bool) {
    copy_any(self, src, "copy_");
    return self;
}

static at::Tensor copy_from(const at::Tensor &self, const at::Tensor &dst, bool) {
    copy_any(dst, self, "_copy_from");
    return dst;
}

static at::Tensor copy_from_and_resize(const at::Tensor &self, const at::Tensor &dst) {
    if (!dst.sizes().equals(self.sizes())) dst.resize_(self.sizes());
    copy_any(dst, self, "_copy_from_and_resize");
    return dst;
}

// torch's resize_: the storage grows (keeping its bytes) when the new size needs more.
static const at::Tensor &resize_(const at::Tensor &self, c10::SymIntArrayRef sym_size,
                                 c10::optional<at::MemoryFormat> memory_format) {
    c10::IntArrayRef size = c10::asIntArrayRefSlow(sym_size);
    c10::TensorImpl *impl = self.unsafeGetTensorImpl();
    int64_t numel = c10::multiply_integers(size);
    size_t need = (size_t)(self.storage_offset() + numel) * self.element_size();
    Store *s = store_of(self);
    if (need > s->nbytes) {
        if (s->base) {
            lt_dtype d = lt_dtype_of(s->base);
            int64_t n = (int64_t)(need / self.element_size()), old = lt_numel(s->base), one = 1, zero = 0;
            lt_tensor *grown = check(lt_zeros(d, 1, &n), "resize_");
            lt_tensor *head = lt_as_strided(grown, 1, &old, &one, zero);
            lt_tensor *flat = lt_reshape(s->base, 1, &old);
            lt_tensor *r = lt_copy_(head, flat);
            lt_free(head);
            lt_free(flat);
            if (!r) {
                lt_free(grown);
                check(nullptr, "resize_");
            }
            lt_free(s->base);
            s->base = grown;
        }
        s->nbytes = need;
        impl->unsafe_storage().unsafeGetStorageImpl()->set_nbytes(need);
    }
    impl->set_sizes_contiguous(size);
    if (memory_format.has_value() && *memory_format != at::MemoryFormat::Preserve)
        impl->empty_tensor_restride(*memory_format);
    return self;
}

// ---- reading one value: .item(), bool(t), Python control flow ---------------
static at::Scalar local_scalar_dense(const at::Tensor &self) {
    TORCH_CHECK(self.numel() == 1, "lazytensor: item: a tensor with ", self.numel(),
                " elements cannot be converted to a Python number");
    Val v(self, "item");
    at::Tensor host = at::empty({}, self.options().device(at::kCPU));
    check_status(lt_to_host(v, host.data_ptr(), (size_t)host.nbytes()), "item");
    return host.item();
}

static at::Tensor &fill_scalar(at::Tensor &self, const at::Scalar &value) {
    Val v(self, "fill_");
    check(lt_fill_(v, num(value)), "fill_");
    return self;
}

static at::Tensor &fill_tensor(at::Tensor &self, const at::Tensor &value) {
    TORCH_CHECK(value.dim() == 0, "lazytensor: fill_: the value must be a 0-d tensor, got ", value.dim(), " dims");
    if (value.device().type() != kDevice) return fill_scalar(self, value.item());
    Val v(value, "fill_");
    assign(self, v, "fill_");
    return self;
}

static at::Tensor &zero_(at::Tensor &self) {
    Val v(self, "zero_");
    check(lt_zero_(v), "zero_");
    return self;
}

static at::Tensor as_strided(const at::Tensor &self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                             c10::optional<c10::SymInt> offset) {
    return at::native::as_strided_tensorimpl(self, c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride),
                                             offset.has_value() ? c10::optional<int64_t>(offset->expect_int())
                                                                : c10::nullopt);
}

static at::Tensor view(const at::Tensor &self, c10::SymIntArrayRef size) {
    return at::native::view(self, c10::asIntArrayRefSlow(size));
}

static at::Tensor reshape_alias(const at::Tensor &self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
    return at::native::_reshape_alias(self, c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
    m.impl("empty_strided", TORCH_FN(empty_strided));
    m.impl("copy_", TORCH_FN(copy_));
    m.impl("_copy_from", TORCH_FN(copy_from));
    m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
    m.impl("resize_", TORCH_FN(resize_));
    m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
    m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
    m.impl("fill_.Tensor", TORCH_FN(fill_tensor));
    m.impl("zero_", TORCH_FN(zero_));
    m.impl("as_strided", TORCH_FN(as_strided));
    m.impl("view", TORCH_FN(view));
    m.impl("_reshape_alias", TORCH_FN(reshape_alias));
}

}  // namespace ltt
