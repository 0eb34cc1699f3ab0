/* Reference linear and dropout. */
#include "ref_nn.h"

/* in: x (..., K), w (O, K), [bias (O)] -> (..., O): x @ w^T + bias. */
void ref_linear(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *x = &in[0], *w = &in[1];
    int64_t O = w->shape[0], K = w->shape[1], M = O ? y->numel / O : 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t o = 0; o < O; o++) {
            double s = y->nin == 3 ? ld_f(in[2].data, in[2].dtype, o) : 0.0;
            for (int64_t k = 0; k < K; k++) s += ld_f(x->data, x->dtype, m * K + k) * ld_f(w->data, w->dtype, o * K + k);
            st_f(out, (lt_dtype)y->dtype, m * O + o, s);
        }
}

/* in: x -> same shape. sc: [p, seed]. Kept elements are scaled by
 * 1/(1-p); p = 1 drops everything (no 0 * inf). */
void ref_dropout(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    double p = sc[0], scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
    uint64_t seed = (uint64_t)sc[1];
    for (int64_t i = 0; i < y->numel; i++) {
        int keep = nn_dropout_uniform(seed, i) >= p;
        st_f(out, (lt_dtype)y->dtype, i, keep ? ld_f(in[0].data, in[0].dtype, i) * scale : 0.0);
    }
}
