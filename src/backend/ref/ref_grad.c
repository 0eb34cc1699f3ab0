/* Reference kernels of the ops that only autograd emits. */
#include "ref.h"

/* AS_STRIDED_BACKWARD: out (the base's shape) = 0, or in[1] when given,
 * then every element of in[0] (the window's shape) is ADDED at its strided
 * offset (ia: strides..., offset), in double: an expanded window hits one
 * offset many times. in[1] is read whole before out is written (the cpu
 * plan may put out in its place). */
void ref_as_strided_backward(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *g = &in[0];
    int nd = g->ndim;
    double *acc = ref_scratch(y->numel);
    if (y->nin == 2)
        for (int64_t k = 0; k < y->numel; k++) acc[k] = ld_f(in[1].data, in[1].dtype, k);
    int64_t idx[LT_MAX_DIMS] = {0}, off = y->ia[nd];
    for (int64_t i = 0; i < g->numel; i++) {
        acc[off] += ld_f(g->data, g->dtype, i);
        for (int d = nd - 1; d >= 0; d--) {
            idx[d]++;
            off += y->ia[d];
            if (idx[d] < g->shape[d]) break;
            off -= y->ia[d] * idx[d];
            idx[d] = 0;
        }
    }
    for (int64_t k = 0; k < y->numel; k++) st_f(out, (lt_dtype)y->dtype, k, acc[k]);
}
