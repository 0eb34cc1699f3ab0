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

/* in: x -> same shape. sc: [p, seed]. As PyTorch: x times a noise tensor
 * that holds 1/(1-p) (computed in the dtype) where kept, 0 where dropped,
 * so a dropped inf or NaN gives NaN (p = 1 multiplies everything by 0). */
void ref_dropout(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    double p = sc[0], scale = p >= 1 ? 0.0 : y->dtype == LT_F32 ? (double)(1.0f / (float)(1.0 - p)) : 1.0 / (1.0 - p);
    uint64_t seed = (uint64_t)sc[1];
    for (int64_t i = 0; i < y->numel; i++) {
        double noise = nn_dropout_uniform(seed, i) >= p ? scale : 0.0;
        st_f(out, (lt_dtype)y->dtype, i, ld_f(in[0].data, in[0].dtype, i) * noise);
    }
}
