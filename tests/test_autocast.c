/* Autocast (issue 15): the op lists (which ops cast, to what, with one CAST
 * node per float32 operand), regions that nest and errors, values against
 * the same math on bfloat16-rounded operands, and gradients through an
 * autocast region (conv, batch norm with float32 parameters, relu, pooling,
 * linear, cross-entropy) against central finite differences in float64. */
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
    lt_tensor *all[] = {x, w, b, lw, m, xb, tgt, y, y2, bn, r, p, f, lin, ce, sm, mm, add, mm32, mm16, mmo};
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

/* ---- gradients through an autocast region vs float64 finite differences ---- */

enum { NP = 6 };
static const int64_t PS[NP][4] = {{4, 3, 3, 3}, {4}, {4}, {4}, {5, 4}, {5}};
static const int PND[NP] = {4, 1, 1, 1, 2, 1};
static int64_t pn(int i) {
    int64_t n = 1;
    for (int d = 0; d < PND[i]; d++) n *= PS[i][d];
    return n;
}

/* conv -> batch norm (batch statistics) -> relu -> global pool -> linear -> cross-entropy */
static lt_tensor *net_loss(lt_tensor *x, lt_tensor *const *p, lt_tensor *tgt) {
    lt_tensor *y = lt_conv2d(x, p[0], p[1], NULL, (int64_t[]){1, 1}, NULL, 1);
    lt_tensor *bn = lt_batch_norm(y, p[2], p[3], NULL, NULL, true, 0.1, 1e-5);
    lt_tensor *r = lt_relu(bn), *q = lt_adaptive_avg_pool2d(r, (int64_t[]){1, 1}), *f = lt_flatten(q, 1, -1);
    lt_tensor *o = lt_linear(f, p[4], p[5]), *l = lt_cross_entropy(o, tgt, 0);
    lt_free(y), lt_free(bn), lt_free(r), lt_free(q), lt_free(f), lt_free(o);
    return l;
}

static double loss64(const double *const *pv, lt_tensor *x, lt_tensor *tgt) {
    lt_tensor *p[NP];
    for (int i = 0; i < NP; i++) p[i] = h_f64(PND[i], PS[i], pv[i]);
    lt_tensor *l = net_loss(x, p, tgt);
    double v = lt_item(l);
    lt_free(l);
    for (int i = 0; i < NP; i++) lt_free(p[i]);
    return v;
}

TEST(gradients_vs_finite_differences) {
    int64_t xs[4] = {2, 3, 6, 6}, ts[1] = {2}, tv[2] = {4, 1};
    lt_tensor *x32 = randt(LT_F32, 4, xs), *x64 = lt_to_dtype(x32, LT_F64), *tgt = lt_from_data(tv, LT_I64, 1, ts);
    double *pv[NP];
    lt_tensor *p[NP];
    for (int i = 0; i < NP; i++) {
        pv[i] = malloc(sizeof(double) * (size_t)pn(i));
        for (int64_t k = 0; k < pn(i); k++) pv[i][k] = i == 2 ? 1 + 0.5 * urand() : urand();
        lt_tensor *t = h_f64(PND[i], PS[i], pv[i]);
        p[i] = lt_to_dtype(t, LT_F32);
        lt_free(t);
        double *back = h_read(p[i]); /* the float64 run starts from the same float32 values */
        memcpy(pv[i], back, sizeof(double) * (size_t)pn(i));
        free(back);
        lt_set_requires_grad(p[i], true);
    }
    lt_autocast_begin(LT_BF16);
    lt_tensor *l = net_loss(x32, p, tgt);
    lt_autocast_end();
    CHECK(l && lt_dtype_of(l) == LT_F32);
    CHECK(lt_backward(l) == 0);
    const double h = 1e-5;
    for (int i = 0; i < NP; i++) {
        lt_tensor *g = lt_grad(p[i]);
        CHECK_MSG(g && lt_dtype_of(g) == LT_F32, "parameter %d: gradient missing or not float32", i);
        if (!g) continue;
        double *gv = h_read(g), *fd = malloc(sizeof(double) * (size_t)pn(i)), scale = 0;
        for (int64_t k = 0; k < pn(i); k++) {
            double v = pv[i][k];
            pv[i][k] = v + h;
            double lp = loss64((const double *const *)pv, x64, tgt);
            pv[i][k] = v - h;
            double lm = loss64((const double *const *)pv, x64, tgt);
            pv[i][k] = v;
            fd[k] = (lp - lm) / (2 * h);
            if (fabs(fd[k]) > scale) scale = fabs(fd[k]);
        }
        /* bfloat16 keeps 8 bits: a few roundings along the path, relative to the largest component */
        for (int64_t k = 0; k < pn(i); k++)
            CHECK_MSG(fabs(gv[k] - fd[k]) <= 3e-2 * scale + 1e-4, "parameter %d [%lld]: autocast %.6g, float64 fd %.6g (scale %.3g)",
                      i, (long long)k, gv[k], fd[k], scale);
        free(gv), free(fd);
    }
    lt_free(l);
    for (int i = 0; i < NP; i++) lt_free(p[i]), free(pv[i]);
    lt_free(x32), lt_free(x64), lt_free(tgt);
    CHECK_NO_ERR();
}

int main(void) {
    RUN(op_lists);
    RUN(matmul_values);
    RUN(gradients_vs_finite_differences);
    return h_report();
}
