/* Reference reductions: for each output element, a walk over the reduced
 * coordinates (no scratch memory, so nothing here can fail). ia:
 * SUM/MEAN/MAX/MIN/VAR/STD [axis mask, keepdim]; ARGMAX/ARGMIN [dim,
 * keepdim]. VAR/STD walk twice: the mean, then the squared deviations. */
#include "ref.h"

/* The next reduced coordinate: ridx counts over dims red[0..nr), off follows. */
static void next_red(int nr, const int *red, const int64_t *istride, const int64_t *shape, int64_t *ridx, int64_t *off) {
    for (int r = nr - 1; r >= 0; r--) {
        int d = red[r];
        *off += istride[d];
        if (++ridx[r] < shape[d]) break;
        *off -= istride[d] * ridx[r];
        ridx[r] = 0;
    }
}

void ref_reduce(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *a = &in[0];
    int op = y->op, nd = a->ndim;
    int argop = op == LT_OP_ARGMAX || op == LT_OP_ARGMIN;
    int mx = op == LT_OP_MAX || op == LT_OP_ARGMAX, var = op == LT_OP_VAR || op == LT_OP_STD;
    uint64_t mask = argop ? (nd ? 1ull << y->ia[0] : 0) : (uint64_t)y->ia[0];
    int64_t istride[LT_MAX_DIMS], st = 1;
    int kept[LT_MAX_DIMS], red[LT_MAX_DIMS], nk = 0, nr = 0;
    for (int d = nd - 1; d >= 0; d--) {
        istride[d] = st;
        st *= a->shape[d];
    }
    for (int d = 0; d < nd; d++) {
        if ((mask >> d) & 1) red[nr++] = d;
        else kept[nk++] = d;
    }
    int64_t count = 1;
    for (int r = 0; r < nr; r++) count *= a->shape[red[r]];
    int fl = dtype_is_float(a->dtype);
    int64_t kidx[LT_MAX_DIMS] = {0};
    for (int64_t o = 0; o < y->numel; o++) {
        int64_t base = 0;
        for (int k = 0; k < nk; k++) base += kidx[k] * istride[kept[k]];
        double facc = 0;
        int64_t iacc = 0, arg = 0, ridx[LT_MAX_DIMS] = {0}, off = base;
        double mean = 0;
        if (var) { /* floats only (the api checks) */
            for (int64_t j = 0; j < count; j++, next_red(nr, red, istride, a->shape, ridx, &off))
                mean += ld_f(a->data, a->dtype, off);
            mean /= (double)count;
        }
        for (int64_t j = 0; j < count; j++) {
            double v = fl ? ld_f(a->data, a->dtype, off) : 0;
            int64_t w = fl ? 0 : ld_i(a->data, a->dtype, off);
            if (var) {
                facc += (v - mean) * (v - mean);
            } else if (op == LT_OP_SUM || op == LT_OP_MEAN) {
                if (fl) facc += v;
                else iacc = (int64_t)((uint64_t)iacc + (uint64_t)w);
            } else { /* MAX, MIN, ARGMAX, ARGMIN: the first NaN wins and stays */
                int take;
                if (j == 0) take = 1;
                else if (fl) take = facc == facc && (v != v || (mx ? v > facc : v < facc));
                else take = mx ? w > iacc : w < iacc;
                if (take) {
                    facc = v;
                    iacc = w;
                    arg = nr ? ridx[0] : 0;
                }
            }
            next_red(nr, red, istride, a->shape, ridx, &off);
        }
        if (var) {
            double v = facc / fmax(0.0, (double)count - sc[0]);
            st_f(out, (lt_dtype)y->dtype, o, op == LT_OP_STD ? sqrt(v) : v);
        } else if (argop) st_i(out, (lt_dtype)y->dtype, o, arg);
        else if (op == LT_OP_MEAN) st_f(out, (lt_dtype)y->dtype, o, facc / (double)count);
        else if (fl) st_f(out, (lt_dtype)y->dtype, o, facc);
        else st_i(out, (lt_dtype)y->dtype, o, iacc);
        for (int k = nk - 1; k >= 0; k--) { /* next output element */
            if (++kidx[k] < a->shape[kept[k]]) break;
            kidx[k] = 0;
        }
    }
}

/* ia: [dim, reverse]. Floats in double, integers in int64 (wrapping). */
void ref_cumsum(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *a = &in[0];
    int dim = (int)y->ia[0], fl = dtype_is_float(a->dtype);
    int64_t outer = 1, inner = 1, n = a->ndim ? a->shape[dim] : 1;
    for (int d = 0; d < dim; d++) outer *= a->shape[d];
    for (int d = dim + 1; d < a->ndim; d++) inner *= a->shape[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double f = 0;
            uint64_t s = 0;
            for (int64_t k = 0; k < n; k++) {
                int64_t at = o * n * inner + (y->ia[1] ? n - 1 - k : k) * inner + i;
                if (fl) st_f(out, (lt_dtype)y->dtype, at, f += ld_f(a->data, a->dtype, at));
                else st_i(out, (lt_dtype)y->dtype, at, (int64_t)(s += (uint64_t)ld_i(a->data, a->dtype, at)));
            }
        }
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
