/* Reference conv2d and its two backward ops: direct loops, accumulation in
 * double. ia of all three: [sH, sW, pH, pW, dH, dW, groups, ...]; the
 * backward ops add the spatial size they cannot infer: BWD_INPUT [.., H, W],
 * BWD_WEIGHT [.., kH, kW] (both also in the output shape). */
#include "ref_nn.h"

typedef struct conv_geom {
    int64_t N, C, H, W, O, kH, kW, oH, oW, g, Cg, Og;
    int64_t sH, sW, pH, pW, dH, dW;
} conv_geom;

static conv_geom geom(const int64_t *ia, const int64_t *x, const int64_t *w, const int64_t *o) {
    conv_geom c = {.N = x[0], .C = x[1], .H = x[2], .W = x[3], .O = w[0], .kH = w[2], .kW = w[3],
                   .oH = o[2], .oW = o[3], .g = ia[6], .sH = ia[0], .sW = ia[1], .pH = ia[2],
                   .pW = ia[3], .dH = ia[4], .dW = ia[5]};
    c.Cg = c.C / c.g;
    c.Og = c.O / c.g;
    return c;
}

/* Visits every (output position, weight tap) pair: BODY where the input
 * position is inside the image, PAD where it falls in the zero padding.
 * The one loop nest all three ops share. */
#define CONV_FOR(c, BODY, PAD)                                                                \
    for (int64_t n = 0; n < (c).N; n++)                                                       \
        for (int64_t o = 0; o < (c).O; o++)                                                   \
            for (int64_t oh = 0; oh < (c).oH; oh++)                                           \
                for (int64_t ow = 0; ow < (c).oW; ow++)                                       \
                    for (int64_t ci = 0; ci < (c).Cg; ci++)                                   \
                        for (int64_t kh = 0; kh < (c).kH; kh++)                               \
                            for (int64_t kw = 0; kw < (c).kW; kw++) {                         \
                                int64_t ih = oh * (c).sH - (c).pH + kh * (c).dH;              \
                                int64_t iw = ow * (c).sW - (c).pW + kw * (c).dW;              \
                                int64_t wi = ((o * (c).Cg + ci) * (c).kH + kh) * (c).kW + kw; \
                                int64_t yi = ((n * (c).O + o) * (c).oH + oh) * (c).oW + ow;   \
                                if (ih < 0 || ih >= (c).H || iw < 0 || iw >= (c).W) {         \
                                    PAD;                                                      \
                                    continue;                                                 \
                                }                                                             \
                                int64_t xi = ((n * (c).C + (o / (c).Og) * (c).Cg + ci) * (c).H + ih) * (c).W + iw; \
                                BODY;                                                         \
                            }

static double *acc_new(int64_t n) { return ref_scratch(n); }

static void acc_store(const gnode *y, double *acc, void *out) {
    for (int64_t i = 0; i < y->numel; i++) st_f(out, (lt_dtype)y->dtype, i, acc[i]);
}

/* Padding taps are products with zero, in the forward and in the weight
 * gradient: PyTorch's native CPU convolution (im2col, then a GEMM), the
 * path of every float64 conv and of float32 ones it does not give oneDNN.
 * Its oneDNN path leaves padding taps out in some of oneDNN's kernels and
 * not in others (by shape and ISA), so PyTorch's own NaN there is not one
 * rule; this one is, on every machine (README, semantics notes). An inf or
 * NaN weight (forward) or upstream gradient (weight gradient) that meets a
 * padding tap thus gives NaN. The cpu backend follows it (dnnl.c). */

/* Integer dtypes, as torch's CPU kernel (im2col, then an integer GEMM):
 * exact sums that wrap at the dtype's width, so their order does not
 * matter. Accumulated in the output itself, each step modulo 2^64 and
 * stored narrowed (the same residue at the narrower width). */
static void conv2d_int(const gnode *y, const ref_arg *in, const conv_geom *c, void *out) {
    lt_dtype d = (lt_dtype)y->dtype;
    for (int64_t i = 0; i < y->numel; i++)
        st_i(out, d, i, y->nin == 3 ? ld_i(in[2].data, in[2].dtype, (i / (c->oH * c->oW)) % c->O) : 0);
    CONV_FOR(*c,
             st_i(out, d, yi,
                  (int64_t)((uint64_t)ld_i(out, d, yi) +
                            (uint64_t)ld_i(in[0].data, in[0].dtype, xi) * (uint64_t)ld_i(in[1].data, in[1].dtype, wi))),
             (void)0);
}

/* in: x (N, C, H, W), w (O, C/g, kH, kW), [bias (O)] -> (N, O, oH, oW) */
void ref_conv2d(const gnode *y, const ref_arg *in, void *out) {
    conv_geom c = geom(y->ia, in[0].shape, in[1].shape, y->shape);
    if (!dtype_is_float((lt_dtype)y->dtype)) {
        conv2d_int(y, in, &c, out);
        return;
    }
    double *acc = acc_new(y->numel);
    CONV_FOR(c, acc[yi] += ld_f(in[0].data, in[0].dtype, xi) * ld_f(in[1].data, in[1].dtype, wi),
             acc[yi] += 0.0 * ld_f(in[1].data, in[1].dtype, wi));
    if (y->nin == 3)
        for (int64_t i = 0; i < y->numel; i++) acc[i] += ld_f(in[2].data, in[2].dtype, (i / (c.oH * c.oW)) % c.O);
    acc_store(y, acc, out);
}

/* in: grad_out (N, O, oH, oW), w (O, C/g, kH, kW) -> grad_x (N, C, H, W) */
void ref_conv2d_bwd_input(const gnode *y, const ref_arg *in, void *out) {
    conv_geom c = geom(y->ia, y->shape, in[1].shape, in[0].shape);
    double *acc = acc_new(y->numel);
    CONV_FOR(c, acc[xi] += ld_f(in[0].data, in[0].dtype, yi) * ld_f(in[1].data, in[1].dtype, wi), (void)0);
    acc_store(y, acc, out);
}

/* in: grad_out (N, O, oH, oW), x (N, C, H, W) -> grad_w (O, C/g, kH, kW).
 * A padding tap adds g * 0 (above). */
void ref_conv2d_bwd_weight(const gnode *y, const ref_arg *in, void *out) {
    conv_geom c = geom(y->ia, in[1].shape, y->shape, in[0].shape);
    double *acc = acc_new(y->numel);
    CONV_FOR(c, acc[wi] += ld_f(in[0].data, in[0].dtype, yi) * ld_f(in[1].data, in[1].dtype, xi),
             acc[wi] += ld_f(in[0].data, in[0].dtype, yi) * 0.0);
    acc_store(y, acc, out);
}
