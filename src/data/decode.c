/* The wrapper every decoder runs behind: it recognizes the format by its
 * magic bytes (never by the file name), reads the size from the header and
 * refuses what is out of bounds before a pixel buffer is allocated, so a
 * truncated, corrupt or hostile file costs a message, never a crash. */
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool img_have(img_format f) {
    switch (f) {
#ifdef LT_HAVE_JPEG
    case IMG_JPEG: return true;
#endif
#ifdef LT_HAVE_SPNG
    case IMG_PNG: return true;
#endif
    default: return false;
    }
}

img_format img_sniff(const uint8_t *buf, size_t n) {
    static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) return IMG_JPEG;
    if (n >= 8 && !memcmp(buf, png, 8)) return IMG_PNG;
    return IMG_UNKNOWN;
}

int img_probe(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]) {
    img_format f = img_sniff(buf, n);
    int rc;
    *w = *h = 0;
    if (f == IMG_UNKNOWN) {
        snprintf(msg, IMG_MSG, n ? "not a JPEG or PNG file" : "empty file");
        return -1;
    }
    if (!img_have(f)) {
        snprintf(msg, IMG_MSG, "%s support was not built (its library was missing at configure time)",
                 f == IMG_JPEG ? "JPEG" : "PNG");
        return -1;
    }
    rc = f == IMG_JPEG ? img_jpeg_header(im, buf, n, w, h, msg) : img_png_header(im, buf, n, w, h, msg);
    if (rc) return -1;
    if (*w < 1 || *h < 1 || *w > IMG_MAX_SIDE || *h > IMG_MAX_SIDE || (long long)*w * *h > IMG_MAX_PIXELS) {
        snprintf(msg, IMG_MSG, "%dx%d pixels is outside the limits (1..%d a side, %lld in all)", *w, *h,
                 IMG_MAX_SIDE, IMG_MAX_PIXELS);
        return -1;
    }
    return 0;
}

int img_decode(const uint8_t *buf, size_t n, int denom, const img_rect *want, img *out, char msg[IMG_MSG]) {
    int w, h;
    if (img_probe(out, buf, n, &w, &h, msg)) return -1;
    out->x0 = out->y0 = 0;
    if (img_sniff(buf, n) == IMG_PNG) return img_png_decode(buf, n, out, msg) ? -1 : 1;
    return img_jpeg_decode(buf, n, denom, want, out, msg) ? -1 : denom;
}

int img_reserve(img *im, int w, int h) {
    size_t need = (size_t)w * (size_t)h * 3;
    if (need > im->cap) {
        uint8_t *p = realloc(im->px, need);
        if (!p) return -1;
        im->px = p;
        im->cap = need;
    }
    im->w = w;
    im->h = h;
    return 0;
}

void img_free(img *im) {
    img_jpeg_close(im);
    free(im->px);
    free(im->cmyk);
    memset(im, 0, sizeof *im);
}

int img_read_file(const char *path, uint8_t **buf, size_t *cap, size_t *n, char msg[IMG_MSG]) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(msg, IMG_MSG, "cannot read: %s", fd < 0 || errno ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return -1;
    }
    if ((unsigned long long)st.st_size > IMG_MAX_FILE) {
        snprintf(msg, IMG_MSG, "%lld bytes is over the %u-byte limit", (long long)st.st_size, IMG_MAX_FILE);
        close(fd);
        return -1;
    }
    size_t want = (size_t)st.st_size, got = 0;
    if (want + 1 > *cap) {
        uint8_t *p = realloc(*buf, want + 1);
        if (!p) {
            snprintf(msg, IMG_MSG, "out of memory for %zu bytes", want);
            close(fd);
            return -1;
        }
        *buf = p;
        *cap = want + 1;
    }
    while (got < want) { /* a file that shrinks while read is just short */
        ssize_t r = read(fd, *buf + got, want - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    *n = got;
    return 0;
}
