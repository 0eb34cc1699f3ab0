/* The elementwise ops for front ends (lt_add_scaled, the integral-scalar
 * forms, scalar comparisons, masked_fill, sign, silu / hardswish /
 * hardsigmoid and the backward ops torch's autograd calls, lerp with a
 * tensor weight, bitwise ops) and the section's reductions and structure
 * ops (var / std, cumsum, flip): values and dtypes as PyTorch 1.13's CPU
 * kernels give them, and their errors. The
 * cpu backend is compared with the reference in test_cpu_vs_ref, the
 * gradients in test_autograd. */
#include "lib/harness.h"

static lt_tensor *i64v(int n, const int64_t *v) { return lt_from_data(v, LT_I64, 1, (int64_t[]){n}); }
static lt_tensor *f64v(int n, const double *v) { return lt_from_data(v, LT_F64, 1, (int64_t[]){n}); }

TEST(add_scaled) {
    lt_tensor *a = f64v(3, (double[]){1, 2, 3}), *b = f64v(3, (double[]){10, 20, 30});
    lt_tensor *r = lt_add_scaled(a, b, -0.5);
    EXPECT_VALUES(r, 0, -4, -8, -12);
    CHECK(lt_add_scaled_(a, b, 2) == a);
    EXPECT_VALUES(a, 0, 21, 42, 63);
    lt_tensor *i = i64v(2, (int64_t[]){5, 7}), *j = i64v(2, (int64_t[]){1, 2});
    lt_tensor *ri = lt_add_scaled(i, j, -3); /* integers stay integers */
    CHECK(lt_dtype_of(ri) == LT_I64);
    EXPECT_VALUES(ri, 0, 2, 1);
    lt_tensor *f2 = f64v(2, (double[]){1, 2});
    CHECK(!lt_add_scaled_(i, f2, 1)); /* float into an integer tensor */
    lt_free(f2);
    CHECK_ERR(LT_ERR_DTYPE);
    lt_free(r);
    lt_free(ri);
    lt_free(a);
    lt_free(b);
    lt_free(i);
    lt_free(j);
}

TEST(integral_scalars_keep_integer_dtypes) {
    /* beyond 2^53: computed in int64, not through a double */
    lt_tensor *a = i64v(3, (int64_t[]){(1LL << 53) + 1, -3, 4}), *a2 = i64v(2, (int64_t[]){-3, 4});
    lt_tensor *r = lt_add_scalar_int(a, 2), *m = lt_mul_scalar_int(a2, -2), *p = lt_pow_scalar_int(a2, 3),
              *c = lt_clamp_int(a2, -1, INFINITY);
    CHECK(lt_dtype_of(r) == LT_I64 && lt_dtype_of(m) == LT_I64 && lt_dtype_of(p) == LT_I64 && lt_dtype_of(c) == LT_I64);
    int64_t got[3];
    CHECK(lt_to_host(r, got, sizeof got) == 0);
    CHECK(got[0] == (1LL << 53) + 3 && got[1] == -1 && got[2] == 6);
    EXPECT_VALUES(m, 0, 6, -8);
    EXPECT_VALUES(p, 0, -27, 64);
    EXPECT_VALUES(c, 0, -1, 4);
    lt_tensor *b = lt_from_data((bool[]){true, false}, LT_BOOL, 1, (int64_t[]){2});
    lt_tensor *rb = lt_add_scalar_int(b, 1); /* bool + int: int64 */
    CHECK(lt_dtype_of(rb) == LT_I64);
    EXPECT_VALUES(rb, 0, 2, 1);
    lt_tensor *i32 = lt_to_dtype(a, LT_I32), *r32 = lt_mul_scalar_int(i32, 3);
    CHECK(lt_dtype_of(r32) == LT_I32);
    lt_tensor *f = f64v(2, (double[]){1.5, 2}), *rf = lt_add_scalar_int(f, 1); /* floats as lt_add_scalar */
    CHECK(lt_dtype_of(rf) == LT_F64);
    EXPECT_VALUES(rf, 0, 2.5, 3);
    CHECK(!lt_pow_scalar_int(a, -1));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_clamp_int(a, 0.5, 3));
    CHECK_ERR(LT_ERR_ARG);
    lt_tensor *all[] = {a, a2, r, m, p, c, b, rb, i32, r32, f, rf};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(scalar_comparisons) {
    lt_tensor *a = i64v(3, (int64_t[]){16777217, 2, 3}); /* 2^24 + 1: exact, not through float32 */
    lt_tensor *e = lt_eq_scalar(a, 16777216), *l = lt_lt_scalar(a, 2.5), *g = lt_ge_scalar(a, 3);
    CHECK(lt_dtype_of(e) == LT_BOOL);
    EXPECT_VALUES(e, 0, 0, 0, 0);
    EXPECT_VALUES(l, 0, 0, 1, 0);
    EXPECT_VALUES(g, 0, 1, 0, 1);
    /* a float32 tensor compares with the scalar rounded to float32, as torch */
    float v = 0.1f;
    lt_tensor *x = lt_from_data(&v, LT_F32, 1, (int64_t[]){1});
    lt_tensor *x1 = lt_eq_scalar(x, 0.1), *x2 = lt_ne_scalar(x, 0.1), *x3 = lt_le_scalar(x, 0.1),
              *x4 = lt_gt_scalar(x, 0.1);
    EXPECT_VALUES(x1, 0, 1);
    EXPECT_VALUES(x2, 0, 0);
    EXPECT_VALUES(x3, 0, 1);
    EXPECT_VALUES(x4, 0, 0);
    lt_tensor *all[] = {a, e, l, g, x, x1, x2, x3, x4};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(masked_fill_and_sign) {
    lt_tensor *a = f64v(4, (double[]){-2, 0, NAN, 5});
    lt_tensor *m = lt_from_data((bool[]){true, false, false, true}, LT_BOOL, 1, (int64_t[]){4});
    lt_tensor *r = lt_masked_fill(a, m, 7), *s = lt_sign(a);
    EXPECT_VALUES(r, 0, 7, 0, NAN, 7);
    EXPECT_VALUES(s, 0, -1, 0, 0, 1); /* torch.sign(nan) is 0 */
    CHECK(!lt_masked_fill(a, a, 1));
    CHECK_ERR(LT_ERR_DTYPE);
    lt_tensor *i = i64v(2, (int64_t[]){-4, 9}), *si = lt_sign(i);
    CHECK(lt_dtype_of(si) == LT_I64);
    EXPECT_VALUES(si, 0, -1, 1);
    lt_tensor *all[] = {a, m, r, s, i, si};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(activations_and_backward_ops) {
    lt_tensor *x = f64v(6, (double[]){-4, -3, -1, 0, 3, 4}), *g = f64v(6, (double[]){1, 1, 1, 1, 1, 2});
    lt_tensor *hs = lt_hardswish(x), *hsg = lt_hardsigmoid(x), *si = lt_silu(x);
    EXPECT_VALUES(hs, 1e-15, 0, 0, -1.0 / 3, 0, 3, 4);
    EXPECT_VALUES(hsg, 1e-15, 0, 0, 1.0 / 3, 0.5, 1, 1);
    EXPECT_VALUES(si, 1e-15, -4 / (1 + exp(4)), -3 / (1 + exp(3)), -1 / (1 + exp(1)), 0, 3 / (1 + exp(-3)),
                  4 / (1 + exp(-4)));
    /* torch's boundaries: hardswish' is 0 below -3, x/3 + 1/2 on [-3, 3], 1 above;
     * hardsigmoid' is 1/6 (as a float) on (-3, 3) only */
    lt_tensor *dhs = lt_hardswish_backward(g, x), *dhsg = lt_hardsigmoid_backward(g, x);
    EXPECT_VALUES(dhs, 1e-15, 0, -0.5, 1.0 / 6, 0.5, 1.5, 2);
    EXPECT_VALUES(dhsg, 0, 0, 0, (double)(1.0f / 6), (double)(1.0f / 6), 0, 0); /* torch's float constant */
    lt_tensor *th = lt_threshold_backward(g, x, 0), *ht = lt_hardtanh_backward(g, x, -3, 3);
    EXPECT_VALUES(th, 0, 0, 0, 0, 0, 1, 2);
    EXPECT_VALUES(ht, 0, 0, 0, 1, 1, 0, 0);
    lt_tensor *sb = lt_sigmoid_backward(g, x), *tb = lt_tanh_backward(g, x);
    EXPECT_VALUES(sb, 0, -20, -12, -2, 0, -6, -24);
    EXPECT_VALUES(tb, 0, -15, -8, 0, 1, -8, -30);
    lt_tensor *sd = lt_silu_backward(g, x);
    double *sdv = h_read(sd), s3 = 1 / (1 + exp(-3.0));
    CHECK(fabs(sdv[4] - s3 * (1 + 3 * (1 - s3))) < 1e-15);
    free(sdv);
    lt_tensor *i = i64v(2, (int64_t[]){1, 2});
    CHECK(!lt_silu(i));
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_hardswish(i));
    CHECK_ERR(LT_ERR_DTYPE);
    lt_tensor *ti = lt_threshold_backward(i, i, 1); /* a selection: integers too */
    CHECK(lt_dtype_of(ti) == LT_I64);
    EXPECT_VALUES(ti, 0, 0, 2);
    lt_tensor *all[] = {x, g, hs, hsg, si, dhs, dhsg, th, ht, sb, tb, sd, i, ti};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(division_rounding_modes) {
    /* torch.div(a, b, rounding_mode='trunc' / 'floor') */
    lt_tensor *a = f64v(6, (double[]){7, -7, 7, -7, 1, -0.0}), *b = f64v(6, (double[]){2, 2, -2, -2, 0, 3});
    lt_tensor *t = lt_div_trunc(a, b), *f = lt_div_floor(a, b);
    EXPECT_VALUES(t, 0, 3, -3, -3, 3, INFINITY, -0.0);
    EXPECT_VALUES(f, 0, 3, -4, -4, 3, INFINITY, -0.0);
    double *fv = h_read(f);
    CHECK(signbit(fv[5])); /* -0 / 3 floors to -0, as torch */
    free(fv);
    lt_tensor *i = i64v(4, (int64_t[]){7, -7, 7, 5}), *j = i64v(4, (int64_t[]){2, 2, -2, 0});
    lt_tensor *it = lt_div_trunc(i, j), *ifl = lt_div_floor(i, j);
    CHECK(lt_dtype_of(it) == LT_I64 && lt_dtype_of(ifl) == LT_I64);
    EXPECT_VALUES(it, 0, 3, -3, -3, 0);
    EXPECT_VALUES(ifl, 0, 3, -4, -4, 0); /* a zero divisor gives 0 (torch raises) */
    lt_tensor *all[] = {a, b, t, f, i, j, it, ifl};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(lerp_tensor_weight) {
    /* torch.lerp(a, b, w) with a tensor w (broadcast), and its dtype rule */
    lt_tensor *a = f64v(4, (double[]){1, 2, 3, 4}), *b = f64v(4, (double[]){11, -2, 3, 0});
    lt_tensor *w = f64v(4, (double[]){0.25, 0.75, 2, -0.5}), *w0 = lt_full(0.5, LT_F64, 0, NULL);
    lt_tensor *r = lt_lerp_tensor(a, b, w), *r0 = lt_lerp_tensor(a, b, w0);
    EXPECT_VALUES(r, 1e-15, 3.5, -1, 3, 6);
    EXPECT_VALUES(r0, 1e-15, 6, 0, 3, 2);
    CHECK(lt_lerp_tensor_(a, b, w) == a);
    EXPECT_VALUES(a, 1e-15, 3.5, -1, 3, 6);
    lt_tensor *f = lt_full(0.5, LT_F32, 0, NULL), *i = i64v(2, (int64_t[]){1, 2});
    CHECK(!lt_lerp_tensor(a, b, f)); /* torch: expected dtype double for `weight` */
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_lerp_tensor(i, i, i));
    CHECK_ERR(LT_ERR_DTYPE);
    lt_tensor *all[] = {a, b, w, w0, r, r0, f, i};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(bitwise_ops) {
    lt_tensor *a = i64v(4, (int64_t[]){12, -1, 5, 0}), *b = i64v(4, (int64_t[]){10, 7, -6, 3});
    lt_tensor *x = lt_bitwise_and(a, b), *o = lt_bitwise_or(a, b), *e = lt_bitwise_xor(a, b), *n = lt_bitwise_not(a);
    CHECK(lt_dtype_of(x) == LT_I64 && lt_dtype_of(n) == LT_I64);
    EXPECT_VALUES(x, 0, 8, 7, 0, 0);
    EXPECT_VALUES(o, 0, 14, -1, -1, 3);
    EXPECT_VALUES(e, 0, 6, -8, -1, 3);
    EXPECT_VALUES(n, 0, -13, 0, -6, -1);
    uint8_t uv[3] = {5, 255, 0}, bv[3] = {1, 0, 1}, cv[3] = {1, 1, 0};
    lt_tensor *u = lt_from_data(uv, LT_U8, 1, (int64_t[]){3}), *un = lt_bitwise_not(u);
    CHECK(lt_dtype_of(un) == LT_U8);
    EXPECT_VALUES(un, 0, 250, 0, 255);
    lt_tensor *p = lt_from_data(bv, LT_BOOL, 1, (int64_t[]){3}), *q = lt_from_data(cv, LT_BOOL, 1, (int64_t[]){3});
    lt_tensor *pn = lt_bitwise_not(p), *px = lt_bitwise_xor(p, q), *pu = lt_bitwise_or(p, u);
    CHECK(lt_dtype_of(pn) == LT_BOOL && lt_dtype_of(px) == LT_BOOL && lt_dtype_of(pu) == LT_U8);
    EXPECT_VALUES(pn, 0, 0, 1, 0); /* ~ of a bool is logical not */
    EXPECT_VALUES(px, 0, 0, 1, 1);
    EXPECT_VALUES(pu, 0, 5, 255, 1);
    CHECK(lt_bitwise_and_(a, b) == a);
    EXPECT_VALUES(a, 0, 8, 7, 0, 0);
    lt_tensor *f = f64v(1, (double[]){1});
    CHECK(!lt_bitwise_and(a, f)); /* torch: "bitwise_and_cpu" not implemented for 'Double' */
    CHECK_ERR(LT_ERR_DTYPE);
    CHECK(!lt_bitwise_not(f));
    CHECK_ERR(LT_ERR_DTYPE);
    lt_tensor *all[] = {a, b, x, o, e, n, u, un, p, q, pn, px, pu, f};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(var_std) {
    /* torch.var / torch.std with correction 1 (default), 0 and 2 */
    lt_tensor *x = lt_from_data((double[]){1, 2, 3, 4, 10, 20, 30, 40}, LT_F64, 2, (int64_t[]){2, 4});
    lt_tensor *v = lt_var(x, 1, (int[]){1}, 1, false), *v0 = lt_var(x, 1, (int[]){-1}, 0, true);
    lt_tensor *s = lt_std(x, 0, NULL, 2, false), *one = lt_var(x, 1, (int[]){0}, 2, false);
    EXPECT_SHAPE(v, 2);
    EXPECT_SHAPE(v0, 2, 1);
    EXPECT_VALUES(v, 1e-12, 5.0 / 3, 500.0 / 3);
    EXPECT_VALUES(v0, 1e-12, 1.25, 125);
    EXPECT_VALUES(s, 1e-12, sqrt(1517.5 / 6)); /* squares 1517.5 about the mean 13.75, dof 6 */
    EXPECT_VALUES(one, 0, INFINITY, INFINITY, INFINITY, INFINITY); /* dof max(0, 2 - 2): x / 0 */
    lt_tensor *i = i64v(2, (int64_t[]){1, 2});
    CHECK(!lt_var(i, 0, NULL, 1, false)); /* torch: std and var only support floating point */
    CHECK_ERR(LT_ERR_DTYPE);
    lt_tensor *all[] = {x, v, v0, s, one, i};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

TEST(cumsum) {
    lt_tensor *x = lt_from_data((double[]){1, 2, 3, 4, 5, 6}, LT_F64, 2, (int64_t[]){2, 3});
    lt_tensor *c1 = lt_cumsum(x, 1, false), *c0 = lt_cumsum(x, -2, false), *r = lt_cumsum(x, 1, true);
    EXPECT_VALUES(c1, 0, 1, 3, 6, 4, 9, 15);
    EXPECT_VALUES(c0, 0, 1, 2, 3, 5, 7, 9);
    EXPECT_VALUES(r, 0, 6, 5, 3, 15, 11, 6);
    uint8_t bv[4] = {1, 1, 0, 1};
    lt_tensor *b = lt_from_data(bv, LT_BOOL, 1, (int64_t[]){4}), *cb = lt_cumsum(b, 0, false);
    CHECK(lt_dtype_of(cb) == LT_I64); /* torch: integers and bool give int64 */
    EXPECT_VALUES(cb, 0, 1, 2, 2, 3);
    CHECK(!lt_cumsum(x, 2, false));
    CHECK_ERR(LT_ERR_ARG);
    lt_tensor *f = lt_flip(x, 2, (int[]){0, 1}), *f1 = lt_flip(x, 1, (int[]){-1});
    EXPECT_VALUES(f, 0, 6, 5, 4, 3, 2, 1);
    EXPECT_VALUES(f1, 0, 3, 2, 1, 6, 5, 4);
    CHECK(!lt_flip(x, 2, (int[]){1, -1}));
    CHECK_ERR(LT_ERR_ARG);
    lt_free(f), lt_free(f1);
    lt_tensor *all[] = {x, c1, c0, r, b, cb};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) lt_free(all[k]);
}

int main(void) {
    RUN(add_scaled);
    RUN(integral_scalars_keep_integer_dtypes);
    RUN(scalar_comparisons);
    RUN(masked_fill_and_sign);
    RUN(activations_and_backward_ops);
    RUN(division_rounding_modes);
    RUN(lerp_tensor_weight);
    RUN(bitwise_ops);
    RUN(var_std);
    RUN(cumsum);
    return h_report();
}
