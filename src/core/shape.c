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
