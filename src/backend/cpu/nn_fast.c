/* Fast float32 C kernels (batch norm, pooling: also bfloat16 activations) for the NN ops whose IR split does not map onto a
 * oneDNN primitive (DESIGN 6): max pooling (oneDNN's backward wants the
 * forward's workspace, so we recompute the argmax, as the reference does;
 * oneDNN's forward drops NaNs, PyTorch's propagates them; the blocked-layout
 * loops are in pool_blocked.c), adaptive
 * average pooling, and batch norm, whose statistics, normalization and two
 * backward halves are separate nodes. Memory-bound loops, parallel over
 * planes or channels; sums of a contiguous run in float (vectorized), runs
 * accumulated in double. Same semantics as src/backend/ref/ref_nn_*.c. */
#include "cpu.h"
#include "simd.h"

#include <math.h>

/* ---- pooling ---- */

/* The first maximum in row-major order, a NaN wins: ref_nn_pool.c's rule.
 * x: one plane; ia [kH, kW, sH, sW, pH, pW]. */
static int64_t argmax_win(const void *x, int bf16, const int64_t *ia, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    int64_t h0 = oh * ia[2] - ia[4], w0 = ow * ia[3] - ia[5], h1 = h0 + ia[0], w1 = w0 + ia[1];
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > H) h1 = H;
    if (w1 > W) w1 = W;
    int64_t best = h0 * W + w0;
    float mx = -INFINITY;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) {
            float v = ld_act(x, bf16, h * W + w);
            if (v > mx || v != v) {
                mx = v;
                best = h * W + w;
            }
        }
    return best;
}

/* MAX_POOL2D (x) -> (N, C, oH, oW), or MAX_POOL2D_BWD (g, x) -> dx (N, C, H, W);
 * float32 or bfloat16 throughout (the backward sums in float, rounding each
 * sum once, as the reference does). -1: out of memory. */
static int max_pool(const gnode *y, const int64_t *xs, const int64_t *os, void *const *in, void *out) {
    int bwd = y->op == LT_OP_MAX_POOL2D_BWD, bf16 = y->dtype == LT_BF16;
    const char *x = in[bwd];
    const void *g = in[0];
    int64_t H = xs[2], W = xs[3], oH = os[2], oW = os[3], planes = xs[0] * xs[1];
    size_t es = bf16 ? 2 : 4;
    float *acc = bwd && bf16 ? core_malloc((size_t)NUM_THREADS() * (size_t)(H * W) * sizeof *acc) : NULL;
    if (bwd && bf16 && !acc) return -1;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        const char *xp = x + (size_t)(p * H * W) * es;
        if (bwd) {
            float *dp = acc ? acc + (size_t)THREAD_NUM() * (size_t)(H * W) : (float *)out + p * H * W;
            memset(dp, 0, (size_t)(H * W) * sizeof *dp);
            for (int64_t oh = 0; oh < oH; oh++)
                for (int64_t ow = 0; ow < oW; ow++)
                    dp[argmax_win(xp, bf16, y->ia, H, W, oh, ow)] += ld_act(g, bf16, (p * oH + oh) * oW + ow);
            if (acc)
                for (int64_t i = 0; i < H * W; i++) st_act(out, 1, p * H * W + i, dp[i]);
        } else {
            for (int64_t oh = 0; oh < oH; oh++)
                for (int64_t ow = 0; ow < oW; ow++)
                    st_act(out, bf16, (p * oH + oh) * oW + ow,
                           ld_act(xp, bf16, argmax_win(xp, bf16, y->ia, H, W, oh, ow)));
        }
    }
    core_free(acc);
    return 0;
}

/* PyTorch's adaptive window of output cell o: [floor(o*I/O), ceil((o+1)*I/O)). */
static int64_t ad_start(int64_t o, int64_t I, int64_t O) { return o * I / O; }
static int64_t ad_end(int64_t o, int64_t I, int64_t O) { return ((o + 1) * I + O - 1) / O; }

/* The sum of n activations at p, in float. */
static float run_sum(const char *p, int bf16, int64_t n) {
    float r = 0;
    if (bf16) {
        const uint16_t *h = (const uint16_t *)p;
        OMP_SIMD_SUM(r)
        for (int64_t i = 0; i < n; i++) r += bf16_to_f32(h[i]);
    } else {
        const float *f = (const float *)p;
        OMP_SIMD_SUM(r)
        for (int64_t i = 0; i < n; i++) r += f[i];
    }
    return r;
}

/* ADAPTIVE_AVG_POOL2D (x) -> y, or its BWD (g) -> dx; xs: the input's
 * shape; float32 or bfloat16 throughout (the backward sums in float, each
 * sum rounded once, as the reference does). -1: out of memory. */
static int adaptive_avg(const gnode *y, const int64_t *xs, const int64_t *os, const void *in, void *out) {
    int bwd = y->op == LT_OP_ADAPTIVE_AVG_POOL2D_BWD, bf16 = y->dtype == LT_BF16;
    int64_t H = xs[2], W = xs[3], oH = os[2], oW = os[3], planes = xs[0] * xs[1];
    size_t es = bf16 ? 2 : 4;
    float *acc = bwd && bf16 ? core_malloc((size_t)NUM_THREADS() * (size_t)(H * W) * sizeof *acc) : NULL;
    if (bwd && bf16 && !acc) return -1;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        float *dp = !bwd ? NULL : acc ? acc + (size_t)THREAD_NUM() * (size_t)(H * W) : (float *)out + p * H * W;
        if (bwd) memset(dp, 0, (size_t)(H * W) * sizeof *dp);
        for (int64_t oh = 0; oh < oH; oh++)
            for (int64_t ow = 0; ow < oW; ow++) {
                int64_t h0 = ad_start(oh, H, oH), h1 = ad_end(oh, H, oH);
                int64_t w0 = ad_start(ow, W, oW), w1 = ad_end(ow, W, oW);
                float inv = 1.0f / (float)((h1 - h0) * (w1 - w0));
                if (bwd) {
                    float gv = ld_act(in, bf16, (p * oH + oh) * oW + ow) * inv;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) dp[h * W + w] += gv;
                } else {
                    double s = 0;
                    for (int64_t h = h0; h < h1; h++)
                        s += run_sum((const char *)in + (size_t)(p * H * W + h * W + w0) * es, bf16, w1 - w0);
                    st_act(out, bf16, (p * oH + oh) * oW + ow, (float)(s * inv));
                }
            }
        if (acc)
            for (int64_t i = 0; i < H * W; i++) st_act(out, 1, p * H * W + i, dp[i]);
    }
    core_free(acc);
    return 0;
}

/* Global average pooling (a 1x1 output) and its backward with the image
 * side (x, or dx) channel-blocked (layout.c): plane p = n * C/16 + c/16
 * holds 16 channels side by side; the (N, C, 1, 1) side is the same bytes
 * in either layout. Same arithmetic as adaptive_avg. */
static void global_avg_blocked(const gnode *y, const int64_t *xs, const void *in, void *out) {
    int bwd = y->op == LT_OP_ADAPTIVE_AVG_POOL2D_BWD, bf16 = y->dtype == LT_BF16;
    int64_t HW = xs[2] * xs[3], planes = xs[0] * (xs[1] / 16);
    float inv = 1.0f / (float)HW;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        if (bwd) {
            float gv[16];
            for (int i = 0; i < 16; i++) gv[i] = ld_act(in, bf16, p * 16 + i) * inv;
            for (int64_t k = 0; k < HW; k++)
                for (int i = 0; i < 16; i++) st_act(out, bf16, (p * HW + k) * 16 + i, gv[i]);
        } else {
            double s[16] = {0};
            for (int64_t k = 0; k < HW; k++)
                for (int i = 0; i < 16; i++) s[i] += ld_act(in, bf16, (p * HW + k) * 16 + i);
            for (int i = 0; i < 16; i++) st_act(out, bf16, p * 16 + i, (float)(s[i] * inv));
        }
    }
}

/* ---- batch norm: x (N, C, *), channel c of sample n is the run of `inner`
 * floats at (n * C + c) * inner ---- */

static bn_geom bn_geom_of(const gnode *x) {
    bn_geom b = {x->shape[0], x->shape[1], 1, x->dtype == LT_BF16};
    for (int d = 2; d < x->ndim; d++) b.inner *= x->shape[d];
    return b;
}

/* The statistics at operand `first`: (2, C) batch stats or rmean, rvar. */
typedef struct bn_stats {
    const float *m, *v;
    int next; /* the operand after them */
} bn_stats;

static bn_stats stats_at(void *const *in, int first, int batch, int64_t C) {
    const float *s = in[first];
    if (batch) return (bn_stats){s, s + C, first + 1};
    return (bn_stats){s, in[first + 1], first + 2};
}

/* The loops once for float activations and once for bfloat16 ones
 * (bn_plain_body.h); statistics and parameters are float32 in both. */
#define A float
#define LD(v) (v)
#define ST(f) (f)
#define FN(x) x##_f32
#include "bn_plain_body.h"
#undef A
#undef LD
#undef ST
#undef FN
#define A uint16_t
#define LD(v) bf16_to_f32(v)
#define ST(f) bf16_from_f32(f)
#define FN(x) x##_bf16
#include "bn_plain_body.h"
#undef A
#undef LD
#undef ST
#undef FN

static void bn_stats_run(const gnode *x, const void *xs, float *out, int blocked) {
    bn_geom b = bn_geom_of(x);
    if (blocked) bn_blk_stats(b, xs, out);
    else if (x->dtype == LT_BF16) bn_stats_bf16(b, xs, out);
    else bn_stats_f32(b, xs, out);
}

/* BN_APPLY (x, stats | rmean, rvar, [w], [b]); ia [batch, has_w, has_b]; sc [eps].
 * act (K_BN_ACT): out = relu(bn + res), res NULL or of x's shape and layout. */
static void bn_apply_run(const gnode *y, const gnode *x, void *const *in, double eps, const void *res, int act,
                         void *out, int blocked) {
    bn_geom b = bn_geom_of(x);
    bn_stats st = stats_at(in, 1, (int)y->ia[0], b.C);
    const float *w = y->ia[1] ? in[st.next] : NULL, *bias = y->ia[2] ? in[st.next + (w != NULL)] : NULL;
    if (blocked) bn_blk_apply(b, in[0], st.m, st.v, w, bias, eps, res, act, out);
    else if (x->dtype == LT_BF16) bn_apply_bf16(b, st, in[0], w, bias, eps, res, act, out);
    else bn_apply_f32(b, st, in[0], w, bias, eps, res, act, out);
}

/* BN_BWD_INPUT (g, x, stats | rmean, rvar, [w]) -> dx; ia [batch, has_w].
 * BN_BWD_PARAMS (g, x, stats | rmean, rvar) -> (2, C) [sum(g xhat); sum(g)].
 * batch: dx = w is (g - mean(g) - xhat mean(g xhat)); else dx = w is g.
 * y is either node; dx and sums are the outputs wanted (one may be NULL);
 * g comes from gr (bn_grad, cpu.h), in[0] is not read. */
static void bn_bwd_run(const gnode *y, const gnode *x, void *const *in, bn_grad gr, double eps, void *dx, float *sums,
                       int blocked) {
    bn_geom b = bn_geom_of(x);
    int batch = (int)y->ia[0];
    bn_stats st = stats_at(in, 2, batch, b.C);
    const float *w = dx && y->ia[1] ? in[st.next] : NULL;
    if (blocked) bn_blk_bwd(b, gr, in[1], st.m, st.v, w, batch, eps, dx, sums);
    else if (x->dtype == LT_BF16) bn_bwd_bf16(b, st, batch, gr, in[1], w, eps, dx, sums);
    else bn_bwd_f32(b, st, batch, gr, in[1], w, eps, dx, sums);
}

int cpu_bn_ok(const exec_graph *g, const gnode *y) {
    if (y->op != LT_OP_BN_STATS && y->op != LT_OP_BN_APPLY && y->op != LT_OP_BN_BWD_INPUT &&
        y->op != LT_OP_BN_BWD_PARAMS)
        return 0;
    int nact = y->op == LT_OP_BN_STATS || y->op == LT_OP_BN_APPLY ? 1 : 2;
    int out_act = y->op == LT_OP_BN_APPLY || y->op == LT_OP_BN_BWD_INPUT;
    int act = g->nodes[y->in[0]].dtype;
    if (act != LT_F32 && act != LT_BF16) return 0;
    for (int i = 0; i < y->nin; i++)
        if (g->nodes[y->in[i]].dtype != (i < nact ? act : LT_F32)) return 0;
    return y->dtype == (out_act ? act : LT_F32);
}

int cpu_pool_ok(const exec_graph *g, const gnode *y) {
    if (y->op != LT_OP_MAX_POOL2D && y->op != LT_OP_MAX_POOL2D_BWD && y->op != LT_OP_ADAPTIVE_AVG_POOL2D &&
        y->op != LT_OP_ADAPTIVE_AVG_POOL2D_BWD)
        return 0;
    if (y->dtype != LT_F32 && y->dtype != LT_BF16) return 0;
    for (int i = 0; i < y->nin; i++)
        if (g->nodes[y->in[i]].dtype != y->dtype) return 0;
    return 1;
}

size_t cpu_nn_scratch(const exec_graph *g, const gnode *y) {
    return y->op == LT_OP_ATTENTION || y->op == LT_OP_ATTENTION_BWD ? cpu_attention_scratch(g, y) : 0;
}

int cpu_nn_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out, int blocked,
               uint8_t views, uint8_t casts, cpu_scratch scratch) {
    if (y->nin == 0) return -1; /* creation ops: none of ours, and y->in points past the pool */
    const gnode *a0 = &g->nodes[y->in[0]];
    if (y->op == LT_OP_CROSS_ENTROPY || y->op == LT_OP_CROSS_ENTROPY_BWD) /* int64 targets: checks its own dtypes */
        return cpu_cross_entropy_run(g, y, in, sc, out);
    if (y->op == LT_OP_INDEX_ADD) return cpu_index_add_run(g, y, in, out); /* so do the indices */
    int as_bwd_bf16 = y->op == LT_OP_AS_STRIDED_BACKWARD && y->dtype == LT_BF16 && a0->dtype == LT_BF16;
    /* else float32 or bfloat16 activations */
    if (!cpu_bn_ok(g, y) && !cpu_pool_ok(g, y) && !cpu_ln_ok(g, y) && !cpu_attention_ok(g, y) && !as_bwd_bf16) {
        if (y->dtype != LT_F32) return -1;
        for (int i = 0; i < y->nin; i++)
            if (g->nodes[y->in[i]].dtype != LT_F32) return -1;
    }
    int bf16 = y->dtype == LT_BF16;
    switch ((enum lt_op)y->op) {
    case LT_OP_MAX_POOL2D:
        if (!blocked) return max_pool(y, a0->shape, y->shape, in, out);
        pool_blk_max(a0->shape, y->shape, y->ia, bf16, in[0], out);
        return 0;
    case LT_OP_MAX_POOL2D_BWD:
        if (blocked) return pool_blk_max_bwd(y->shape, a0->shape, y->ia, bf16, in[0], in[1], out);
        return max_pool(y, y->shape, a0->shape, in, out);
    case LT_OP_ADAPTIVE_AVG_POOL2D:
        if (!blocked) return adaptive_avg(y, a0->shape, y->shape, in[0], out);
        global_avg_blocked(y, a0->shape, in[0], out);
        return 0;
    case LT_OP_ADAPTIVE_AVG_POOL2D_BWD:
        if (!blocked) return adaptive_avg(y, y->shape, a0->shape, in[0], out);
        global_avg_blocked(y, y->shape, in[0], out);
        return 0;
    case LT_OP_BN_STATS: bn_stats_run(a0, in[0], out, blocked); return 0;
    case LT_OP_BN_APPLY: bn_apply_run(y, a0, in, sc[0], NULL, 0, out, blocked); return 0;
    case LT_OP_BN_BWD_INPUT: bn_bwd_run(y, &g->nodes[y->in[1]], in, (bn_grad){.a = in[0]}, sc[0], out, NULL, blocked); return 0;
    case LT_OP_BN_BWD_PARAMS: bn_bwd_run(y, &g->nodes[y->in[1]], in, (bn_grad){.a = in[0]}, sc[0], NULL, out, blocked); return 0;
    case LT_OP_LAYER_NORM: case LT_OP_LN_BWD_INPUT: case LT_OP_LN_BWD_PARAMS: case LT_OP_GRAD_NORM:
        return cpu_transformer_run(g, y, in, sc, out, casts);
    case LT_OP_ATTENTION: case LT_OP_ATTENTION_BWD: return cpu_attention_run(g, y, in, sc, out, views, scratch);
    case LT_OP_CUMSUM: return cpu_cumsum_run(y, a0, in[0], out);
    case LT_OP_FLIP: return cpu_flip_run(y, in[0], out);
    case LT_OP_AS_STRIDED_BACKWARD: return cpu_as_strided_backward(y, a0, in[0], y->nin == 2 ? in[1] : NULL, out);
    default: return -1; /* every other op: oneDNN, another fast path, or the reference */
    }
}

void cpu_bn_act(const exec_graph *g, const gnode *y, void *const *in, double eps, const void *res, void *out,
                int blocked) {
    bn_apply_run(y, &g->nodes[y->in[0]], in, eps, res, 1, out, blocked);
}

void cpu_bn_bwd_pair(const exec_graph *g, const gnode *y, void *const *in, bn_grad gr, double eps, void *dx,
                     void *sums, int blocked) {
    bn_bwd_run(y, &g->nodes[y->in[1]], in, gr, eps, dx, sums, blocked);
}
