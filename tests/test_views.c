/* Hand-written semantics of every view op (DESIGN 5): shapes, values,
 * aliasing in both directions (a write through the view is seen by the base,
 * a write to the base is seen by the view), view-or-copy decisions, and each
 * error case with a message naming the function and the argument. The
 * random programs of test_func_fuzz.c complement these. */
#include "harness.h"

/* 0, 1, ..., n-1 as float64 of the given shape. */
static lt_tensor *iota(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)i;
    lt_tensor *t = h_f64(ndim, shape, v);
    free(v);
    return t;
}
static lt_tensor *iota2(int64_t a, int64_t b) {
    int64_t s[2] = {a, b};
    return iota(2, s);
}

/* Expects the last call to have failed with `code` and a message that names
 * the function and the argument; clears the error. */
#define CHECK_ERR_MSG(r, code, fn, arg)                                                                      \
    do {                                                                                                   \
        lt_tensor *r_ = (r); /* the call runs first, then its message is read */                          \
        const char *m_ = lt_error_message();                                                               \
        CHECK_MSG(r_ == NULL, "%s: expected NULL", fn);                                                    \
        CHECK_MSG(lt_error() == (code), "%s: expected error %d, got %d (%s)", fn, (code), lt_error(), m_); \
        CHECK_MSG(strstr(m_, fn) != NULL, "message does not name %s: %s", fn, m_);                         \
        CHECK_MSG(strstr(m_, arg) != NULL, "message does not name '%s': %s", arg, m_);                     \
        lt_clear_error();                                                                                  \
    } while (0)

TEST(view_values_and_aliasing) {
    int64_t s3[3] = {2, 3, 4}, s2[2] = {4, -1};
    lt_tensor *a = iota(3, s3);
    lt_tensor *v = lt_view(a, 2, s2);
    EXPECT_SHAPE(v, 4, 6);
    CHECK(lt_is_view(v));
    lt_tensor *row = lt_select(v, 0, 1);
    EXPECT_VALUES(row, 0, 6, 7, 8, 9, 10, 11);
    lt_fill_(row, -1); /* view -> base */
    EXPECT_VALUES(a, 0, 0, 1, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23);
    lt_mul_scalar_(a, 2); /* base -> view, through a view made before the write */
    EXPECT_VALUES(row, 0, -2, -2, -2, -2, -2, -2);
    lt_free(row);
    lt_free(v);
    lt_free(a);
}

TEST(view_errors) {
    lt_tensor *a = iota2(2, 3);
    lt_tensor *t = lt_t(a);
    int64_t flat[1] = {6}, bad[2] = {4, 2}, two[2] = {-1, -1};
    lt_tensor *r = lt_view(t, 1, flat); /* transposed: not expressible as a view */
    CHECK_ERR_MSG(r, LT_ERR_SHAPE, "lt_view", "stride");
    r = lt_view(t, 1, flat);
    CHECK_MSG(r == NULL && strstr(lt_error_message(), "lt_reshape"), "lt_view's message should point to lt_reshape: %s",
              lt_error_message());
    lt_clear_error();
    r = lt_view(a, 2, bad);
    CHECK_ERR_MSG(r, LT_ERR_SHAPE, "lt_view", "shape");
    r = lt_view(a, 2, two);
    CHECK_ERR_MSG(r, LT_ERR_ARG, "lt_view", "-1");
    lt_free(t);
    lt_free(a);
}

TEST(reshape_view_or_copy) {
    lt_tensor *a = iota2(2, 3);
    int64_t flat[1] = {-1};
    lt_tensor *v = lt_reshape(a, 1, flat); /* contiguous: a view */
    CHECK(lt_is_view(v));
    lt_add_scalar_(v, 100);
    EXPECT_VALUES(a, 0, 100, 101, 102, 103, 104, 105);
    lt_tensor *t = lt_t(a);
    lt_tensor *c = lt_reshape(t, 1, flat); /* transposed: a copy, as torch.reshape */
    CHECK(!lt_is_view(c));
    EXPECT_VALUES(c, 0, 100, 103, 101, 104, 102, 105);
    lt_fill_(c, 0);
    EXPECT_VALUES(a, 0, 100, 101, 102, 103, 104, 105); /* the copy does not alias */
    lt_fill_(a, 1);
    EXPECT_VALUES(c, 0, 0, 0, 0, 0, 0, 0);
    int64_t bad[1] = {7};
    CHECK_ERR_MSG(lt_reshape(a, 1, bad), LT_ERR_SHAPE, "lt_reshape", "shape");
    lt_free(c);
    lt_free(t);
    lt_free(v);
    lt_free(a);
}

TEST(flatten) {
    int64_t s3[3] = {2, 3, 2};
    lt_tensor *a = iota(3, s3);
    lt_tensor *f = lt_flatten(a, 1, -1);
    EXPECT_SHAPE(f, 2, 6);
    CHECK(lt_is_view(f));
    lt_tensor *p = lt_transpose(a, 0, 2);
    lt_tensor *g = lt_flatten(p, 0, 1); /* (2,3,2)^T(0,2) = (2,3,2) strides (1,2,6): dims 0,1 merge? no */
    EXPECT_SHAPE(g, 6, 2);
    CHECK(!lt_is_view(g));
    EXPECT_VALUES(g, 0, 0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11);
    lt_tensor *e = lt_flatten(a, 2, 1);
    CHECK_ERR_MSG(e, LT_ERR_ARG, "lt_flatten", "start_dim");
    e = lt_flatten(a, 0, 3);
    CHECK_ERR_MSG(e, LT_ERR_ARG, "lt_flatten", "end_dim");
    lt_free(g);
    lt_free(p);
    lt_free(f);
    lt_free(a);
}

TEST(transpose_t_permute) {
    lt_tensor *a = iota2(2, 3);
    lt_tensor *t = lt_transpose(a, -1, 0);
    EXPECT_SHAPE(t, 3, 2);
    EXPECT_VALUES(t, 0, 0, 3, 1, 4, 2, 5);
    lt_tensor *col = lt_select(t, 1, 1); /* = row 1 of a */
    lt_neg_(col);
    EXPECT_VALUES(a, 0, 0, 1, 2, -3, -4, -5);
    lt_tensor *tt = lt_t(a);
    EXPECT_VALUES(tt, 0, 0, -3, 1, -4, 2, -5);
    int64_t s3[3] = {2, 3, 4};
    lt_tensor *b = iota(3, s3);
    int perm[3] = {2, 0, -2};
    lt_tensor *p = lt_permute(b, 3, perm);
    EXPECT_SHAPE(p, 4, 2, 3);
    lt_tensor *p1 = lt_select(p, 0, 1); /* b[:, :, 1] */
    EXPECT_VALUES(p1, 0, 1, 5, 9, 13, 17, 21);
    lt_fill_(b, 7);
    EXPECT_VALUES(p1, 0, 7, 7, 7, 7, 7, 7);
    CHECK_ERR_MSG(lt_transpose(a, 0, 2), LT_ERR_ARG, "lt_transpose", "dim1");
    CHECK_ERR_MSG(lt_transpose(a, -3, 0), LT_ERR_ARG, "lt_transpose", "dim0");
    CHECK_ERR_MSG(lt_t(b), LT_ERR_SHAPE, "lt_t", "'a'");
    int rep[3] = {0, 1, -3};
    CHECK_ERR_MSG(lt_permute(b, 3, rep), LT_ERR_ARG, "lt_permute", "dims");
    int few[2] = {0, 1};
    CHECK_ERR_MSG(lt_permute(b, 2, few), LT_ERR_ARG, "lt_permute", "ndim");
    int oob[3] = {0, 1, 3};
    CHECK_ERR_MSG(lt_permute(b, 3, oob), LT_ERR_ARG, "lt_permute", "dims");
    lt_free(p1);
    lt_free(p);
    lt_free(b);
    lt_free(tt);
    lt_free(col);
    lt_free(t);
    lt_free(a);
}

TEST(slice_clamped_bounds_and_steps) {
    int64_t s1[1] = {6};
    lt_tensor *a = iota(1, s1);
    lt_tensor *all = lt_slice(a, 0, -100, 100, 1); /* bounds clamp, as Python slicing */
    EXPECT_VALUES(all, 0, 0, 1, 2, 3, 4, 5);
    lt_tensor *neg = lt_slice(a, -1, -4, -1, 1);
    EXPECT_VALUES(neg, 0, 2, 3, 4);
    lt_tensor *st = lt_slice(a, 0, 1, INT64_MAX, 2);
    EXPECT_VALUES(st, 0, 1, 3, 5);
    lt_tensor *empty = lt_slice(a, 0, 4, 2, 1);
    EXPECT_SHAPE(empty, 0);
    /* Overlapping slices see each other's writes. */
    lt_tensor *x = lt_slice(a, 0, 0, 4, 1), *y = lt_slice(a, 0, 2, 6, 1);
    lt_add_scalar_(x, 10);
    EXPECT_VALUES(y, 0, 12, 13, 4, 5);
    /* An input that partly overlaps the written-to window: refused, as PyTorch does. */
    CHECK_ERR_MSG(lt_mul_(y, x), LT_ERR_ARG, "lt_mul_", "'b'");
    EXPECT_VALUES(a, 0, 10, 11, 12, 13, 4, 5);
    CHECK_ERR_MSG(lt_slice(a, 0, 0, 2, 0), LT_ERR_ARG, "lt_slice", "step");
    CHECK_ERR_MSG(lt_slice(a, 1, 0, 2, 1), LT_ERR_ARG, "lt_slice", "dim");
    lt_free(x);
    lt_free(y);
    lt_free(empty);
    lt_free(st);
    lt_free(neg);
    lt_free(all);
    lt_free(a);
}

TEST(narrow_and_select) {
    lt_tensor *a = iota2(3, 4);
    lt_tensor *n = lt_narrow(a, 1, -3, 2);
    EXPECT_SHAPE(n, 3, 2);
    EXPECT_VALUES(n, 0, 1, 2, 5, 6, 9, 10);
    lt_tensor *s = lt_select(n, 0, -1); /* a select of a slice */
    EXPECT_VALUES(s, 0, 9, 10);
    lt_fill_(s, 0);
    EXPECT_VALUES(a, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 11);
    CHECK_ERR_MSG(lt_narrow(a, 0, 4, 0), LT_ERR_ARG, "lt_narrow", "start");
    CHECK_ERR_MSG(lt_narrow(a, 0, 2, 2), LT_ERR_ARG, "lt_narrow", "length");
    CHECK_ERR_MSG(lt_select(a, 0, 3), LT_ERR_ARG, "lt_select", "index");
    CHECK_ERR_MSG(lt_select(a, 1, -5), LT_ERR_ARG, "lt_select", "index");
    CHECK_ERR_MSG(lt_select(a, 2, 0), LT_ERR_ARG, "lt_select", "dim");
    lt_tensor *z = lt_select(s, 0, 0), *zz = z ? lt_select(z, 0, 0) : NULL;
    CHECK(z && lt_ndim(z) == 0);
    CHECK_ERR_MSG(zz, LT_ERR_SHAPE, "lt_select", "0-d");
    lt_free(z);
    lt_free(s);
    lt_free(n);
    lt_free(a);
}

TEST(expand_reads_and_write_errors) {
    int64_t s[2] = {3, 1};
    lt_tensor *a = iota(2, s);
    int64_t to[3] = {2, -1, 4};
    lt_tensor *e = lt_expand(a, 3, to);
    EXPECT_SHAPE(e, 2, 3, 4);
    EXPECT_VALUES(e, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2);
    lt_add_scalar_(a, 1); /* the expanded view follows its base */
    lt_tensor *plane = lt_select(e, 0, 1), *row = lt_select(plane, 0, 2);
    EXPECT_VALUES(row, 0, 3, 3, 3, 3);
    lt_free(row);
    lt_free(plane);
    /* Writes through a view with stride 0 are errors, as in PyTorch. */
    lt_tensor *one = lt_ones(LT_F64, 3, (int64_t[3]){2, 3, 4});
    CHECK_ERR_MSG(lt_add_(e, one), LT_ERR_ARG, "lt_add_", "'a'");
    CHECK_ERR_MSG(lt_copy_(e, one), LT_ERR_ARG, "lt_copy_", "'dst'");
    CHECK_ERR_MSG(lt_mul_scalar_(e, 2), LT_ERR_ARG, "lt_mul_scalar_", "'a'");
    EXPECT_VALUES(a, 0, 1, 2, 3); /* nothing was written */
    /* PyTorch's fill_ and zero_ check no overlap (every element gets one
     * value), and copy_ of a tensor onto itself checks nothing. */
    CHECK(lt_copy_(e, e) == e);
    lt_tensor *e2 = lt_expand(a, 3, to); /* the same elements through another handle: checked */
    CHECK_ERR_MSG(lt_copy_(e, e2), LT_ERR_ARG, "lt_copy_", "'dst'");
    lt_free(e2);
    EXPECT_VALUES(a, 0, 1, 2, 3);
    CHECK(lt_fill_(e, 7) == e);
    EXPECT_VALUES(a, 0, 7, 7, 7);
    CHECK(lt_zero_(e) == e);
    EXPECT_VALUES(e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    lt_add_scalar_(a, 1);
    /* Reading an expanded view as an operand is fine. */
    lt_tensor *sum = lt_add(e, one), *s0 = lt_select(sum, 0, 0), *s00 = lt_select(s0, 0, 0);
    EXPECT_VALUES(s00, 0, 2, 2, 2, 2);
    lt_free(s00);
    lt_free(s0);
    int64_t bad[2] = {3, 2}, lead[3] = {-1, 3, 1};
    lt_tensor *sq = iota2(2, 2);
    CHECK_ERR_MSG(lt_expand(sq, 2, bad), LT_ERR_SHAPE, "lt_expand", "size");
    lt_free(sq);
    CHECK_ERR_MSG(lt_expand(a, 3, lead), LT_ERR_ARG, "lt_expand", "size");
    CHECK_ERR_MSG(lt_expand(a, 1, bad), LT_ERR_ARG, "lt_expand", "ndim");
    lt_free(sum);
    lt_free(one);
    lt_free(e);
    lt_free(a);
}

TEST(unsqueeze_squeeze) {
    lt_tensor *a = iota2(2, 3);
    lt_tensor *u = lt_unsqueeze(a, -1);
    EXPECT_SHAPE(u, 2, 3, 1);
    lt_tensor *u0 = lt_unsqueeze(a, 0);
    EXPECT_SHAPE(u0, 1, 2, 3);
    lt_tensor *sq = lt_squeeze(u0, 0);
    EXPECT_SHAPE(sq, 2, 3);
    lt_tensor *noop = lt_squeeze(a, 1); /* size 3: unchanged, still an alias */
    EXPECT_SHAPE(noop, 2, 3);
    CHECK(lt_is_view(noop));
    lt_fill_(sq, 4);
    EXPECT_VALUES(u, 0, 4, 4, 4, 4, 4, 4);
    CHECK_ERR_MSG(lt_unsqueeze(a, 3), LT_ERR_ARG, "lt_unsqueeze", "dim");
    CHECK_ERR_MSG(lt_squeeze(a, -3), LT_ERR_ARG, "lt_squeeze", "dim");
    lt_free(noop);
    lt_free(sq);
    lt_free(u0);
    lt_free(u);
    lt_free(a);
}

TEST(diagonal) {
    lt_tensor *a = iota2(3, 4);
    lt_tensor *d = lt_diagonal(a, 0, 0, 1);
    EXPECT_VALUES(d, 0, 0, 5, 10);
    lt_tensor *d1 = lt_diagonal(a, 1, 0, 1);
    EXPECT_VALUES(d1, 0, 1, 6, 11);
    lt_tensor *dm = lt_diagonal(a, -1, -1, -2); /* dims swapped: walks columns */
    EXPECT_VALUES(dm, 0, 1, 6, 11);
    lt_tensor *far = lt_diagonal(a, 9, 0, 1);
    EXPECT_SHAPE(far, 0);
    lt_fill_(d, -1);
    EXPECT_VALUES(a, 0, -1, 1, 2, 3, 4, -1, 6, 7, 8, 9, -1, 11);
    CHECK_ERR_MSG(lt_diagonal(a, 0, 1, -1), LT_ERR_ARG, "lt_diagonal", "dim2");
    CHECK_ERR_MSG(lt_diagonal(a, 0, 0, 2), LT_ERR_ARG, "lt_diagonal", "dim2");
    lt_free(far);
    lt_free(dm);
    lt_free(d1);
    lt_free(d);
    lt_free(a);
}

TEST(as_strided) {
    lt_tensor *a = iota2(3, 4);
    lt_tensor *row = lt_select(a, 0, 1);
    /* relative to the storage, not to the view it is called on */
    lt_tensor *w = lt_as_strided(row, 2, (int64_t[2]){2, 2}, (int64_t[2]){4, 1}, 1);
    EXPECT_VALUES(w, 0, 1, 2, 5, 6);
    lt_add_scalar_(w, 100);
    EXPECT_VALUES(a, 0, 0, 101, 102, 3, 4, 105, 106, 7, 8, 9, 10, 11);
    /* Interleaved strides that never meet: writable, as in PyTorch. */
    lt_tensor *il = lt_as_strided(a, 2, (int64_t[2]){2, 3}, (int64_t[2]){3, 2}, 0);
    CHECK(il != NULL);
    lt_fill_(il, -5); /* offsets 0 2 4 3 5 7 */
    CHECK_NO_ERR();
    EXPECT_VALUES(a, 0, -5, 101, -5, -5, -5, -5, 106, -5, 8, 9, 10, 11);
    /* Strides that meet without a zero stride (PyTorch's TOO_HARD): written
     * as PyTorch does, the inputs read first and the last write in row-major
     * order winning where two elements meet (PyTorch's own values there
     * follow its loop order); reading the window back reads those writes. */
    lt_tensor *ov = lt_as_strided(a, 2, (int64_t[2]){2, 3}, (int64_t[2]){2, 1}, 0);
    CHECK(lt_fill_(ov, 0) == ov); /* offsets 0 1 2 2 3 4 */
    EXPECT_VALUES(a, 0, 0, 0, 0, 0, 0, -5, 106, -5, 8, 9, 10, 11);
    lt_tensor *src = iota2(2, 3);
    CHECK(lt_copy_(ov, src) == ov);
    lt_tensor *sum = lt_sum(ov, 0, NULL, false); /* in the same graph as the write */
    EXPECT_VALUES(sum, 0, 0 + 1 + 3 + 3 + 4 + 5);
    lt_free(sum);
    CHECK(lt_add_scalar_(ov, 10) == ov);
    EXPECT_VALUES(ov, 0, 10, 11, 13, 13, 14, 15);
    EXPECT_VALUES(a, 0, 10, 11, 13, 14, 15, -5, 106, -5, 8, 9, 10, 11);
    /* A zero stride on a dim of size > 1 (PyTorch's YES): only fill_ / zero_ */
    lt_tensor *z = lt_as_strided(a, 1, (int64_t[1]){3}, (int64_t[1]){0}, 5);
    CHECK_ERR_MSG(lt_add_scalar_(z, 1), LT_ERR_ARG, "lt_add_scalar_", "'a'");
    CHECK_ERR_MSG(lt_copy_(z, src), LT_ERR_ARG, "lt_copy_", "'dst'");
    CHECK(lt_fill_(z, 7) == z);
    EXPECT_VALUES(a, 0, 10, 11, 13, 14, 15, 7, 106, -5, 8, 9, 10, 11);
    lt_free(z);
    lt_free(src);
    CHECK_ERR_MSG(lt_as_strided(a, 1, (int64_t[1]){13}, (int64_t[1]){1}, 0), LT_ERR_ARG, "lt_as_strided", "size");
    CHECK_ERR_MSG(lt_as_strided(a, 1, (int64_t[1]){2}, (int64_t[1]){-1}, 2), LT_ERR_ARG, "lt_as_strided", "strides");
    CHECK_ERR_MSG(lt_as_strided(a, 1, (int64_t[1]){2}, (int64_t[1]){1}, -1), LT_ERR_ARG, "lt_as_strided", "storage_offset");
    lt_free(ov);
    lt_free(il);
    lt_free(w);
    lt_free(row);
    lt_free(a);
}

TEST(deep_chain_and_lifetimes) {
    int64_t s[2] = {6, 4};
    lt_tensor *a = iota(2, s);
    lt_tensor *sl = lt_slice(a, 0, 1, 5, 1);   /* rows 1..4 */
    lt_tensor *tr = lt_transpose(sl, 0, 1);    /* (4, 4) */
    lt_tensor *se = lt_select(tr, 0, 2);       /* column 2 of rows 1..4 */
    lt_tensor *nw = lt_narrow(se, 0, 1, 2);    /* rows 2, 3 */
    lt_free(a);  /* the base handle goes; the storage lives on in its views */
    lt_free(tr);
    lt_add_scalar_(nw, 1000);
    lt_mark_step();
    EXPECT_VALUES(se, 0, 6, 1010, 1014, 18);
    lt_tensor *back = lt_slice(sl, 0, 0, 1, 1); /* row 1 is untouched */
    EXPECT_VALUES(back, 0, 4, 5, 6, 7);
    lt_free(se); /* views freed while another alias lives */
    lt_free(sl);
    EXPECT_VALUES(nw, 0, 1010, 1014);
    lt_free(back);
    lt_free(nw);
}

/* Regressions found by test_func_fuzz. */
TEST(regress_broadcast_in_place_of_running_shape) {
    /* shape_broadcast wrote its output over its first input: [4] + [3, 3]
     * was accepted as [3, 3], and [1, 1] + [1, 2, 0] was refused. */
    lt_tensor *a = lt_zeros(LT_F64, 1, (int64_t[1]){4}), *b = lt_zeros(LT_F64, 2, (int64_t[2]){3, 3});
    CHECK_ERR_MSG(lt_add(a, b), LT_ERR_SHAPE, "lt_add", "'b'");
    lt_tensor *c = lt_ones(LT_F64, 2, (int64_t[2]){1, 1}), *d = lt_ones(LT_F64, 3, (int64_t[3]){1, 2, 0});
    lt_tensor *e = lt_add(c, d);
    CHECK(e != NULL);
    if (e) EXPECT_SHAPE(e, 1, 2, 0);
    lt_free(e);
    lt_free(a);
    lt_free(b);
    lt_free(c);
    lt_free(d);
}

TEST(regress_operand_freed_before_sync) {
    /* A DATA leaf borrowed the buffer of a tensor freed before the sync. */
    lt_tensor *a = iota2(2, 2);
    lt_tensor *b = iota2(2, 2);
    lt_add_(a, b);
    lt_free(b);
    lt_tensor *junk = iota2(2, 2); /* would reuse b's memory */
    lt_fill_(junk, 99);
    lt_mark_step();
    EXPECT_VALUES(a, 0, 0, 2, 4, 6);
    /* The same through a clone that shares its source's buffer. */
    lt_tensor *c = lt_clone(a);
    lt_tensor *d = lt_mul(c, a); /* reads the buffer through a's leaf */
    lt_free(c);
    lt_free(a);
    lt_tensor *junk2 = iota2(2, 2);
    EXPECT_VALUES(d, 0, 0, 4, 16, 36);
    lt_free(junk2);
    lt_free(junk);
    lt_free(d);
}

/* Issue 17 item 11: PyTorch's memory-overlap rules for in-place ops. An
 * input that partly overlaps the written-to tensor is refused (both dense
 * windows of one storage whose ranges meet, not the same range with the same
 * strides); the same window, disjoint windows and windows that are not dense
 * (PyTorch's "too hard") run; nothing is written by a refused call. */
#define CHECK_OVERLAP(r, fn, arg)                                                                        \
    do {                                                                                                 \
        lt_tensor *r2_ = (r);                                                                            \
        CHECK_MSG(strstr(lt_error_message(), "single memory location"), "%s: %s", fn, lt_error_message()); \
        CHECK_ERR_MSG(r2_, LT_ERR_ARG, fn, arg);                                                          \
    } while (0)

TEST(inplace_partial_overlap) {
    int64_t s6[1] = {6}, r16[2] = {1, 6}, s23[2] = {2, 3};
    lt_tensor *x = iota(1, s6);
    lt_tensor *tail = lt_slice(x, 0, 1, 6, 1), *head = lt_slice(x, 0, 0, 5, 1);
    CHECK_OVERLAP(lt_add_(tail, head), "lt_add_", "'b'");   /* x[1:].add_(x[:-1]) */
    CHECK_OVERLAP(lt_lerp_(head, tail, 0.5), "lt_lerp_", "'b'");
    lt_tensor *ones5 = lt_ones(LT_F64, 1, (int64_t[1]){5});
    CHECK_OVERLAP(lt_addcmul_(tail, ones5, head, 1), "lt_addcmul_", "'t2'");
    CHECK(lt_addcmul_(tail, ones5, ones5, 1) == tail); /* an input of another storage */
    lt_add_scalar_(tail, -1);
    EXPECT_VALUES(x, 0, 0, 1, 2, 3, 4, 5); /* nothing else was written */
    /* copy_: overlapping head and tail refused, disjoint ones copied */
    lt_tensor *h4 = lt_slice(x, 0, 0, 4, 1), *t4 = lt_slice(x, 0, 2, 6, 1);
    CHECK_OVERLAP(lt_copy_(h4, t4), "lt_copy_", "'src'");
    lt_tensor *h3 = lt_slice(x, 0, 0, 3, 1), *t3 = lt_slice(x, 0, 3, 6, 1);
    CHECK(lt_copy_(h3, t3) == h3);
    EXPECT_VALUES(x, 0, 3, 4, 5, 3, 4, 5);
    /* the same window through another handle, or the handle itself: allowed */
    lt_tensor *d = lt_detach(x), *u0 = lt_unsqueeze(x, 0), *u1 = lt_unsqueeze(x, 0), *e = lt_expand(x, 2, r16);
    CHECK(lt_add_(x, x) == x && lt_add_(x, d) == x && lt_add_(u0, u1) == u0);
    CHECK(lt_add_(e, u0) == e); /* expand's new dim of size 1 has unsqueeze's stride, as in PyTorch */
    EXPECT_VALUES(x, 0, 48, 64, 80, 48, 64, 80);
    /* the same range with other strides is a partial overlap */
    lt_tensor *v16 = lt_view(x, 2, r16), *b = lt_view(x, 2, s23), *bt = lt_t(b), *c = lt_view(x, 2, (int64_t[2]){3, 2});
    CHECK_OVERLAP(lt_add_(v16, x), "lt_add_", "'b'");
    CHECK_OVERLAP(lt_sub_(bt, c), "lt_sub_", "'b'"); /* a.sub_(a.t()) in other clothes */
    /* a row of the target read while the target is written */
    lt_tensor *row = lt_slice(b, 0, 0, 1, 1);
    CHECK_OVERLAP(lt_mul_(b, row), "lt_mul_", "'b'");
    /* not dense (PyTorch's "too hard"): runs, inputs read before the write */
    lt_tensor *ev = lt_slice(x, 0, 0, 6, 2), *mid = lt_slice(x, 0, 1, 4, 1);
    lt_fill_(x, 0);
    lt_add_scalar_(mid, 1); /* x = 0 1 1 1 0 0 */
    CHECK(lt_add_(ev, mid) == ev);
    EXPECT_VALUES(x, 0, 1, 1, 2, 1, 1, 0); /* what PyTorch computes too */
    /* a zero-size view with an expanded dim has nothing to write: PyTorch 1.13 lets it run */
    lt_tensor *z = lt_zeros(LT_F64, 2, (int64_t[2]){0, 1}), *ze = lt_expand(z, 2, (int64_t[2]){0, 3});
    CHECK(lt_add_scalar_(ze, 1) == ze && lt_fill_(ze, 1) == ze);
    /* the library stays usable */
    lt_tensor *all[] = {ze, z, mid, ev, row, c, bt, b, v16, e, u1, u0, d, t3, h3, t4, h4, ones5, head, tail, x};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) lt_free(all[i]);
    CHECK(lt_error() == LT_OK);
}

int main(void) {
    RUN(view_values_and_aliasing);
    RUN(view_errors);
    RUN(reshape_view_or_copy);
    RUN(flatten);
    RUN(transpose_t_permute);
    RUN(slice_clamped_bounds_and_steps);
    RUN(narrow_and_select);
    RUN(expand_reads_and_write_errors);
    RUN(unsqueeze_squeeze);
    RUN(diagonal);
    RUN(as_strided);
    RUN(deep_chain_and_lifetimes);
    RUN(regress_broadcast_in_place_of_running_shape);
    RUN(regress_operand_freed_before_sync);
    RUN(inplace_partial_overlap);
    return h_report();
}
