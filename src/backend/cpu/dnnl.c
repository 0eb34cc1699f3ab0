/* The one oneDNN adapter (DESIGN 6): everything that includes dnnl.h is
 * here, behind LT_HAVE_DNNL; without it every entry point declines and the
 * caller runs the reference kernel. */
#include "cpu.h"

#ifdef LT_HAVE_DNNL
#include <dnnl.h>

/* torch.matmul on float32 through dnnl_sgemm (row-major), one call per
 * batch matrix; batch dims broadcast as in ref_matmul. */
int cpu_dnnl_matmul(const gnode *y, const gnode *a, const gnode *b, const void *A, const void *B, void *C) {
    int64_t n = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1, k = a->shape[a->ndim - 1];
    int64_t m = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    int abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
    int nb = abat > bbat ? abat : bbat;
    int64_t bshape[LT_MAX_DIMS], astr[LT_MAX_DIMS], bstr[LT_MAX_DIMS], nbatch = 1, sa = n * k, sb = k * m;
    for (int d = nb - 1; d >= 0; d--) {
        int da = d - (nb - abat), db = d - (nb - bbat);
        int64_t ea = da >= 0 ? a->shape[da] : 1, eb = db >= 0 ? b->shape[db] : 1;
        bshape[d] = ea > eb ? ea : eb;
        astr[d] = ea == 1 ? 0 : sa;
        bstr[d] = eb == 1 ? 0 : sb;
        if (da >= 0) sa *= ea;
        if (db >= 0) sb *= eb;
        nbatch *= bshape[d];
    }
    if (y->numel == 0) return 0;
    if (k == 0) {
        memset(C, 0, (size_t)y->numel * 4);
        return 0;
    }
    int64_t bidx[LT_MAX_DIMS] = {0};
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < nb; d++) {
            oa += bidx[d] * astr[d];
            ob += bidx[d] * bstr[d];
        }
        if (dnnl_sgemm('N', 'N', n, m, k, 1.0f, (const float *)A + oa, k, (const float *)B + ob, m, 0.0f,
                       (float *)C + t * n * m, m) != dnnl_success)
            return -1; /* nothing was written that the reference kernel will not overwrite */
        for (int d = nb - 1; d >= 0; d--) {
            if (++bidx[d] < bshape[d]) break;
            bidx[d] = 0;
        }
    }
    return 0;
}

#else

int cpu_dnnl_matmul(const gnode *y, const gnode *a, const gnode *b, const void *A, const void *B, void *C) {
    (void)y, (void)a, (void)b, (void)A, (void)B, (void)C;
    return -1;
}

#endif
