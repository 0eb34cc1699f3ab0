/* Autograd: every differentiable op against central finite differences in
 * float64 (broadcasting, views, in-place through views included), plus
 * accumulation, detach, no-grad, the PyTorch errors, and the one-graph step. */
#include "harness.h"

#include "func/func.h"

typedef lt_tensor *(*op_fn)(lt_tensor **x);
typedef struct gc_case {
    const char *name;
    op_fn fn;
    int nin;
    int nd[3];
    int64_t sh[3][4];
    double lo, hi; /* input range: keeps log/sqrt/pow positive */
} gc_case;

static double rnd(double lo, double hi) { return lo + (hi - lo) * (rand() / (RAND_MAX + 1.0)); }

static lt_tensor *free_ret(lt_tensor *r, lt_tensor *a, lt_tensor *b) {
    lt_free(a);
    lt_free(b);
    return r;
}

/* ---- the ops under test: one line each --------------------------------- */
#define F(name, expr) \
    static lt_tensor *name(lt_tensor **x) { return (expr); }
F(f_add, lt_add(x[0], x[1]))
F(f_sub, lt_sub(x[0], x[1]))
F(f_mul, lt_mul(x[0], x[1]))
F(f_div, lt_div(x[0], x[1]))
F(f_maximum, lt_maximum(x[0], x[1]))
F(f_minimum, lt_minimum(x[0], x[1]))
F(f_pow, lt_pow(x[0], x[1]))
F(f_add_scalar, lt_add_scalar(x[0], 1.7))
F(f_mul_scalar, lt_mul_scalar(x[0], -2.5))
F(f_pow_scalar, lt_pow_scalar(x[0], 2.7))
F(f_pow_scalar2, lt_pow_scalar(x[0], 2.0))
F(f_clamp, lt_clamp(x[0], -0.3, 0.4))
F(f_neg, lt_neg(x[0]))
F(f_exp, lt_exp(x[0]))
F(f_log, lt_log(x[0]))
F(f_sqrt, lt_sqrt(x[0]))
F(f_rsqrt, lt_rsqrt(x[0]))
F(f_abs, lt_abs(x[0]))
F(f_relu, lt_relu(x[0]))
F(f_tanh, lt_tanh(x[0]))
F(f_sigmoid, lt_sigmoid(x[0]))
F(f_cast, lt_to_dtype(x[0], LT_F64))
F(f_lerp, lt_lerp(x[0], x[1], 0.3))
F(f_lerp_hi, lt_lerp(x[0], x[1], 0.8))
F(f_lerp_tensor, lt_lerp_tensor(x[0], x[1], x[2]))
F(f_addcmul, lt_addcmul(x[0], x[1], x[2], 0.7))
F(f_addcdiv, lt_addcdiv(x[0], x[1], x[2], -1.3))
F(f_sum_all, lt_sum(x[0], 0, NULL, false))
F(f_sum_1, lt_sum(x[0], 1, (int[]){1}, false))
F(f_sum_02k, lt_sum(x[0], 2, (int[]){0, 2}, true))
F(f_mean_1, lt_mean(x[0], 1, (int[]){-1}, false))
F(f_mean_all, lt_mean(x[0], 0, NULL, false))
F(f_cumsum_1, lt_cumsum(x[0], 1, false))
F(f_cumsum_rev, lt_cumsum(x[0], -1, true))
F(f_flip, lt_flip(x[0], 2, (int[]){0, -1}))
F(f_var_1, lt_var(x[0], 1, (int[]){1}, 1.0, false))
F(f_var_all, lt_var(x[0], 0, NULL, 0.0, true))
F(f_std_02k, lt_std(x[0], 2, (int[]){0, 2}, 1.0, true))
F(f_std_all, lt_std(x[0], 0, NULL, 2.0, false))
F(f_max_1, lt_max(x[0], 1, (int[]){1}, false))
F(f_max_02k, lt_max(x[0], 2, (int[]){0, 2}, true))
F(f_min_all, lt_min(x[0], 0, NULL, false))
F(f_softmax, lt_softmax(x[0], 1))
F(f_softmax_last, lt_softmax(x[0], -1))
F(f_log_softmax, lt_log_softmax(x[0], 0))
F(f_matmul, lt_matmul(x[0], x[1]))
F(f_cat3, lt_cat(3, (lt_tensor *[]){x[0], x[1], x[2]}, 1))
F(f_cat5, lt_cat(5, (lt_tensor *[]){x[0], x[1], x[0], x[1], x[0]}, 0))

static lt_tensor *f_where(lt_tensor **x) {
    lt_tensor *c = lt_gt(x[0], x[1]);
    return free_ret(lt_where(c, x[0], x[1]), c, NULL);
}
/* views: a read through a view is an AS_STRIDED node */
static lt_tensor *f_transpose_mul(lt_tensor **x) {
    lt_tensor *t = lt_transpose(x[0], 0, 1);
    return free_ret(lt_mul(t, x[1]), t, NULL);
}
static lt_tensor *f_expand_sum(lt_tensor **x) { /* overlapping view: gradients accumulate */
    lt_tensor *e = lt_expand(x[0], 3, (int64_t[]){2, 3, 4});
    lt_tensor *m = lt_mul(e, e);
    return free_ret(lt_sum(m, 1, (int[]){1}, false), e, m);
}
static lt_tensor *f_slice_exp(lt_tensor **x) {
    lt_tensor *s = lt_slice(x[0], 1, 1, 4, 2);
    return free_ret(lt_exp(s), s, NULL);
}
static lt_tensor *f_diag(lt_tensor **x) {
    lt_tensor *d = lt_diagonal(x[0], 1, 0, 1);
    lt_tensor *s = lt_select(x[0], 0, 1);
    lt_tensor *r = lt_mul(d, d);
    lt_tensor *q = lt_sum(s, 0, NULL, false);
    lt_tensor *o = lt_add(r, q);
    lt_free(r);
    lt_free(q);
    return free_ret(o, d, s);
}
static lt_tensor *f_reshape_copy(lt_tensor **x) { /* not a view: the copy path */
    lt_tensor *t = lt_transpose(x[0], 0, 1);
    lt_tensor *r = lt_reshape(t, 1, (int64_t[]){-1});
    return free_ret(lt_mul(r, x[1]), t, r);
}
static lt_tensor *f_as_strided(lt_tensor **x) { /* overlapping windows */
    lt_tensor *w = lt_as_strided(x[0], 2, (int64_t[]){3, 3}, (int64_t[]){2, 1}, 0);
    lt_tensor *m = lt_mul(w, w);
    return free_ret(m, w, NULL);
}

/* in place: functionalized into pure ops plus AS_STRIDED_SCATTER */
static lt_tensor *f_ip_slice(lt_tensor **x) { /* y = x*1; y[:, 0:3:2] *= 3 */
    lt_tensor *y = lt_mul_scalar(x[0], 1.0);
    lt_tensor *v = lt_slice(y, 1, 0, 3, 2);
    lt_mul_scalar_(v, 3.0);
    lt_free(v);
    return y;
}
static lt_tensor *f_ip_clone_select(lt_tensor **x) { /* clone of a leaf, row *= x1 */
    lt_tensor *y = lt_clone(x[0]);
    lt_tensor *r = lt_select(y, 0, 1);
    lt_mul_(r, x[1]);
    lt_free(r);
    return y;
}
static lt_tensor *f_ip_plain(lt_tensor **x) {
    lt_tensor *y = lt_mul_scalar(x[0], 0.5);
    lt_exp_(y);
    lt_add_(y, x[1]);
    lt_tanh_(y);
    return y;
}
static lt_tensor *f_ip_copy_fill(lt_tensor **x) { /* copy_ and fill_ into windows of a no-grad tensor */
    lt_tensor *y = lt_zeros(LT_F64, 2, (int64_t[]){2, 3});
    lt_tensor *r = lt_select(y, 0, 0);
    lt_copy_(r, x[1]);
    lt_tensor *c = lt_select(y, 1, 2);
    lt_add_(y, x[0]);
    lt_fill_(c, 0.25); /* zeroes the gradient of column 2 */
    lt_free(r);
    lt_free(c);
    lt_tensor *o = lt_mul(y, y);
    lt_free(y);
    return o;
}
static lt_tensor *f_ip_view_of_view(lt_tensor **x) {
    lt_tensor *y = lt_mul_scalar(x[0], 1.0);
    lt_tensor *t = lt_transpose(y, 0, 1);
    lt_tensor *s = lt_slice(t, 0, 1, 3, 1);
    lt_mul_(s, x[1]);
    lt_free(s);
    lt_free(t);
    lt_tensor *o = lt_exp(y);
    lt_free(y);
    return o;
}
static lt_tensor *f_ip_other_view(lt_tensor **x) { /* write through one view, read through another */
    lt_tensor *y = lt_mul_scalar(x[0], 1.0);
    lt_tensor *a = lt_select(y, 0, 1), *b = lt_select(y, 1, 2);
    lt_mul_scalar_(a, 2.0);
    lt_mul_(a, x[1]);
    lt_tensor *o = lt_mul(b, b);
    lt_free(a);
    lt_free(b);
    lt_free(y);
    return o;
}
static lt_tensor *f_ip_lerp(lt_tensor **x) {
    lt_tensor *y = lt_mul_scalar(x[0], 1.0);
    lt_tensor *v = lt_narrow(y, 0, 1, 2);
    lt_lerp_(v, x[1], 0.1);
    lt_lerp_(v, x[1], 0.1);
    lt_free(v);
    return y;
}
static lt_tensor *f_ip_reshaped_view(lt_tensor **x) { /* in place on a view covering the storage, other shape */
    lt_tensor *y = lt_mul_scalar(x[0], 1.0);
    lt_tensor *v = lt_view(y, 2, (int64_t[]){3, 4});
    lt_mul_(v, x[1]);
    lt_free(v);
    lt_tensor *o = lt_sigmoid(y);
    lt_free(y);
    return o;
}

/* NN ops (src/api/nn.h) */
static lt_tensor *i64(int n, const int64_t *v) { return lt_from_data(v, LT_I64, 1, (int64_t[]){n}); }
F(f_conv, lt_conv2d(x[0], x[1], x[2], NULL, (int64_t[]){1, 1}, NULL, 1))
F(f_conv_sdg, lt_conv2d(x[0], x[1], NULL, (int64_t[]){2, 1}, (int64_t[]){1, 0}, (int64_t[]){1, 2}, 2))
F(f_maxpool, lt_max_pool2d(x[0], (int64_t[]){2, 2}, (int64_t[]){1, 2}, (int64_t[]){1, 0}))
F(f_avgpool, lt_avg_pool2d(x[0], (int64_t[]){2, 3}, NULL, (int64_t[]){1, 1}))
F(f_adaptive, lt_adaptive_avg_pool2d(x[0], (int64_t[]){2, 3}))
F(f_bn_train, lt_batch_norm(x[0], x[1], x[2], NULL, NULL, true, 0.1, 1e-5))
F(f_linear, lt_linear(x[0], x[1], x[2]))
F(f_linear1d, lt_linear(x[0], x[1], NULL))
F(f_mse, lt_mse_loss(x[0], x[1]))
static lt_tensor *f_bn_eval(lt_tensor **x) {
    lt_tensor *rm = lt_from_data((double[]){0.1, -0.2}, LT_F64, 1, (int64_t[]){2});
    lt_tensor *rv = lt_from_data((double[]){0.5, 2.0}, LT_F64, 1, (int64_t[]){2});
    return free_ret(lt_batch_norm(x[0], x[1], x[2], rm, rv, false, 0.1, 1e-5), rm, rv);
}
static lt_tensor *f_bn_running(lt_tensor **x) { /* training, running stats updated on the side */
    lt_tensor *rm = lt_zeros(LT_F64, 1, (int64_t[]){3}), *rv = lt_ones(LT_F64, 1, (int64_t[]){3});
    return free_ret(lt_batch_norm(x[0], NULL, x[1], rm, rv, true, 0.1, 1e-5), rm, rv);
}
static lt_tensor *f_dropout(lt_tensor **x) {
    lt_manual_seed(99); /* the same mask at every evaluation */
    return lt_dropout(x[0], 0.4, true);
}
static lt_tensor *f_nll(lt_tensor **x) {
    lt_tensor *t = i64(3, (int64_t[]){2, 0, 3});
    return free_ret(lt_nll_loss(x[0], t), t, NULL);
}
static lt_tensor *f_ce(lt_tensor **x) {
    lt_tensor *t = i64(3, (int64_t[]){1, 3, 0});
    return free_ret(lt_cross_entropy(x[0], t, 0.1), t, NULL);
}
static lt_tensor *f_gather(lt_tensor **x) {
    lt_tensor *ix = lt_from_data((int64_t[]){0, 2, 2, 1, 0, 0}, LT_I64, 2, (int64_t[]){2, 3});
    return free_ret(lt_gather(x[0], 1, ix), ix, NULL);
}
static lt_tensor *f_index_select(lt_tensor **x) {
    lt_tensor *ix = i64(4, (int64_t[]){2, 0, 2, 1});
    return free_ret(lt_index_select(x[0], 0, ix), ix, NULL);
}
static lt_tensor *f_embedding(lt_tensor **x) {
    lt_tensor *ix = lt_from_data((int64_t[]){1, 4, 1, 0}, LT_I64, 2, (int64_t[]){2, 2});
    return free_ret(lt_embedding(x[0], ix), ix, NULL);
}

F(f_erf, lt_erf(x[0]))
F(f_gelu, lt_gelu(x[0], false))
F(f_gelu_tanh, lt_gelu(x[0], true))
F(f_layer_norm, lt_layer_norm(x[0], 1, x[1], x[2], 1e-5))
F(f_layer_norm2, lt_layer_norm(x[0], 2, NULL, x[1], 1e-3))
F(f_attn, lt_scaled_dot_product_attention(x[0], x[1], x[2], false, 0, 0))
F(f_attn_causal, lt_scaled_dot_product_attention(x[0], x[1], x[2], true, 0, 0.7))
/* The PyTorch device's elementwise family. */
F(f_add_scaled, lt_add_scaled(x[0], x[1], -0.3))
F(f_silu, lt_silu(x[0]))
F(f_hardswish, lt_hardswish(x[0]))
F(f_hardsigmoid, lt_hardsigmoid(x[0]))
static lt_tensor *f_masked_fill(lt_tensor **x) { /* the mask broadcasts */
    lt_tensor *m = lt_from_data((bool[]){true, false, true}, LT_BOOL, 1, (int64_t[]){3});
    return free_ret(lt_masked_fill(x[0], m, 2.5), m, NULL);
}
static lt_tensor *f_attn_dropout(lt_tensor **x) {
    lt_manual_seed(7); /* the same mask at every evaluation */
    return lt_scaled_dot_product_attention(x[0], x[1], x[2], true, 0.3, 0);
}

static const gc_case cases[] = {
    {"add bcast", f_add, 2, {2, 1}, {{2, 3}, {3}}, -1, 1},
    {"sub bcast", f_sub, 2, {3, 2}, {{2, 1, 3}, {4, 1}}, -1, 1},
    {"mul", f_mul, 2, {2, 2}, {{3, 4}, {3, 4}}, -1, 1},
    {"mul bcast", f_mul, 2, {2, 3}, {{4, 1}, {2, 1, 3}}, -1, 1},
    {"div", f_div, 2, {2, 2}, {{2, 3}, {2, 1}}, 0.5, 2},
    {"maximum", f_maximum, 2, {2, 2}, {{2, 3}, {2, 3}}, -1, 1},
    {"minimum bcast", f_minimum, 2, {1, 2}, {{3}, {2, 3}}, -1, 1},
    {"pow", f_pow, 2, {2, 1}, {{2, 3}, {3}}, 0.5, 2},
    {"add_scalar", f_add_scalar, 1, {2}, {{2, 3}}, -1, 1},
    {"mul_scalar", f_mul_scalar, 1, {2}, {{2, 3}}, -1, 1},
    {"pow_scalar", f_pow_scalar, 1, {2}, {{2, 3}}, 0.5, 2},
    {"pow_scalar 2", f_pow_scalar2, 1, {1}, {{5}}, -1, 1},
    {"clamp", f_clamp, 1, {2}, {{3, 4}}, -1, 1},
    {"neg", f_neg, 1, {2}, {{2, 3}}, -1, 1},
    {"exp", f_exp, 1, {2}, {{2, 3}}, -1, 1},
    {"log", f_log, 1, {2}, {{2, 3}}, 0.5, 2},
    {"sqrt", f_sqrt, 1, {2}, {{2, 3}}, 0.5, 2},
    {"rsqrt", f_rsqrt, 1, {2}, {{2, 3}}, 0.5, 2},
    {"abs", f_abs, 1, {2}, {{3, 4}}, -1, 1},
    {"relu", f_relu, 1, {2}, {{3, 4}}, -1, 1},
    {"tanh", f_tanh, 1, {2}, {{2, 3}}, -1, 1},
    {"sigmoid", f_sigmoid, 1, {2}, {{2, 3}}, -2, 2},
    {"cast", f_cast, 1, {2}, {{2, 3}}, -1, 1},
    {"lerp", f_lerp, 2, {2, 2}, {{2, 3}, {2, 3}}, -1, 1},
    {"lerp w>0.5", f_lerp_hi, 2, {2, 2}, {{2, 3}, {2, 3}}, -1, 1},
    {"where", f_where, 2, {2, 1}, {{2, 3}, {3}}, -1, 1},
    {"lerp tensor weight bcast", f_lerp_tensor, 3, {2, 1, 2}, {{2, 3}, {3}, {2, 3}}, -1, 1},
    {"addcmul", f_addcmul, 3, {2, 1, 2}, {{2, 3}, {3}, {2, 3}}, -1, 1},
    {"addcdiv", f_addcdiv, 3, {2, 2, 1}, {{2, 3}, {2, 3}, {3}}, 0.5, 2},
    {"sum all", f_sum_all, 1, {2}, {{2, 3}}, -1, 1},
    {"sum dim", f_sum_1, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"sum keepdim", f_sum_02k, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"mean dim", f_mean_1, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"mean all", f_mean_all, 1, {2}, {{3, 4}}, -1, 1},
    {"cumsum", f_cumsum_1, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"cumsum reverse", f_cumsum_rev, 1, {2}, {{3, 4}}, -1, 1},
    {"flip", f_flip, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"var dim", f_var_1, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"var all", f_var_all, 1, {2}, {{3, 4}}, -1, 1},
    {"std dims keepdim", f_std_02k, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"std all", f_std_all, 1, {2}, {{3, 4}}, -1, 1},
    {"max dim", f_max_1, 1, {3}, {{2, 3, 4}}, -1, 1},
    {"max keepdim", f_max_02k, 1, {3}, {{2, 3, 2}}, -1, 1},
    {"min all", f_min_all, 1, {2}, {{3, 4}}, -1, 1},
    {"softmax", f_softmax, 1, {2}, {{3, 4}}, -2, 2},
    {"softmax 3d", f_softmax_last, 1, {3}, {{2, 3, 4}}, -2, 2},
    {"log_softmax", f_log_softmax, 1, {2}, {{3, 4}}, -2, 2},
    {"matmul", f_matmul, 2, {2, 2}, {{2, 3}, {3, 4}}, -1, 1},
    {"matmul 1d@2d", f_matmul, 2, {1, 2}, {{3}, {3, 4}}, -1, 1},
    {"matmul 2d@1d", f_matmul, 2, {2, 1}, {{2, 3}, {3}}, -1, 1},
    {"matmul 1d@1d", f_matmul, 2, {1, 1}, {{3}, {3}}, -1, 1},
    {"matmul batched", f_matmul, 2, {3, 2}, {{2, 2, 3}, {3, 4}}, -1, 1},
    {"matmul bcast batch", f_matmul, 2, {4, 3}, {{2, 1, 2, 3}, {3, 3, 2}}, -1, 1},
    {"matmul 1d@3d", f_matmul, 2, {1, 3}, {{3}, {2, 3, 2}}, -1, 1},
    {"cat", f_cat3, 3, {2, 2, 2}, {{2, 3}, {2, 1}, {2, 2}}, -1, 1},
    {"cat 5", f_cat5, 2, {2, 2}, {{2, 3}, {1, 3}}, -1, 1},
    {"view transpose", f_transpose_mul, 2, {2, 2}, {{3, 2}, {2, 3}}, -1, 1},
    {"view expand", f_expand_sum, 1, {2}, {{3, 1}}, -1, 1},
    {"view slice step", f_slice_exp, 1, {2}, {{2, 5}}, -1, 1},
    {"view diagonal select", f_diag, 1, {2}, {{3, 4}}, -1, 1},
    {"reshape copy", f_reshape_copy, 2, {2, 1}, {{2, 3}, {6}}, -1, 1},
    {"as_strided overlap", f_as_strided, 1, {1}, {{7}}, -1, 1},
    {"inplace slice", f_ip_slice, 1, {2}, {{2, 4}}, -1, 1},
    {"inplace clone select", f_ip_clone_select, 2, {2, 1}, {{2, 3}, {3}}, -1, 1},
    {"inplace plain chain", f_ip_plain, 2, {2, 1}, {{2, 3}, {3}}, -1, 1},
    {"inplace copy fill", f_ip_copy_fill, 2, {2, 1}, {{2, 3}, {3}}, -1, 1},
    {"inplace view of view", f_ip_view_of_view, 2, {2, 1}, {{4, 3}, {4}}, -1, 1},
    {"inplace other view", f_ip_other_view, 2, {2, 1}, {{3, 4}, {4}}, -1, 1},
    {"inplace lerp narrow", f_ip_lerp, 2, {2, 2}, {{4, 3}, {2, 3}}, -1, 1},
    {"inplace reshaped view", f_ip_reshaped_view, 2, {2, 2}, {{2, 6}, {3, 4}}, -1, 1},
    {"conv2d", f_conv, 3, {4, 4, 1}, {{2, 2, 4, 4}, {3, 2, 2, 2}, {3}}, -1, 1},
    {"conv2d stride dilation groups", f_conv_sdg, 2, {4, 4}, {{1, 4, 5, 5}, {2, 2, 2, 2}}, -1, 1},
    {"max_pool2d", f_maxpool, 1, {4}, {{1, 2, 4, 5}}, -1, 1},
    {"avg_pool2d", f_avgpool, 1, {4}, {{2, 1, 4, 5}}, -1, 1},
    {"adaptive_avg_pool2d", f_adaptive, 1, {4}, {{1, 2, 5, 4}}, -1, 1},
    {"batch_norm train", f_bn_train, 3, {4, 1, 1}, {{3, 2, 2, 2}, {2}, {2}}, -1, 1},
    {"batch_norm eval", f_bn_eval, 3, {4, 1, 1}, {{2, 2, 2, 1}, {2}, {2}}, -1, 1},
    {"batch_norm running", f_bn_running, 2, {2, 1}, {{4, 3}, {3}}, -1, 1},
    {"linear", f_linear, 3, {3, 2, 1}, {{2, 2, 3}, {4, 3}, {4}}, -1, 1},
    {"linear 1d", f_linear1d, 2, {1, 2}, {{3}, {4, 3}}, -1, 1},
    {"dropout", f_dropout, 1, {2}, {{4, 5}}, -1, 1},
    {"nll_loss", f_nll, 1, {2}, {{3, 4}}, -2, 0},
    {"cross_entropy", f_ce, 1, {2}, {{3, 4}}, -2, 2},
    {"mse_loss", f_mse, 2, {2, 2}, {{2, 3}, {2, 3}}, -1, 1},
    {"gather", f_gather, 1, {2}, {{2, 3}}, -1, 1},
    {"index_select", f_index_select, 1, {2}, {{3, 2}}, -1, 1},
    {"embedding", f_embedding, 1, {2}, {{5, 3}}, -1, 1},
    {"erf", f_erf, 1, {2}, {{2, 3}}, -2, 2},
    {"gelu", f_gelu, 1, {2}, {{2, 3}}, -3, 3},
    {"gelu tanh", f_gelu_tanh, 1, {2}, {{2, 3}}, -3, 3},
    {"add_scaled bcast", f_add_scaled, 2, {2, 1}, {{2, 3}, {3}}, -1, 1},
    {"masked_fill bcast", f_masked_fill, 1, {2}, {{2, 3}}, -1, 1},
    {"silu", f_silu, 1, {2}, {{2, 3}}, -3, 3},
    {"hardswish", f_hardswish, 1, {2}, {{2, 3}}, -2.5, 2.5},
    {"hardsigmoid", f_hardsigmoid, 1, {2}, {{2, 3}}, -2.5, 2.5},
    {"layer_norm", f_layer_norm, 3, {3, 1, 1}, {{2, 2, 5}, {5}, {5}}, -1, 1},
    {"layer_norm 2 dims", f_layer_norm2, 2, {3, 2}, {{2, 2, 3}, {2, 3}}, -1, 1},
    {"attention", f_attn, 3, {3, 3, 3}, {{2, 3, 5}, {2, 3, 5}, {2, 3, 5}}, -1, 1},
    {"attention causal", f_attn_causal, 3, {4, 4, 4}, {{1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 3}}, -1, 1},
    {"attention dropout", f_attn_dropout, 3, {3, 3, 3}, {{2, 5, 2}, {2, 5, 2}, {2, 5, 2}}, -1, 1},
};

static lt_tensor *from(const double *v, int nd, const int64_t *sh) { return lt_from_data(v, LT_F64, nd, sh); }

/* L = sum(fn(x) * w): every output element matters with its own weight. */
static double loss_value(const gc_case *c, double **vals, const double *w) {
    lt_tensor *x[3];
    for (int i = 0; i < c->nin; i++) x[i] = from(vals[i], c->nd[i], c->sh[i]);
    lt_tensor *out = c->fn(x);
    lt_tensor *wt = from(w, lt_ndim(out), lt_shape(out));
    lt_tensor *p = lt_mul(out, wt);
    lt_tensor *l = lt_sum(p, 0, NULL, false);
    double v = lt_item(l);
    lt_free(l);
    lt_free(p);
    lt_free(wt);
    lt_free(out);
    for (int i = 0; i < c->nin; i++) lt_free(x[i]);
    return v;
}

static void gradcheck(const gc_case *c) {
    double *vals[3];
    int64_t n[3];
    for (int i = 0; i < c->nin; i++) {
        n[i] = 1;
        for (int d = 0; d < c->nd[i]; d++) n[i] *= c->sh[i][d];
        vals[i] = malloc((size_t)n[i] * sizeof(double));
        for (int64_t j = 0; j < n[i]; j++) vals[i][j] = rnd(c->lo, c->hi);
    }
    lt_tensor *x[3];
    for (int i = 0; i < c->nin; i++) {
        x[i] = from(vals[i], c->nd[i], c->sh[i]);
        lt_set_requires_grad(x[i], true);
    }
    lt_tensor *out = c->fn(x);
    CHECK_MSG(out && lt_requires_grad(out), "%s: output does not require grad (%s)", c->name, lt_error_message());
    if (!out) return;
    int64_t nout = lt_numel(out);
    double *w = malloc((size_t)(nout ? nout : 1) * sizeof(double));
    for (int64_t j = 0; j < nout; j++) w[j] = rnd(-1, 1);
    lt_tensor *wt = from(w, lt_ndim(out), lt_shape(out));
    lt_tensor *p = lt_mul(out, wt);
    lt_tensor *l = lt_sum(p, 0, NULL, false);
    CHECK_MSG(lt_backward(l) == 0, "%s: backward failed: %s", c->name, lt_error_message());
    double *ga[3] = {NULL, NULL, NULL};
    for (int i = 0; i < c->nin; i++) {
        lt_tensor *g = lt_grad(x[i]);
        CHECK_MSG(g != NULL, "%s: no grad for input %d", c->name, i);
        if (g) {
            CHECK_MSG(lt_dtype_of(g) == LT_F64 && lt_ndim(g) == c->nd[i] &&
                          !memcmp(lt_shape(g), c->sh[i], (size_t)c->nd[i] * 8),
                      "%s: grad %d has the wrong dtype or shape", c->name, i);
            ga[i] = h_read(g);
        }
    }
    lt_free(l);
    lt_free(p);
    lt_free(wt);
    lt_free(out);
    for (int i = 0; i < c->nin; i++) lt_free(x[i]);
    CHECK_NO_ERR();
    const double eps = 1e-6;
    for (int i = 0; i < c->nin; i++) {
        for (int64_t j = 0; ga[i] && j < n[i]; j++) {
            double keep = vals[i][j];
            vals[i][j] = keep + eps;
            double lp = loss_value(c, vals, w);
            vals[i][j] = keep - eps;
            double lm = loss_value(c, vals, w);
            vals[i][j] = keep;
            double num = (lp - lm) / (2 * eps);
            CHECK_MSG(fabs(num - ga[i][j]) <= 1e-6 + 1e-5 * fabs(num), "%s: d/dx%d[%lld]: analytic %.9g, numeric %.9g",
                      c->name, i, (long long)j, ga[i][j], num);
        }
    }
    for (int i = 0; i < c->nin; i++) {
        free(ga[i]);
        free(vals[i]);
    }
    free(w);
}

TEST(gradcheck_all_ops) {
    srand(1234);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) gradcheck(&cases[k]);
}

static lt_tensor *leaf(int nd, const int64_t *sh, const double *v) {
    lt_tensor *t = from(v, nd, sh);
    lt_set_requires_grad(t, true);
    return t;
}

/* The transformer ops again on random shapes (issue 16): sizes of 1 and
 * head dims that are no multiple of a vector's lanes (1, 3, 5, 9, 17), T
 * across the causal mask's edges, layer norm over one or two dims. */
TEST(gradcheck_transformer_random_shapes) {
    srand(1616);
    static const int64_t heads[] = {1, 3, 5, 9, 17};
    char name[96];
    for (int trial = 0; trial < 10; trial++) {
        int64_t a = 1 + rand() % 3, b = 1 + rand() % 3, d = 1 + rand() % 7;
        gc_case c = {name, f_erf, 1, {3}, {{a, b, d}}, -2, 2};
        snprintf(name, sizeof name, "erf %lldx%lldx%lld", (long long)a, (long long)b, (long long)d);
        gradcheck(&c);
        c.fn = trial % 2 ? f_gelu : f_gelu_tanh, c.lo = -3, c.hi = 3;
        snprintf(name, sizeof name, "gelu%s %lldx%lldx%lld", trial % 2 ? "" : " tanh", (long long)a, (long long)b,
                 (long long)d);
        gradcheck(&c);
        gc_case ln = {name, f_layer_norm, 3, {3, 1, 1}, {{a, b, d + 1}, {d + 1}, {d + 1}}, -1, 1};
        snprintf(name, sizeof name, "layer_norm %lldx%lldx%lld", (long long)a, (long long)b, (long long)d + 1);
        gradcheck(&ln);
        gc_case ln2 = {name, f_layer_norm2, 2, {3, 2}, {{a, b + 1, d}, {b + 1, d}}, -1, 1};
        snprintf(name, sizeof name, "layer_norm 2 dims %lldx%lldx%lld", (long long)a, (long long)b + 1, (long long)d);
        gradcheck(&ln2);
        int64_t B = 1 + rand() % 2, H = 1 + rand() % 2, T = 1 + rand() % 6, D = heads[trial % 5];
        static op_fn const attn[3] = {f_attn_causal, f_attn, f_attn_dropout};
        gc_case at = {name, attn[trial % 3], 3, {4, 4, 4}, {{B, H, T, D}, {B, H, T, D}, {B, H, T, D}}, -1, 1};
        snprintf(name, sizeof name, "attention %s %lldx%lldx%lldx%lld",
                 trial % 3 == 0 ? "causal" : trial % 3 == 1 ? "full" : "causal dropout", (long long)B, (long long)H,
                 (long long)T, (long long)D);
        gradcheck(&at);
    }
}

TEST(accumulate_and_zero_grad) {
    double xv[3] = {1, -2, 3};
    lt_tensor *x = leaf(1, (int64_t[]){3}, xv);
    lt_tensor *sq = lt_mul(x, x), *l1 = lt_sum(sq, 0, NULL, false);
    CHECK(lt_backward(l1) == 0);
    lt_tensor *g = lt_grad(x);
    EXPECT_VALUES(g, 0, 2, -4, 6);
    lt_tensor *t3 = lt_mul_scalar(x, 3), *l2 = lt_sum(t3, 0, NULL, false);
    CHECK(lt_backward(l2) == 0);
    CHECK(lt_grad(x) == g); /* accumulated in place: the borrowed pointer stays valid */
    EXPECT_VALUES(lt_grad(x), 0, 5, -1, 9);
    lt_zero_grad(x);
    CHECK(lt_grad(x) == NULL);
    CHECK(lt_backward(l1) != 0); /* its saved values were released */
    CHECK_ERR(LT_ERR_STATE);
    lt_free(sq);
    lt_free(l1);
    lt_free(t3);
    lt_free(l2);
    lt_free(x);
}

TEST(detach_and_no_grad) {
    double xv[2] = {1.5, -0.5};
    lt_tensor *x = leaf(1, (int64_t[]){2}, xv);
    lt_tensor *y = lt_mul_scalar(x, 2);
    lt_tensor *d = lt_detach(y);
    CHECK(lt_requires_grad(y) && !lt_requires_grad(d));
    lt_tensor *ds = lt_slice(d, 0, 0, 1, 1);
    CHECK(!lt_requires_grad(ds)); /* views of a detached alias stay outside */
    lt_tensor *p = lt_mul(y, d), *l = lt_sum(p, 0, NULL, false);
    CHECK(lt_backward(l) == 0);
    EXPECT_VALUES(lt_grad(x), 1e-12, 4 * 1.5 * 2 / 2 * 1, 4 * -0.5); /* d(sum(2x * c))/dx = 2c = 4x */
    lt_no_grad_begin();
    CHECK(!lt_grad_enabled());
    lt_tensor *z = lt_mul(x, x);
    CHECK(!lt_requires_grad(z));
    CHECK(lt_mul_scalar_(x, 2) == x); /* an optimizer update: allowed, not recorded */
    lt_no_grad_end();
    CHECK(lt_grad_enabled());
    CHECK(lt_requires_grad(x));
    EXPECT_VALUES(x, 0, 3, -1);
    lt_free(z);
    lt_free(ds);
    lt_free(p);
    lt_free(l);
    lt_free(d);
    lt_free(y);
    lt_free(x);
}

/* copy_ / fill_ / zero_ of a value that needs no grad over a non-leaf
 * that requires grad (issue 17): as in PyTorch the result still requires
 * grad, and the overwritten elements pass a zero gradient (a NaN upstream
 * gradient there too: selected, not multiplied). */
TEST(overwrite_keeps_requires_grad) {
    double xv[3] = {1, 2, 3};
    int64_t s3[1] = {3}, r13[2] = {1, 3};
    lt_tensor *x = leaf(1, s3, xv), *g = lt_from_data((double[]){NAN, 1, 2}, LT_F64, 1, s3);
    lt_tensor *y = lt_exp(x);
    CHECK(lt_fill_(y, 2) == y && lt_requires_grad(y));
    CHECK(lt_backward_with(y, g) == 0); /* a plain tensor, all overwritten: zeros */
    EXPECT_VALUES(lt_grad(x), 0, 0, 0, 0);
    lt_tensor *y2 = lt_mul_scalar(x, 2), *v = lt_view(y2, 2, r13), *one = lt_ones(LT_I64, 1, s3);
    CHECK(lt_copy_(v, one) == v && lt_requires_grad(y2) && lt_requires_grad(v)); /* a view covering it */
    CHECK(lt_backward_with(y2, g) == 0);
    EXPECT_VALUES(lt_grad(x), 0, 0, 0, 0);
    EXPECT_VALUES(y2, 0, 1, 1, 1);
    lt_tensor *y3 = lt_mul_scalar(x, 2), *w = lt_slice(y3, 0, 1, 3, 1);
    CHECK(lt_zero_(w) == w && lt_requires_grad(y3)); /* a window: the rest keeps its gradient */
    CHECK(lt_backward_with(y3, g) == 0);
    lt_tensor *head = lt_slice(lt_grad(x), 0, 0, 1, 1), *tail = lt_slice(lt_grad(x), 0, 1, 3, 1);
    CHECK_MSG(isnan(lt_item(head)), "grad[0] %g, expected NaN (2 * NaN)", lt_item(head));
    EXPECT_VALUES(tail, 0, 0, 0);
    lt_tensor *all[] = {head, tail, w, y3, one, v, y2, y, g, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) lt_free(all[i]);
    CHECK_NO_ERR();
}

TEST(errors) {
    double xv[4] = {1, 2, 3, 4};
    lt_tensor *x = leaf(1, (int64_t[]){4}, xv);
    CHECK(lt_mul_scalar_(x, 2) == NULL);
    CHECK_ERR(LT_ERR_STATE);
    lt_tensor *v = lt_slice(x, 0, 1, 3, 1);
    CHECK(lt_add_scalar_(v, 1) == NULL); /* a view of a leaf, too */
    CHECK_ERR(LT_ERR_STATE);
    CHECK(lt_fill_(x, 0) == NULL);
    CHECK_ERR(LT_ERR_STATE);
    EXPECT_VALUES(x, 0, 1, 2, 3, 4); /* nothing was written */
    lt_tensor *y = lt_exp(x);
    CHECK(lt_backward(y) != 0); /* not one element */
    CHECK_ERR(LT_ERR_SHAPE);
    lt_set_requires_grad(y, false); /* not a leaf */
    CHECK_ERR(LT_ERR_STATE);
    lt_tensor *c = lt_ones(LT_F64, 1, (int64_t[]){4});
    CHECK(lt_backward(c) != 0); /* requires no grad */
    CHECK_ERR(LT_ERR_STATE);
    lt_tensor *iv = lt_zeros(LT_I64, 1, (int64_t[]){4});
    lt_set_requires_grad(iv, true);
    CHECK_ERR(LT_ERR_DTYPE);
    lt_tensor *g = lt_full(2.0, LT_F64, 1, (int64_t[]){4});
    CHECK(lt_backward_with(y, g) == 0);
    EXPECT_VALUES(lt_grad(x), 1e-12, 2 * exp(1), 2 * exp(2), 2 * exp(3), 2 * exp(4));
    lt_free(g);
    lt_free(iv);
    lt_free(c);
    lt_free(y);
    lt_free(v);
    lt_free(x);
}

TEST(mixed_dtypes) { /* grads come back in each leaf's dtype */
    float av[3] = {1, 2, 3};
    double bv[3] = {0.5, -1, 2};
    lt_tensor *a = h_f32(1, (int64_t[]){3}, av), *b = from(bv, 1, (int64_t[]){3});
    lt_set_requires_grad(a, true);
    lt_set_requires_grad(b, true);
    lt_tensor *p = lt_mul(a, b), *l = lt_sum(p, 0, NULL, false);
    CHECK(lt_dtype_of(p) == LT_F64);
    CHECK(lt_backward(l) == 0);
    CHECK(lt_dtype_of(lt_grad(a)) == LT_F32 && lt_dtype_of(lt_grad(b)) == LT_F64);
    EXPECT_VALUES(lt_grad(a), 0, 0.5, -1, 2);
    EXPECT_VALUES(lt_grad(b), 0, 1, 2, 3);
    lt_free(p);
    lt_free(l);
    lt_free(a);
    lt_free(b);
}

static int pending_storages(void) {
    int n = 0;
    for (storage *s = g_live.next; s != &g_live; s = s->next) n += s->node != NULL;
    return n;
}

/* forward + backward + SGD update, then ONE lt_mark_step: one graph; the
 * second identical step hits the cache; intermediates are not roots. */
TEST(one_graph_per_step) {
    int64_t xs[2] = {4, 3}, ws[2] = {3, 2}, bs[1] = {2};
    lt_manual_seed(7);
    lt_tensor *x = lt_randn(LT_F32, 2, xs), *w = lt_randn(LT_F32, 2, ws), *b = lt_randn(LT_F32, 1, bs);
    lt_set_requires_grad(w, true);
    lt_set_requires_grad(b, true);
    lt_mark_step();
    double prev = INFINITY;
    for (int step = 0; step < 3; step++) {
        double u0 = lt_metric("UncachedCompile"), c0 = lt_metric("CachedCompile");
        lt_zero_grad(w);
        lt_zero_grad(b);
        lt_tensor *h = lt_matmul(x, w), *o = lt_add(h, b), *r = lt_tanh(o), *q = lt_mul(r, r);
        lt_tensor *loss = lt_mean(q, 0, NULL, false);
        CHECK(lt_backward(loss) == 0);
        lt_free(h);
        lt_free(o);
        lt_free(r);
        lt_free(q);
        lt_no_grad_begin();
        lt_tensor *dw = lt_mul_scalar(lt_grad(w), 0.5), *db = lt_mul_scalar(lt_grad(b), 0.5);
        lt_sub_(w, dw);
        lt_sub_(b, db);
        lt_free(dw);
        lt_free(db);
        lt_no_grad_end();
        /* roots: w, b, their two grads, the loss; nothing saved for backward */
        CHECK_MSG(pending_storages() == 5, "step %d: %d pending storages", step, pending_storages());
        lt_mark_step();
        CHECK(lt_metric("UncachedCompile") - u0 == (step == 0 ? 1 : 0));
        CHECK(lt_metric("CachedCompile") - c0 == (step == 0 ? 0 : 1));
        double lv = lt_item(loss);
        CHECK_MSG(lv < prev, "step %d: loss %g did not decrease from %g", step, lv, prev);
        prev = lv;
        lt_free(loss);
    }
    lt_free(x);
    lt_free(w);
    lt_free(b);
}

/* A sync between forward and backward (reading the loss) keeps the saved
 * values alive as materialized buffers. */
TEST(sync_between_forward_and_backward) {
    double xv[3] = {0.1, 0.2, 0.3};
    lt_tensor *x = leaf(1, (int64_t[]){3}, xv);
    lt_tensor *e = lt_exp(x), *l = lt_sum(e, 0, NULL, false);
    lt_mark_step();
    CHECK(fabs(lt_item(l) - (exp(0.1) + exp(0.2) + exp(0.3))) < 1e-12);
    CHECK(lt_backward(l) == 0);
    EXPECT_VALUES(lt_grad(x), 1e-12, exp(0.1), exp(0.2), exp(0.3));
    lt_free(e);
    lt_free(l);
    lt_free(x);
}

int main(void) {
    RUN(gradcheck_all_ops);
    RUN(gradcheck_transformer_random_shapes);
    RUN(accumulate_and_zero_grad);
    RUN(detach_and_no_grad);
    RUN(overwrite_keeps_requires_grad);
    RUN(errors);
    RUN(mixed_dtypes);
    RUN(one_graph_per_step);
    RUN(sync_between_forward_and_backward);
    return h_report();
}
