/* Synchronized batch norm (lt_dist_set_sync_bn; PyTorch's SyncBatchNorm):
 * in training, the statistics of the GLOBAL batch, so N ranks x B/N
 * reproduce 1 rank x B. Forward: each rank's BN_STATS [mean; var] become
 * [mean; var + mean^2] in float64 (exact enough to subtract again), ONE
 * all_reduce(MEAN) over the ranks (equal batches), then [m; E[x^2] - m^2].
 * Backward: the two per-channel sums of the input gradient, sum(g) and
 * sum(g * xhat), are summed over the ranks (ONE all_reduce) and divided by
 * the global count; the weight and bias gradients stay per rank (the
 * optimizer's gradient averaging sums them). Built from public ops: a few
 * small (C) nodes per layer that the cpu backend fuses. */
#include "nn_util.h"

int g_sync_bn;

void lt_dist_set_sync_bn(bool on) { g_sync_bn = on; }

/* (2, C) stats of x's dtype -> the global ones (new handle). */
lt_tensor *nn_bn_global_stats(lt_tensor *st, lt_dtype dt) {
    int64_t C = lt_shape(st)[1], row[2] = {1, C};
    lt_no_grad_begin();
    lt_tensor *z = lt_zeros(LT_F64, 2, row), *s = lt_to_dtype(st, LT_F64), *m = lt_slice(s, 0, 0, 1, 1);
    lt_tensor *mm = lt_mul(m, m), *p1[2] = {z, mm}, *pad = lt_cat(2, p1, 0), *e = lt_add(s, pad);
    lt_tensor *r = lt_all_reduce_(e, LT_REDUCE_MEAN);
    lt_tensor *gm = r ? lt_slice(e, 0, 0, 1, 1) : NULL, *gmm = lt_mul(gm, gm), *p2[2] = {z, gmm};
    lt_tensor *pad2 = lt_cat(2, p2, 0), *g = lt_sub(e, pad2), *out = lt_to_dtype(g, dt);
    lt_tensor *tmp[10] = {z, s, m, mm, pad, e, gm, gmm, pad2, g};
    for (int i = 0; i < 10; i++) lt_free(tmp[i]);
    lt_no_grad_end();
    return out;
}

/* Row i of the (2, C) tensor t, shaped (1, C, 1, ...) to broadcast against x. */
static lt_tensor *channel_row(lt_tensor *t, int i, int ndim) {
    int64_t shape[LT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) shape[d] = 1;
    shape[1] = lt_shape(t)[1];
    lt_tensor *r = lt_slice(t, 0, i, i + 1, 1), *v = lt_reshape(r, ndim, shape);
    lt_free(r);
    return v;
}

int nn_sync_bn_backward(lt_tensor *g, lt_tensor *x, lt_tensor *w, lt_tensor *stats, double eps, lt_tensor **dx,
                        lt_tensor **params) {
    lt_tensor *r = nn_batch_norm_backward_params(g, x, stats, NULL, NULL, eps); /* [sum(g xhat); sum(g)], this rank */
    if (dx && r) {
        int nd = lt_ndim(x);
        double ntot = (double)(lt_numel(x) / lt_shape(x)[1]) * (double)dist_world();
        lt_tensor *rg = lt_clone(r), *ok = lt_all_reduce_(rg, LT_REDUCE_SUM);
        lt_tensor *mean = channel_row(stats, 0, nd), *var = channel_row(stats, 1, nd);
        lt_tensor *ve = lt_add_scalar(var, eps), *rstd = lt_rsqrt(ve), *xc = lt_sub(x, mean);
        lt_tensor *xhat = lt_mul(xc, rstd), *sgx = ok ? channel_row(rg, 0, nd) : NULL, *sg = channel_row(rg, 1, nd);
        lt_tensor *mg = lt_mul_scalar(sg, 1.0 / ntot), *mgx = lt_mul_scalar(sgx, 1.0 / ntot);
        lt_tensor *t1 = lt_sub(g, mg), *t2 = lt_mul(xhat, mgx), *t3 = lt_sub(t1, t2), *scale = rstd;
        lt_tensor *ws = NULL;
        if (w) {
            int64_t shape[LT_MAX_DIMS];
            for (int d = 0; d < nd; d++) shape[d] = 1;
            shape[1] = lt_shape(w)[0];
            lt_tensor *wv = lt_reshape(w, nd, shape);
            scale = ws = lt_mul(rstd, wv);
            lt_free(wv);
        }
        *dx = lt_mul(t3, scale);
        lt_tensor *tmp[16] = {rg, mean, var, ve, rstd, xc, xhat, sgx, sg, mg, mgx, t1, t2, t3, ws};
        for (int i = 0; i < 16; i++) lt_free(tmp[i]);
    }
    if (params) *params = r;
    else lt_free(r);
    return (dx && !*dx) || !r ? -1 : 0;
}
