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

static uint8_t clip8(int32_t v) { /* v >> PRECISION_BITS clamped to 0..255, without branches */
    v = v < 0 ? 0 : v >> PRECISION_BITS;
    return (uint8_t)(v > 255 ? 255 : v);
}

#ifdef _OPENMP
#define VECTOR_LOOP _Pragma("omp simd")
#else
#define VECTOR_LOOP /* gcc may still vectorize */
#endif

/* One row of the horizontal pass: ww outputs of ch channels from src. */
static void horizontal(const uint8_t *src, int ch, const int *bounds, const int32_t *kk, int ksize, int ww,
                       uint8_t *d) {
    for (int x = 0; x < ww; x++) {
        const int32_t *k = kk + (size_t)x * (size_t)ksize;
        const uint8_t *p = src + (size_t)bounds[2 * x] * (size_t)ch;
        int taps = bounds[2 * x + 1];
        if (ch == 3) { /* the common case: the three channels in one pass over the taps */
            int32_t a0 = 1 << (PRECISION_BITS - 1), a1 = a0, a2 = a0;
            for (int t = 0; t < taps; t++, p += 3) a0 += p[0] * k[t], a1 += p[1] * k[t], a2 += p[2] * k[t];
            d[3 * x] = clip8(a0), d[3 * x + 1] = clip8(a1), d[3 * x + 2] = clip8(a2);
            continue;
        }
        for (int c = 0; c < ch; c++) {
            int32_t acc = 1 << (PRECISION_BITS - 1);
            for (int t = 0; t < taps; t++) acc += p[(size_t)t * (size_t)ch + (size_t)c] * k[t];
            d[(size_t)x * (size_t)ch + (size_t)c] = clip8(acc);
        }
    }
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
    int32_t *kh = NULL, *kv = NULL, *acc = NULL;
    int ksh = coeffs(box.x0 - lx, box.x1 - lx, hx - lx, ow, wx, ww, &bh, &kh);
    int ksv = ksh < 0 ? -1 : coeffs(box.y0 - ly, box.y1 - ly, hy - ly, oh, wy, wh, &bv, &kv);
    if (ksv < 0) goto out;
    int yfirst = bv[0], ylast = bv[2 * (wh - 1)] + bv[2 * (wh - 1) + 1], rows = ylast - yfirst;
    size_t stride = (size_t)ww * (size_t)ch, need = (size_t)(rows > 0 ? rows : 1) * stride;
    if (need > *tmp_cap) {
        uint8_t *p = realloc(*tmp, need);
        if (!p) goto out;
        *tmp = p;
        *tmp_cap = need;
    }
    if (!(acc = malloc(sizeof *acc * stride))) goto out;
    /* horizontal: source rows [ly + yfirst, ly + ylast) -> (rows, ww) */
    for (int r = 0; r < rows; r++)
        horizontal(src + ((size_t)(ly + yfirst + r) * (size_t)sw + (size_t)lx) * (size_t)ch, ch, bh, kh, ksh, ww,
                   *tmp + (size_t)r * stride);
    /* vertical: (rows, ww) -> (wh, ww), a whole row at a time (integer
     * sums: the order of the taps does not change them) */
    for (int y = 0; y < wh; y++) {
        const int32_t *k = kv + (size_t)y * (size_t)ksv;
        const uint8_t *s = *tmp + (size_t)(bv[2 * y] - yfirst) * stride;
        for (size_t x = 0; x < stride; x++) acc[x] = 1 << (PRECISION_BITS - 1);
        for (int t = 0; t < bv[2 * y + 1]; t++) {
            const uint8_t *row = s + (size_t)t * stride;
            int32_t kt = k[t];
            VECTOR_LOOP
            for (size_t x = 0; x < stride; x++) acc[x] += row[x] * kt;
        }
        uint8_t *d = dst + (size_t)y * stride;
        VECTOR_LOOP
        for (size_t x = 0; x < stride; x++) d[x] = clip8(acc[x]);
    }
    rc = 0;
out:
    free(bh), free(bv), free(kh), free(kv), free(acc);
    return rc;
}
