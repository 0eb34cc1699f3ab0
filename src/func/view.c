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

/* PyTorch's is_non_overlapping_and_dense: the dims of size > 1, taken in
 * stride order, have contiguous strides. */
static int geom_dense(int ndim, const int64_t *shape, const int64_t *strides) {
    int idx[LT_MAX_DIMS], n = shape_dims_by_stride(ndim, shape, strides, idx);
    int64_t want = 1;
    for (int k = 0; k < n; k++) {
        if (strides[idx[k]] != want) return 0;
        want *= shape[idx[k]];
    }
    return 1;
}

/* PyTorch's get_overlap_status(a, b) == PARTIAL for two distinct handles of
 * one storage. Only dense windows (PyTorch's non_overlapping_and_dense) are
 * compared, by their ranges of offsets: the same range read with the same
 * strides is FULL (allowed), any other intersection PARTIAL. Anything else is
 * PyTorch's TOO_HARD, which it lets run: so do we (inputs are read before the
 * write, the functional meaning). PyTorch's values there are not a rule one
 * can match: they follow its loop order and vector width. b.add_(b[:,0:1]
 * .expand(2, w)) in 1.13 reads the updated b[i,0] element by element for
 * w < 16 (row 1 of arange(6).view(2,3) gives 6 10 11) but the old one for
 * w >= 16 (its vector loop loads a broadcast operand once per row). */
int func_partial_overlap_slow(const lt_tensor *a, const lt_tensor *b) {
    if (a->numel == 0 || b->numel == 0) return 0;
    if (!geom_dense(a->ndim, a->shape, a->strides) || !geom_dense(b->ndim, b->shape, b->strides)) return 0;
    int64_t a0 = a->offset, a1 = a0 + a->numel, b0 = b->offset, b1 = b0 + b->numel;
    if (a0 == b0 && a1 == b1)
        return a->ndim != b->ndim || memcmp(a->strides, b->strides, (size_t)a->ndim * sizeof(int64_t)) != 0;
    return a0 < b1 && b0 < a1;
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
