/* View ops: each computes the new strided geometry over the base storage
 * and returns an aliasing handle. No node is created until the view is read. */
#include "api.h"

#define CHECK(fn, a) \
    if (api_check(fn, "a", a)) return NULL

#define WRAP(fn, var, dim, nd)                                                                          \
    int var = dim_wrap((dim), (nd));                                                                    \
    if (var < 0)                                                                                        \
        return err_set(LT_ERR_ARG, "%s: argument '" #dim "' = %d is out of range for a %d-d tensor", fn, \
                       (int)(dim), (nd))

static lt_tensor *make_view(const char *fn, lt_tensor *a, int nd, const int64_t *shape, const int64_t *strides,
                            int64_t offset) {
    API_ENTER();
    lt_tensor *t = func_new_view(a, nd, shape, strides, offset);
    API_LEAVE(fn, t);
    return t;
}

/* Resolves one -1 in a requested shape; checks the element count. */
static int infer_shape(const char *fn, const lt_tensor *a, int ndim, const int64_t *shape, int64_t *out) {
    if (ndim > 0 && ndim <= LT_MAX_DIMS && !shape) return err_set(LT_ERR_NULL, "%s: argument 'shape' is NULL", fn), -1;
    if (ndim < 0 || ndim > LT_MAX_DIMS || (ndim && !shape))
        return err_set(LT_ERR_ARG, "%s: argument 'ndim' is %d (shape %s)", fn, ndim, shape ? "given" : "NULL"), -1;
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return err_set(LT_ERR_ARG, "%s: argument 'shape' %s has more than one -1", fn, SHAPE_STR(ndim, shape)), -1;
            infer = i;
        } else if (shape[i] < 0) {
            return err_set(LT_ERR_ARG, "%s: argument 'shape' has invalid size %lld at dim %d (%s)", fn, (long long)shape[i], i,
                           SHAPE_STR(ndim, shape)), -1;
        } else {
            if (shape[i] && known > INT64_MAX / shape[i])
                return err_set(LT_ERR_OVERFLOW, "%s: argument 'shape' %s overflows", fn, SHAPE_STR(ndim, shape)), -1;
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || a->numel % known)
            return err_set(LT_ERR_SHAPE, "%s: argument 'shape' %s is invalid for input of size %lld", fn, SHAPE_STR(ndim, shape),
                           (long long)a->numel), -1;
        out[infer] = a->numel / known;
    } else if (known != a->numel) {
        return err_set(LT_ERR_SHAPE, "%s: argument 'shape' %s is invalid for input of size %lld", fn, SHAPE_STR(ndim, shape),
                       (long long)a->numel), -1;
    }
    return 0;
}

lt_tensor *lt_view(lt_tensor *a, int ndim, const int64_t *shape) {
    CHECK("lt_view", a);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    if (infer_shape("lt_view", a, ndim, shape, ns)) return NULL;
    if (!geom_view_strides(a->ndim, a->shape, a->strides, ndim, ns, st))
        return err_set(LT_ERR_SHAPE,
                       "lt_view: view size %s (argument 'shape') is not compatible with input tensor 'a' of size %s and stride %s (at least one "
                       "dimension spans across two contiguous subspaces); use lt_reshape",
                       SHAPE_STR(ndim, ns), SHAPE_STR(a->ndim, a->shape), SHAPE_STR(a->ndim, a->strides));
    return make_view("lt_view", a, ndim, ns, st, a->offset);
}

lt_tensor *lt_reshape(lt_tensor *a, int ndim, const int64_t *shape) {
    CHECK("lt_reshape", a);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    if (infer_shape("lt_reshape", a, ndim, shape, ns)) return NULL;
    if (geom_view_strides(a->ndim, a->shape, a->strides, ndim, ns, st))
        return make_view("lt_reshape", a, ndim, ns, st, a->offset);
    /* Not expressible as a view: a copy, as PyTorch does. */
    API_ENTER();
    ir_node *v = func_value(a);
    if (!v) return NULL;
    int64_t ia[LT_MAX_DIMS + 1];
    shape_contig_strides(ndim, ns, ia);
    ia[ndim] = 0;
    ir_node *n = ir_new(LT_OP_AS_STRIDED, (lt_dtype)a->dtype, ndim, ns, 1, &v, ndim + 1, ia, 0, NULL);
    lt_tensor *t = api_new_of(n, a);
    API_LEAVE("lt_reshape", t);
    return t;
}

lt_tensor *lt_flatten(lt_tensor *a, int start_dim, int end_dim) {
    CHECK("lt_flatten", a);
    if (a->ndim == 0) {
        int64_t one = 1;
        return lt_reshape(a, 1, &one);
    }
    WRAP("lt_flatten", s, start_dim, a->ndim);
    WRAP("lt_flatten", e, end_dim, a->ndim);
    if (s > e) return err_set(LT_ERR_ARG, "lt_flatten: 'start_dim' %d comes after 'end_dim' %d", start_dim, end_dim);
    int64_t ns[LT_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < s; d++) ns[nd++] = a->shape[d];
    int64_t m = 1;
    for (int d = s; d <= e; d++) m *= a->shape[d];
    ns[nd++] = m;
    for (int d = e + 1; d < a->ndim; d++) ns[nd++] = a->shape[d];
    return lt_reshape(a, nd, ns);
}

lt_tensor *lt_permute(lt_tensor *a, int ndim, const int *dims) {
    CHECK("lt_permute", a);
    if (ndim == a->ndim && ndim && !dims) return err_set(LT_ERR_NULL, "lt_permute: argument 'dims' is NULL");
    if (ndim != a->ndim || (ndim && !dims))
        return err_set(LT_ERR_ARG, "lt_permute: argument 'ndim' is %d but the tensor has %d dims", ndim, a->ndim);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int seen = 0;
    for (int i = 0; i < ndim; i++) {
        int d = dim_wrap(dims[i], ndim);
        if (d < 0 || ((seen >> d) & 1))
            return err_set(LT_ERR_ARG, "lt_permute: argument 'dims[%d]' = %d is out of range or repeated", i, dims[i]);
        seen |= 1 << d;
        ns[i] = a->shape[d];
        st[i] = a->strides[d];
    }
    return make_view("lt_permute", a, ndim, ns, st, a->offset);
}

lt_tensor *lt_transpose(lt_tensor *a, int dim0, int dim1) {
    CHECK("lt_transpose", a);
    if (a->ndim == 0 && (dim0 == 0 || dim0 == -1) && (dim1 == 0 || dim1 == -1))
        return make_view("lt_transpose", a, 0, NULL, NULL, a->offset);
    WRAP("lt_transpose", d0, dim0, a->ndim);
    WRAP("lt_transpose", d1, dim1, a->ndim);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    memcpy(ns, a->shape, sizeof ns); /* fixed size: a few moves, not a rep movs */
    memcpy(st, a->strides, sizeof st);
    ns[d0] = a->shape[d1];
    ns[d1] = a->shape[d0];
    st[d0] = a->strides[d1];
    st[d1] = a->strides[d0];
    return make_view("lt_transpose", a, a->ndim, ns, st, a->offset);
}

lt_tensor *lt_t(lt_tensor *a) {
    CHECK("lt_t", a);
    if (a->ndim > 2) return err_set(LT_ERR_SHAPE, "lt_t: argument 'a' has %d dims; expects <= 2", a->ndim);
    if (a->ndim < 2) return make_view("lt_t", a, a->ndim, a->shape, a->strides, a->offset);
    return lt_transpose(a, 0, 1);
}

lt_tensor *lt_slice(lt_tensor *a, int dim, int64_t start, int64_t end, int64_t step) {
    CHECK("lt_slice", a);
    if (a->ndim == 0) return err_set(LT_ERR_SHAPE, "lt_slice: argument 'a' is 0-d and cannot be sliced");
    WRAP("lt_slice", d, dim, a->ndim);
    if (step <= 0) return err_set(LT_ERR_ARG, "lt_slice: argument 'step' = %lld must be positive", (long long)step);
    int64_t n = a->shape[d];
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    memcpy(ns, a->shape, sizeof ns); /* fixed size: a few moves, not a rep movs */
    memcpy(st, a->strides, sizeof st);
    ns[d] = step == 1 ? end - start : (end - start + step - 1) / step; /* a division costs tens of cycles */
    st[d] = a->strides[d] * step;
    return make_view("lt_slice", a, a->ndim, ns, st, a->offset + start * a->strides[d]);
}

lt_tensor *lt_narrow(lt_tensor *a, int dim, int64_t start, int64_t length) {
    CHECK("lt_narrow", a);
    if (a->ndim == 0) return err_set(LT_ERR_SHAPE, "lt_narrow: argument 'a' is 0-d and cannot be narrowed");
    WRAP("lt_narrow", d, dim, a->ndim);
    /* PyTorch wraps start like a dim index of a dim of size n (one of size
     * 0 takes -1 and 0, as a 0-d tensor's dims), or takes start == n. */
    int64_t n = a->shape[d], m = n > 0 ? n : 1;
    if (start != n && (start < -m || start >= m))
        return err_set(LT_ERR_ARG, "lt_narrow: argument 'start' = %lld is out of range for dim %d of size %lld",
                       (long long)start, d, (long long)n);
    if (start < 0) start += m;
    if (length < 0 || start + length > n)
        return err_set(LT_ERR_ARG, "lt_narrow: arguments 'start' (%lld) + 'length' (%lld) exceed dim %d of size %lld",
                       (long long)start, (long long)length, d, (long long)n);
    return lt_slice(a, d, start, start + length, 1);
}

lt_tensor *lt_select(lt_tensor *a, int dim, int64_t index) {
    CHECK("lt_select", a);
    if (a->ndim == 0) return err_set(LT_ERR_SHAPE, "lt_select: argument 'a' is 0-d: cannot select on it");
    WRAP("lt_select", d, dim, a->ndim);
    int64_t n = a->shape[d];
    if (index < -n || index >= n)
        return err_set(LT_ERR_ARG, "lt_select: argument 'index' = %lld is out of range for dim %d of size %lld",
                       (long long)index, d, (long long)n);
    if (index < 0) index += n;
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < a->ndim; k++)
        if (k != d) {
            ns[nd] = a->shape[k];
            st[nd++] = a->strides[k];
        }
    return make_view("lt_select", a, nd, ns, st, a->offset + index * a->strides[d]);
}

lt_tensor *lt_expand(lt_tensor *a, int ndim, const int64_t *shape) {
    CHECK("lt_expand", a);
    if (ndim >= a->ndim && ndim <= LT_MAX_DIMS && ndim && !shape)
        return err_set(LT_ERR_NULL, "lt_expand: argument 'shape' is NULL");
    if (ndim < a->ndim || ndim > LT_MAX_DIMS || (ndim && !shape))
        return err_set(LT_ERR_ARG, "lt_expand: argument 'ndim' = %d must be in [%d, %d]", ndim, a->ndim, LT_MAX_DIMS);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int lead = ndim - a->ndim;
    for (int i = 0; i < ndim; i++) {
        int j = i - lead;
        int64_t want = shape[i];
        if (j < 0) {
            if (want < 0)
                return err_set(LT_ERR_ARG, "lt_expand: argument 'shape' has invalid size %lld at new leading dim %d", (long long)want, i);
            ns[i] = want;
            st[i] = 0;
        } else if (want == -1 || want == a->shape[j]) {
            ns[i] = a->shape[j];
            st[i] = a->strides[j];
        } else if (a->shape[j] == 1 && want >= 0) {
            ns[i] = want;
            st[i] = 0;
        } else {
            return err_set(LT_ERR_SHAPE, "lt_expand: argument 'shape': size %lld at dim %d must match the existing size %lld (shape %s to %s)",
                           (long long)want, i, (long long)a->shape[j], SHAPE_STR(a->ndim, a->shape),
                           SHAPE_STR(ndim, shape));
        }
    }
    /* PyTorch's inferExpandGeometry: a new leading dim of size 1 takes the
     * stride of a contiguous dim outside the next one (stride 0 only when it
     * repeats, or for a 0-d input). Strides of size-1 dims decide whether two
     * views of the same elements are the "same" (func_partial_overlap). */
    for (int i = lead - 1; i >= 0 && a->ndim > 0; i--)
        if (ns[i] == 1) st[i] = ns[i + 1] * st[i + 1];
    if (shape_numel_checked("lt_expand", ndim, ns) < 0) return NULL;
    return make_view("lt_expand", a, ndim, ns, st, a->offset);
}

lt_tensor *lt_unsqueeze(lt_tensor *a, int dim) {
    CHECK("lt_unsqueeze", a);
    if (a->ndim >= LT_MAX_DIMS) return err_set(LT_ERR_SHAPE, "lt_unsqueeze: tensor already has %d dims", LT_MAX_DIMS);
    WRAP("lt_unsqueeze", d, dim, a->ndim + 1);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k <= a->ndim; k++) {
        if (k == d) {
            ns[nd] = 1;
            st[nd++] = k < a->ndim ? a->strides[k] * a->shape[k] : 1;
        }
        if (k < a->ndim) {
            ns[nd] = a->shape[k];
            st[nd++] = a->strides[k];
        }
    }
    return make_view("lt_unsqueeze", a, nd, ns, st, a->offset);
}

lt_tensor *lt_squeeze(lt_tensor *a, int dim) {
    CHECK("lt_squeeze", a);
    if (a->ndim == 0 && (dim == 0 || dim == -1)) return make_view("lt_squeeze", a, 0, NULL, NULL, a->offset);
    WRAP("lt_squeeze", d, dim, a->ndim);
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < a->ndim; k++)
        if (k != d || a->shape[k] != 1) {
            ns[nd] = a->shape[k];
            st[nd++] = a->strides[k];
        }
    return make_view("lt_squeeze", a, nd, ns, st, a->offset);
}

lt_tensor *lt_diagonal(lt_tensor *a, int64_t offset, int dim1, int dim2) {
    CHECK("lt_diagonal", a);
    WRAP("lt_diagonal", d1, dim1, a->ndim);
    WRAP("lt_diagonal", d2, dim2, a->ndim);
    if (a->ndim < 2 || d1 == d2)
        return err_set(LT_ERR_ARG, "lt_diagonal: dims 'dim1' = %d and 'dim2' = %d must differ in a >= 2-d tensor", dim1, dim2);
    int64_t s1 = a->shape[d1], s2 = a->shape[d2], off = a->offset, n;
    if (offset >= 0) {
        n = s2 - offset < s1 ? s2 - offset : s1;
    } else {
        n = s1 + offset < s2 ? s1 + offset : s2;
    }
    if (n < 0) n = 0;
    if (n > 0) off += offset >= 0 ? offset * a->strides[d2] : -offset * a->strides[d1];
    int64_t ns[LT_MAX_DIMS], st[LT_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < a->ndim; k++)
        if (k != d1 && k != d2) {
            ns[nd] = a->shape[k];
            st[nd++] = a->strides[k];
        }
    ns[nd] = n;
    st[nd++] = a->strides[d1] + a->strides[d2];
    return make_view("lt_diagonal", a, nd, ns, st, off);
}

lt_tensor *lt_as_strided(lt_tensor *a, int ndim, const int64_t *shape, const int64_t *strides,
                         int64_t storage_offset) {
    CHECK("lt_as_strided", a);
    if (ndim < 0 || ndim > LT_MAX_DIMS)
        return err_set(LT_ERR_ARG, "lt_as_strided: argument 'ndim' = %d must be in [0, %d]", ndim, LT_MAX_DIMS);
    if (ndim && (!shape || !strides))
        return err_set(LT_ERR_NULL, "lt_as_strided: argument '%s' is NULL", shape ? "strides" : "shape");
    if (storage_offset < 0)
        return err_set(LT_ERR_ARG, "lt_as_strided: argument 'storage_offset' = %lld is negative", (long long)storage_offset);
    int64_t numel = shape_numel_checked("lt_as_strided", ndim, shape);
    if (numel < 0) return NULL;
    int64_t last = storage_offset;
    for (int i = 0; i < ndim; i++) {
        if (strides[i] < 0)
            return err_set(LT_ERR_ARG, "lt_as_strided: argument 'strides[%d]' = %lld is negative", i, (long long)strides[i]);
        if (shape[i] > 0) last += (shape[i] - 1) * strides[i];
    }
    if (numel > 0 && last >= a->st->numel)
        return err_set(LT_ERR_ARG,
                       "lt_as_strided: size %s ('shape'), stride %s ('strides') and offset %lld ('storage_offset') reach element %lld, outside the storage of %lld elements",
                       SHAPE_STR(ndim, shape), SHAPE_STR(ndim, strides), (long long)storage_offset, (long long)last,
                       (long long)a->st->numel);
    lt_tensor *t = make_view("lt_as_strided", a, ndim, shape, strides, storage_offset);
    if (t) t->overlaps = (uint8_t)shape_overlaps(ndim, shape, strides); /* strides chosen freely: decide exactly */
    return t;
}
