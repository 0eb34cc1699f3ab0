/* Shape helpers shared by every layer. */
#include "core.h"

const char *shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

int64_t shape_numel_checked(const char *fn, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > LT_MAX_DIMS) {
        err_set(LT_ERR_ARG, "%s: argument 'ndim' = %d is out of range [0, %d]", fn, ndim, LT_MAX_DIMS);
        return -1;
    }
    if (ndim > 0 && !shape) {
        err_set(LT_ERR_NULL, "%s: argument 'shape' is NULL with ndim %d", fn, ndim);
        return -1;
    }
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            err_set(LT_ERR_ARG, "%s: argument 'shape' has negative size %lld at dim %d (shape %s)", fn,
                    (long long)shape[i], i, SHAPE_STR(ndim, shape));
            return -1;
        }
        if (shape[i] && n > INT64_MAX / 16 / shape[i]) {
            err_set(LT_ERR_OVERFLOW, "%s: argument 'shape' %s has too many elements", fn, SHAPE_STR(ndim, shape));
            return -1;
        }
        n *= shape[i];
    }
    return n;
}

int shape_broadcast(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out) {
    int n = na > nb ? na : nb;
    /* Last dim first: out may alias a or b (api_elementwise folds into its
     * running shape), and dim i only reads a/b at indices <= i. */
    for (int i = n - 1; i >= 0; i--) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) out[i] = da;
        else if (da == 1) out[i] = db;
        else return -1;
    }
    return n;
}

void shape_contig_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

/* ---- strided geometry: do two elements of a view share a location? ---- */

/* Exact answer for the views the fast test cannot clear (interleaved
 * strides, which only lt_as_strided makes): mark every element's offset in a
 * bitmap over the view's span. A write through such a view is legal in
 * PyTorch, so refusing it on a guess would be wrong. A span too large to
 * mark stays "overlapping" (conservative: an error, never a wrong value). */
static int overlaps_exact(int ndim, const int64_t *shape, const int64_t *strides) {
    int64_t span = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] > 1 && strides[i] == 0) return 1;
        span += (shape[i] - 1) * strides[i];
    }
    if (span < 0 || span >= ((int64_t)1 << 27)) return 1;
    uint8_t *seen = core_calloc((size_t)(span / 8 + 1), 1);
    if (!seen) return 1;
    int64_t numel = shape_numel(ndim, shape), idx[LT_MAX_DIMS] = {0}, off = 0;
    int dup = 0;
    for (int64_t i = 0; i < numel && !dup; i++) {
        dup = (seen[off >> 3] >> (off & 7)) & 1;
        seen[off >> 3] |= (uint8_t)(1u << (off & 7));
        for (int d = ndim - 1; d >= 0; d--) {
            off += strides[d];
            if (++idx[d] < shape[d]) break;
            off -= strides[d] * idx[d];
            idx[d] = 0;
        }
    }
    core_free(seen);
    return dup;
}

int shape_dims_by_stride(int ndim, const int64_t *shape, const int64_t *strides, int *idx) {
    int n = 0;
    for (int i = 0; i < ndim; i++)
        if (shape[i] > 1) idx[n++] = i;
    for (int i = 1; i < n; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && strides[idx[j]] < strides[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    return n;
}

/* 0 only when no two elements share a location. Fast path: sort the dims of
 * size > 1 by stride; if each stride exceeds the extent of all the smaller
 * ones, no overlap. Otherwise decide exactly. Zero-size views never overlap
 * (PyTorch 1.13 writes an expanded empty view). */
int shape_overlaps(int ndim, const int64_t *shape, const int64_t *strides) {
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) return 0;
    int idx[LT_MAX_DIMS], n = shape_dims_by_stride(ndim, shape, strides, idx);
    int64_t extent = 0; /* max offset reachable by the smaller dims */
    for (int k = 0; k < n; k++) {
        int64_t s = strides[idx[k]];
        if (s <= extent) return overlaps_exact(ndim, shape, strides);
        extent += s * (shape[idx[k]] - 1);
    }
    return 0;
}
