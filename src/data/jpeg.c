/* JPEG through libjpeg-turbo's libjpeg API: the library and the calls PIL
 * makes (accurate integer IDCT, fancy upsampling), so pixels agree with
 * what torchvision's loader sees. Decoding at 1/2, 1/4 or 1/8 scale goes
 * through the DCT. What TurboJPEG 2's API cannot do, and what makes a
 * random crop cheap: decode only the crop's rectangle (jpeg_crop_scanline
 * for the columns, jpeg_skip_scanlines for the rows above and below it:
 * those are only entropy-decoded, not transformed, upsampled or
 * color-converted). The whole file is still read to its end,
 * so whether a file is accepted never depends on the crop. A warning
 * (corrupt segments) passes, as PIL loads such files, except a premature
 * end: PIL refuses truncated files, and the missing rows would be gray. */
#include "image.h"

#include <stdlib.h>
#include <string.h>

#ifdef LT_HAVE_JPEG
#include <jpeglib.h>

#include <jerror.h> /* after jpeglib.h, which it needs */
#include <setjmp.h>

/* libjpeg reports an error through error_exit, which must not return: it
 * keeps the message and jumps back to the call that started the work. */
typedef struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    bool truncated; /* a premature-end warning was seen */
    char msg[JMSG_LENGTH_MAX];
} jerr;

typedef struct jdec {
    struct jpeg_decompress_struct ci;
    jerr err;
} jdec;

static void on_error(j_common_ptr ci) {
    jerr *e = (jerr *)ci->err;
    e->pub.format_message(ci, e->msg);
    longjmp(e->jump, 1);
}

static void on_message(j_common_ptr ci, int level) {
    jerr *e = (jerr *)ci->err;
    if (level >= 0) return; /* trace messages */
    e->pub.num_warnings++;
    if (e->pub.msg_code == JWRN_JPEG_EOF && !e->truncated) {
        e->truncated = true;
        e->pub.format_message(ci, e->msg);
    }
}

static void errors_to(jerr *e, struct jpeg_error_mgr **slot) {
    *slot = jpeg_std_error(&e->pub);
    e->pub.error_exit = on_error;
    e->pub.emit_message = on_message;
    e->truncated = false;
}

/* The image's decompressor, created at its first JPEG and reused. */
static jdec *decoder(img *im, char msg[IMG_MSG]) {
    if (im->jpeg) return im->jpeg;
    jdec *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(msg, IMG_MSG, "out of memory for the JPEG decoder");
        return NULL;
    }
    errors_to(&d->err, &d->ci.err);
    if (setjmp(d->err.jump)) {
        snprintf(msg, IMG_MSG, "JPEG: %.120s", d->err.msg);
        jpeg_destroy_decompress(&d->ci);
        free(d);
        return NULL;
    }
    jpeg_create_decompress(&d->ci);
    im->jpeg = d;
    return d;
}

void img_jpeg_close(img *im) {
    jdec *d = im->jpeg;
    if (d) jpeg_destroy_decompress(&d->ci);
    free(d);
    im->jpeg = NULL;
}

/* After an error: the message, and the decompressor ready for the next file. */
static int failed(jdec *d, const char *what, char msg[IMG_MSG]) {
    snprintf(msg, IMG_MSG, "%s: %.120s", what, d->err.msg);
    jpeg_abort_decompress(&d->ci);
    return -1;
}

int img_jpeg_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]) {
    jdec *d = decoder(im, msg);
    if (!d) return -1;
    d->err.truncated = false;
    if (setjmp(d->err.jump)) return failed(d, "JPEG header", msg);
    jpeg_mem_src(&d->ci, buf, (unsigned long)n);
    jpeg_read_header(&d->ci, TRUE);
    *w = (int)d->ci.image_width, *h = (int)d->ci.image_height; /* at most 65500 */
    jpeg_abort_decompress(&d->ci);
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

static int grow(uint8_t **p, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    uint8_t *q = realloc(*p, need);
    if (!q) return -1;
    *p = q;
    *cap = need;
    return 0;
}

/* The decode proper; libjpeg's errors jump out of it to img_jpeg_decode
 * (no local of this frame is used after the jump). */
static int decode(jdec *d, const uint8_t *buf, size_t n, int denom, const img_rect *want, img *out,
                  char msg[IMG_MSG]) {
    struct jpeg_decompress_struct *ci = &d->ci;
    jpeg_mem_src(ci, buf, (unsigned long)n);
    jpeg_read_header(ci, TRUE);
    bool cmyk = ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK;
    ci->out_color_space = cmyk ? JCS_CMYK : JCS_RGB; /* gray is replicated, as PIL's convert("RGB") */
    ci->scale_num = 1;
    ci->scale_denom = (unsigned)denom;
    jpeg_start_decompress(ci);
    /* the rectangle to transform, in output pixels (the whole image by default) */
    int sw = (int)ci->output_width, sh = (int)ci->output_height, x0 = 0, y0 = 0, x1 = sw, y1 = sh;
    if (want) {
        x0 = want->x0 < 0 ? 0 : want->x0, y0 = want->y0 < 0 ? 0 : want->y0;
        x1 = want->x1 > sw ? sw : want->x1, y1 = want->y1 > sh ? sh : want->y1;
        if (x1 <= x0 || y1 <= y0) x0 = y0 = 0, x1 = sw, y1 = sh;
    }
    /* The column crop widens to whole iMCU columns. Fancy upsampling
     * replicates the crop's edge columns (the whole decode has their
     * neighbours), so one more column on each side keeps them outside; and
     * a crop of a few columns switches to another upsampler, so none is
     * narrower than 32. */
    x0 = x0 > 0 ? x0 - 1 : 0, x1 = x1 < sw ? x1 + 1 : sw;
    if (x1 - x0 < 32) x1 = x0 + 32 < sw ? x0 + 32 : sw, x0 = x1 - 32 > 0 ? x1 - 32 : 0;
    JDIMENSION cx = (JDIMENSION)x0, cw = (JDIMENSION)(x1 - x0);
    if ((int)cw < sw) jpeg_crop_scanline(ci, &cx, &cw);
    int comps = cmyk ? 4 : 3, rows = y1 - y0;
    size_t stride = (size_t)cw * (size_t)comps;
    /* one row more: the image's last row is read into it (below) */
    if (img_reserve(out, (int)cw, rows + 1) ||
        (cmyk && grow(&out->cmyk, &out->cmyk_cap, stride * (size_t)(rows + 1)))) {
        jpeg_abort_decompress(ci);
        snprintf(msg, IMG_MSG, "out of memory for %ux%d pixels", (unsigned)cw, rows);
        return -1;
    }
    uint8_t *dst = cmyk ? out->cmyk : out->px;
    if (y0) jpeg_skip_scanlines(ci, (JDIMENSION)y0);
    while ((int)ci->output_scanline < y1) {
        JSAMPROW row = dst + (size_t)((int)ci->output_scanline - y0) * stride;
        if (jpeg_read_scanlines(ci, &row, 1) != 1) break;
    }
    /* Entropy-decode the rest and read the last row, so that a truncated or
     * corrupt tail fails whatever the crop (skipping to the very end would
     * not read the data at all). */
    if ((int)ci->output_scanline < sh - 1) jpeg_skip_scanlines(ci, (JDIMENSION)(sh - 1 - (int)ci->output_scanline));
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = dst + (size_t)rows * stride;
        if (jpeg_read_scanlines(ci, &row, 1) != 1) break;
    }
    if (ci->output_scanline < ci->output_height) {
        snprintf(msg, IMG_MSG, "JPEG: decoding stopped at row %u of %d", (unsigned)ci->output_scanline, sh);
        jpeg_abort_decompress(ci);
        return -1;
    }
    jpeg_finish_decompress(ci);
    if (d->err.truncated) {
        snprintf(msg, IMG_MSG, "JPEG: %.120s", d->err.msg);
        return -1;
    }
    out->x0 = (int)cx, out->y0 = y0, out->h = rows; /* img_reserve set w = cw */
    if (cmyk) cmyk_to_rgb(out->cmyk, out->px, (size_t)cw * (size_t)rows, adobe_marker(buf, n));
    return 0;
}

int img_jpeg_decode(const uint8_t *buf, size_t n, int denom, const img_rect *want, img *out, char msg[IMG_MSG]) {
    jdec *d = decoder(out, msg);
    if (!d) return -1;
    d->err.truncated = false;
    if (setjmp(d->err.jump)) return failed(d, "JPEG", msg);
    return decode(d, buf, n, denom, want, out, msg);
}

int img_jpeg_write(FILE *f, const uint8_t *px, int w, int h, int ch, int quality, char msg[IMG_MSG]) {
    struct jpeg_compress_struct ci;
    jerr e;
    errors_to(&e, &ci.err);
    if (setjmp(e.jump)) {
        snprintf(msg, IMG_MSG, "JPEG: %.120s", e.msg);
        jpeg_destroy_compress(&ci);
        return -1;
    }
    jpeg_create_compress(&ci);
    jpeg_stdio_dest(&ci, f);
    ci.image_width = (JDIMENSION)w, ci.image_height = (JDIMENSION)h;
    ci.input_components = ch;
    ci.in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&ci); /* YCbCr 4:2:0 for RGB */
    jpeg_set_quality(&ci, quality, TRUE);
    /* TurboJPEG's choice below quality 96, which wrote the exports before */
    ci.dct_method = quality >= 96 ? JDCT_ISLOW : JDCT_FASTEST;
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = (JSAMPROW)(uintptr_t)(px + (size_t)ci.next_scanline * (size_t)w * (size_t)ch);
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    if (ferror(f)) {
        snprintf(msg, IMG_MSG, "write failed");
        return -1;
    }
    return 0;
}

#else /* built without libjpeg: img_probe refuses JPEGs before these */

void img_jpeg_close(img *im) { (void)im; }
int img_jpeg_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]) {
    (void)im, (void)buf, (void)n, (void)w, (void)h;
    snprintf(msg, IMG_MSG, "JPEG support was not built");
    return -1;
}
int img_jpeg_decode(const uint8_t *buf, size_t n, int denom, const img_rect *want, img *out, char msg[IMG_MSG]) {
    (void)denom, (void)want;
    return img_jpeg_header(out, buf, n, NULL, NULL, msg);
}
int img_jpeg_write(FILE *f, const uint8_t *px, int w, int h, int ch, int quality, char msg[IMG_MSG]) {
    (void)f, (void)px, (void)ch, (void)quality;
    return img_jpeg_header(NULL, NULL, 0, &w, &h, msg);
}
#endif
