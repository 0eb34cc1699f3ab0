/* Fast float32 C kernels for the NN ops whose IR split does not map onto a
 * oneDNN primitive (DESIGN 6): max pooling (oneDNN's backward wants the
 * forward's workspace, so we recompute the argmax, as the reference does;
 * oneDNN's forward drops NaNs, PyTorch's propagates them; the blocked-layout
 * loops are in pool_blocked.c), adaptive
 * average pooling, and batch norm, whose statistics, normalization and two
 * backward halves are separate nodes. Memory-bound loops, parallel over
 * planes or channels; sums of a contiguous run in float (vectorized), runs
 * accumulated in double. Same semantics as src/backend/ref/ref_nn_*.c. */
#include "cpu.h"

#include <math.h>

/* ---- pooling ---- */

/* The first maximum in row-major order, a NaN wins: ref_nn_pool.c's rule.
 * ia [kH, kW, sH, sW, pH, pW]. */
static int64_t argmax_win(const float *x, const int64_t *ia, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    int64_t h0 = oh * ia[2] - ia[4], w0 = ow * ia[3] - ia[5], h1 = h0 + ia[0], w1 = w0 + ia[1];
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > H) h1 = H;
    if (w1 > W) w1 = W;
    int64_t best = h0 * W + w0;
    float mx = -INFINITY;
    for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) {
            float v = x[h * W + w];
            if (v > mx || v != v) {
                mx = v;
                best = h * W + w;
            }
        }
    return best;
}

/* MAX_POOL2D (x) -> (N, C, oH, oW), or MAX_POOL2D_BWD (g, x) -> dx (N, C, H, W). */
static void max_pool(const gnode *y, const int64_t *xs, const int64_t *os, void *const *in, float *out) {
    int bwd = y->op == LT_OP_MAX_POOL2D_BWD;
    const float *x = in[bwd], *g = in[0];
    int64_t H = xs[2], W = xs[3], oH = os[2], oW = os[3], planes = xs[0] * xs[1];
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * H * W;
        if (bwd) {
            float *dp = out + p * H * W;
            const float *gp = g + p * oH * oW;
            memset(dp, 0, (size_t)(H * W) * sizeof *dp);
            for (int64_t oh = 0; oh < oH; oh++)
                for (int64_t ow = 0; ow < oW; ow++) dp[argmax_win(xp, y->ia, H, W, oh, ow)] += gp[oh * oW + ow];
        } else {
            float *yp = out + p * oH * oW;
            for (int64_t oh = 0; oh < oH; oh++)
                for (int64_t ow = 0; ow < oW; ow++) yp[oh * oW + ow] = xp[argmax_win(xp, y->ia, H, W, oh, ow)];
        }
    }
}

/* PyTorch's adaptive window of output cell o: [floor(o*I/O), ceil((o+1)*I/O)). */
static int64_t ad_start(int64_t o, int64_t I, int64_t O) { return o * I / O; }
static int64_t ad_end(int64_t o, int64_t I, int64_t O) { return ((o + 1) * I + O - 1) / O; }

/* ADAPTIVE_AVG_POOL2D (x) -> y, or its BWD (g) -> dx; xs: the input's shape. */
static void adaptive_avg(const gnode *y, const int64_t *xs, const int64_t *os, const float *in, float *out) {
    int bwd = y->op == LT_OP_ADAPTIVE_AVG_POOL2D_BWD;
    int64_t H = xs[2], W = xs[3], oH = os[2], oW = os[3], planes = xs[0] * xs[1];
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        if (bwd) memset(out + p * H * W, 0, (size_t)(H * W) * sizeof *out);
        for (int64_t oh = 0; oh < oH; oh++)
            for (int64_t ow = 0; ow < oW; ow++) {
                int64_t h0 = ad_start(oh, H, oH), h1 = ad_end(oh, H, oH);
                int64_t w0 = ad_start(ow, W, oW), w1 = ad_end(ow, W, oW);
                float inv = 1.0f / (float)((h1 - h0) * (w1 - w0));
                if (bwd) {
                    float gv = in[(p * oH + oh) * oW + ow] * inv, *dp = out + p * H * W;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) dp[h * W + w] += gv;
                } else {
                    const float *xp = in + p * H * W;
                    double s = 0;
                    for (int64_t h = h0; h < h1; h++) {
                        float r = 0;
#pragma omp simd reduction(+ : r)
                        for (int64_t w = w0; w < w1; w++) r += xp[h * W + w];
                        s += r;
                    }
                    out[(p * oH + oh) * oW + ow] = (float)(s * inv);
                }
            }
    }
}

/* ---- batch norm: x (N, C, *), channel c of sample n is the run of `inner`
 * floats at (n * C + c) * inner ---- */

static bn_geom bn_geom_of(const gnode *x) {
    bn_geom b = {x->shape[0], x->shape[1], 1};
    for (int d = 2; d < x->ndim; d++) b.inner *= x->shape[d];
    return b;
}

/* Per channel c: s[0] = sum(a - m), s[1] = sum((a - m) * (b - m2)) with b
 * NULL meaning b = a (variance): the shapes of every BN reduction. */
static void chan_sums(bn_geom b, int64_t c, const float *a, const float *bb, float m, float m2, double *s) {
    double s0 = 0, s1 = 0;
    for (int64_t n = 0; n < b.N; n++) {
        const float *ap = a + (n * b.C + c) * b.inner, *bp = bb ? bb + (n * b.C + c) * b.inner : ap;
        float r0 = 0, r1 = 0;
        /* simd reduction: lets the compiler reorder the float sums (vectorize) without -ffast-math */
#pragma omp simd reduction(+ : r0, r1)
        for (int64_t k = 0; k < b.inner; k++) {
            r0 += ap[k] - m;
            r1 += (ap[k] - m) * (bp[k] - m2);
        }
        s0 += r0;
        s1 += r1;
    }
    s[0] = s0;
    s[1] = s1;
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

/* BN_STATS: (2, C) [mean; biased var], two passes: a float mean m, then
 * sums of (x - m) and (x - m)^2 that correct both for m's error (the first
 * pass sums runs in float: far from zero that is an ulp or two). (One pass
 * shifted by a sample lost up to (mean - K)^2 / var ulps where the sample
 * sat far from the mean: enough to move a 20-step ResNet-20 run off
 * PyTorch's losses by 5e-4.) No data: NaN, as 0/0. */
static void bn_stats_run(const gnode *x, const float *xs, float *out, int blocked) {
    bn_geom b = bn_geom_of(x);
    if (blocked) {
        bn_blk_stats(b, xs, out);
        return;
    }
    double cnt = (double)(b.N * b.inner);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < b.C; c++) {
        double s[2];
        chan_sums(b, c, xs, NULL, 0, 0, s);
        float m = (float)(s[0] / cnt);
        chan_sums(b, c, xs, NULL, m, m, s);
        double d = s[0]; /* sum(x - m): what m missed */
        out[c] = (float)((double)m + d / cnt);
        out[b.C + c] = (float)((s[1] - d * d / cnt) / cnt);
    }
}

/* BN_APPLY (x, stats | rmean, rvar, [w], [b]); ia [batch, has_w, has_b]; sc [eps]. */
static void bn_apply_run(const gnode *y, const gnode *x, void *const *in, double eps, float *out, int blocked) {
    bn_geom b = bn_geom_of(x);
    bn_stats st = stats_at(in, 1, (int)y->ia[0], b.C);
    const float *xs = in[0], *w = y->ia[1] ? in[st.next] : NULL, *bias = y->ia[2] ? in[st.next + (w != NULL)] : NULL;
    if (blocked) {
        bn_blk_apply(b, xs, st.m, st.v, w, bias, eps, out);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < b.N * b.C; nc++) {
        int64_t c = nc % b.C;
        double is = 1.0 / sqrt((double)st.v[c] + eps);
        /* (x - m) * sc + bias, not x * sc + (bias - m * sc): far from zero
         * with a small variance the second cancels (x * sc ~ 1e3, 1e-4 off) */
        float sc = (float)(is * (w ? w[c] : 1.0)), m = st.m[c], sh = bias ? bias[c] : 0.0f;
        const float *xp = xs + nc * b.inner;
        float *yp = out + nc * b.inner;
        for (int64_t k = 0; k < b.inner; k++) yp[k] = (xp[k] - m) * sc + sh;
    }
}

/* BN_BWD_INPUT (g, x, stats | rmean, rvar, [w]) -> dx; ia [batch, has_w].
 * BN_BWD_PARAMS (g, x, stats | rmean, rvar) -> (2, C) [sum(g xhat); sum(g)].
 * batch: dx = w is (g - mean(g) - xhat mean(g xhat)); else dx = w is g.
 * y is either node; dx and sums are the outputs wanted (one may be NULL). */
static void bn_bwd_run(const gnode *y, const gnode *x, void *const *in, double eps, float *dx, float *sums,
                       int blocked) {
    bn_geom b = bn_geom_of(x);
    int batch = (int)y->ia[0];
    bn_stats st = stats_at(in, 2, batch, b.C);
    const float *g = in[0], *xs = in[1], *w = dx && y->ia[1] ? in[st.next] : NULL;
    if (blocked) {
        bn_blk_bwd(b, g, xs, st.m, st.v, w, batch, eps, dx, sums);
        return;
    }
    double cnt = (double)(b.N * b.inner);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < b.C; c++) {
        double is = 1.0 / sqrt((double)st.v[c] + eps), s[2] = {0, 0};
        float m = st.m[c];
        if (batch || sums) chan_sums(b, c, g, xs, 0, m, s); /* s[1] = sum(g (x - m)) */
        if (sums) {
            sums[c] = (float)(s[1] * is);
            sums[b.C + c] = (float)s[0];
        }
        if (!dx) continue;
        float k = (float)((w ? w[c] : 1.0) * is);
        float mg = (float)(s[0] / cnt), cx = (float)(s[1] * is * is / cnt); /* mean(g), mean(g xhat) * is */
        for (int64_t n = 0; n < b.N; n++) {
            const float *gp = g + (n * b.C + c) * b.inner, *xp = xs + (n * b.C + c) * b.inner;
            float *dp = dx + (n * b.C + c) * b.inner;
            if (batch)
                for (int64_t i = 0; i < b.inner; i++) dp[i] = k * (gp[i] - mg - (xp[i] - m) * cx);
            else
                for (int64_t i = 0; i < b.inner; i++) dp[i] = k * gp[i];
        }
    }
}

int cpu_nn_run(const exec_graph *g, const gnode *y, void *const *in, const double *sc, void *out, int blocked) {
    if (y->dtype != LT_F32) return -1;
    for (int i = 0; i < y->nin; i++)
        if (g->nodes[y->in[i]].dtype != LT_F32) return -1;
    const gnode *a0 = &g->nodes[y->in[0]];
    switch ((enum lt_op)y->op) {
    case LT_OP_MAX_POOL2D:
        if (blocked) pool_blk_max(a0->shape, y->shape, y->ia, in[0], out);
        else max_pool(y, a0->shape, y->shape, in, out);
        return 0;
    case LT_OP_MAX_POOL2D_BWD:
        if (blocked) pool_blk_max_bwd(y->shape, a0->shape, y->ia, in[0], in[1], out);
        else max_pool(y, y->shape, a0->shape, in, out);
        return 0;
    case LT_OP_ADAPTIVE_AVG_POOL2D: adaptive_avg(y, a0->shape, y->shape, in[0], out); return 0;
    case LT_OP_ADAPTIVE_AVG_POOL2D_BWD: adaptive_avg(y, y->shape, a0->shape, in[0], out); return 0;
    case LT_OP_BN_STATS: bn_stats_run(a0, in[0], out, blocked); return 0;
    case LT_OP_BN_APPLY: bn_apply_run(y, a0, in, sc[0], out, blocked); return 0;
    case LT_OP_BN_BWD_INPUT: bn_bwd_run(y, &g->nodes[y->in[1]], in, sc[0], out, NULL, blocked); return 0;
    case LT_OP_BN_BWD_PARAMS: bn_bwd_run(y, &g->nodes[y->in[1]], in, sc[0], NULL, out, blocked); return 0;
    case LT_OP_LAYER_NORM: case LT_OP_LN_BWD_INPUT: case LT_OP_LN_BWD_PARAMS: case LT_OP_ATTENTION:
    case LT_OP_ATTENTION_BWD: case LT_OP_GRAD_NORM:
        return cpu_transformer_run(g, y, in, sc, out);
    default: return -1; /* every other op: oneDNN, another fast path, or the reference */
    }
}

void cpu_bn_bwd_pair(const exec_graph *g, const gnode *y, void *const *in, double eps, void *dx, void *sums,
                     int blocked) {
    bn_bwd_run(y, &g->nodes[y->in[1]], in, eps, dx, sums, blocked);
}
