/* Reference reductions: one pass over the input, each element folded into
 * the output element it maps to. ia: SUM/MEAN/MAX/MIN [axis mask, keepdim];
 * ARGMAX/ARGMIN [dim, keepdim]. */
#include "ref.h"

void ref_reduce(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *a = &in[0];
    int op = y->op, nd = a->ndim;
    int argop = op == LT_OP_ARGMAX || op == LT_OP_ARGMIN;
    uint64_t mask = argop ? (nd ? 1ull << y->ia[0] : 0) : (uint64_t)y->ia[0];
    int64_t ostride[LT_MAX_DIMS], st = 1;
    for (int d = nd - 1; d >= 0; d--) {
        ostride[d] = (mask >> d) & 1 ? 0 : st;
        if (!((mask >> d) & 1)) st *= a->shape[d];
    }
    int64_t nout = y->numel, count = nout ? a->numel / nout : 0;
    int fl = dtype_is_float(a->dtype);
    double *facc = core_calloc((size_t)(nout ? nout : 1), sizeof *facc);
    int64_t *iacc = core_calloc((size_t)(nout ? nout : 1), sizeof *iacc);
    int64_t *arg = core_calloc((size_t)(nout ? nout : 1), sizeof *arg);
    uint8_t *seen = core_calloc((size_t)(nout ? nout : 1), 1);
    LT_ASSERT(facc && iacc && arg && seen); /* reference backend: test-sized data */
    int64_t idx[LT_MAX_DIMS] = {0}, o = 0, pos = 0; /* pos: index along the argmax dim */
    for (int64_t i = 0; i < a->numel; i++) {
        double v = fl ? ld_f(a->data, a->dtype, i) : 0;
        int64_t w = fl ? 0 : ld_i(a->data, a->dtype, i);
        if (argop && nd) pos = idx[y->ia[0]];
        if (op == LT_OP_SUM || op == LT_OP_MEAN) {
            if (fl) facc[o] += v;
            else iacc[o] = (int64_t)((uint64_t)iacc[o] + (uint64_t)w);
        } else { /* MAX, MIN, ARGMAX, ARGMIN: NaN wins and stays */
            int mx = op == LT_OP_MAX || op == LT_OP_ARGMAX;
            int take;
            if (!seen[o]) take = 1;
            else if (fl) take = facc[o] == facc[o] && (v != v || (mx ? v > facc[o] : v < facc[o]));
            else take = mx ? w > iacc[o] : w < iacc[o];
            if (take) {
                facc[o] = v;
                iacc[o] = w;
                arg[o] = pos;
            }
            seen[o] = 1;
        }
        for (int d = nd - 1; d >= 0; d--) {
            idx[d]++;
            o += ostride[d];
            if (idx[d] < a->shape[d]) break;
            o -= ostride[d] * idx[d];
            idx[d] = 0;
        }
    }
    for (int64_t k = 0; k < nout; k++) {
        if (argop) st_i(out, (lt_dtype)y->dtype, k, arg[k]);
        else if (op == LT_OP_MEAN) st_f(out, (lt_dtype)y->dtype, k, facc[k] / (double)count);
        else if (fl) st_f(out, (lt_dtype)y->dtype, k, facc[k]);
        else st_i(out, (lt_dtype)y->dtype, k, iacc[k]);
    }
    core_free(facc);
    core_free(iacc);
    core_free(arg);
    core_free(seen);
}

/* ia: [dim]. Max-subtracted, in double. */
void ref_softmax(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *a = &in[0];
    int dim = (int)y->ia[0];
    int64_t outer = 1, inner = 1, n = a->ndim ? a->shape[dim] : 1;
    for (int d = 0; d < dim; d++) outer *= a->shape[d];
    for (int d = dim + 1; d < a->ndim; d++) inner *= a->shape[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < n; k++) {
                double v = ld_f(a->data, a->dtype, base + k * inner);
                if (v > mx || v != v) mx = v;
            }
            if (mx == -INFINITY) mx = 0; /* all -inf: exp(-inf - 0) = 0 */
            for (int64_t k = 0; k < n; k++) sum += exp(ld_f(a->data, a->dtype, base + k * inner) - mx);
            for (int64_t k = 0; k < n; k++) {
                double v = ld_f(a->data, a->dtype, base + k * inner) - mx;
                st_f(out, (lt_dtype)y->dtype, base + k * inner,
                     y->op == LT_OP_SOFTMAX ? exp(v) / sum : v - log(sum));
            }
        }
}
