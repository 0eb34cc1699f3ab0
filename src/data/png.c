/* PNG through libspng. Every color type and bit depth decodes to 8-bit RGB
 * as PIL's convert("RGB") does: palette through its colors, gray
 * replicated, alpha and tRNS dropped (not composited), 16-bit samples to
 * their high byte. Header, chunk and image-size limits are set before
 * anything is decoded, and a bad checksum of a critical chunk fails. */
#include "image.h"

#ifdef LT_HAVE_SPNG
#include <spng.h>

/* A context over buf with the limits set; NULL with a reason in msg. */
static spng_ctx *open_ctx(const uint8_t *buf, size_t n, struct spng_ihdr *ih, char msg[IMG_MSG]) {
    spng_ctx *ctx = spng_ctx_new(0);
    int rc = ctx ? 0 : SPNG_EMEM;
    if (!rc) rc = spng_set_image_limits(ctx, IMG_MAX_SIDE, IMG_MAX_SIDE);
    if (!rc) rc = spng_set_chunk_limits(ctx, IMG_MAX_FILE, IMG_MAX_FILE);
    if (!rc) rc = spng_set_png_buffer(ctx, buf, n);
    if (!rc) rc = spng_get_ihdr(ctx, ih);
    if (rc) {
        snprintf(msg, IMG_MSG, "PNG header: %s", spng_strerror(rc));
        spng_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

int img_png_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]) {
    (void)im;
    struct spng_ihdr ih;
    spng_ctx *ctx = open_ctx(buf, n, &ih, msg);
    if (!ctx) return -1;
    *w = (int)ih.width, *h = (int)ih.height; /* both <= IMG_MAX_SIDE: spng checked */
    spng_ctx_free(ctx);
    return 0;
}

int img_png_decode(const uint8_t *buf, size_t n, img *out, char msg[IMG_MSG]) {
    struct spng_ihdr ih;
    spng_ctx *ctx = open_ctx(buf, n, &ih, msg);
    if (!ctx) return -1;
    size_t need = 0;
    int rc = spng_decoded_image_size(ctx, SPNG_FMT_RGB8, &need);
    if (!rc && img_reserve(out, (int)ih.width, (int)ih.height)) rc = SPNG_EMEM;
    if (!rc && need != (size_t)out->w * (size_t)out->h * 3) rc = SPNG_EINTERNAL;
    if (!rc) rc = spng_decode_image(ctx, out->px, need, SPNG_FMT_RGB8, 0);
    spng_ctx_free(ctx);
    if (rc) snprintf(msg, IMG_MSG, "PNG: %s", spng_strerror(rc));
    return rc ? -1 : 0;
}

int img_png_write(FILE *f, const uint8_t *px, int w, int h, int ch, char msg[IMG_MSG]) {
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    struct spng_ihdr ih = {.width = (uint32_t)w, .height = (uint32_t)h, .bit_depth = 8,
                           .color_type = ch == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR};
    int rc = ctx ? 0 : SPNG_EMEM;
    if (!rc) rc = spng_set_png_file(ctx, f);
    if (!rc) rc = spng_set_ihdr(ctx, &ih);
    if (!rc) rc = spng_encode_image(ctx, px, (size_t)w * (size_t)h * (size_t)ch, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    spng_ctx_free(ctx);
    if (rc) snprintf(msg, IMG_MSG, "PNG: %s", spng_strerror(rc));
    return rc ? -1 : 0;
}

#else /* built without libspng: img_probe refuses PNGs before these */

int img_png_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]) {
    (void)im, (void)buf, (void)n, (void)w, (void)h;
    snprintf(msg, IMG_MSG, "PNG support was not built");
    return -1;
}
int img_png_decode(const uint8_t *buf, size_t n, img *out, char msg[IMG_MSG]) {
    return img_png_header(out, buf, n, NULL, NULL, msg);
}
int img_png_write(FILE *f, const uint8_t *px, int w, int h, int ch, char msg[IMG_MSG]) {
    (void)f, (void)px;
    (void)ch;
    return img_png_header(NULL, NULL, 0, &w, &h, msg);
}
#endif
