/* Reference losses and their backward ops (mean reduction, except
 * nll_loss's and mse_loss's own). A target equal to PyTorch's ignore_index
 * -100 (nll_loss: its node's ignore_index) is ignored: it adds nothing and is not
 * counted, so the mean is over the valid rows (all rows ignored: 0/0 = NaN,
 * as PyTorch). Any other target outside [0, C) is reported
 * (exec_index_error: the sync fails) and ignored meanwhile. */
#include "ref_nn.h"

static int valid(int op, const ref_arg *t, int64_t n, int64_t C, int64_t *cls) {
    *cls = ld_i(t->data, t->dtype, n);
    if (LT_LIKELY(*cls >= 0 && *cls < C)) return 1;
    if (!exec_index_ok(*cls, C, 1)) exec_index_error(op, *cls, C);
    return 0;
}

static int64_t count_valid(int op, const ref_arg *t, int64_t N, int64_t C) {
    int64_t cnt = 0, cls;
    for (int64_t n = 0; n < N; n++) cnt += valid(op, t, n, C, &cls);
    return cnt;
}

/* nll_loss's ia: [C, reduction, ignore_index] (reduction as PyTorch's
 * enum: 0 none, 1 mean, 2 sum; 3 the count of targets that are not
 * ignore_index, aten's total_weight); its backward's: [reduction,
 * ignore_index]. A target equal to the node's ignore_index (it may lie in
 * [0, C)) adds nothing and is not counted. */
static int nll_valid(const gnode *y, const ref_arg *t, int64_t n, int64_t C, int64_t *cls) {
    *cls = ld_i(t->data, t->dtype, n);
    if (*cls == exec_ignore_index(y)) return 0;
    if (LT_LIKELY(*cls >= 0 && *cls < C)) return 1;
    exec_index_error(y->op, *cls, C);
    return 0;
}

static int64_t nll_count(const gnode *y, const ref_arg *t, int64_t N, int64_t C) {
    int64_t cnt = 0, cls;
    for (int64_t n = 0; n < N; n++) cnt += nll_valid(y, t, n, C, &cls);
    return cnt;
}

static int64_t nll_reduction(const gnode *y, int at) { return y->nia > at ? y->ia[at] : 1; }

/* in: logp (N, C), target (N) int64 -> () (mean, sum, count) or (N) (none) */
void ref_nll_loss(const gnode *y, const ref_arg *in, void *out) {
    int64_t N = in[0].shape[0], C = in[0].shape[1], cls, red = nll_reduction(y, 1);
    double s = 0;
    for (int64_t n = 0; n < N; n++) {
        double v = nll_valid(y, &in[1], n, C, &cls) ? -ld_f(in[0].data, in[0].dtype, n * C + cls) : 0.0;
        if (red == 0) st_f(out, (lt_dtype)y->dtype, n, v);
        s += v;
    }
    if (red == 1) s /= (double)nll_count(y, &in[1], N, C); /* all ignored: 0/0 = NaN, as PyTorch */
    if (red == 3) s = (double)nll_count(y, &in[1], N, C);
    if (red != 0) st_f(out, (lt_dtype)y->dtype, 0, s);
}

/* in: grad () or (N) (none), target (N) -> grad_logp (N, C): -g (mean:
 * -g / count; none: -g[n]) at each counted target, 0 elsewhere. */
void ref_nll_loss_bwd(const gnode *y, const ref_arg *in, void *out) {
    int64_t N = y->shape[0], C = y->shape[1], cls, red = nll_reduction(y, 0);
    double g = ld_f(in[0].data, in[0].dtype, 0);
    if (red == 1) g /= (double)nll_count(y, &in[1], N, C);
    for (int64_t i = 0; i < y->numel; i++) st_f(out, (lt_dtype)y->dtype, i, 0.0);
    for (int64_t n = 0; n < N; n++)
        if (nll_valid(y, &in[1], n, C, &cls))
            st_f(out, (lt_dtype)y->dtype, n * C + cls, -(red == 0 ? ld_f(in[0].data, in[0].dtype, n) : g));
}

/* log-softmax of row n into lp[C], in double, max-subtracted. */
static void log_softmax_row(const ref_arg *x, int64_t n, int64_t C, double *lp) {
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; c++) {
        lp[c] = ld_f(x->data, x->dtype, n * C + c);
        if (lp[c] > mx || lp[c] != lp[c]) mx = lp[c];
    }
    if (mx == -INFINITY) mx = 0;
    for (int64_t c = 0; c < C; c++) s += exp(lp[c] - mx);
    for (int64_t c = 0; c < C; c++) lp[c] = lp[c] - mx - log(s);
}

/* in: logits (N, C), target (N) -> (); sc: [label_smoothing ls]. Per valid
 * row: (1 - ls) * -logp[t] + ls / C * sum_c -logp[c] (PyTorch's formula). */
void ref_cross_entropy(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    int64_t N = in[0].shape[0], C = in[0].shape[1], cls;
    double ls = sc[0], s = 0;
    double *lp = ref_scratch(C);
    for (int64_t n = 0; n < N; n++) {
        if (!valid(y->op, &in[1], n, C, &cls)) continue;
        log_softmax_row(&in[0], n, C, lp);
        double sm = 0;
        for (int64_t c = 0; c < C; c++) sm -= lp[c];
        s += (1 - ls) * -lp[cls] + (ls != 0 ? ls / (double)C * sm : 0.0);
    }
    st_f(out, (lt_dtype)y->dtype, 0, s / (double)count_valid(y->op, &in[1], N, C));
}

/* in: grad (), logits (N, C), target (N) -> grad_logits (N, C); sc: [ls].
 * In PyTorch's order, so inf and NaN fall where its do: the gradient of the
 * log-probabilities, gy = -(g (1 - ls)) / count at the target plus
 * -(g (ls / C)) / count everywhere when ls != 0 (0 elsewhere, and in
 * ignored rows), then log_softmax's backward gy - exp(lp) sum(gy) (an inf
 * g gives inf - inf = NaN at the target; a NaN logit in an ignored row
 * gives NaN). */
void ref_cross_entropy_bwd(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    int64_t N = y->shape[0], C = y->shape[1], cls;
    double ls = sc[0], g = ld_f(in[0].data, in[0].dtype, 0), cnt = (double)count_valid(y->op, &in[2], N, C);
    double gt = -(g * (1 - ls) / cnt), gs = ls != 0 ? -(g * (ls / (double)C) / cnt) : 0.0;
    double *lp = ref_scratch(C);
    for (int64_t n = 0; n < N; n++) {
        int ok = valid(y->op, &in[2], n, C, &cls);
        log_softmax_row(&in[1], n, C, lp);
        double sum = 0;
        for (int64_t c = 0; c < C && ok; c++) sum += (c == cls ? gt : 0.0) + gs;
        for (int64_t c = 0; c < C; c++) {
            double gy = ok ? (c == cls ? gt : 0.0) + gs : 0.0;
            st_f(out, (lt_dtype)y->dtype, n * C + c, gy - exp(lp[c]) * sum);
        }
    }
}

/* in: a, b (same shape) -> () mean or sum of (a - b)^2, or (a - b)^2 of
 * a's shape; ia [reduction] (0 none, 1 mean, 2 sum; absent: mean). */
void ref_mse_loss(const gnode *y, const ref_arg *in, void *out) {
    int64_t red = y->nia ? y->ia[0] : 1;
    double s = 0;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double d = ld_f(in[0].data, in[0].dtype, i) - ld_f(in[1].data, in[1].dtype, i);
        if (red == 0) st_f(out, (lt_dtype)y->dtype, i, d * d);
        s += d * d;
    }
    if (red != 0) st_f(out, (lt_dtype)y->dtype, 0, red == 1 ? s / (double)in[0].numel : s);
}
