/* Error cases: each asserts the code, that the message names the function
 * and the argument, and that the library is usable right afterwards. */
#include "harness.h"

/* Expects the last call to have failed with `code` and a message containing
 * every given word; clears the error, then proves a correct op succeeds. */
static void expect_err(const char *file, int line, int code, const char *w1, const char *w2) {
    int e = lt_error();
    const char *m = lt_error_message();
    if (e != code) h_fail(file, line, "expected error %d, got %d (%s)", code, e, m);
    if (w1 && !strstr(m, w1)) h_fail(file, line, "message '%s' does not name '%s'", m, w1);
    if (w2 && !strstr(m, w2)) h_fail(file, line, "message '%s' does not name '%s'", m, w2);
    lt_clear_error();
    /* usable afterwards */
    int64_t s[1] = {2};
    lt_tensor *a = lt_full(1.5, LT_F32, 1, s), *b = lt_add(a, a);
    double v[2] = {0, 0};
    float f[2];
    if (!b || lt_to_host(b, f, sizeof f) || f[0] != 3 || f[1] != 3 || lt_error())
        h_fail(file, line, "library not usable after the error: %s", lt_error_message());
    (void)v;
    lt_free(b);
    lt_free(a);
}
#define EXPECT_ERR(code, w1, w2) expect_err(__FILE__, __LINE__, (code), (w1), (w2))

static lt_tensor *f32(int nd, const int64_t *s) { return lt_ones(LT_F32, nd, s); }

TEST(shape_mismatch) {
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s4[1] = {4}, s3[1] = {3};
    lt_tensor *a = f32(2, s23), *b = f32(2, s32), *c = f32(1, s4), *d = f32(1, s3);
    CHECK(!lt_add(a, b));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_add", "'b'");
    CHECK(!lt_mul(a, c));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_mul", "[4]");
    CHECK(!lt_where(NULL, a, b));
    EXPECT_ERR(LT_ERR_NULL, "lt_where", "'cond'");
    CHECK(!lt_matmul(a, a));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_matmul", "'a'");
    lt_tensor *l[2] = {a, b};
    CHECK(!lt_cat(2, l, 1));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_cat", "tensors[1]");
    /* in-place: the result would need to grow the target */
    CHECK(!lt_add_(d, a));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_add_", "'a'");
    CHECK(!lt_copy_(d, c));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_copy_", "'src'");
    int64_t bad[2] = {4, 2};
    CHECK(!lt_view(a, 2, bad));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_view", "[4, 2]");
    CHECK(!lt_reshape(a, 2, bad));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_reshape", "shape");
    int64_t ex[2] = {2, 5};
    CHECK(!lt_expand(a, 2, ex));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_expand", "shape");
    /* a view that is not expressible on the base's strides */
    lt_tensor *t = lt_t(a);
    int64_t flat[1] = {6};
    CHECK(!lt_view(t, 1, flat));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_view", "lt_reshape");
    lt_tensor *r = lt_reshape(t, 1, flat); /* the copy path works */
    CHECK(r && lt_numel(r) == 6);
    lt_free(r);
    lt_free(t);
    /* writes through an expanded view */
    int64_t e2[2] = {3, 3};
    lt_tensor *one = lt_ones(LT_F32, 1, (int64_t[]){1}), *xp = lt_expand(one, 2, e2);
    CHECK(!lt_add_scalar_(xp, 1));
    EXPECT_ERR(LT_ERR_ARG, "lt_add_scalar_", "expanded");
    CHECK(lt_fill_(xp, 1) == xp); /* fill_ writes one value everywhere: PyTorch allows it */
    lt_free(xp);
    lt_free(one);
    lt_free(a);
    lt_free(b);
    lt_free(c);
    lt_free(d);
}

TEST(bad_axes) {
    int64_t s[2] = {2, 3};
    lt_tensor *a = f32(2, s);
    int ax[1] = {2}, dup[2] = {0, -2}, neg[1] = {-3};
    CHECK(!lt_sum(a, 1, ax, false));
    EXPECT_ERR(LT_ERR_ARG, "lt_sum", "axes[0]");
    CHECK(!lt_mean(a, 1, neg, false));
    EXPECT_ERR(LT_ERR_ARG, "lt_mean", "axes[0]");
    CHECK(!lt_max(a, 2, dup, false));
    EXPECT_ERR(LT_ERR_ARG, "lt_max", "axes");
    CHECK(!lt_min(a, -1, NULL, false));
    EXPECT_ERR(LT_ERR_ARG, "lt_min", "naxes");
    CHECK(!lt_argmax(a, 2, false));
    EXPECT_ERR(LT_ERR_ARG, "lt_argmax", "'dim'");
    CHECK(!lt_softmax(a, -3));
    EXPECT_ERR(LT_ERR_ARG, "lt_softmax", "'dim'");
    CHECK(!lt_log_softmax(a, 5));
    EXPECT_ERR(LT_ERR_ARG, "lt_log_softmax", "'dim'");
    CHECK(!lt_transpose(a, 0, 2));
    EXPECT_ERR(LT_ERR_ARG, "lt_transpose", "dim1");
    CHECK(!lt_select(a, 0, 2));
    EXPECT_ERR(LT_ERR_ARG, "lt_select", "'index'");
    CHECK(!lt_select(a, 1, -4));
    EXPECT_ERR(LT_ERR_ARG, "lt_select", "'index'");
    CHECK(!lt_slice(a, 3, 0, 1, 1));
    EXPECT_ERR(LT_ERR_ARG, "lt_slice", "'dim'");
    CHECK(!lt_slice(a, 0, 0, 1, 0));
    EXPECT_ERR(LT_ERR_ARG, "lt_slice", "'step'");
    CHECK(!lt_narrow(a, 1, 2, 2));
    EXPECT_ERR(LT_ERR_ARG, "lt_narrow", "length");
    int perm[2] = {0, 0};
    CHECK(!lt_permute(a, 2, perm));
    EXPECT_ERR(LT_ERR_ARG, "lt_permute", "dims[1]");
    CHECK(!lt_unsqueeze(a, 3));
    EXPECT_ERR(LT_ERR_ARG, "lt_unsqueeze", "'dim'");
    CHECK(!lt_squeeze(a, -3));
    EXPECT_ERR(LT_ERR_ARG, "lt_squeeze", "'dim'");
    lt_tensor *l[1] = {a};
    CHECK(!lt_cat(1, l, 2));
    EXPECT_ERR(LT_ERR_ARG, "lt_cat", "'dim'");
    CHECK(!lt_flatten(a, 1, 0));
    EXPECT_ERR(LT_ERR_ARG, "lt_flatten", "start_dim");
    /* reductions with no identity over an empty dim */
    int64_t z[2] = {0, 3};
    lt_tensor *e = f32(2, z);
    int ax0[1] = {0};
    CHECK(!lt_max(e, 1, ax0, false));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_max", "[0, 3]");
    CHECK(!lt_argmin(e, 0, false));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_argmin", "[0, 3]");
    lt_free(e);
    lt_free(a);
}

TEST(bad_sizes) {
    int64_t neg[2] = {2, -1}, huge[3] = {1ll << 40, 1ll << 40, 4}, big2[2] = {INT64_MAX, 2};
    CHECK(!lt_zeros(LT_F32, 2, neg));
    EXPECT_ERR(LT_ERR_ARG, "lt_zeros", "'shape'");
    CHECK(!lt_ones(LT_I32, 3, huge));
    EXPECT_ERR(LT_ERR_OVERFLOW, "lt_ones", "'shape'");
    CHECK(!lt_full(1, LT_F64, 2, big2));
    EXPECT_ERR(LT_ERR_OVERFLOW, "lt_full", "'shape'");
    CHECK(!lt_randn(LT_F32, 2, neg));
    EXPECT_ERR(LT_ERR_ARG, "lt_randn", "'shape'");
    CHECK(!lt_rand(LT_F32, 3, huge));
    EXPECT_ERR(LT_ERR_OVERFLOW, "lt_rand", "'shape'");
    float d[4] = {0};
    CHECK(!lt_from_data(d, LT_F32, 2, neg));
    EXPECT_ERR(LT_ERR_ARG, "lt_from_data", "'shape'");
    CHECK(!lt_from_data(d, LT_F32, 3, huge));
    EXPECT_ERR(LT_ERR_OVERFLOW, "lt_from_data", "'shape'");
    CHECK(!lt_zeros(LT_F32, LT_MAX_DIMS + 1, huge));
    EXPECT_ERR(LT_ERR_ARG, "lt_zeros", "ndim");
    CHECK(!lt_zeros(LT_F32, -1, NULL));
    EXPECT_ERR(LT_ERR_ARG, "lt_zeros", "ndim");
    CHECK(!lt_zeros((lt_dtype)17, 1, (int64_t[]){2}));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_zeros", "'dtype'");
    CHECK(!lt_arange(0, 10, 0, LT_F32));
    EXPECT_ERR(LT_ERR_ARG, "lt_arange", "step");
    CHECK(!lt_arange(0, 10, -1, LT_F32));
    EXPECT_ERR(LT_ERR_ARG, "lt_arange", "step");
    CHECK(!lt_arange(0, INFINITY, 1, LT_F32));
    EXPECT_ERR(LT_ERR_ARG, "lt_arange", "end");
    CHECK(!lt_arange(0, 1e300, 1e-300, LT_F64));
    EXPECT_ERR(LT_ERR_OVERFLOW, "lt_arange", "elements");
    int64_t s[2] = {2, 3};
    lt_tensor *a = f32(2, s);
    int64_t vneg[2] = {-2, 3}, two_inf[2] = {-1, -1}, ovf[3] = {1ll << 62, 1ll << 62, 0};
    CHECK(!lt_reshape(a, 2, vneg));
    EXPECT_ERR(LT_ERR_ARG, "lt_reshape", "-2");
    CHECK(!lt_view(a, 2, two_inf));
    EXPECT_ERR(LT_ERR_ARG, "lt_view", "-1");
    CHECK(!lt_reshape(a, 3, ovf));
    EXPECT_ERR(LT_ERR_OVERFLOW, "lt_reshape", "overflows");
    int64_t eneg[3] = {-1, 2, 3};
    CHECK(!lt_expand(a, 3, eneg));
    EXPECT_ERR(LT_ERR_ARG, "lt_expand", "-1");
    int64_t ash[1] = {4}, ast[1] = {2};
    CHECK(!lt_as_strided(a, 1, ash, ast, 0)); /* reaches element 6 of 6 */
    EXPECT_ERR(LT_ERR_ARG, "lt_as_strided", "storage");
    CHECK(!lt_as_strided(a, 1, ash, ast, -1));
    EXPECT_ERR(LT_ERR_ARG, "lt_as_strided", "'storage_offset'");
    lt_free(a);
}

/* A NULL operand returns NULL and keeps the first error. */
TEST(null_inputs_propagate) {
    int64_t s[1] = {3};
    lt_tensor *b = f32(1, s);
    lt_tensor *x = lt_add(NULL, b);
    CHECK(!x && lt_error() == LT_ERR_NULL);
    char first[512];
    snprintf(first, sizeof first, "%s", lt_error_message());
    CHECK(strstr(first, "lt_add") && strstr(first, "'a'"));
    lt_tensor *y = lt_mul(x, b);
    lt_tensor *z = lt_exp(y);
    lt_tensor *w = lt_sum(z, 0, NULL, false);
    lt_tensor *v = lt_view(w, 1, s);
    CHECK(!y && !z && !w && !v);
    CHECK(lt_error() == LT_ERR_NULL && !strcmp(lt_error_message(), first));
    /* an error of another kind does not overwrite it either */
    int64_t s2[1] = {2};
    lt_tensor *c = f32(1, s2);
    CHECK(!lt_add(b, c));
    CHECK(lt_error() == LT_ERR_NULL && !strcmp(lt_error_message(), first));
    EXPECT_ERR(LT_ERR_NULL, "lt_add", "'a'");
    /* each entry point names its NULL argument */
    CHECK(!lt_sub(b, NULL));
    EXPECT_ERR(LT_ERR_NULL, "lt_sub", "'b'");
    CHECK(!lt_addcmul(b, b, NULL, 1));
    EXPECT_ERR(LT_ERR_NULL, "lt_addcmul", "'t2'");
    CHECK(!lt_lerp_(NULL, b, 0.5));
    EXPECT_ERR(LT_ERR_NULL, "lt_lerp_", "'a'");
    CHECK(!lt_copy_(b, NULL));
    EXPECT_ERR(LT_ERR_NULL, "lt_copy_", "'src'");
    CHECK(!lt_matmul(NULL, b));
    EXPECT_ERR(LT_ERR_NULL, "lt_matmul", "'a'");
    CHECK(!lt_softmax(NULL, 0));
    EXPECT_ERR(LT_ERR_NULL, "lt_softmax", "'a'");
    CHECK(!lt_to_dtype(NULL, LT_F64));
    EXPECT_ERR(LT_ERR_NULL, "lt_to_dtype", "'a'");
    CHECK(!lt_slice(NULL, 0, 0, 1, 1));
    EXPECT_ERR(LT_ERR_NULL, "lt_slice", "'a'");
    lt_tensor *l[2] = {b, NULL};
    CHECK(!lt_cat(2, l, 0));
    EXPECT_ERR(LT_ERR_NULL, "lt_cat", "tensors");
    CHECK(!lt_cat(0, l, 0));
    EXPECT_ERR(LT_ERR_ARG, "lt_cat", "'n'");
    CHECK(!lt_from_data(NULL, LT_F32, 1, s));
    EXPECT_ERR(LT_ERR_NULL, "lt_from_data", "'data'");
    CHECK(!lt_zeros(LT_F32, 1, NULL));
    EXPECT_ERR(LT_ERR_NULL, "lt_zeros", "'shape'");
    CHECK(lt_to_host(NULL, first, 4) == -1);
    EXPECT_ERR(LT_ERR_NULL, "lt_to_host", "'t'");
    float f[3];
    CHECK(lt_to_host(b, NULL, sizeof f) == -1);
    EXPECT_ERR(LT_ERR_NULL, "lt_to_host", "'dst'");
    CHECK(isnan(lt_item(NULL)));
    EXPECT_ERR(LT_ERR_NULL, "lt_item", "'t'");
    lt_free(NULL); /* a no-op */
    CHECK_NO_ERR();
    lt_free(b);
    lt_free(c);
}

TEST(wrong_byte_count) {
    int64_t s[2] = {2, 3};
    lt_tensor *a = f32(2, s);
    float buf[7];
    CHECK(lt_to_host(a, buf, sizeof(float) * 5) == -1);
    EXPECT_ERR(LT_ERR_ARG, "lt_to_host", "'nbytes'");
    CHECK(lt_to_host(a, buf, sizeof buf) == -1);
    EXPECT_ERR(LT_ERR_ARG, "lt_to_host", "24");
    double d6[6];
    CHECK(lt_to_host(a, d6, sizeof d6) == -1); /* the f64 size of an f32 tensor */
    EXPECT_ERR(LT_ERR_ARG, "lt_to_host", "'nbytes'");
    CHECK(isnan(lt_item(a)));
    EXPECT_ERR(LT_ERR_SHAPE, "lt_item", "6");
    CHECK(lt_to_host(a, buf, sizeof(float) * 6) == 0 && buf[5] == 1);
    lt_free(a);
}

TEST(dtype_errors) {
    int64_t s[1] = {3};
    lt_tensor *fi = lt_ones(LT_I32, 1, s), *ff = lt_ones(LT_F32, 1, s), *fd = lt_ones(LT_F64, 1, s),
              *fb = lt_ones(LT_BOOL, 1, s), *fl = lt_ones(LT_I64, 1, s);
    CHECK(!lt_lerp(fi, fi, 0.5));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_lerp", "'a'");
    CHECK(!lt_lerp(ff, fd, 0.5)); /* PyTorch: lerp needs one dtype */
    EXPECT_ERR(LT_ERR_DTYPE, "lt_lerp", "'b'");
    CHECK(!lt_lerp_(ff, fi, 0.5));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_lerp_", "'b'");
    CHECK(!lt_where(ff, ff, ff));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_where", "'cond'");
    CHECK(!lt_where(fi, ff, ff));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_where", "int32");
    CHECK(!lt_mean(fi, 0, NULL, false));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_mean", "'a'");
    CHECK(!lt_mean(fb, 0, NULL, false));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_mean", "bool");
    CHECK(!lt_add_(fi, ff));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_add_", "'a'");
    CHECK(!lt_mul_(fl, fd));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_mul_", "int64");
    CHECK(!lt_div_(fi, fi)); /* true division gives float32 */
    EXPECT_ERR(LT_ERR_DTYPE, "lt_div_", "float32");
    CHECK(!lt_add_(fb, fi)); /* int into bool */
    EXPECT_ERR(LT_ERR_DTYPE, "lt_add_", "bool");
    CHECK(!lt_mul_scalar_(fi, 2));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_mul_scalar_", "'a'");
    CHECK(!lt_sqrt_(fl));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_sqrt_", "'a'");
    CHECK(!lt_sub(fb, fb));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_sub", "'a'");
    CHECK(!lt_sub_(fb, fb));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_sub_", "bool");
    CHECK(!lt_neg(fb));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_neg", "'a'");
    CHECK(!lt_addcdiv(ff, fi, fl, 1));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_addcdiv", "'t1'");
    CHECK(!lt_softmax(fi, 0));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_softmax", "'a'");
    CHECK(!lt_log_softmax(fb, 0));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_log_softmax", "'a'");
    CHECK(!lt_argmax(fb, 0, false));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_argmax", "'a'");
    CHECK(!lt_matmul(ff, fd));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_matmul", "'b'");
    CHECK(!lt_matmul(fb, fb));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_matmul", "'a'");
    CHECK(!lt_randn(LT_I32, 1, s));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_randn", "'dtype'");
    CHECK(!lt_to_dtype(ff, (lt_dtype)9));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_to_dtype", "'dtype'");
    CHECK(!lt_from_data(s, (lt_dtype)-1, 1, s));
    EXPECT_ERR(LT_ERR_DTYPE, "lt_from_data", "'dtype'");
    /* the failed in-place ops left their targets alone */
    EXPECT_VALUES(fi, 0, 1, 1, 1);
    EXPECT_VALUES(fb, 0, 1, 1, 1);
    lt_free(fi);
    lt_free(ff);
    lt_free(fd);
    lt_free(fb);
    lt_free(fl);
}

/* A freed handle is reported, not dereferenced into garbage. The check is
 * made right after the free, before the handle's memory can be reused. */
TEST(freed_handle) {
    int64_t s[1] = {3};
    lt_tensor *b = f32(1, s);
    lt_tensor *a = f32(1, s);
    lt_free(a);
    CHECK(!lt_add(a, b));
    EXPECT_ERR(LT_ERR_STATE, "lt_add", "'a'");
    lt_tensor *c = f32(1, s);
    lt_free(c);
    CHECK(!lt_sum(c, 0, NULL, false));
    EXPECT_ERR(LT_ERR_STATE, "lt_sum", "'a'");
    lt_tensor *d = f32(1, s);
    lt_free(d);
    float f[3];
    CHECK(lt_to_host(d, f, sizeof f) == -1);
    EXPECT_ERR(LT_ERR_STATE, "lt_to_host", "'t'");
    lt_tensor *e = f32(1, s);
    lt_free(e);
    lt_free(e); /* double free */
    EXPECT_ERR(LT_ERR_STATE, "lt_free", "'t'");
    lt_tensor *g = f32(1, s);
    lt_free(g);
    CHECK(lt_ndim(g) == -1);
    EXPECT_ERR(LT_ERR_STATE, "lt_ndim", "'t'");
    /* a view outlives its base handle: the storage stays alive */
    lt_tensor *base = f32(1, s), *v = lt_slice(base, 0, 1, 3, 1);
    lt_free(base);
    EXPECT_VALUES(v, 0, 1, 1);
    lt_free(v);
    lt_free(b);
}

int main(void) {
    RUN(shape_mismatch);
    RUN(bad_axes);
    RUN(bad_sizes);
    RUN(null_inputs_propagate);
    RUN(wrong_byte_count);
    RUN(dtype_errors);
    RUN(freed_handle);
    return h_report();
}
