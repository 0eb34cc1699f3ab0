/* torch.matmul's operand geometry (see exec.h), written once for ref and cpu. */
#include "exec.h"

void exec_matmul_geom(int na, const int64_t *as, int nbd, const int64_t *bs, matmul_geom *g) {
    g->n = na >= 2 ? as[na - 2] : 1;
    g->k = as[na - 1];
    g->m = nbd >= 2 ? bs[nbd - 1] : 1;
    int abat = na > 2 ? na - 2 : 0, bbat = nbd > 2 ? nbd - 2 : 0;
    g->nb = abat > bbat ? abat : bbat;
    int64_t sa = g->n * g->k, sb = g->k * g->m;
    g->nbatch = 1;
    for (int d = g->nb - 1; d >= 0; d--) {
        int da = d - (g->nb - abat), db = d - (g->nb - bbat);
        int64_t ea = da >= 0 ? as[da] : 1, eb = db >= 0 ? bs[db] : 1;
        g->bshape[d] = ea == 1 ? eb : ea; /* broadcasting 0 against 1 gives 0, not max(0, 1) */
        g->astr[d] = ea == 1 ? 0 : sa;
        g->bstr[d] = eb == 1 ? 0 : sb;
        if (da >= 0) sa *= ea;
        if (db >= 0) sb *= eb;
        g->nbatch *= g->bshape[d];
    }
}

void exec_matmul_batch(const matmul_geom *g, int64_t t, int64_t *oa, int64_t *ob) {
    *oa = *ob = 0;
    for (int d = g->nb - 1; d >= 0; d--) { /* t in mixed radix bshape, last dim fastest */
        int64_t i = t % g->bshape[d];
        t /= g->bshape[d];
        *oa += i * g->astr[d];
        *ob += i * g->bstr[d];
    }
}
