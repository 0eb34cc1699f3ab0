/* JPEG through libjpeg-turbo's TurboJPEG API: the same library and the same
 * defaults (accurate integer IDCT, fancy upsampling) as PIL, so pixels
 * agree with what torchvision's loader sees. Decoding at 1/2, 1/4 or 1/8
 * scale goes through the DCT (much cheaper than decoding whole and
 * shrinking). A warning (truncated data, corrupt segments) fails the
 * decode, as PIL refuses truncated files by default. */
#include "image.h"

#include <stdlib.h>
#include <string.h>

#ifdef LT_HAVE_TURBOJPEG
#include <turbojpeg.h>

static tjhandle handle(img *im, char msg[IMG_MSG]) {
    if (!im->jpeg && !(im->jpeg = tjInitDecompress())) snprintf(msg, IMG_MSG, "TurboJPEG: %s", tjGetErrorStr2(NULL));
    return im->jpeg;
}

void img_jpeg_close(img *im) {
    if (im->jpeg) tjDestroy(im->jpeg);
    im->jpeg = NULL;
}

int img_jpeg_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]) {
    int sub, cs;
    tjhandle tj = handle(im, msg);
    if (!tj) return -1;
    if (tjDecompressHeader3(tj, buf, (unsigned long)n, w, h, &sub, &cs)) {
        snprintf(msg, IMG_MSG, "JPEG header: %s", tjGetErrorStr2(tj));
        return -1;
    }
    return 0;
}

/* Photoshop (Adobe APP14 marker) stores CMYK inverted; PIL reads such files
 * as "CMYK;I". Looks for the marker among the segments before the scan. */
static bool adobe_marker(const uint8_t *b, size_t n) {
    for (size_t i = 2; i + 4 <= n && b[i] == 0xff;) {
        int m = b[i + 1];
        size_t len = (size_t)b[i + 2] << 8 | b[i + 3];
        if (m == 0xda || len < 2) break; /* start of scan: no more markers */
        if (m == 0xee && len >= 7 && i + 9 <= n && !memcmp(b + i + 4, "Adobe", 5)) return true;
        i += 2 + len;
    }
    return false;
}

/* PIL's cmyk2rgb: each channel (255 - k) * (255 - c) / 255, rounded. */
static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, size_t npx, bool inverted) {
    for (size_t i = 0; i < npx; i++, in += 4, out += 3) {
        int k = inverted ? 255 - in[3] : in[3], nk = 255 - k;
        for (int c = 0; c < 3; c++) {
            int v = inverted ? 255 - in[c] : in[c], t = v * nk + 128;
            int r = nk - (((t >> 8) + t) >> 8);
            out[c] = (uint8_t)(r < 0 ? 0 : r);
        }
    }
}

int img_jpeg_decode(const uint8_t *buf, size_t n, int denom, img *out, char msg[IMG_MSG]) {
    int w, h, sub, cs;
    tjhandle tj = handle(out, msg);
    if (!tj) return -1;
    if (tjDecompressHeader3(tj, buf, (unsigned long)n, &w, &h, &sub, &cs)) {
        snprintf(msg, IMG_MSG, "JPEG header: %s", tjGetErrorStr2(tj));
        return -1;
    }
    int sw = (w + denom - 1) / denom, sh = (h + denom - 1) / denom; /* TJSCALED with 1/denom */
    if (img_reserve(out, sw, sh)) {
        snprintf(msg, IMG_MSG, "out of memory for %dx%d pixels", sw, sh);
        return -1;
    }
    bool cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
    uint8_t *dst = out->px;
    if (cmyk) { /* TurboJPEG cannot convert CMYK to RGB itself */
        size_t need = (size_t)sw * (size_t)sh * 4;
        if (need > out->cmyk_cap) {
            uint8_t *p = realloc(out->cmyk, need);
            if (!p) {
                snprintf(msg, IMG_MSG, "out of memory for %dx%d CMYK pixels", sw, sh);
                return -1;
            }
            out->cmyk = p;
            out->cmyk_cap = need;
        }
        dst = out->cmyk;
    }
    /* Warnings pass (PIL loads such files too), except a premature end:
     * PIL refuses truncated files, and the missing rows would be gray. */
    if (tjDecompress2(tj, buf, (unsigned long)n, dst, sw, 0, sh, cmyk ? TJPF_CMYK : TJPF_RGB, 0) &&
        (tjGetErrorCode(tj) != TJERR_WARNING || strstr(tjGetErrorStr2(tj), "Premature end"))) {
        snprintf(msg, IMG_MSG, "JPEG: %s", tjGetErrorStr2(tj));
        return -1;
    }
    if (cmyk) cmyk_to_rgb(out->cmyk, out->px, (size_t)sw * (size_t)sh, adobe_marker(buf, n));
    return 0;
}

int img_jpeg_write(FILE *f, const uint8_t *px, int w, int h, int ch, int quality, char msg[IMG_MSG]) {
    tjhandle tj = tjInitCompress();
    unsigned char *out = NULL;
    unsigned long n = 0;
    int rc = !tj || tjCompress2(tj, px, w, 0, h, ch == 1 ? TJPF_GRAY : TJPF_RGB, &out, &n,
                                ch == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, 0);
    if (rc) snprintf(msg, IMG_MSG, "JPEG: %s", tjGetErrorStr2(tj));
    else if (fwrite(out, 1, n, f) != n) snprintf(msg, IMG_MSG, "write failed"), rc = 1;
    tjFree(out);
    if (tj) tjDestroy(tj);
    return rc ? -1 : 0;
}

#else /* built without TurboJPEG: img_probe refuses JPEGs before these */

void img_jpeg_close(img *im) { (void)im; }
int img_jpeg_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]) {
    (void)im, (void)buf, (void)n, (void)w, (void)h;
    snprintf(msg, IMG_MSG, "JPEG support was not built");
    return -1;
}
int img_jpeg_decode(const uint8_t *buf, size_t n, int denom, img *out, char msg[IMG_MSG]) {
    (void)denom;
    return img_jpeg_header(out, buf, n, NULL, NULL, msg);
}
int img_jpeg_write(FILE *f, const uint8_t *px, int w, int h, int ch, int quality, char msg[IMG_MSG]) {
    (void)f, (void)px, (void)ch, (void)quality;
    return img_jpeg_header(NULL, NULL, 0, &w, &h, msg);
}
#endif
