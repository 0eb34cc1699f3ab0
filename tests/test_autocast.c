/* Autocast (issue 15): the op lists (which ops cast, to what, with one CAST
 * node per float32 operand), regions that nest and errors, values against
 * the same math on bfloat16-rounded operands, and gradients through an
 * autocast region (conv, batch norm with float32 parameters, relu, pooling,
 * linear, cross-entropy; a GPT attention block) against central finite
 * differences in float64. */
#include "harness.h"

#include "func/func.h"

static uint64_t lcg = 99;
static double urand(void) { /* [-1, 1) */
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) * 0x1.0p-53 * 2 - 1;
}
static lt_tensor *randt(lt_dtype d, int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    double *v = malloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = urand();
    lt_tensor *t64 = h_f64(nd, s, v), *t = lt_to_dtype(t64, d);
    lt_free(t64);
    free(v);
    return t;
}
/* Operand i of t's node is a CAST to `to`, of the value `of` holds. */
static int cast_of(lt_tensor *t, int i, lt_dtype to, lt_tensor *of) {
    ir_node *n = func_value(t), *c = n && i < n->nin ? n->in[i] : NULL;
    return c && c->op == LT_OP_CAST && c->dtype == to && c->in[0] == func_value(of);
}

TEST(op_lists) {
    int64_t xs[4] = {2, 3, 5, 5}, ws[4] = {4, 3, 3, 3}, cs[1] = {4}, ls[2] = {3, 4}, ms[2] = {4, 6}, ts[1] = {2};
    lt_tensor *x = randt(LT_F32, 4, xs), *w = randt(LT_F32, 4, ws), *b = randt(LT_F32, 1, cs);
    lt_tensor *lw = randt(LT_F32, 2, ls), *m = randt(LT_F32, 2, ms), *xb = randt(LT_BF16, 4, xs);
    int64_t tv[2] = {1, 2}; /* classes of lin (C = 3): 3 would fail the sync, as PyTorch raises */
    lt_tensor *tgt = lt_from_data(tv, LT_I64, 1, ts);
    CHECK(lt_autocast_dtype() == LT_F32);
    CHECK(lt_autocast_begin(LT_BF16) == 0);
    CHECK(lt_autocast_dtype() == LT_BF16);
    lt_tensor *y = lt_conv2d(x, w, b, NULL, NULL, NULL, 1);
    CHECK(y && lt_dtype_of(y) == LT_BF16);
    CHECK(cast_of(y, 0, LT_BF16, x) && cast_of(y, 1, LT_BF16, w) && cast_of(y, 2, LT_BF16, b));
    lt_tensor *y2 = lt_conv2d(xb, w, NULL, NULL, NULL, NULL, 1); /* a bfloat16 operand is not cast again */
    CHECK(y2 && func_value(y2)->in[0] == func_value(xb) && cast_of(y2, 1, LT_BF16, w));
    /* batch norm: bfloat16 activations, float32 parameters, bfloat16 out */
    lt_tensor *bn = lt_batch_norm(y, b, b, NULL, NULL, true, 0.1, 1e-5);
    CHECK(bn && lt_dtype_of(bn) == LT_BF16);
    lt_tensor *r = lt_relu(bn), *one[1] = {NULL};
    CHECK(r && lt_dtype_of(r) == LT_BF16);
    lt_tensor *p = lt_adaptive_avg_pool2d(r, (int64_t[]){1, 1}), *f = lt_flatten(p, 1, -1);
    lt_tensor *lin = lt_linear(f, lw, NULL);
    CHECK(lin && lt_dtype_of(lin) == LT_BF16 && cast_of(lin, 1, LT_BF16, lw));
    lt_tensor *ce = lt_cross_entropy(lin, tgt, 0), *sm = lt_softmax(lin, 1);
    CHECK(ce && lt_dtype_of(ce) == LT_F32 && cast_of(ce, 0, LT_F32, lin)); /* fp32 list */
    CHECK(sm && lt_dtype_of(sm) == LT_BF16);                                 /* runs in its operand's dtype */
    lt_tensor *mm = lt_matmul(f, m), *add = lt_add(f, f);
    CHECK(mm && lt_dtype_of(mm) == LT_BF16);
    CHECK(add && lt_dtype_of(add) == LT_BF16);
    /* attention: lower-precision list (float32 q, k, v cast; bfloat16 ones not) */
    lt_tensor *mb = lt_to_dtype(m, LT_BF16), *at = lt_scaled_dot_product_attention(m, m, mb, true, 0, 0);
    CHECK(at && lt_dtype_of(at) == LT_BF16 && cast_of(at, 0, LT_BF16, m) && cast_of(at, 1, LT_BF16, m));
    CHECK(at && func_value(at)->in[2] == func_value(mb));
    /* a nested region with autocast off, then back on */
    CHECK(lt_autocast_begin(LT_F32) == 0);
    lt_tensor *mm32 = lt_matmul(lw, m);
    CHECK(mm32 && lt_dtype_of(mm32) == LT_F32);
    CHECK(lt_autocast_end() == 0);
    lt_tensor *mm16 = lt_matmul(lw, m);
    CHECK(mm16 && lt_dtype_of(mm16) == LT_BF16);
    CHECK(lt_autocast_end() == 0);
    lt_tensor *mmo = lt_matmul(lw, m);
    CHECK(mmo && lt_dtype_of(mmo) == LT_F32);
    /* errors: an unbalanced end, another dtype; NULL operands still name the argument */
    CHECK(lt_autocast_end() == -1);
    CHECK_ERR(LT_ERR_STATE);
    CHECK(lt_autocast_begin(LT_I64) == -1);
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(lt_autocast_begin(LT_BF16) == 0);
    CHECK(lt_conv2d(NULL, w, NULL, NULL, NULL, NULL, 1) == NULL);
    CHECK(strstr(lt_error_message(), "'x'") != NULL);
    lt_clear_error();
    CHECK(lt_autocast_end() == 0);
    (void)one;
    lt_mark_step();
    lt_tensor *all[] = {x, w, b, lw, m, xb, tgt, y, y2, bn, r, p, f, lin, ce, sm, mm, add, mb, at, mm32, mm16, mmo};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) lt_free(all[i]);
    CHECK_NO_ERR();
}

/* A matmul under autocast = the float32 product of the operands rounded
 * to bfloat16, accumulated in float32 (exact here: short sums of products
 * of 8-bit mantissas), then rounded once. */
TEST(matmul_values) {
    int64_t as[2] = {3, 5}, bs[2] = {5, 4};
    lt_tensor *a = randt(LT_F32, 2, as), *b = randt(LT_F32, 2, bs);
    lt_autocast_begin(LT_BF16);
    lt_tensor *c = lt_matmul(a, b);
    lt_autocast_end();
    lt_tensor *ab = lt_to_dtype(a, LT_BF16), *bb = lt_to_dtype(b, LT_BF16);
    lt_tensor *a2 = lt_to_dtype(ab, LT_F64), *b2 = lt_to_dtype(bb, LT_F64), *e = lt_matmul(a2, b2);
    lt_tensor *eb = lt_to_dtype(e, LT_BF16);
    double *got = h_read(c), *want = h_read(eb);
    CHECK(got && want && lt_dtype_of(c) == LT_BF16);
    for (int i = 0; got && want && i < 12; i++) CHECK_MSG(got[i] == want[i], "element %d: %g vs %g", i, got[i], want[i]);
    free(got), free(want);
    lt_tensor *all[] = {a, b, c, ab, bb, a2, b2, e, eb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) lt_free(all[i]);
}

/* A linear's float32 weight under autocast gets the float32 sums of the
 * bfloat16 products g^T x, not those sums rounded to bfloat16 and cast
 * back (nn_matmul_wide): here sums of 64 products of 8-bit mantissas, so
 * within float32 rounding of the float64 sums of the same bfloat16
 * values; a bfloat16 rounding (2^-9 relative) fails it. Through the fast
 * kernel (no reference one) where oneDNN is built in. */
TEST(linear_weight_gradient_unrounded) {
    int64_t xs[2] = {64, 24}, ws[2] = {10, 24}, ys[2] = {64, 10};
    lt_tensor *x = randt(LT_F32, 2, xs), *w = randt(LT_F32, 2, ws), *c = randt(LT_F32, 2, ys);
    lt_set_requires_grad(w, true);
    double f0 = lt_metric("FallbackOps");
    lt_autocast_begin(LT_BF16);
    lt_tensor *y = lt_linear(x, w, NULL);
    lt_autocast_end();
    lt_tensor *yc = lt_mul(y, c), *l = lt_sum(yc, 0, NULL, false); /* dL/dy = c, rounded to y's bfloat16 */
    CHECK(lt_backward(l) == 0);
    lt_tensor *gw = lt_grad(w);
    CHECK(gw && lt_dtype_of(gw) == LT_F32);
    lt_mark_step();
#ifdef LT_HAVE_DNNL
    CHECK_MSG(lt_metric("FallbackOps") == f0, "%g ops ran the reference kernel", lt_metric("FallbackOps") - f0);
#else
    (void)f0;
#endif
    lt_tensor *cb = lt_to_dtype(c, LT_BF16), *xb = lt_to_dtype(x, LT_BF16);
    lt_tensor *c64 = lt_to_dtype(cb, LT_F64), *x64 = lt_to_dtype(xb, LT_F64);
    lt_tensor *ct = lt_t(c64), *want = lt_matmul(ct, x64);
    double *got = gw ? h_read(gw) : NULL, *ref = h_read(want);
    CHECK(got && ref);
    for (int i = 0; got && ref && i < 10 * 24; i++)
        CHECK_MSG(fabs(got[i] - ref[i]) <= 1e-6 * (1 + fabs(ref[i])), "element %d: %.9g vs %.9g", i, got[i], ref[i]);
    free(got), free(ref);
    lt_tensor *all[] = {x, w, c, y, yc, l, cb, xb, c64, x64, ct, want};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) lt_free(all[i]);
}

/* ---- gradients through an autocast region vs float64 finite differences ---- */

/* A small network: its parameters' shapes, and its loss of (x, the
 * parameters, a target), float32 under autocast or float64 without. */
typedef struct net {
    int np;
    const int64_t (*ps)[4];
    const int *pnd;
    lt_tensor *(*loss)(lt_tensor *x, lt_tensor *const *p, lt_tensor *tgt);
} net;

static int64_t pn(const net *n, int i) {
    int64_t c = 1;
    for (int d = 0; d < n->pnd[i]; d++) c *= n->ps[i][d];
    return c;
}

static double loss64(const net *n, double *const *pv, lt_tensor *x, lt_tensor *tgt) {
    lt_tensor *p[8];
    for (int i = 0; i < n->np; i++) p[i] = h_f64(n->pnd[i], n->ps[i], pv[i]);
    lt_tensor *l = n->loss(x, p, tgt);
    double v = lt_item(l);
    lt_free(l);
    for (int i = 0; i < n->np; i++) lt_free(p[i]);
    return v;
}

/* The net's float32 parameters' gradients through an autocast region are
 * float32 and agree with central differences of the float64 loss (at most
 * 48 elements of each parameter, spread over it). fallback_free: the cpu
 * backend ran no reference kernel for the step. */
static void check_fd(const net *n, lt_tensor *x32, lt_tensor *tgt, int fallback_free) {
    lt_tensor *x64 = lt_to_dtype(x32, LT_F64), *p[8];
    double *pv[8];
    for (int i = 0; i < n->np; i++) {
        pv[i] = malloc(sizeof(double) * (size_t)pn(n, i));
        for (int64_t k = 0; k < pn(n, i); k++) pv[i][k] = urand();
        lt_tensor *t = h_f64(n->pnd[i], n->ps[i], pv[i]);
        p[i] = lt_to_dtype(t, LT_F32);
        lt_free(t);
        double *back = h_read(p[i]); /* the float64 run starts from the same float32 values */
        memcpy(pv[i], back, sizeof(double) * (size_t)pn(n, i));
        free(back);
        lt_set_requires_grad(p[i], true);
    }
    double f0 = lt_metric("FallbackOps");
    lt_autocast_begin(LT_BF16);
    lt_tensor *l = n->loss(x32, p, tgt);
    lt_autocast_end();
    CHECK(l && lt_dtype_of(l) == LT_F32);
    CHECK(lt_backward(l) == 0);
    lt_mark_step();
    if (fallback_free)
        CHECK_MSG(lt_metric("FallbackOps") == f0, "%g ops ran the reference kernel", lt_metric("FallbackOps") - f0);
    const double h = 1e-5;
    for (int i = 0; i < n->np; i++) {
        lt_tensor *g = lt_grad(p[i]);
        CHECK_MSG(g && lt_dtype_of(g) == LT_F32, "parameter %d: gradient missing or not float32", i);
        if (!g) continue;
        int64_t cnt = pn(n, i), step = cnt > 48 ? cnt / 48 : 1;
        double *gv = h_read(g), *fd = calloc((size_t)cnt, sizeof(double)), scale = 0;
        for (int64_t k = 0; k < cnt; k += step) {
            double v = pv[i][k];
            pv[i][k] = v + h;
            double lp = loss64(n, pv, x64, tgt);
            pv[i][k] = v - h;
            double lm = loss64(n, pv, x64, tgt);
            pv[i][k] = v;
            fd[k] = (lp - lm) / (2 * h);
            if (fabs(fd[k]) > scale) scale = fabs(fd[k]);
        }
        /* bfloat16 keeps 8 bits: a few roundings along the path, relative to the largest component */
        for (int64_t k = 0; k < cnt; k += step)
            CHECK_MSG(fabs(gv[k] - fd[k]) <= 3e-2 * scale + 1e-4, "parameter %d [%lld]: autocast %.6g, float64 fd %.6g (scale %.3g)",
                      i, (long long)k, gv[k], fd[k], scale);
        free(gv), free(fd);
    }
    lt_free(l), lt_free(x64);
    for (int i = 0; i < n->np; i++) lt_free(p[i]), free(pv[i]);
    CHECK_NO_ERR();
}

/* conv -> batch norm (batch statistics) -> relu -> global pool -> linear -> cross-entropy */
static const int64_t CNN_PS[6][4] = {{4, 3, 3, 3}, {4}, {4}, {4}, {5, 4}, {5}};
static const int CNN_PND[6] = {4, 1, 1, 1, 2, 1};
static lt_tensor *cnn_loss(lt_tensor *x, lt_tensor *const *p, lt_tensor *tgt) {
    lt_tensor *y = lt_conv2d(x, p[0], p[1], NULL, (int64_t[]){1, 1}, NULL, 1);
    lt_tensor *bn = lt_batch_norm(y, p[2], p[3], NULL, NULL, true, 0.1, 1e-5);
    lt_tensor *r = lt_relu(bn), *q = lt_adaptive_avg_pool2d(r, (int64_t[]){1, 1}), *f = lt_flatten(q, 1, -1);
    lt_tensor *o = lt_linear(f, p[4], p[5]), *l = lt_cross_entropy(o, tgt, 0);
    lt_free(y), lt_free(bn), lt_free(r), lt_free(q), lt_free(f), lt_free(o);
    return l;
}

TEST(gradients_vs_finite_differences) {
    int64_t xs[4] = {2, 3, 6, 6}, ts[1] = {2}, tv[2] = {4, 1};
    lt_tensor *x32 = randt(LT_F32, 4, xs), *tgt = lt_from_data(tv, LT_I64, 1, ts);
    net n = {6, CNN_PS, CNN_PND, cnn_loss};
    check_fd(&n, x32, tgt, 0);
    lt_free(x32), lt_free(tgt);
}

/* A GPT attention block (B 2, T 37: odd, H 2, D 12): layer norm (float32
 * residual stream), the qkv linear (bfloat16), q, k, v as views of it,
 * causal attention in bfloat16 (no casts around it), the projection,
 * a layer norm of the bfloat16 projection with float32 parameters (mixed),
 * GELU in bfloat16, then sum(gelu * c) / n in x's dtype. */
enum { TB = 2, TT = 37, TH = 2, TD = 12, TE = TH * TD };
static const int64_t TF_PS[7][4] = {{TE}, {TE}, {3 * TE, TE}, {3 * TE}, {TE, TE}, {TE}, {TE}};
static const int TF_PND[7] = {1, 1, 2, 1, 2, 1, 1};
static lt_tensor *block_loss(lt_tensor *x, lt_tensor *const *p, lt_tensor *c) {
    int64_t hs[4] = {TB, TT, TH, TD}, bs[3] = {TB, TT, TE};
    lt_tensor *h = lt_layer_norm(x, 1, p[0], p[1], 1e-5), *qkv = lt_linear(h, p[2], p[3]), *v[3];
    for (int i = 0; i < 3; i++) {
        lt_tensor *part = lt_narrow(qkv, 2, i * TE, TE), *r = lt_reshape(part, 4, hs);
        v[i] = lt_transpose(r, 1, 2);
        lt_free(part), lt_free(r);
    }
    lt_tensor *y = lt_scaled_dot_product_attention(v[0], v[1], v[2], true, 0, 0);
    lt_tensor *yt = lt_transpose(y, 1, 2), *yc = lt_reshape(yt, 3, bs), *o = lt_linear(yc, p[4], NULL);
    lt_tensor *z = lt_layer_norm(o, 1, p[5], p[6], 1e-5), *ge = lt_gelu(z, false);
    lt_tensor *gx = lt_to_dtype(ge, lt_dtype_of(x)), *cx = lt_to_dtype(c, lt_dtype_of(x)), *m = lt_mul(gx, cx);
    lt_tensor *s = lt_sum(m, 0, NULL, false), *l = lt_mul_scalar(s, 1.0 / (TB * TT * TE));
    if (lt_autocast_dtype() == LT_BF16) { /* the policy: what each op ran in */
        CHECK(lt_dtype_of(qkv) == LT_BF16 && lt_dtype_of(y) == LT_BF16 && lt_dtype_of(o) == LT_BF16);
        CHECK(lt_dtype_of(z) == LT_BF16 && lt_dtype_of(ge) == LT_BF16);
        for (int i = 0; i < 3; i++) /* no cast around attention: it reads the heads of qkv */
            CHECK(func_value(y)->in[i] == func_value(v[i]) && func_value(v[i])->op != LT_OP_CAST);
        CHECK(func_value(o)->in[0] == func_value(yc)); /* nor after it */
    }
    lt_tensor *all[] = {h, qkv, v[0], v[1], v[2], y, yt, yc, o, z, ge, gx, cx, m, s};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) lt_free(all[i]);
    return l;
}

/* The bfloat16 GPT step's kernels (linear and its transposed weight
 * gradient, bias sums, the views' backward, mixed layer norm and its
 * backward ops, GELU, attention and its backward) are all fast ones, and
 * its gradients are right.
 * Without oneDNN (LT_NO_DNNL) the bfloat16 matmuls have no fast kernel:
 * the gradients are checked, the kernels are not. */
TEST(transformer_block) {
    int64_t xs[3] = {TB, TT, TE};
    lt_tensor *x32 = randt(LT_F32, 3, xs), *c = randt(LT_F32, 3, xs);
    net n = {7, TF_PS, TF_PND, block_loss};
#ifdef LT_HAVE_DNNL
    check_fd(&n, x32, c, 1);
#else
    check_fd(&n, x32, c, 0);
#endif
    lt_free(x32), lt_free(c);
}

int main(void) {
    RUN(op_lists);
    RUN(matmul_values);
    RUN(linear_weight_gradient_unrounded);
    RUN(gradients_vs_finite_differences);
    RUN(transformer_block);
    return h_report();
}
