/* Fast SOFTMAX/LOG_SOFTMAX over the last dim (any dim whose trailing dims
 * are all size 1) of float32/float64: OpenMP over rows, each row
 * vectorized (reduce_body.h). Softmax over an inner dim keeps the
 * reference kernel. */
#include "cpu.h"

#include "simd.h"

/* (outer, n, inner) around dim. */
static void split(const gnode *y, const gnode *x, int64_t *outer, int64_t *n, int64_t *inner) {
    int d = x->ndim ? (int)y->ia[0] : 0;
    *outer = *inner = 1;
    *n = x->ndim ? x->shape[d] : 1;
    for (int i = 0; i < d; i++) *outer *= x->shape[i];
    for (int i = d + 1; i < x->ndim; i++) *inner *= x->shape[i];
}

int cpu_softmax_ok(const gnode *y, const gnode *x) {
    int64_t outer, n, inner;
    split(y, x, &outer, &n, &inner);
    return (x->dtype == LT_F32 || x->dtype == LT_F64) && y->dtype == x->dtype && inner == 1 && x->numel > 0;
}

int cpu_softmax_run(const gnode *y, const gnode *x, const void *in, void *out) {
    int64_t outer, n, inner;
    split(y, x, &outer, &n, &inner);
    const rkern *k = cpu_rkern(x->dtype);
    size_t es = x->dtype == LT_F32 ? 4 : 8;
    int logsm = y->op == LT_OP_LOG_SOFTMAX;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (x->numel >= 16384)
#endif
    for (int64_t o = 0; o < outer; o++)
        k->softmax((char *)out + (size_t)(o * n) * es, (const char *)in + (size_t)(o * n) * es, n, logsm);
    return 0;
}
