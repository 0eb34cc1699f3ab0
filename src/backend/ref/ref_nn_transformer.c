/* Reference kernels of the transformer ops (issue 16): layer norm and its
 * two backward ops, scaled dot-product attention and its backward, the
 * total gradient norm. Plain loops in double; attention materializes one
 * row of scores at a time (the cpu kernels tile it, src/backend/cpu/
 * attention.c). */
#include "ref_nn.h"

/* ---- layer norm: x is (rows, inner), inner = the last ia[0] dims ---- */

static int64_t ln_inner(const ref_arg *x, int64_t nnorm) {
    int64_t inner = 1;
    for (int d = x->ndim - (int)nnorm; d < x->ndim; d++) inner *= x->shape[d];
    return inner;
}

/* Mean and rstd = 1/sqrt(biased var + eps) of row r as PyTorch computes
 * them: in the row's type (float for float32 and bfloat16, where a row
 * holding 1e30 overflows to NaN as there), ref_moments.c. */
static void ln_row_stats(const ref_arg *x, int64_t r, int64_t inner, double eps, double *m, double *rstd) {
    double var;
    ref_row_moments(x, r, inner, m, &var);
    *rstd = x->dtype == LT_F64 ? 1.0 / sqrt(var + eps) : (double)(1.0f / sqrtf((float)var + (float)eps));
}

/* PyTorch's normalized value x rstd + bias, bias = -rstd mean in the row's
 * type, with one rounding (its build fuses the multiply and the add): a
 * 1-element row gives the rounding residue of x rstd, not 0 (an inf
 * gradient times it is inf, not NaN). For float32 the product of two floats
 * is exact in double: one addition and the rounding to float are fmaf's. */
static double ln_xhat(const ref_arg *x, double v, double rs, double bias) {
    return x->dtype == LT_F64 ? fma(v, rs, bias) : (double)(float)(v * rs + bias);
}

static double ln_bias(const ref_arg *x, double m, double rs) {
    return x->dtype == LT_F64 ? -rs * m : (double)(float)(-rs * m);
}

/* in: x, [weight], [bias] (the normalized shape) -> x's shape.
 * ia [nnorm, has_weight, has_bias]; sc [eps]. PyTorch's form: ln_xhat,
 * then the weight and the bias. */
void ref_layer_norm(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *x = &in[0], *w = y->ia[1] ? &in[1] : NULL, *b = y->ia[2] ? &in[1 + (y->ia[1] != 0)] : NULL;
    int64_t inner = ln_inner(x, y->ia[0]), rows = x->numel / inner;
    for (int64_t r = 0; r < rows; r++) {
        double m, rs;
        ln_row_stats(x, r, inner, sc[0], &m, &rs);
        double bias = ln_bias(x, m, rs);
        for (int64_t k = 0; k < inner; k++) {
            double v = ln_xhat(x, ld_f(x->data, x->dtype, r * inner + k), rs, bias);
            if (w) v *= ld_f(w->data, w->dtype, k);
            if (b) v += ld_f(b->data, b->dtype, k);
            st_f(out, (lt_dtype)y->dtype, r * inner + k, v);
        }
    }
}

/* in: grad_out, x, [weight] -> grad_x. ia [nnorm, has_weight]; sc [eps].
 * With wg = w * g, a = rstd (the forward's), mu the row's mean in double,
 * db = sum(wg) and ds = sum(wg (x - mu)): dx = a wg - ds a^3/n (x - mu) -
 * db a/n. PyTorch's form, dx = a wg + b x + c with b = (db mean -
 * sum(wg x)) a^3/n and c = -b mean - db a/n, is the same algebra but
 * subtracts terms far larger than their difference when the row's spread
 * is small beside its mean (a row of 2 elements: ~3000x); centred values
 * keep that difference exact. A non-finite db or ds (an inf or NaN g or x)
 * makes the row NaN, as PyTorch's b and c make it. */
void ref_ln_bwd_input(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *g = &in[0], *x = &in[1], *w = y->ia[1] ? &in[2] : NULL;
    int64_t inner = ln_inner(x, y->ia[0]), rows = x->numel / inner;
    for (int64_t r = 0; r < rows; r++) {
        double m, a, mu = 0, ds = 0, db = 0;
        ln_row_stats(x, r, inner, sc[0], &m, &a);
        for (int64_t k = 0; k < inner; k++) mu += ld_f(x->data, x->dtype, r * inner + k);
        mu /= (double)inner;
        for (int64_t k = 0; k < inner; k++) {
            double wg = ld_f(g->data, g->dtype, r * inner + k) * (w ? ld_f(w->data, w->dtype, k) : 1.0);
            ds += wg * (ld_f(x->data, x->dtype, r * inner + k) - mu);
            db += wg;
        }
        double b = -ds * a * a * a / (double)inner, c = -db * a / (double)inner;
        bool bad = !isfinite(ds) || !isfinite(db);
        for (int64_t k = 0; k < inner; k++) {
            double wg = ld_f(g->data, g->dtype, r * inner + k) * (w ? ld_f(w->data, w->dtype, k) : 1.0);
            double v = a * wg + b * (ld_f(x->data, x->dtype, r * inner + k) - mu) + c;
            st_f(out, (lt_dtype)y->dtype, r * inner + k, bad ? NAN : v);
        }
    }
}

/* in: grad_out, x -> (2, normalized shape): [sum over rows of g * xhat;
 * sum over rows of g]. ia [nnorm]; sc [eps]. */
void ref_ln_bwd_params(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *g = &in[0], *x = &in[1];
    int64_t inner = ln_inner(x, y->ia[0]), rows = inner ? x->numel / inner : 0;
    double *acc = ref_scratch(2 * inner);
    for (int64_t r = 0; r < rows; r++) {
        double m, rs;
        ln_row_stats(x, r, inner, sc[0], &m, &rs);
        double bias = ln_bias(x, m, rs);
        for (int64_t k = 0; k < inner; k++) {
            double gv = ld_f(g->data, g->dtype, r * inner + k);
            acc[k] += gv * ln_xhat(x, ld_f(x->data, x->dtype, r * inner + k), rs, bias);
            acc[inner + k] += gv;
        }
    }
    for (int64_t k = 0; k < 2 * inner; k++) st_f(out, (lt_dtype)y->dtype, k, acc[k]);
}

/* ---- attention: q, k, v (..., T, D), one (T, D) problem per leading index ---- */

int64_t ref_attention_scratch(const gnode *y) {
    int64_t T = y->shape[y->ndim - 2], D = y->shape[y->ndim - 1];
    return y->op == LT_OP_ATTENTION ? T + D : 2 * T + 2 * T * D + D;
}

/* Softmax of row i of scale * q k^T (causal: j <= i) into p[0..n), n returned. */
static int64_t att_row(const nn_att *a, const ref_arg *q, const ref_arg *k, int64_t bh, int64_t i, double *p) {
    int64_t n = a->causal ? i + 1 : a->T, base = bh * a->T * a->D;
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; j++) {
        double d = 0;
        for (int64_t c = 0; c < a->D; c++)
            d += ld_f(q->data, q->dtype, base + i * a->D + c) * ld_f(k->data, k->dtype, base + j * a->D + c);
        p[j] = d * a->scale;
        if (p[j] > mx || p[j] != p[j]) mx = p[j];
    }
    for (int64_t j = 0; j < n; j++) s += (p[j] = exp(p[j] - mx));
    for (int64_t j = 0; j < n; j++) p[j] /= s;
    return n;
}

/* in: q, k, v -> out (..., T, D) = dropout(softmax(scale q k^T + mask)) v.
 * ia [causal, bits of the double scale]; sc [dropout p, seed]. */
void ref_attention(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    nn_att a = nn_att_of(y, in[0].ndim, in[0].shape, in[0].numel, sc);
    double *p = ref_scratch(a.T + a.D), *acc = p + a.T;
    for (int64_t bh = 0; bh < a.BH; bh++)
        for (int64_t i = 0; i < a.T; i++) {
            int64_t n = att_row(&a, &in[0], &in[1], bh, i, p), base = bh * a.T * a.D;
            memset(acc, 0, (size_t)a.D * sizeof *acc);
            for (int64_t j = 0; j < n; j++) {
                double w = p[j] * nn_att_drop(&a, bh, i, j);
                for (int64_t c = 0; c < a.D; c++) acc[c] += w * ld_f(in[2].data, in[2].dtype, base + j * a.D + c);
            }
            for (int64_t c = 0; c < a.D; c++) st_f(out, (lt_dtype)y->dtype, base + i * a.D + c, acc[c]);
        }
}

/* in: grad_out, q, k, v, out -> (3, ..., T, D) = [dq; dk; dv]. ia, sc as
 * ATTENTION. With P the probabilities, M the dropout factors, dO the
 * gradient: dV = (P M)^T dO, dP = (dO V^T) M, dS = P (dP - rowsum(dO O)),
 * dQ = scale dS K, dK = scale dS^T Q. */
void ref_attention_bwd(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *g = &in[0], *q = &in[1], *k = &in[2], *v = &in[3], *o = &in[4];
    nn_att a = nn_att_of(y, q->ndim, q->shape, q->numel, sc);
    int64_t TD = a.T * a.D, total = a.BH * TD;
    double *p = ref_scratch(2 * a.T + 2 * TD + a.D), *dp = p + a.T, *dk = dp + a.T, *dv = dk + TD, *dq = dv + TD;
    for (int64_t bh = 0; bh < a.BH; bh++) {
        int64_t base = bh * TD;
        memset(dk, 0, (size_t)(2 * TD) * sizeof *dk);
        for (int64_t i = 0; i < a.T; i++) {
            int64_t n = att_row(&a, q, k, bh, i, p);
            double di = 0;
            for (int64_t c = 0; c < a.D; c++)
                di += ld_f(g->data, g->dtype, base + i * a.D + c) * ld_f(o->data, o->dtype, base + i * a.D + c);
            for (int64_t j = 0; j < n; j++) {
                double m = nn_att_drop(&a, bh, i, j), s = 0;
                for (int64_t c = 0; c < a.D; c++) {
                    double gc = ld_f(g->data, g->dtype, base + i * a.D + c);
                    s += gc * ld_f(v->data, v->dtype, base + j * a.D + c);
                    dv[j * a.D + c] += p[j] * m * gc;
                }
                dp[j] = p[j] * (s * m - di); /* dS */
            }
            memset(dq, 0, (size_t)a.D * sizeof *dq);
            for (int64_t j = 0; j < n; j++)
                for (int64_t c = 0; c < a.D; c++) {
                    dq[c] += a.scale * dp[j] * ld_f(k->data, k->dtype, base + j * a.D + c);
                    dk[j * a.D + c] += a.scale * dp[j] * ld_f(q->data, q->dtype, base + i * a.D + c);
                }
            for (int64_t c = 0; c < a.D; c++) st_f(out, (lt_dtype)y->dtype, base + i * a.D + c, dq[c]);
        }
        for (int64_t e = 0; e < TD; e++) {
            st_f(out, (lt_dtype)y->dtype, total + base + e, dk[e]);
            st_f(out, (lt_dtype)y->dtype, 2 * total + base + e, dv[e]);
        }
    }
}

/* in: any number of float tensors -> () = sqrt(sum of every element squared). */
void ref_grad_norm(const gnode *y, const ref_arg *in, void *out) {
    double s = 0;
    for (int i = 0; i < y->nin; i++)
        for (int64_t e = 0; e < in[i].numel; e++) {
            double v = ld_f(in[i].data, in[i].dtype, e);
            s += v * v;
        }
    st_f(out, (lt_dtype)y->dtype, 0, sqrt(s));
}

/* LN_STATS in: x -> (2, rows..., 1...) [mean; rstd] of each row, as the
 * layer norm above computes them (aten's native_layer_norm outputs).
 * ia [nnorm]; sc [eps]. */
void ref_ln_stats(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *x = &in[0];
    int64_t inner = ln_inner(x, y->ia[0]), rows = inner ? x->numel / inner : 0;
    for (int64_t r = 0; r < rows; r++) {
        double m, rs;
        ln_row_stats(x, r, inner, sc[0], &m, &rs);
        st_f(out, (lt_dtype)y->dtype, r, m);
        st_f(out, (lt_dtype)y->dtype, rows + r, rs);
    }
}
