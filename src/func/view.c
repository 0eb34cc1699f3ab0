/* Strided geometry of views, relative to the storage's contiguous layout. */
#include "func.h"

int geom_is_contiguous(int ndim, const int64_t *shape, const int64_t *strides) {
    int64_t expect = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] == 1) continue;
        if (strides[i] != expect) return 0;
        expect *= shape[i];
    }
    return 1;
}

/* Conservative: 0 only when no two elements can share a location. Sort the
 * dims of size > 1 by stride; each stride must exceed the extent of all the
 * smaller ones. Zero-size views never overlap. */
int geom_overlaps(int ndim, const int64_t *shape, const int64_t *strides) {
    int idx[LT_MAX_DIMS], n = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) return 0;
        if (shape[i] > 1) idx[n++] = i;
    }
    for (int i = 1; i < n; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && strides[idx[j]] < strides[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    int64_t extent = 0; /* max offset reachable by the smaller dims */
    for (int k = 0; k < n; k++) {
        int64_t s = strides[idx[k]];
        if (s <= extent) return 1;
        extent += s * (shape[idx[k]] - 1);
    }
    return 0;
}

/* PyTorch's at::detail::computeStride. */
int geom_view_strides(int ndim, const int64_t *shape, const int64_t *strides, int nnew,
                      const int64_t *newshape, int64_t *newstrides) {
    int64_t numel = shape_numel(ndim, shape);
    if (numel == 0 || ndim == 0) {
        /* any shape of the same numel is a view of an empty or 0-d tensor */
        shape_contig_strides(nnew, newshape, newstrides);
        return 1;
    }
    int view_d = nnew - 1;
    int64_t chunk_base_stride = strides[ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int tensor_d = ndim - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= shape[tensor_d];
        if (tensor_d == 0 || (shape[tensor_d - 1] != 1 && strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
                newstrides[view_d] = view_numel * chunk_base_stride;
                view_numel *= newshape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return 0;
            if (tensor_d > 0) {
                chunk_base_stride = strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}
