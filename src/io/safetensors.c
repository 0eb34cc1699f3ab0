/* Writing tensor files in the safetensors format (reading: safetensors_load.c):
 * an 8-byte little-endian header
 * length N, N bytes of JSON ({"name": {"dtype", "shape", "data_offsets"}},
 * optional "__metadata__": {str: str}), then the raw little-endian data.
 * The writer is atomic (PATH.tmp, fsync, rename) so a crash mid-save never
 * destroys the previous checkpoint; the reader trusts nothing in the file. */
#define _POSIX_C_SOURCE 200809L
#include "json.h"

#include "../core/core.h"
#include "../func/func.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* A header larger than this is not a tensor file but an attack or garbage
 * (the reference implementation uses the same bound). */
#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

static const char *const st_dtype_names[] = {"F32", "F64", "I32", "I64", "BOOL", "BF16", "U8"}; /* by lt_dtype */

/* The data is written in host order; every supported host is little-endian. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

/* ---- writing ------------------------------------------------------------- */

static int write_all(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

static int check_save_args(const char *fn, const char *path, int n, const char *const *names,
                           lt_tensor *const *tensors, int nmeta, const char *const *mk, const char *const *mv) {
    if (!path) return err_set(LT_ERR_NULL, "%s: argument 'path' is NULL", fn), -1;
    if (n < 0) return err_set(LT_ERR_ARG, "%s: '%s': argument 'n' is %d (negative)", fn, path, n), -1;
    if (nmeta < 0) return err_set(LT_ERR_ARG, "%s: '%s': argument 'nmeta' is %d (negative)", fn, path, nmeta), -1;
    const char *null_arr = n && !names ? "names" : n && !tensors ? "tensors" : nmeta && !mk ? "meta_keys"
                         : nmeta && !mv ? "meta_values" : NULL;
    if (null_arr) return err_set(LT_ERR_NULL, "%s: '%s': argument '%s' is NULL", fn, path, null_arr), -1;
    for (int i = 0; i < n; i++) {
        if (!names[i] || !tensors[i])
            return err_set(LT_ERR_NULL, "%s: '%s': argument '%s[%d]' is NULL", fn, path, names[i] ? "tensors" : "names",
                           i), -1;
        if (tensors[i]->magic != LT_HANDLE_MAGIC)
            return err_set(LT_ERR_STATE, "%s: '%s': argument 'tensors[%d]' is a freed or invalid handle", fn, path, i),
                   -1;
        if (!json_utf8_valid(names[i]) || !strcmp(names[i], "__metadata__") || !names[i][0])
            return err_set(LT_ERR_ARG, "%s: '%s': argument 'names[%d]' is empty, reserved or not UTF-8", fn, path, i),
                   -1;
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j]))
                return err_set(LT_ERR_ARG, "%s: '%s': argument 'names[%d]': duplicate tensor name '%s'", fn, path, i,
                               names[i]), -1;
    }
    for (int i = 0; i < nmeta; i++) {
        if (!mk[i] || !mv[i])
            return err_set(LT_ERR_NULL, "%s: '%s': argument '%s[%d]' is NULL", fn, path,
                           mk[i] ? "meta_values" : "meta_keys", i), -1;
        if (!json_utf8_valid(mk[i]) || !json_utf8_valid(mv[i]))
            return err_set(LT_ERR_ARG, "%s: '%s': argument '%s[%d]' is not UTF-8", fn, path,
                           json_utf8_valid(mk[i]) ? "meta_values" : "meta_keys", i), -1;
    }
    return 0;
}

/* The JSON header, padded with spaces to a multiple of 8 so the data that
 * follows is aligned (as the reference writer does). */
static int build_header(json_buf *b, int n, const char *const *names, lt_tensor *const *tensors, int nmeta,
                        const char *const *mk, const char *const *mv) {
    int rc = json_buf_put(b, "{", 1);
    if (nmeta) {
        rc |= json_buf_str(b, "__metadata__") | json_buf_put(b, ":{", 2);
        for (int i = 0; i < nmeta && !rc; i++)
            rc |= (i ? json_buf_put(b, ",", 1) : 0) | json_buf_str(b, mk[i]) | json_buf_put(b, ":", 1) |
                  json_buf_str(b, mv[i]);
        rc |= json_buf_put(b, "}", 1);
    }
    uint64_t off = 0;
    for (int i = 0; i < n && !rc; i++) {
        lt_tensor *t = tensors[i];
        lt_dtype d = lt_dtype_of(t);
        uint64_t bytes = (uint64_t)lt_numel(t) * lt_dtype_size(d);
        rc |= ((nmeta || i) ? json_buf_put(b, ",", 1) : 0) | json_buf_str(b, names[i]);
        rc |= json_buf_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_names[d]);
        for (int k = 0; k < lt_ndim(t); k++) rc |= json_buf_printf(b, k ? ",%lld" : "%lld", (long long)lt_shape(t)[k]);
        rc |= json_buf_printf(b, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                              (unsigned long long)(off + bytes));
        off += bytes;
    }
    rc |= json_buf_put(b, "}", 1);
    while (!rc && b->len % 8) rc |= json_buf_put(b, " ", 1);
    return rc ? -1 : 0;
}

static int write_file(FILE *f, const char *path, const json_buf *hdr, int n, lt_tensor *const *tensors) {
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)((uint64_t)hdr->len >> (8 * k));
    if (write_all(f, len8, 8) || write_all(f, hdr->p, hdr->len))
        return err_set(LT_ERR_IO, "lt_save_safetensors: '%s': write failed: %s", path, strerror(errno)), -1;
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)lt_numel(tensors[i]) * lt_dtype_size(lt_dtype_of(tensors[i]));
        void *buf = core_malloc(bytes);
        if (!buf) return -1;
        int bad = lt_to_host(tensors[i], buf, bytes);
        if (!bad && write_all(f, buf, bytes))
            bad = (err_set(LT_ERR_IO, "lt_save_safetensors: '%s': write failed: %s", path, strerror(errno)), -1);
        core_free(buf);
        if (bad) return -1;
    }
    if (fflush(f) || fsync(fileno(f)))
        return err_set(LT_ERR_IO, "lt_save_safetensors: '%s': flush failed: %s", path, strerror(errno)), -1;
    return 0;
}

/* Makes the rename itself durable. Best effort: some file systems refuse
 * fsync on a directory, and the data is already safe in PATH. */
static void sync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

static int save(const char *fn, const char *path, int n, const char *const *names, lt_tensor *const *tensors,
                int nmeta, const char *const *meta_keys, const char *const *meta_values) {
    if (check_save_args(fn, path, n, names, tensors, nmeta, meta_keys, meta_values)) return -1;
    json_buf hdr = {0};
    size_t plen = strlen(path);
    char *tmp = core_malloc(plen + 5);
    if (!tmp || build_header(&hdr, n, names, tensors, nmeta, meta_keys, meta_values)) {
        core_free(tmp);
        core_free(hdr.p);
        return -1;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    int rc = -1;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        err_set(LT_ERR_IO, "%s: argument 'path': cannot create '%s': %s", fn, tmp, strerror(errno));
    } else {
        rc = write_file(f, path, &hdr, n, tensors);
        if (fclose(f) && !rc) rc = (err_set(LT_ERR_IO, "lt_save_safetensors: '%s': close failed: %s", tmp,
                                            strerror(errno)), -1);
        if (!rc && rename(tmp, path))
            rc = (err_set(LT_ERR_IO, "%s: argument 'path': cannot rename '%s' to '%s': %s", fn, tmp, path,
                          strerror(errno)), -1);
        if (rc) remove(tmp); /* the previous file at PATH is untouched */
        else sync_parent_dir(path);
    }
    core_free(tmp);
    core_free(hdr.p);
    return rc;
}

int lt_save_safetensors_meta(const char *path, int n, const char *const *names, lt_tensor *const *tensors, int nmeta,
                             const char *const *meta_keys, const char *const *meta_values) {
    return save("lt_save_safetensors_meta", path, n, names, tensors, nmeta, meta_keys, meta_values);
}

int lt_save_safetensors(const char *path, int n, const char *const *names, lt_tensor *const *tensors) {
    return save("lt_save_safetensors", path, n, names, tensors, 0, NULL, NULL);
}
