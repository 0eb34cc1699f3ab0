/* Reference batch norm: statistics, normalization, and the two backward
 * ops. x is (N, C, *): channel c of sample n is the contiguous run of
 * `inner` elements at (n * C + c) * inner. Two passes in double.
 *
 * The statistics come as one (2, C) BN_STATS operand [mean; biased var]
 * when batch statistics are used (ia flag `batch`), else as two (C)
 * operands running_mean, running_var. */
#include "ref_nn.h"

typedef struct bn_geom {
    int64_t N, C, inner;
} bn_geom;

static bn_geom geom(const ref_arg *x) {
    bn_geom g = {x->shape[0], x->shape[1], 1};
    for (int d = 2; d < x->ndim; d++) g.inner *= x->shape[d];
    return g;
}

#define BN_FOR(g, c, ...)                                  \
    for (int64_t n = 0; n < (g).N; n++)                    \
        for (int64_t k = 0; k < (g).inner; k++) {          \
            int64_t i = (n * (g).C + (c)) * (g).inner + k; \
            __VA_ARGS__;                                   \
        }

/* in: x (N, C, *) -> (2, C): [mean; biased variance]. No data: NaN (0/0). */
void ref_bn_stats(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *x = &in[0];
    bn_geom g = geom(x);
    double cnt = (double)(g.N * g.inner);
    for (int64_t c = 0; c < g.C; c++) {
        double s = 0, q = 0;
        BN_FOR(g, c, s += ld_f(x->data, x->dtype, i));
        double m = s / cnt;
        BN_FOR(g, c, q += (ld_f(x->data, x->dtype, i) - m) * (ld_f(x->data, x->dtype, i) - m));
        st_f(out, (lt_dtype)y->dtype, c, m);
        st_f(out, (lt_dtype)y->dtype, g.C + c, q / cnt);
    }
}

/* The statistics starting at operand `first`; returns the operand after them. */
typedef struct bn_stats {
    const ref_arg *m, *v;
    int64_t voff;
} bn_stats;

static int stats_of(const ref_arg *in, int first, int batch, int64_t C, bn_stats *st) {
    st->m = &in[first];
    st->v = batch ? &in[first] : &in[first + 1];
    st->voff = batch ? C : 0;
    return first + (batch ? 1 : 2);
}
static double mean_at(const bn_stats *st, int64_t c) { return ld_f(st->m->data, st->m->dtype, c); }
static double invstd_at(const bn_stats *st, int64_t c, double eps) {
    return 1.0 / sqrt(ld_f(st->v->data, st->v->dtype, st->voff + c) + eps);
}

/* in: x, stats (2, C) | running_mean, running_var, [weight (C)], [bias (C)]
 * -> (N, C, *). ia: [batch, has_weight, has_bias, ...]; sc: [eps]. */
void ref_bn_apply(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *x = &in[0];
    bn_geom g = geom(x);
    bn_stats st;
    int p = stats_of(in, 1, (int)y->ia[0], g.C, &st);
    const ref_arg *w = y->ia[1] ? &in[p] : NULL, *b = y->ia[2] ? &in[p + (y->ia[1] != 0)] : NULL;
    for (int64_t c = 0; c < g.C; c++) {
        double m = mean_at(&st, c), is = invstd_at(&st, c, sc[0]);
        double wc = w ? ld_f(w->data, w->dtype, c) : 1.0, bc = b ? ld_f(b->data, b->dtype, c) : 0.0;
        BN_FOR(g, c, st_f(out, (lt_dtype)y->dtype, i, (ld_f(x->data, x->dtype, i) - m) * is * wc + bc));
    }
}

/* in: grad_out, x, stats | running_mean, running_var, [weight] -> grad_x
 * (N, C, *). ia: [batch, has_weight]; sc: [eps].
 * batch: the statistics are functions of x (training), so
 *   dx = w * invstd * (g - mean(g) - xhat * mean(g * xhat));
 * else they are constants (eval with running stats): dx = w * invstd * g. */
void ref_bn_bwd_input(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *go = &in[0], *x = &in[1];
    bn_geom g = geom(x);
    bn_stats st;
    int p = stats_of(in, 2, (int)y->ia[0], g.C, &st);
    const ref_arg *w = y->ia[1] ? &in[p] : NULL;
    double cnt = (double)(g.N * g.inner);
    for (int64_t c = 0; c < g.C; c++) {
        double m = mean_at(&st, c), is = invstd_at(&st, c, sc[0]);
        double wc = w ? ld_f(w->data, w->dtype, c) : 1.0, sg = 0, sgx = 0;
        if (y->ia[0]) {
            BN_FOR(g, c, {
                double gv = ld_f(go->data, go->dtype, i);
                sg += gv;
                sgx += gv * (ld_f(x->data, x->dtype, i) - m) * is;
            });
        }
        BN_FOR(g, c, {
            double gv = ld_f(go->data, go->dtype, i), xh = (ld_f(x->data, x->dtype, i) - m) * is;
            double d = y->ia[0] ? gv - sg / cnt - xh * sgx / cnt : gv;
            st_f(out, (lt_dtype)y->dtype, i, wc * is * d);
        });
    }
}

/* in: grad_out, x, stats | running_mean, running_var -> (2, C):
 * [grad_weight; grad_bias] = [sum(g * xhat); sum(g)] over N and *.
 * ia: [batch]; sc: [eps]. */
void ref_bn_bwd_params(const gnode *y, const ref_arg *in, const double *sc, void *out) {
    const ref_arg *go = &in[0], *x = &in[1];
    bn_geom g = geom(x);
    bn_stats st;
    stats_of(in, 2, (int)y->ia[0], g.C, &st);
    for (int64_t c = 0; c < g.C; c++) {
        double m = mean_at(&st, c), is = invstd_at(&st, c, sc[0]), sg = 0, sgx = 0;
        BN_FOR(g, c, {
            double gv = ld_f(go->data, go->dtype, i);
            sg += gv;
            sgx += gv * (ld_f(x->data, x->dtype, i) - m) * is;
        });
        st_f(out, (lt_dtype)y->dtype, c, sgx);
        st_f(out, (lt_dtype)y->dtype, g.C + c, sg);
    }
}
