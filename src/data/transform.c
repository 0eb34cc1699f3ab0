/* torchvision's transforms on one decoded sample, with its exact
 * arithmetic: RandomResizedCrop's parameter sampling (Python's round half
 * to even included), Resize's output size, CenterCrop's offsets, ToTensor's
 * x/255 and Normalize in float32. Randomness comes from (seed, epoch,
 * sample) alone, so a sample is the same whatever thread decodes it. */
#include "image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s) {
    *s = data_hash(*s, 0x5a3e, 0x1d);
    return *s;
}
static double uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * ((double)(next(s) >> 11) * 0x1.0p-53);
}

void img_rrc_params(int iw, int ih, uint64_t *rng, int *x, int *y, int *w, int *h) {
    double area = (double)iw * ih, lr0 = log(3.0 / 4.0), lr1 = log(4.0 / 3.0);
    for (int t = 0; t < 10; t++) {
        double target = area * uniform(rng, 0.08, 1.0), ar = exp(uniform(rng, lr0, lr1));
        int cw = (int)nearbyint(sqrt(target * ar)), chh = (int)nearbyint(sqrt(target / ar));
        if (cw > 0 && cw <= iw && chh > 0 && chh <= ih) {
            *y = (int)(next(rng) % (uint64_t)(ih - chh + 1));
            *x = (int)(next(rng) % (uint64_t)(iw - cw + 1));
            *w = cw, *h = chh;
            return;
        }
    }
    double in_ratio = (double)iw / ih; /* fallback: the central crop */
    if (in_ratio < 3.0 / 4.0) *w = iw, *h = (int)nearbyint(iw / (3.0 / 4.0));
    else if (in_ratio > 4.0 / 3.0) *h = ih, *w = (int)nearbyint(ih * (4.0 / 3.0));
    else *w = iw, *h = ih;
    *y = (ih - *h) / 2;
    *x = (iw - *w) / 2;
}

void img_resize_size(int iw, int ih, int s, int *ow, int *oh) {
    int sh = iw <= ih ? iw : ih, lg = iw <= ih ? ih : iw;
    int nl = (int)((double)s * lg / sh); /* int(size * long / short) */
    *ow = iw <= ih ? s : nl;
    *oh = iw <= ih ? nl : s;
}

int img_center_offset(int outer, int inner) { return (int)nearbyint((outer - inner) / 2.0); }

int img_jpeg_denom(int cw, int ch, int out) {
    int d = 8;
    while (d > 1 && ((cw + d - 1) / d < out || (ch + d - 1) / d < out)) d /= 2;
    return d;
}

void img_work_free(img_work *w) {
    free(w->file);
    img_free(&w->im);
    free(w->out);
    free(w->tmp);
    memset(w, 0, sizeof *w);
}

/* PIL's convert("L"): ITU-R 601-2 luma in 16-bit fixed point, in place. */
static void to_luma(uint8_t *px, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = px + 3 * i;
        px[i] = (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
    }
}

int img_transform(const img_tf *tf, const uint8_t *buf, size_t n, int64_t epoch, int64_t sample, img_work *w,
                  float *dst, char msg[IMG_MSG]) {
    int iw, ih, S = tf->size, C = tf->channels;
    if (img_probe(&w->im, buf, n, &iw, &ih, msg)) return -1;
    /* geometry in source pixels: resample `box` to ow x oh, keep the S x S
     * window at (wx, wy) of it (negative: CenterCrop pads with zeros) */
    img_box box = {0, 0, iw, ih};
    int ow = S, oh = S, wx = 0, wy = 0;
    bool flip = false;
    if (tf->train) {
        uint64_t rng = data_hash(tf->seed ^ 0x1a9e, (uint64_t)epoch, (uint64_t)sample);
        int x, y, cw, chh;
        img_rrc_params(iw, ih, &rng, &x, &y, &cw, &chh);
        box = (img_box){x, y, x + cw, y + chh};
        flip = uniform(&rng, 0, 1) < 0.5;
    } else {
        if (tf->resize) img_resize_size(iw, ih, tf->resize, &ow, &oh);
        else ow = iw, oh = ih;
        wx = img_center_offset(ow, S), wy = img_center_offset(oh, S);
    }
    int denom = 1;
    if (tf->dct_scale && img_sniff(buf, n) == IMG_JPEG)
        denom = img_jpeg_denom((int)(box.x1 - box.x0) * S / ow, (int)(box.y1 - box.y0) * S / oh, S);
    /* the resampling reads only the pixels under the box: a JPEG decodes
     * just those (a random crop's rectangle) */
    img_rect want = {(int)floor(box.x0 / denom), (int)floor(box.y0 / denom), (int)ceil(box.x1 / denom),
                     (int)ceil(box.y1 / denom)};
    denom = img_decode(buf, n, denom, &want, &w->im, msg);
    if (denom < 0) return -1;
    box.x0 = box.x0 / denom - w->im.x0, box.x1 = box.x1 / denom - w->im.x0; /* in the decoded rectangle */
    box.y0 = box.y0 / denom - w->im.y0, box.y1 = box.y1 / denom - w->im.y0;
    size_t npx = (size_t)w->im.w * (size_t)w->im.h;
    if (C == 1) to_luma(w->im.px, npx);
    /* the part of the window inside the resized image */
    int x0 = wx < 0 ? 0 : wx, y0 = wy < 0 ? 0 : wy, x1 = wx + S > ow ? ow : wx + S, y1 = wy + S > oh ? oh : wy + S;
    size_t need = (size_t)S * (size_t)S * (size_t)C;
    if (need > w->out_cap) {
        uint8_t *p = realloc(w->out, need);
        if (!p) return snprintf(msg, IMG_MSG, "out of memory"), -1;
        w->out = p;
        w->out_cap = need;
    }
    if (x1 > x0 && y1 > y0 &&
        img_resample(w->im.px, w->im.w, w->im.h, C, box, ow, oh, x0, y0, x1 - x0, y1 - y0, w->out, &w->tmp,
                     &w->tmp_cap))
        return snprintf(msg, IMG_MSG, "out of memory"), -1;
    /* (y, x, c) bytes of the kept region -> normalized (c, y, x) floats;
     * outside the region (CenterCrop's padding) the byte is 0 */
    float lut[3][256];
    for (int c = 0; c < C; c++)
        for (int v = 0; v < 256; v++) lut[c][v] = ((float)v / 255.0f - tf->mean[c]) / tf->std[c];
    int rw = x1 - x0, rh = y1 - y0;
    size_t plane = (size_t)S * (size_t)S;
    for (int y = 0; y < S; y++) {
        int sy = y + wy - y0;
        const uint8_t *row = rw > 0 && sy >= 0 && sy < rh ? w->out + (size_t)sy * (size_t)rw * (size_t)C : NULL;
        float *d = dst + (size_t)y * (size_t)S;
        for (int x = 0; x < S; x++) {
            int sx = (flip ? S - 1 - x : x) + wx - x0;
            const uint8_t *p = row && sx >= 0 && sx < rw ? row + (size_t)sx * (size_t)C : NULL;
            for (int c = 0; c < C; c++) d[(size_t)c * plane + (size_t)x] = lut[c][p ? p[c] : 0];
        }
    }
    return 0;
}
