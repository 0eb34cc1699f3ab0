/* Reference pooling, forward and backward, with PyTorch's window rules.
 * MAX/AVG ia: [kH, kW, sH, sW, pH, pW, H, W, ceil_mode, count_include_pad,
 * divisor_override]; ceil_mode is in the output shape already. Max pooling
 * pads with -inf (padding is never a candidate); average pooling divides
 * by the window clipped to the padded image (count_include_pad), or to the
 * image, or by divisor_override when it is not 0. */
#include "ref_nn.h"

typedef struct win {
    int64_t h0, h1, w0, w1; /* clamped to the image */
    double size;            /* divisor: the window including padding */
} win;

static win window(const int64_t *ia, int64_t H, int64_t W, int64_t oh, int64_t ow) {
    int64_t h0 = oh * ia[2] - ia[4], w0 = ow * ia[3] - ia[5];
    int64_t h1 = h0 + ia[0], w1 = w0 + ia[1];
    if (h1 > H + ia[4]) h1 = H + ia[4];
    if (w1 > W + ia[5]) w1 = W + ia[5];
    win r = {h0, h1, w0, w1, (double)((h1 - h0) * (w1 - w0))};
    if (r.h0 < 0) r.h0 = 0;
    if (r.w0 < 0) r.w0 = 0;
    if (r.h1 > H) r.h1 = H;
    if (r.w1 > W) r.w1 = W;
    if (!ia[9]) r.size = (double)((r.h1 - r.h0) * (r.w1 - r.w0));
    if (ia[10]) r.size = (double)ia[10];
    return r;
}

/* The input offset (within one plane) that max pooling picks, as PyTorch's
 * CPU kernel: the first maximum in row-major order, a NaN wins (the last
 * one). An all -inf window picks its first element. */
static int64_t argmax_in(const ref_arg *x, int64_t plane, win r, int64_t W) {
    int64_t best = r.h0 * W + r.w0;
    double mx = -INFINITY;
    for (int64_t h = r.h0; h < r.h1; h++)
        for (int64_t w = r.w0; w < r.w1; w++) {
            double v = ld_f(x->data, x->dtype, plane + h * W + w);
            if (v > mx || v != v) {
                mx = v;
                best = h * W + w;
            }
        }
    return best;
}

/* in: x (N, C, H, W) -> (N, C, oH, oW) */
void ref_pool2d(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *x = &in[0];
    int64_t H = x->shape[2], W = x->shape[3], oH = y->shape[2], oW = y->shape[3];
    int64_t planes = y->shape[0] * y->shape[1];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oh = 0; oh < oH; oh++)
            for (int64_t ow = 0; ow < oW; ow++) {
                win r = window(y->ia, H, W, oh, ow);
                double v = 0;
                if (y->op == LT_OP_MAX_POOL2D) {
                    v = ld_f(x->data, x->dtype, p * H * W + argmax_in(x, p * H * W, r, W));
                } else if (!dtype_is_float((lt_dtype)x->dtype)) { /* PyTorch: an integer sum, truncated */
                    int64_t sum = 0;
                    for (int64_t h = r.h0; h < r.h1; h++)
                        for (int64_t w = r.w0; w < r.w1; w++) sum += ld_i(x->data, x->dtype, p * H * W + h * W + w);
                    st_i(out, (lt_dtype)y->dtype, (p * oH + oh) * oW + ow, sum / (int64_t)r.size);
                    continue;
                } else {
                    for (int64_t h = r.h0; h < r.h1; h++)
                        for (int64_t w = r.w0; w < r.w1; w++) v += ld_f(x->data, x->dtype, p * H * W + h * W + w);
                    v /= r.size;
                }
                st_f(out, (lt_dtype)y->dtype, (p * oH + oh) * oW + ow, v);
            }
}

/* MAX_POOL2D_INDICES in: x (N, C, H, W) -> int64 (N, C, oH, oW): the
 * offset within its plane of each window's maximum, as aten's
 * max_pool2d_with_indices (the element MAX_POOL2D picks). */
void ref_max_pool2d_indices(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *x = &in[0];
    int64_t H = x->shape[2], W = x->shape[3], oH = y->shape[2], oW = y->shape[3];
    for (int64_t p = 0; p < y->shape[0] * y->shape[1]; p++)
        for (int64_t oh = 0; oh < oH; oh++)
            for (int64_t ow = 0; ow < oW; ow++)
                ((int64_t *)out)[(p * oH + oh) * oW + ow] = argmax_in(x, p * H * W, window(y->ia, H, W, oh, ow), W);
}

/* MAX_POOL2D_BWD in: grad_out (N, C, oH, oW), x (N, C, H, W);
 * AVG_POOL2D_BWD in: grad_out. Both -> grad_x (N, C, H, W). */
void ref_pool2d_bwd(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *g = &in[0];
    int64_t H = y->shape[2], W = y->shape[3], oH = g->shape[2], oW = g->shape[3];
    int64_t planes = y->shape[0] * y->shape[1];
    double *acc = ref_scratch(y->numel);
    for (int64_t p = 0; p < planes; p++)
        for (int64_t oh = 0; oh < oH; oh++)
            for (int64_t ow = 0; ow < oW; ow++) {
                win r = window(y->ia, H, W, oh, ow);
                double gv = ld_f(g->data, g->dtype, (p * oH + oh) * oW + ow);
                if (y->op == LT_OP_MAX_POOL2D_BWD) {
                    acc[p * H * W + argmax_in(&in[1], p * H * W, r, W)] += gv;
                } else {
                    for (int64_t h = r.h0; h < r.h1; h++)
                        for (int64_t w = r.w0; w < r.w1; w++) acc[p * H * W + h * W + w] += gv / r.size;
                }
            }
    for (int64_t i = 0; i < y->numel; i++) st_f(out, (lt_dtype)y->dtype, i, acc[i]);
}

/* PyTorch's adaptive window of output cell o: [floor(o*I/O), ceil((o+1)*I/O)). */
static int64_t ad_start(int64_t o, int64_t I, int64_t O) { return o * I / O; }
static int64_t ad_end(int64_t o, int64_t I, int64_t O) { return ((o + 1) * I + O - 1) / O; }

/* in: x (N, C, H, W) -> (N, C, oH, oW); ia: [oH, oW] */
void ref_adaptive_avg_pool2d(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *x = &in[0];
    int64_t H = x->shape[2], W = x->shape[3], oH = y->shape[2], oW = y->shape[3];
    for (int64_t p = 0; p < y->shape[0] * y->shape[1]; p++)
        for (int64_t oh = 0; oh < oH; oh++)
            for (int64_t ow = 0; ow < oW; ow++) {
                int64_t h0 = ad_start(oh, H, oH), h1 = ad_end(oh, H, oH);
                int64_t w0 = ad_start(ow, W, oW), w1 = ad_end(ow, W, oW);
                double s = 0;
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++) s += ld_f(x->data, x->dtype, p * H * W + h * W + w);
                st_f(out, (lt_dtype)y->dtype, (p * oH + oh) * oW + ow, s / (double)((h1 - h0) * (w1 - w0)));
            }
}

/* in: grad_out (N, C, oH, oW) -> grad_x (N, C, H, W); ia: [H, W] */
void ref_adaptive_avg_pool2d_bwd(const gnode *y, const ref_arg *in, void *out) {
    const ref_arg *g = &in[0];
    int64_t H = y->shape[2], W = y->shape[3], oH = g->shape[2], oW = g->shape[3];
    double *acc = ref_scratch(y->numel);
    for (int64_t p = 0; p < y->shape[0] * y->shape[1]; p++)
        for (int64_t oh = 0; oh < oH; oh++)
            for (int64_t ow = 0; ow < oW; ow++) {
                int64_t h0 = ad_start(oh, H, oH), h1 = ad_end(oh, H, oH);
                int64_t w0 = ad_start(ow, W, oW), w1 = ad_end(ow, W, oW);
                double gv = ld_f(g->data, g->dtype, (p * oH + oh) * oW + ow) / (double)((h1 - h0) * (w1 - w0));
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++) acc[p * H * W + h * W + w] += gv;
            }
    for (int64_t i = 0; i < y->numel; i++) st_f(out, (lt_dtype)y->dtype, i, acc[i]);
}
