/* NN ops (issue 4): every forward against values computed here with plain
 * loops, every backward op against central finite differences of its
 * forward computed through lazytensor in float64, and the argument errors. */
#include "harness.h"

#include "api/nn.h"

/* ---- small helpers ---------------------------------------------------------- */

static uint64_t lcg = 12345;
static double urand(void) { /* [-1, 1) */
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) * 0x1.0p-53 * 2 - 1;
}
static double *rnd(int64_t n) {
    double *p = malloc(sizeof *p * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = urand();
    return p;
}
static int64_t numel(int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}
static lt_tensor *f64(int nd, const int64_t *s, const double *d) { return h_f64(nd, s, d); }
static lt_tensor *i64(int nd, const int64_t *s, const int64_t *d) { return lt_from_data(d, LT_I64, nd, s); }

/* Compares t with expected values (relative tolerance). */
static void expect_arr(int line, lt_tensor *t, const double *e, int64_t n, double tol) {
    h_expect(__FILE__, line, t, e, n, tol);
}
#define EXPECT_ARR(t, e, n, tol) expect_arr(__LINE__, (t), (e), (n), (tol))

/* ---- finite differences --------------------------------------------------------
 * For forward F with inputs ins (float64) and a fixed random R of F's shape,
 * L(ins) = sum(F(ins) * R); the backward under test, given R as grad_out,
 * must equal dL/d ins[k], checked element by element by central differences. */
typedef lt_tensor *(*fwd_fn)(lt_tensor **in);
typedef lt_tensor *(*bwd_fn)(lt_tensor **in, lt_tensor *r);

static double loss_of(fwd_fn f, lt_tensor **in, lt_tensor *r) {
    lt_tensor *y = f(in), *p = lt_mul(y, r), *s = lt_sum(p, 0, NULL, false);
    double v = lt_item(s);
    lt_free(y);
    lt_free(p);
    lt_free(s);
    return v;
}

static void gradcheck(int line, const char *what, fwd_fn f, bwd_fn b, lt_tensor **in, int k) {
    lt_tensor *y = f(in);
    if (!y) {
        h_fail(__FILE__, line, "%s: forward failed: %s", what, lt_error_message());
        return;
    }
    double *rv = rnd(lt_numel(y));
    lt_tensor *r = f64(lt_ndim(y), lt_shape(y), rv);
    lt_tensor *g = b(in, r);
    double *ga = g ? h_read(g) : NULL;
    if (!ga) {
        h_fail(__FILE__, line, "%s: backward failed: %s", what, lt_error_message());
    } else {
        lt_tensor *orig = in[k];
        int nd = lt_ndim(orig);
        int64_t shape[LT_MAX_DIMS], n = lt_numel(orig);
        memcpy(shape, lt_shape(orig), (size_t)nd * 8);
        double *x = h_read(orig), eps = 1e-6;
        CHECK_MSG(lt_numel(g) == n, "%s: gradient has %lld elements, input %lld", what, (long long)lt_numel(g),
                  (long long)n);
        for (int64_t i = 0; i < n && lt_numel(g) == n; i++) {
            double x0 = x[i], lp, lm;
            x[i] = x0 + eps;
            in[k] = f64(nd, shape, x);
            lp = loss_of(f, in, r);
            lt_free(in[k]);
            x[i] = x0 - eps;
            in[k] = f64(nd, shape, x);
            lm = loss_of(f, in, r);
            lt_free(in[k]);
            x[i] = x0;
            double num = (lp - lm) / (2 * eps);
            if (!(fabs(num - ga[i]) <= 1e-5 * (1 + fabs(num)))) {
                h_fail(__FILE__, line, "%s: d/d input %d [%lld]: backward %.10g, finite difference %.10g", what, k,
                       (long long)i, ga[i], num);
                break;
            }
        }
        in[k] = orig;
        free(x);
    }
    free(ga);
    free(rv);
    lt_free(g);
    lt_free(r);
    lt_free(y);
}
#define GRADCHECK(what, f, b, in, k) gradcheck(__LINE__, (what), (f), (b), (in), (k))

/* ---- conv2d ------------------------------------------------------------------------ */

static int64_t c_stride[2] = {2, 1}, c_pad[2] = {1, 2}, c_dil[2] = {2, 1}, c_groups = 2;

/* Direct definition: y[n,o,i,j] = b[o] + sum_{c,p,q} x[n, g*Cg + c, i*s - pad + p*d, ...] w[o,c,p,q]. */
static void conv_ref(const double *x, const int64_t *xs, const double *w, const int64_t *ws, const double *b,
                     double *y, const int64_t *ys) {
    int64_t Cg = ws[1], Og = ws[0] / c_groups;
    for (int64_t n = 0; n < xs[0]; n++)
        for (int64_t o = 0; o < ys[1]; o++)
            for (int64_t i = 0; i < ys[2]; i++)
                for (int64_t j = 0; j < ys[3]; j++) {
                    double s = b ? b[o] : 0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t p = 0; p < ws[2]; p++)
                            for (int64_t q = 0; q < ws[3]; q++) {
                                int64_t h = i * c_stride[0] - c_pad[0] + p * c_dil[0];
                                int64_t v = j * c_stride[1] - c_pad[1] + q * c_dil[1];
                                if (h < 0 || h >= xs[2] || v < 0 || v >= xs[3]) continue;
                                int64_t ci = (o / Og) * Cg + c;
                                s += x[((n * xs[1] + ci) * xs[2] + h) * xs[3] + v] * w[((o * Cg + c) * ws[2] + p) * ws[3] + q];
                            }
                    y[((n * ys[1] + o) * ys[2] + i) * ys[3] + j] = s;
                }
}

TEST(conv2d_forward) {
    int64_t xs[4] = {2, 4, 5, 6}, ws[4] = {6, 2, 3, 2}, bs[1] = {6};
    double *x = rnd(numel(4, xs)), *w = rnd(numel(4, ws)), *b = rnd(6);
    lt_tensor *X = f64(4, xs, x), *W = f64(4, ws, w), *B = f64(1, bs, b);
    lt_tensor *Y = lt_conv2d(X, W, B, c_stride, c_pad, c_dil, c_groups);
    CHECK(Y);
    /* H: (5 + 2 - 2*2 - 1) / 2 + 1 = 2; W: (6 + 4 - 1 - 1) / 1 + 1 = 9 */
    int64_t ys[4] = {2, 6, 2, 9};
    EXPECT_SHAPE(Y, 2, 6, 2, 9);
    double *e = malloc(sizeof *e * (size_t)numel(4, ys));
    conv_ref(x, xs, w, ws, b, e, ys);
    EXPECT_ARR(Y, e, numel(4, ys), 1e-12);
    /* float32, no bias, default stride/padding/dilation */
    float xf[16], wf[4] = {1, 2, 3, 4};
    for (int i = 0; i < 16; i++) xf[i] = (float)i;
    int64_t s1[4] = {1, 1, 4, 4}, s2[4] = {1, 1, 2, 2};
    lt_tensor *Xf = h_f32(4, s1, xf), *Wf = h_f32(4, s2, wf), *Yf = lt_conv2d(Xf, Wf, NULL, NULL, NULL, NULL, 1);
    EXPECT_SHAPE(Yf, 1, 1, 3, 3);
    EXPECT_VALUES(Yf, 0, 34, 44, 54, 74, 84, 94, 114, 124, 134);
    lt_free(Xf), lt_free(Wf), lt_free(Yf);
    free(x), free(w), free(b), free(e);
    lt_free(X), lt_free(W), lt_free(B), lt_free(Y);
}

static lt_tensor *conv_f(lt_tensor **in) { return lt_conv2d(in[0], in[1], NULL, c_stride, c_pad, c_dil, c_groups); }
static lt_tensor *conv_dx(lt_tensor **in, lt_tensor *r) {
    return nn_conv2d_backward_input(r, in[1], lt_shape(in[0]), c_stride, c_pad, c_dil, c_groups);
}
static lt_tensor *conv_dw(lt_tensor **in, lt_tensor *r) {
    return nn_conv2d_backward_weight(r, in[0], lt_shape(in[1]), c_stride, c_pad, c_dil, c_groups);
}

TEST(conv2d_backward) {
    int64_t xs[4] = {2, 4, 5, 4}, ws[4] = {4, 2, 3, 2};
    double *x = rnd(numel(4, xs)), *w = rnd(numel(4, ws));
    lt_tensor *in[2] = {f64(4, xs, x), f64(4, ws, w)};
    GRADCHECK("conv2d dx", conv_f, conv_dx, in, 0);
    GRADCHECK("conv2d dw", conv_f, conv_dw, in, 1);
    /* plain geometry, one group */
    int64_t s0[2] = {1, 1}, p0[2] = {1, 1}, d0[2] = {1, 1}, g0 = 1;
    memcpy(c_stride, s0, 16), memcpy(c_pad, p0, 16), memcpy(c_dil, d0, 16), c_groups = g0;
    int64_t ws2[4] = {3, 4, 3, 3};
    double *w2 = rnd(numel(4, ws2));
    lt_tensor *in2[2] = {in[0], f64(4, ws2, w2)};
    GRADCHECK("conv2d dx (1 group)", conv_f, conv_dx, in2, 0);
    GRADCHECK("conv2d dw (1 group)", conv_f, conv_dw, in2, 1);
    int64_t s1[2] = {2, 1}, p1[2] = {1, 2}, d1[2] = {2, 1};
    memcpy(c_stride, s1, 16), memcpy(c_pad, p1, 16), memcpy(c_dil, d1, 16), c_groups = 2;
    free(x), free(w), free(w2);
    lt_free(in[0]), lt_free(in[1]), lt_free(in2[1]);
}

/* ---- pooling ---------------------------------------------------------------------- */

static int64_t p_k[2] = {3, 2}, p_s[2] = {2, 1}, p_p[2] = {1, 1};

TEST(pool_forward) {
    int64_t xs[4] = {2, 3, 5, 4};
    double *x = rnd(numel(4, xs));
    lt_tensor *X = f64(4, xs, x);
    lt_tensor *M = lt_max_pool2d(X, p_k, p_s, p_p), *A = lt_avg_pool2d(X, p_k, p_s, p_p);
    /* oH = (5 + 2 - 3) / 2 + 1 = 3, oW = (4 + 2 - 2) / 1 + 1 = 5 */
    EXPECT_SHAPE(M, 2, 3, 3, 5);
    EXPECT_SHAPE(A, 2, 3, 3, 5);
    double em[90], ea[90];
    for (int64_t pl = 0; pl < 6; pl++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 5; j++) {
                double mx = -INFINITY, s = 0;
                for (int64_t a = 0; a < p_k[0]; a++)
                    for (int64_t b = 0; b < p_k[1]; b++) {
                        int64_t h = i * p_s[0] - p_p[0] + a, w = j * p_s[1] - p_p[1] + b;
                        if (h < 0 || h >= 5 || w < 0 || w >= 4) continue; /* padding: -inf / 0 */
                        double v = x[pl * 20 + h * 4 + w];
                        if (v > mx) mx = v;
                        s += v;
                    }
                em[(pl * 3 + i) * 5 + j] = mx;
                ea[(pl * 3 + i) * 5 + j] = s / (double)(p_k[0] * p_k[1]); /* count_include_pad */
            }
    EXPECT_ARR(M, em, 90, 0);
    EXPECT_ARR(A, ea, 90, 1e-12);
    /* adaptive: 5x4 -> 3x3, windows [floor(o*I/O), ceil((o+1)*I/O)) */
    int64_t ohw[2] = {3, 3};
    lt_tensor *D = lt_adaptive_avg_pool2d(X, ohw);
    EXPECT_SHAPE(D, 2, 3, 3, 3);
    double ed[54];
    int64_t hs[3] = {0, 1, 3}, he[3] = {2, 4, 5}, vs[3] = {0, 1, 2}, ve[3] = {2, 3, 4};
    for (int64_t pl = 0; pl < 6; pl++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double s = 0;
                for (int64_t h = hs[i]; h < he[i]; h++)
                    for (int64_t w = vs[j]; w < ve[j]; w++) s += x[pl * 20 + h * 4 + w];
                ed[(pl * 3 + i) * 3 + j] = s / (double)((he[i] - hs[i]) * (ve[j] - vs[j]));
            }
    EXPECT_ARR(D, ed, 54, 1e-12);
    /* stride NULL = kernel, as PyTorch */
    int64_t k2[2] = {2, 2};
    lt_tensor *M2 = lt_max_pool2d(X, k2, NULL, NULL);
    EXPECT_SHAPE(M2, 2, 3, 2, 2);
    free(x);
    lt_free(X), lt_free(M), lt_free(A), lt_free(D), lt_free(M2);
}

static lt_tensor *maxp_f(lt_tensor **in) { return lt_max_pool2d(in[0], p_k, p_s, p_p); }
static lt_tensor *maxp_b(lt_tensor **in, lt_tensor *r) { return nn_max_pool2d_backward(r, in[0], p_k, p_s, p_p); }
static lt_tensor *avgp_f(lt_tensor **in) { return lt_avg_pool2d(in[0], p_k, p_s, p_p); }
static lt_tensor *avgp_b(lt_tensor **in, lt_tensor *r) { return nn_avg_pool2d_backward(r, lt_shape(in[0]), p_k, p_s, p_p); }
static int64_t a_out[2] = {3, 2};
static lt_tensor *adp_f(lt_tensor **in) { return lt_adaptive_avg_pool2d(in[0], a_out); }
static lt_tensor *adp_b(lt_tensor **in, lt_tensor *r) { return nn_adaptive_avg_pool2d_backward(r, lt_shape(in[0])); }

TEST(pool_backward) {
    int64_t xs[4] = {2, 2, 5, 4};
    double *x = rnd(numel(4, xs));
    lt_tensor *in[1] = {f64(4, xs, x)};
    GRADCHECK("max_pool2d", maxp_f, maxp_b, in, 0);
    GRADCHECK("avg_pool2d", avgp_f, avgp_b, in, 0);
    GRADCHECK("adaptive_avg_pool2d", adp_f, adp_b, in, 0);
    free(x);
    lt_free(in[0]);
}

/* ---- batch norm ----------------------------------------------------------------------- */

TEST(batch_norm_forward) {
    int64_t xs[4] = {3, 2, 2, 2}, cs[1] = {2};
    double *x = rnd(24), w[2] = {1.5, -0.5}, b[2] = {0.25, 2}, rm0[2] = {0.1, -0.2}, rv0[2] = {1.2, 0.8};
    lt_tensor *X = f64(4, xs, x), *W = f64(1, cs, w), *B = f64(1, cs, b), *RM = f64(1, cs, rm0), *RV = f64(1, cs, rv0);
    double mom = 0.1, eps = 1e-5, ey[24], erm[2], erv[2], ee[24];
    for (int c = 0; c < 2; c++) {
        double m = 0, v = 0;
        for (int n = 0; n < 3; n++)
            for (int k = 0; k < 4; k++) m += x[(n * 2 + c) * 4 + k] / 12;
        for (int n = 0; n < 3; n++)
            for (int k = 0; k < 4; k++) v += (x[(n * 2 + c) * 4 + k] - m) * (x[(n * 2 + c) * 4 + k] - m);
        for (int n = 0; n < 3; n++)
            for (int k = 0; k < 4; k++) {
                int i = (n * 2 + c) * 4 + k;
                ey[i] = (x[i] - m) / sqrt(v / 12 + eps) * w[c] + b[c];
                ee[i] = (x[i] - ((1 - mom) * rm0[c] + mom * m)) / sqrt((1 - mom) * rv0[c] + mom * v / 11 + eps);
            }
        erm[c] = (1 - mom) * rm0[c] + mom * m;
        erv[c] = (1 - mom) * rv0[c] + mom * v / 11; /* unbiased */
    }
    lt_tensor *Y = lt_batch_norm(X, W, B, RM, RV, true, mom, eps);
    EXPECT_ARR(Y, ey, 24, 1e-12);
    EXPECT_ARR(RM, erm, 2, 1e-12);
    EXPECT_ARR(RV, erv, 2, 1e-12);
    /* eval: the (updated) running stats, no affine */
    lt_tensor *E = lt_batch_norm(X, NULL, NULL, RM, RV, false, mom, eps);
    EXPECT_ARR(E, ee, 24, 1e-12);
    /* running stats untouched in eval; lazily fused into one graph with the update */
    EXPECT_ARR(RM, erm, 2, 1e-12);
    /* no running stats: batch statistics, training (as PyTorch's layer passes) or not */
    lt_tensor *N = lt_batch_norm(X, W, B, NULL, NULL, true, mom, eps);
    EXPECT_ARR(N, ey, 24, 1e-12);
    lt_tensor *NE = lt_batch_norm(X, W, B, NULL, NULL, false, mom, eps);
    EXPECT_ARR(NE, ey, 24, 1e-12);
    lt_free(NE);
    /* (N, C) input */
    int64_t s2[2] = {4, 2};
    double x2[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    lt_tensor *X2 = f64(2, s2, x2), *Y2 = lt_batch_norm(X2, NULL, NULL, NULL, NULL, true, 0.1, 0);
    double z = 1 / sqrt(5.0); /* per column: values m-3, m-1, m+1, m+3; biased var 5 */
    EXPECT_VALUES(Y2, 1e-12, -3 * z, -3 * z, -z, -z, z, z, 3 * z, 3 * z);
    free(x);
    lt_free(X), lt_free(W), lt_free(B), lt_free(RM), lt_free(RV), lt_free(Y), lt_free(E), lt_free(N);
    lt_free(X2), lt_free(Y2);
}

static const double bn_eps = 1e-3;
static lt_tensor *bn_train_f(lt_tensor **in) { return lt_batch_norm(in[0], in[1], in[2], NULL, NULL, true, 0.1, bn_eps); }
static lt_tensor *bn_train_dx(lt_tensor **in, lt_tensor *r) {
    lt_tensor *stats, *y = nn_batch_norm(in[0], in[1], in[2], NULL, NULL, true, 0.1, bn_eps, &stats);
    lt_tensor *g = nn_batch_norm_backward_input(r, in[0], in[1], stats, NULL, NULL, bn_eps);
    lt_free(y), lt_free(stats);
    return g;
}
static lt_tensor *bn_param_row(lt_tensor **in, lt_tensor *r, int row, int train) {
    lt_tensor *stats = NULL, *y = NULL, *p;
    if (train) {
        y = nn_batch_norm(in[0], in[1], in[2], NULL, NULL, true, 0.1, bn_eps, &stats);
        p = nn_batch_norm_backward_params(r, in[0], stats, NULL, NULL, bn_eps);
    } else {
        p = nn_batch_norm_backward_params(r, in[0], NULL, in[3], in[4], bn_eps);
    }
    lt_tensor *s = lt_select(p, 0, row), *g = lt_clone(s);
    lt_free(y), lt_free(stats), lt_free(p), lt_free(s);
    return g;
}
static lt_tensor *bn_train_dw(lt_tensor **in, lt_tensor *r) { return bn_param_row(in, r, 0, 1); }
static lt_tensor *bn_train_db(lt_tensor **in, lt_tensor *r) { return bn_param_row(in, r, 1, 1); }
static lt_tensor *bn_eval_f(lt_tensor **in) { return lt_batch_norm(in[0], in[1], in[2], in[3], in[4], false, 0.1, bn_eps); }
static lt_tensor *bn_eval_dx(lt_tensor **in, lt_tensor *r) {
    return nn_batch_norm_backward_input(r, in[0], in[1], NULL, in[3], in[4], bn_eps);
}
static lt_tensor *bn_eval_dw(lt_tensor **in, lt_tensor *r) { return bn_param_row(in, r, 0, 0); }
static lt_tensor *bn_nw_f(lt_tensor **in) { return lt_batch_norm(in[0], NULL, NULL, NULL, NULL, true, 0.1, bn_eps); }
static lt_tensor *bn_nw_dx(lt_tensor **in, lt_tensor *r) {
    lt_tensor *stats, *y = nn_batch_norm(in[0], NULL, NULL, NULL, NULL, true, 0.1, bn_eps, &stats);
    lt_tensor *g = nn_batch_norm_backward_input(r, in[0], NULL, stats, NULL, NULL, bn_eps);
    lt_free(y), lt_free(stats);
    return g;
}

TEST(batch_norm_backward) {
    int64_t xs[4] = {3, 2, 2, 3}, cs[1] = {2};
    double *x = rnd(36), w[2] = {1.5, -0.5}, b[2] = {0.25, 2}, rm[2] = {0.1, -0.2}, rv[2] = {1.2, 0.8};
    lt_tensor *in[5] = {f64(4, xs, x), f64(1, cs, w), f64(1, cs, b), f64(1, cs, rm), f64(1, cs, rv)};
    GRADCHECK("batch_norm train dx", bn_train_f, bn_train_dx, in, 0);
    GRADCHECK("batch_norm train dw", bn_train_f, bn_train_dw, in, 1);
    GRADCHECK("batch_norm train db", bn_train_f, bn_train_db, in, 2);
    GRADCHECK("batch_norm eval dx", bn_eval_f, bn_eval_dx, in, 0);
    GRADCHECK("batch_norm eval dw", bn_eval_f, bn_eval_dw, in, 1);
    GRADCHECK("batch_norm no affine dx", bn_nw_f, bn_nw_dx, in, 0);
    free(x);
    for (int i = 0; i < 5; i++) lt_free(in[i]);
}

/* ---- linear ------------------------------------------------------------------------------ */

TEST(linear_forward) {
    int64_t xs[3] = {2, 3, 4}, ws[2] = {5, 4}, bs[1] = {5};
    double *x = rnd(24), *w = rnd(20), *b = rnd(5), e[30];
    lt_tensor *X = f64(3, xs, x), *W = f64(2, ws, w), *B = f64(1, bs, b);
    lt_tensor *Y = lt_linear(X, W, B), *Y0 = lt_linear(X, W, NULL);
    EXPECT_SHAPE(Y, 2, 3, 5);
    for (int m = 0; m < 6; m++)
        for (int o = 0; o < 5; o++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += x[m * 4 + k] * w[o * 4 + k];
            e[m * 5 + o] = s + b[o];
        }
    EXPECT_ARR(Y, e, 30, 1e-12);
    for (int i = 0; i < 30; i++) e[i] -= b[i % 5];
    EXPECT_ARR(Y0, e, 30, 1e-12);
    free(x), free(w), free(b);
    lt_free(X), lt_free(W), lt_free(B), lt_free(Y), lt_free(Y0);
}

/* The backward formulas that src/api/nn.h prescribes, with public ops. */
static lt_tensor *lin_f(lt_tensor **in) { return lt_linear(in[0], in[1], in[2]); }
static lt_tensor *lin_dx(lt_tensor **in, lt_tensor *r) { return lt_matmul(r, in[1]); }
static lt_tensor *lin_dw(lt_tensor **in, lt_tensor *r) {
    int64_t s1[2] = {-1, lt_shape(in[1])[0]}, s2[2] = {-1, lt_shape(in[1])[1]};
    lt_tensor *g2 = lt_reshape(r, 2, s1), *x2 = lt_reshape(in[0], 2, s2), *gt = lt_t(g2), *d = lt_matmul(gt, x2);
    lt_free(g2), lt_free(x2), lt_free(gt);
    return d;
}
static lt_tensor *lin_db(lt_tensor **in, lt_tensor *r) {
    (void)in;
    int ax[2] = {0, 1};
    return lt_sum(r, 2, ax, false);
}

TEST(linear_backward) {
    int64_t xs[3] = {2, 3, 4}, ws[2] = {5, 4}, bs[1] = {5};
    double *x = rnd(24), *w = rnd(20), *b = rnd(5);
    lt_tensor *in[3] = {f64(3, xs, x), f64(2, ws, w), f64(1, bs, b)};
    GRADCHECK("linear dx", lin_f, lin_dx, in, 0);
    GRADCHECK("linear dw", lin_f, lin_dw, in, 1);
    GRADCHECK("linear db", lin_f, lin_db, in, 2);
    free(x), free(w), free(b);
    for (int i = 0; i < 3; i++) lt_free(in[i]);
}

/* ---- dropout --------------------------------------------------------------------------------- */

static const double d_p = 0.3, d_seed = 123456789;
static lt_tensor *drop_f(lt_tensor **in) { return nn_dropout_backward(in[0], d_p, d_seed); }
static lt_tensor *drop_b(lt_tensor **in, lt_tensor *r) {
    (void)in;
    return nn_dropout_backward(r, d_p, d_seed);
}

TEST(dropout) {
    int64_t s[1] = {1000};
    double *x = rnd(1000);
    for (int i = 0; i < 1000; i++) x[i] += 2; /* never 0 */
    lt_tensor *X = f64(1, s, x);
    double seed;
    lt_tensor *Y = nn_dropout(X, d_p, true, &seed);
    CHECK(Y && seed >= 0);
    double *y = h_read(Y);
    int dropped = 0, bad = 0;
    for (int i = 0; i < 1000; i++) {
        if (y[i] == 0) dropped++;
        else bad += fabs(y[i] - x[i] / (1 - d_p)) > 1e-12;
    }
    CHECK(bad == 0);
    CHECK_MSG(dropped > 230 && dropped < 370, "dropped %d of 1000 at p = 0.3", dropped);
    /* the backward with the same seed applies the same mask */
    lt_tensor *ones = lt_ones(LT_F64, 1, s), *G = nn_dropout_backward(ones, d_p, seed);
    double *g = h_read(G);
    for (int i = 0; i < 1000 && g; i++)
        if ((g[i] == 0) != (y[i] == 0)) {
            CHECK_MSG(0, "mask differs at %d", i);
            break;
        }
    /* a new seed per call, one compiled graph: the seed is a runtime scalar */
    lt_mark_step();
    lt_tensor *Y2 = lt_dropout(X, d_p, true);
    double *y2 = h_read(Y2), u0 = lt_metric("UncachedCompile");
    lt_tensor *Y3 = lt_dropout(X, d_p, true);
    double *y3 = h_read(Y3);
    CHECK(lt_metric("UncachedCompile") == u0);
    CHECK(memcmp(y2, y3, 8000) != 0);
    /* eval or p = 0: identity, no node */
    lt_tensor *I = lt_dropout(X, 0.5, false), *I0 = lt_dropout(X, 0, true);
    EXPECT_ARR(I, x, 1000, 0);
    EXPECT_ARR(I0, x, 1000, 0);
    lt_tensor *Z = lt_dropout(X, 1, true);
    double *z = h_read(Z);
    int nz = 0;
    for (int i = 0; i < 1000; i++) nz += z[i] != 0;
    CHECK(nz == 0);
    lt_tensor *in[1] = {X};
    GRADCHECK("dropout", drop_f, drop_b, in, 0);
    free(x), free(y), free(g), free(y2), free(y3), free(z);
    lt_free(X), lt_free(Y), lt_free(ones), lt_free(G), lt_free(Y2), lt_free(Y3), lt_free(I), lt_free(I0), lt_free(Z);
}

/* ---- losses ---------------------------------------------------------------------------------- */

static double ce_ref(const double *z, const int64_t *t, int N, int C, double ls) {
    double s = 0;
    int cnt = 0;
    for (int n = 0; n < N; n++) {
        if (t[n] < 0 || t[n] >= C) continue; /* ignored */
        double mx = z[n * C], se = 0, sm = 0;
        for (int c = 1; c < C; c++) mx = fmax(mx, z[n * C + c]);
        for (int c = 0; c < C; c++) se += exp(z[n * C + c] - mx);
        for (int c = 0; c < C; c++) sm -= z[n * C + c] - mx - log(se);
        s += (1 - ls) * -(z[n * C + t[n]] - mx - log(se)) + ls / C * sm;
        cnt++;
    }
    return s / cnt;
}

TEST(losses_forward) {
    int64_t zs[2] = {4, 3}, ts[1] = {4};
    double *z = rnd(12);
    int64_t t[4] = {2, 0, -100, 1};
    lt_tensor *Z = f64(2, zs, z), *T = i64(1, ts, t);
    lt_tensor *L0 = lt_cross_entropy(Z, T, 0), *L1 = lt_cross_entropy(Z, T, 0.2);
    CHECK(L0 && lt_ndim(L0) == 0);
    EXPECT_VALUES(L0, 1e-12, ce_ref(z, t, 4, 3, 0));
    EXPECT_VALUES(L1, 1e-12, ce_ref(z, t, 4, 3, 0.2));
    lt_tensor *Nl = lt_nll_loss(Z, T);
    EXPECT_VALUES(Nl, 1e-12, -(z[2] + z[3] + z[10]) / 3);
    lt_tensor *M = lt_mse_loss(Z, Z), *Zt = lt_mul_scalar(Z, 2), *M2 = lt_mse_loss(Zt, Z);
    EXPECT_VALUES(M, 0, 0);
    double s = 0;
    for (int i = 0; i < 12; i++) s += z[i] * z[i] / 12;
    EXPECT_VALUES(M2, 1e-12, s);
    free(z);
    lt_free(Z), lt_free(T), lt_free(L0), lt_free(L1), lt_free(Nl), lt_free(M), lt_free(Zt), lt_free(M2);
}

static lt_tensor *g_target;
static double g_ls;
static lt_tensor *nll_f(lt_tensor **in) { return lt_nll_loss(in[0], g_target); }
static lt_tensor *nll_b(lt_tensor **in, lt_tensor *r) { return nn_nll_loss_backward(r, g_target, lt_shape(in[0])[1]); }
static lt_tensor *ce_f(lt_tensor **in) { return lt_cross_entropy(in[0], g_target, g_ls); }
static lt_tensor *ce_b(lt_tensor **in, lt_tensor *r) { return nn_cross_entropy_backward(r, in[0], g_target, g_ls); }
static lt_tensor *mse_f(lt_tensor **in) { return lt_mse_loss(in[0], in[1]); }
static lt_tensor *mse_da(lt_tensor **in, lt_tensor *r) { return nn_mse_loss_backward(r, in[0], in[1]); }
static lt_tensor *mse_db(lt_tensor **in, lt_tensor *r) {
    lt_tensor *d = nn_mse_loss_backward(r, in[0], in[1]), *n = lt_neg(d);
    lt_free(d);
    return n;
}

TEST(losses_backward) {
    int64_t zs[2] = {5, 4}, ts[1] = {5};
    int64_t t[5] = {3, 0, -100, 1, 2}; /* -100: ignored (any other target out of range fails the sync) */
    double *z = rnd(20), *z2 = rnd(20);
    lt_tensor *in[2] = {f64(2, zs, z), f64(2, zs, z2)};
    g_target = i64(1, ts, t);
    GRADCHECK("nll_loss", nll_f, nll_b, in, 0);
    g_ls = 0;
    GRADCHECK("cross_entropy", ce_f, ce_b, in, 0);
    g_ls = 0.15;
    GRADCHECK("cross_entropy label_smoothing", ce_f, ce_b, in, 0);
    GRADCHECK("mse_loss da", mse_f, mse_da, in, 0);
    GRADCHECK("mse_loss db", mse_f, mse_db, in, 1);
    free(z), free(z2);
    lt_free(in[0]), lt_free(in[1]), lt_free(g_target);
}

/* The front ends' loss entry points (lt_nll_loss_forward / _backward,
 * lt_mse_loss_ex / _backward): every reduction, an ignore_index inside
 * [0, C), the total weight; gradients by finite differences. */
static int g_red;
static int64_t g_ignore;
static lt_tensor *nllx_f(lt_tensor **in) { return lt_nll_loss_forward(in[0], g_target, g_red, g_ignore, NULL); }
static lt_tensor *nllx_b(lt_tensor **in, lt_tensor *r) {
    lt_tensor *tw = NULL, *y = lt_nll_loss_forward(in[0], g_target, g_red, g_ignore, &tw);
    lt_tensor *g = lt_nll_loss_backward(r, in[0], g_target, tw, g_red, g_ignore);
    lt_free(y), lt_free(tw);
    return g;
}
static lt_tensor *msex_f(lt_tensor **in) { return lt_mse_loss_ex(in[0], in[1], g_red); }
static lt_tensor *msex_b(lt_tensor **in, lt_tensor *r) { return lt_mse_loss_backward(r, in[0], in[1], g_red); }
static lt_tensor *sm_f(lt_tensor **in) { return g_red ? lt_log_softmax(in[0], 1) : lt_softmax(in[0], 1); }
static lt_tensor *sm_b(lt_tensor **in, lt_tensor *r) {
    lt_tensor *y = sm_f(in), *g = g_red ? lt_log_softmax_backward(r, y, 1) : lt_softmax_backward(r, y, 1);
    lt_free(y);
    return g;
}

TEST(front_end_losses) {
    int64_t zs[2] = {5, 4}, ts[1] = {5};
    int64_t t[5] = {3, 0, 2, 1, 2}; /* ignore_index 2: a valid class, ignored */
    double *z = rnd(20), *z2 = rnd(20);
    lt_tensor *in[2] = {f64(2, zs, z), f64(2, zs, z2)};
    g_target = i64(1, ts, t);
    g_ignore = 2;
    lt_tensor *tw = NULL, *none = lt_nll_loss_forward(in[0], g_target, 0, 2, &tw);
    EXPECT_ARR(none, ((double[]){-z[3], -z[4], 0, -z[13], 0}), 5, 1e-12);
    EXPECT_VALUES(tw, 0, 0);
    lt_free(tw);
    lt_tensor *mean = lt_nll_loss_forward(in[0], g_target, 1, 2, &tw), *sum = lt_nll_loss_forward(in[0], g_target, 2, 2, NULL);
    EXPECT_VALUES(mean, 1e-12, -(z[3] + z[4] + z[13]) / 3);
    EXPECT_VALUES(sum, 1e-12, -(z[3] + z[4] + z[13]));
    EXPECT_VALUES(tw, 0, 3);
    for (g_red = 0; g_red < 3; g_red++) {
        GRADCHECK("nll_loss_forward", nllx_f, nllx_b, in, 0);
        GRADCHECK("mse_loss_ex", msex_f, msex_b, in, 0);
    }
    for (g_red = 0; g_red < 2; g_red++) GRADCHECK("softmax_backward", sm_f, sm_b, in, 0);
    /* unbatched: (C) with a 0-d target */
    lt_tensor *row = lt_select(in[0], 0, 1), *t0 = lt_select(g_target, 0, 1);
    lt_tensor *u = lt_nll_loss_forward(row, t0, 0, -100, NULL);
    CHECK(u && lt_ndim(u) == 0);
    EXPECT_VALUES(u, 1e-12, -z[4]);
    CHECK(!lt_nll_loss_forward(in[0], g_target, 3, -100, NULL) && lt_error() == LT_ERR_ARG);
    lt_clear_error();
    free(z), free(z2);
    lt_free(none), lt_free(mean), lt_free(sum), lt_free(tw), lt_free(row), lt_free(t0), lt_free(u);
    lt_free(in[0]), lt_free(in[1]), lt_free(g_target);
}

/* ---- indexing ------------------------------------------------------------------------------------ */

TEST(index_forward) {
    int64_t as[2] = {3, 4}, is[2] = {2, 3}, vs[1] = {3};
    double a[12] = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
    int64_t idx[6] = {2, 0, 1, 1, 2, 0}; /* out of range fails the sync (test_torch_diff) */
    lt_tensor *A = f64(2, as, a), *I = i64(2, is, idx);
    lt_tensor *G0 = lt_gather(A, 0, I), *G1 = lt_gather(A, -1, I);
    EXPECT_SHAPE(G0, 2, 3);
    EXPECT_VALUES(G0, 0, 20, 1, 12, 10, 21, 2);  /* out[i][j] = a[idx[i][j]][j] */
    EXPECT_VALUES(G1, 0, 2, 0, 1, 11, 12, 10);   /* out[i][j] = a[i][idx[i][j]] */
    int64_t v[3] = {2, 0, 2};
    lt_tensor *V = i64(1, vs, v), *S0 = lt_index_select(A, 0, V), *S1 = lt_index_select(A, 1, V);
    EXPECT_SHAPE(S0, 3, 4);
    EXPECT_VALUES(S0, 0, 20, 21, 22, 23, 0, 1, 2, 3, 20, 21, 22, 23);
    EXPECT_VALUES(S1, 0, 2, 0, 2, 12, 10, 12, 22, 20, 22);
    lt_tensor *E = lt_embedding(A, I);
    EXPECT_SHAPE(E, 2, 3, 4);
    EXPECT_VALUES(E, 0, 20, 21, 22, 23, 0, 1, 2, 3, 10, 11, 12, 13, 10, 11, 12, 13, 20, 21, 22, 23, 0, 1, 2, 3);
    double o[6] = {1, 1, 1, 1, 1, 1};
    lt_tensor *Src = f64(2, is, o), *Z = lt_zeros(LT_F64, 2, as);
    lt_tensor *SA = nn_scatter_add(Z, 0, I, Src);
    EXPECT_VALUES(SA, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0);
    int64_t srs[2] = {3, 4};
    lt_tensor *Src2 = lt_ones(LT_F64, 2, srs), *IA = nn_index_add(A, 0, V, Src2);
    EXPECT_VALUES(IA, 0, 1, 2, 3, 4, 10, 11, 12, 13, 22, 23, 24, 25);
    lt_free(A), lt_free(I), lt_free(G0), lt_free(G1), lt_free(V), lt_free(S0), lt_free(S1), lt_free(E);
    lt_free(Src), lt_free(Z), lt_free(SA), lt_free(Src2), lt_free(IA);
}

/* lt_index (torch's a[index] at one dim, negatives from the end) and its
 * accumulating put: shapes, values, an index out of [-size, size) fails the sync. */
TEST(index_tensor) {
    int64_t as[2] = {3, 4}, is[2] = {2, 2};
    double a[12] = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
    int64_t idx[4] = {-1, 0, 1, -3};
    lt_tensor *A = f64(2, as, a), *I = i64(2, is, idx);
    lt_tensor *R0 = lt_index(A, 0, I), *R1 = lt_index(A, 1, I);
    EXPECT_SHAPE(R0, 2, 2, 4);
    EXPECT_VALUES(R0, 0, 20, 21, 22, 23, 0, 1, 2, 3, 10, 11, 12, 13, 0, 1, 2, 3);
    EXPECT_SHAPE(R1, 3, 2, 2);
    EXPECT_VALUES(R1, 0, 3, 0, 1, 1, 13, 10, 11, 11, 23, 20, 21, 21);
    int64_t vs[3] = {3, 2, 2};
    lt_tensor *V = lt_ones(LT_F64, 3, vs), *P = lt_index_put_add(A, 1, I, V);
    EXPECT_VALUES(P, 0, 1, 3, 2, 4, 11, 13, 12, 14, 21, 23, 22, 24); /* columns 3, 0, 1, 1 */
    CHECK(!lt_index_put_add(A, 0, I, V) && lt_error() == LT_ERR_SHAPE);
    lt_clear_error();
    int64_t bad[1] = {-5}, one[1] = {1}; /* dim 1 has 4: -4 is the first, -5 out of range */
    lt_tensor *B = i64(1, one, bad), *RB = lt_index(A, 1, B);
    double out[3];
    CHECK(RB && lt_to_host(RB, out, sizeof out) != 0);
    lt_clear_error();
    lt_free(A), lt_free(I), lt_free(R0), lt_free(R1), lt_free(V), lt_free(P), lt_free(B), lt_free(RB);
}

static lt_tensor *g_index;
static int g_dim;
static lt_tensor *zeros_like(lt_tensor *t) { return lt_zeros(lt_dtype_of(t), lt_ndim(t), lt_shape(t)); }
static lt_tensor *gather_f(lt_tensor **in) { return lt_gather(in[0], g_dim, g_index); }
static lt_tensor *gather_b(lt_tensor **in, lt_tensor *r) {
    lt_tensor *z = zeros_like(in[0]), *g = nn_scatter_add(z, g_dim, g_index, r);
    lt_free(z);
    return g;
}
static lt_tensor *isel_f(lt_tensor **in) { return lt_index_select(in[0], g_dim, g_index); }
static lt_tensor *isel_b(lt_tensor **in, lt_tensor *r) {
    lt_tensor *z = zeros_like(in[0]), *g = nn_index_add(z, g_dim, g_index, r);
    lt_free(z);
    return g;
}
static lt_tensor *emb_f(lt_tensor **in) { return lt_embedding(in[0], g_index); }
static lt_tensor *emb_b(lt_tensor **in, lt_tensor *r) { return nn_embedding_backward(r, g_index, lt_shape(in[0])[0]); }

TEST(index_backward) {
    int64_t as[3] = {3, 4, 2}, is[3] = {2, 4, 2}, vs[1] = {5}, es[2] = {2, 3};
    double *a = rnd(24);
    int64_t idx[16] = {2, 0, 1, 1, 0, 0, 2, 2, 1, 1, 0, 2, 2, 1, 1, 0}, v[5] = {3, 0, 3, 2, 1};
    int64_t e[6] = {2, 0, 2, 1, 1, 2};
    lt_tensor *in[1] = {f64(3, as, a)};
    g_index = i64(3, is, idx);
    g_dim = 0;
    GRADCHECK("gather dim 0", gather_f, gather_b, in, 0);
    lt_free(g_index);
    int64_t is1[3] = {3, 4, 1}, idx1[12] = {3, 0, 1, 1, 0, 2, 3, 3, 1, 2, 0, 0};
    g_index = i64(3, is1, idx1);
    g_dim = 1;
    GRADCHECK("gather dim 1", gather_f, gather_b, in, 0);
    lt_free(g_index);
    g_index = i64(1, vs, v);
    GRADCHECK("index_select dim 1", isel_f, isel_b, in, 0);
    lt_free(g_index);
    int64_t ws[2] = {4, 3};
    lt_tensor *w[1] = {f64(2, ws, a)};
    g_index = i64(2, es, e);
    GRADCHECK("embedding", emb_f, emb_b, w, 0);
    lt_free(g_index);
    free(a);
    lt_free(in[0]), lt_free(w[0]);
}

/* ---- errors ------------------------------------------------------------------------------------- */

TEST(errors) {
    int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {6, 3, 3, 3}, s1[1] = {4};
    lt_tensor *X = lt_zeros(LT_F32, 4, xs), *W = lt_zeros(LT_F32, 4, ws), *Xi = lt_zeros(LT_I64, 4, xs);
    lt_tensor *T = lt_zeros(LT_I64, 1, s1), *Tf = lt_zeros(LT_F32, 1, s1);
    CHECK(!lt_conv2d(X, W, NULL, NULL, NULL, NULL, 1)); /* C 4 vs weight 3 */
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_conv2d(X, W, NULL, NULL, NULL, NULL, 2)); /* O 6 ok, C/groups 2 != 3 */
    CHECK_ERR(LT_ERR_SHAPE);
    int64_t neg[2] = {-1, 0}, big[2] = {9, 9};
    CHECK(!lt_conv2d(X, X, NULL, NULL, neg, NULL, 1));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_conv2d(Xi, W, NULL, NULL, NULL, NULL, 1));
    CHECK_ERR(LT_ERR_DTYPE);
    int64_t w4[4] = {2, 4, 7, 1};
    lt_tensor *Wbig = lt_zeros(LT_F32, 4, w4);
    CHECK(!lt_conv2d(X, Wbig, NULL, NULL, NULL, NULL, 1)); /* kernel 7 > 5 */
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_conv2d(NULL, W, NULL, NULL, NULL, NULL, 1));
    CHECK_ERR(LT_ERR_NULL);
    CHECK(!lt_conv2d(X, W, NULL, NULL, NULL, NULL, 0));
    CHECK_ERR(LT_ERR_ARG);
    int64_t k3[2] = {3, 3}, p2[2] = {2, 2};
    CHECK(!lt_max_pool2d(X, k3, NULL, p2)); /* padding > kernel / 2 */
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_avg_pool2d(X, big, NULL, NULL));
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_max_pool2d(X, NULL, NULL, NULL));
    CHECK_ERR(LT_ERR_NULL);
    int64_t bs[4] = {1, 4, 1, 1};
    lt_tensor *B1 = lt_zeros(LT_F32, 4, bs);
    CHECK(!lt_batch_norm(B1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5)); /* one value per channel */
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_batch_norm(X, NULL, NULL, Tf, NULL, false, 0.1, 1e-5)); /* running_var missing */
    CHECK_ERR(LT_ERR_NULL);
    int64_t s3[1] = {3};
    lt_tensor *W3 = lt_zeros(LT_F32, 1, s3);
    CHECK(!lt_batch_norm(X, W3, NULL, NULL, NULL, true, 0.1, 1e-5));
    CHECK_ERR(LT_ERR_SHAPE);
    int64_t ls[2] = {4, 3}, ws2[2] = {5, 4};
    lt_tensor *L = lt_zeros(LT_F32, 2, ls), *LW = lt_zeros(LT_F32, 2, ws2);
    CHECK(!lt_linear(L, LW, NULL)); /* K 3 vs 4 */
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_dropout(L, 1.5, true));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_nll_loss(L, Tf));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_cross_entropy(L, T, 1.5));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_cross_entropy(LW, T, 0)); /* N 5 vs target 4 */
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_mse_loss(L, LW));
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_gather(L, 0, T)); /* index 1-d, a 2-d */
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!lt_gather(L, 2, T));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_index_select(L, 0, Tf));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_embedding(T, T));
    CHECK_ERR(LT_ERR_SHAPE);
    int64_t wrong[4] = {1, 4, 6, 5};
    CHECK(!nn_conv2d_backward_input(X, W, wrong, NULL, NULL, NULL, 1)); /* grad_out shape mismatch */
    CHECK_ERR(LT_ERR_SHAPE);
    CHECK(!nn_batch_norm_backward_input(X, X, NULL, NULL, NULL, NULL, 1e-5)); /* no statistics */
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!nn_dropout_backward(L, 0.5, 0.5)); /* not an integer seed */
    CHECK_ERR(LT_ERR_ARG);
    lt_free(X), lt_free(W), lt_free(Xi), lt_free(T), lt_free(Tf), lt_free(Wbig), lt_free(B1), lt_free(W3);
    lt_free(L), lt_free(LW);
}

int main(void) {
    RUN(conv2d_forward);
    RUN(conv2d_backward);
    RUN(pool_forward);
    RUN(pool_backward);
    RUN(batch_norm_forward);
    RUN(batch_norm_backward);
    RUN(linear_forward);
    RUN(linear_backward);
    RUN(dropout);
    RUN(losses_forward);
    RUN(losses_backward);
    RUN(front_end_losses);
    RUN(index_forward);
    RUN(index_backward);
    RUN(index_tensor);
    RUN(errors);
    return h_report();
}
