/* IDX reader (the MNIST file format): big-endian header, magic 00 00 08 ND,
 * ND 32-bit dims, then prod(dims) unsigned bytes. Everything in the header
 * is untrusted: dims are bounded and multiplied with overflow checks and the
 * payload must match the file size exactly, so a malformed or truncated file
 * is an error, never an out-of-bounds read. */
#include "data.h"

#include "../core/core.h"

#include <errno.h>

#ifdef LT_HAVE_ZLIB
#include <zlib.h>
#endif

/* More than any real IDX file; bounds what a hostile gzip can make us
 * allocate (a gzip bomb stops here with an error). */
#define IDX_MAX_BYTES ((size_t)1 << 31)

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int data_idx_parse(const uint8_t *buf, size_t n, const char *name, data_idx *out) {
    memset(out, 0, sizeof *out);
    if (!buf && n) return err_set(LT_ERR_NULL, "idx: %s: no data", name), -1;
    if (n < 4) return err_set(LT_ERR_FORMAT, "idx: %s: truncated header (%zu bytes)", name, n), -1;
    if (buf[0] || buf[1])
        return err_set(LT_ERR_FORMAT, "idx: %s: bad magic %02x %02x (not an IDX file)", name, buf[0], buf[1]), -1;
    if (buf[2] != 0x08)
        return err_set(LT_ERR_FORMAT, "idx: %s: element type 0x%02x not supported (only 0x08, unsigned byte)",
                       name, buf[2]), -1;
    int nd = buf[3];
    if (nd < 1 || nd > DATA_IDX_MAX_DIMS)
        return err_set(LT_ERR_FORMAT, "idx: %s: %d dimensions (1..%d supported)", name, nd, DATA_IDX_MAX_DIMS), -1;
    size_t head = 4 + 4 * (size_t)nd;
    if (n < head) return err_set(LT_ERR_FORMAT, "idx: %s: truncated header (%zu bytes)", name, n), -1;
    size_t total = 1;
    for (int i = 0; i < nd; i++) {
        uint32_t d = be32(buf + 4 + 4 * i);
        if (d && total > IDX_MAX_BYTES / d)
            return err_set(LT_ERR_FORMAT, "idx: %s: dimensions too large", name), -1;
        total *= d;
        out->dims[i] = d;
    }
    if (n - head < total)
        return err_set(LT_ERR_FORMAT, "idx: %s: truncated: header says %zu data bytes, file has %zu", name, total,
                       n - head), -1;
    if (n - head > total)
        return err_set(LT_ERR_FORMAT, "idx: %s: %zu trailing bytes after the data", name, n - head - total), -1;
    out->ndim = nd;
    out->data = buf + head;
    out->size = total;
    return 0;
}

/* Reads the whole (decompressed) file into a malloc'd buffer. */
static uint8_t *slurp(const char *path, size_t *len) {
    size_t cap = 1 << 16, n = 0;
#ifdef LT_HAVE_ZLIB
    gzFile f = gzopen(path, "rb"); /* reads plain files transparently */
#else
    FILE *f = fopen(path, "rb");
#endif
    if (!f) return err_set(LT_ERR_IO, "idx: cannot open %s: %s", path, strerror(errno));
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        if (n == cap) {
            if (cap >= IDX_MAX_BYTES) {
                err_set(LT_ERR_FORMAT, "idx: %s: larger than %zu bytes", path, IDX_MAX_BYTES);
                break;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        size_t want = cap - n;
#ifdef LT_HAVE_ZLIB
        int got = gzread(f, buf + n, (unsigned)(want > (1u << 30) ? (1u << 30) : want));
        if (got < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            err_set(zerr == Z_ERRNO ? LT_ERR_IO : LT_ERR_FORMAT, "idx: %s: %s", path,
                    zerr == Z_ERRNO ? strerror(errno) : msg);
            break;
        }
        if (got == 0) { /* end of data; a cut-off gzip stream reports Z_BUF_ERROR */
            int zerr;
            const char *msg = gzerror(f, &zerr);
            if (zerr != Z_OK) {
                err_set(LT_ERR_FORMAT, "idx: %s: truncated or corrupt gzip (%s)", path, msg);
                break;
            }
            gzclose(f);
            *len = n;
            return buf;
        }
        n += (size_t)got;
#else
        size_t got = fread(buf + n, 1, want, f);
        if (got == 0) {
            if (ferror(f)) {
                err_set(LT_ERR_IO, "idx: %s: read error", path);
                break;
            }
            if (n >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
                err_set(LT_ERR_FORMAT, "idx: %s is gzip-compressed but lazytensor was built without zlib", path);
                break;
            }
            fclose(f);
            *len = n;
            return buf;
        }
        n += got;
#endif
    }
    if (!buf || !lt_error()) err_set(LT_ERR_OOM, "idx: %s: out of memory", path);
    free(buf);
#ifdef LT_HAVE_ZLIB
    gzclose(f);
#else
    fclose(f);
#endif
    return NULL;
}

int data_idx_read(const char *path, data_idx *out) {
    memset(out, 0, sizeof *out);
    if (!path) return err_set(LT_ERR_NULL, "idx: path is NULL"), -1;
    size_t n = 0;
    uint8_t *buf = slurp(path, &n);
    if (!buf) return -1;
    if (data_idx_parse(buf, n, path, out)) {
        free(buf);
        return -1;
    }
    out->base = buf;
    return 0;
}

void data_idx_free(data_idx *idx) {
    if (!idx) return;
    free(idx->base);
    memset(idx, 0, sizeof *idx);
}
