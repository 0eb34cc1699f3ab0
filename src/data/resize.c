/* Antialiased bilinear resampling, bit for bit PIL's ImagingResample with
 * the BILINEAR filter (what torchvision's Resize and RandomResizedCrop run
 * on PIL images): a triangle filter stretched by the downscale factor, so
 * every source pixel under an output pixel contributes; weights normalized
 * in double, then rounded to 22-bit fixed point; the horizontal pass
 * rounds to 8 bits before the vertical pass. Only the source rows the
 * output window needs are resampled horizontally. */
#include "image.h"

#include <math.h>
#include <stdlib.h>

#define PRECISION_BITS (32 - 8 - 2)

static double triangle(double x) {
    if (x < 0) x = -x;
    return x < 1 ? 1 - x : 0;
}

/* PIL's precompute_coeffs for the outputs [w0, w0 + wn) of `outsize` over
 * [in0, in1) of an input of `insize` pixels. bounds: (first tap, taps) per
 * output; kk: ksize weights per output. Returns ksize, or -1 (memory). */
static int coeffs(double in0, double in1, int insize, int outsize, int w0, int wn, int **bounds, int32_t **kk) {
    double scale = (in1 - in0) / outsize, fscale = scale < 1 ? 1 : scale, support = fscale;
    int ksize = (int)ceil(support) * 2 + 1;
    double *pre = malloc(sizeof *pre * (size_t)ksize);
    *bounds = malloc(sizeof **bounds * 2 * (size_t)wn);
    *kk = malloc(sizeof **kk * (size_t)ksize * (size_t)wn);
    if (!pre || !*bounds || !*kk) {
        free(pre), free(*bounds), free(*kk);
        *bounds = NULL, *kk = NULL;
        return -1;
    }
    for (int i = 0; i < wn; i++) {
        double center = in0 + (w0 + i + 0.5) * scale, ww = 0, ss = 1.0 / fscale;
        int xmin = (int)(center - support + 0.5), xmax;
        if (xmin < 0) xmin = 0;
        xmax = (int)(center + support + 0.5);
        if (xmax > insize) xmax = insize;
        xmax -= xmin;
        if (xmax < 0) xmax = 0;
        for (int x = 0; x < xmax; x++) ww += pre[x] = triangle((x + xmin - center + 0.5) * ss);
        for (int x = 0; x < ksize; x++) {
            double w = x < xmax && ww != 0 ? pre[x] / ww : 0;
            (*kk)[(size_t)i * (size_t)ksize + (size_t)x] =
                (int32_t)(w < 0 ? -0.5 + w * (1 << PRECISION_BITS) : 0.5 + w * (1 << PRECISION_BITS));
        }
        (*bounds)[2 * i] = xmin;
        (*bounds)[2 * i + 1] = xmax;
    }
    free(pre);
    return ksize;
}

static uint8_t clip8(int32_t v) {
    if (v >= (1 << PRECISION_BITS << 8)) return 255;
    if (v <= 0) return 0;
    return (uint8_t)(v >> PRECISION_BITS);
}

int img_resample(const uint8_t *src, int sw, int sh, int ch, img_box box, int ow, int oh, int wx, int wy, int ww,
                 int wh, uint8_t *dst, uint8_t **tmp, size_t *tmp_cap) {
    /* taps never leave the pixels the box touches: the box acts as a crop */
    int lx = (int)floor(box.x0), hx = (int)ceil(box.x1), ly = (int)floor(box.y0), hy = (int)ceil(box.y1);
    if (lx < 0) lx = 0;
    if (ly < 0) ly = 0;
    if (hx > sw) hx = sw;
    if (hy > sh) hy = sh;
    int *bh = NULL, *bv = NULL, rc = -1;
    int32_t *kh = NULL, *kv = NULL;
    int ksh = coeffs(box.x0 - lx, box.x1 - lx, hx - lx, ow, wx, ww, &bh, &kh);
    int ksv = ksh < 0 ? -1 : coeffs(box.y0 - ly, box.y1 - ly, hy - ly, oh, wy, wh, &bv, &kv);
    if (ksv < 0) goto out;
    int yfirst = bv[0], ylast = bv[2 * (wh - 1)] + bv[2 * (wh - 1) + 1], rows = ylast - yfirst;
    size_t need = (size_t)(rows > 0 ? rows : 1) * (size_t)ww * (size_t)ch;
    if (need > *tmp_cap) {
        uint8_t *p = realloc(*tmp, need);
        if (!p) goto out;
        *tmp = p;
        *tmp_cap = need;
    }
    /* horizontal: source rows [ly + yfirst, ly + ylast) -> (rows, ww) */
    for (int r = 0; r < rows; r++) {
        const uint8_t *s = src + ((size_t)(ly + yfirst + r) * (size_t)sw + (size_t)lx) * (size_t)ch;
        uint8_t *d = *tmp + (size_t)r * (size_t)ww * (size_t)ch;
        for (int x = 0; x < ww; x++) {
            const int32_t *k = kh + (size_t)x * (size_t)ksh;
            const uint8_t *p = s + (size_t)bh[2 * x] * (size_t)ch;
            for (int c = 0; c < ch; c++) {
                int32_t acc = 1 << (PRECISION_BITS - 1);
                for (int t = 0; t < bh[2 * x + 1]; t++) acc += p[(size_t)t * (size_t)ch + (size_t)c] * k[t];
                d[(size_t)x * (size_t)ch + (size_t)c] = clip8(acc);
            }
        }
    }
    /* vertical: (rows, ww) -> (wh, ww) */
    for (int y = 0; y < wh; y++) {
        const int32_t *k = kv + (size_t)y * (size_t)ksv;
        const uint8_t *s = *tmp + (size_t)(bv[2 * y] - yfirst) * (size_t)ww * (size_t)ch;
        size_t stride = (size_t)ww * (size_t)ch;
        for (size_t x = 0; x < stride; x++) {
            int32_t acc = 1 << (PRECISION_BITS - 1);
            for (int t = 0; t < bv[2 * y + 1]; t++) acc += s[(size_t)t * stride + x] * k[t];
            dst[(size_t)y * stride + x] = clip8(acc);
        }
    }
    rc = 0;
out:
    free(bh), free(bv), free(kh), free(kv);
    return rc;
}
