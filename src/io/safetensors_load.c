/* Reading safetensors files. Nothing in the file is trusted: the header
 * length, the JSON, every dtype, shape and offset is checked before a byte of
 * data is read, and the offsets must tile the data section exactly (no gap,
 * no overlap, nothing past the end), as the reference implementation
 * requires. Every rejection is LT_ERR_FORMAT (or LT_ERR_IO for the file
 * system) with a message naming the file and the problem. */
#define _POSIX_C_SOURCE 200809L
#include "json.h"

#include "../core/core.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>

#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)
#define FN "lt_load_safetensors"

typedef struct entry {
    const char *name; /* borrowed from the parsed header */
    lt_dtype dtype;
    int ndim;
    int64_t shape[LT_MAX_DIMS];
    uint64_t begin, end;
} entry;

static int bad(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const char *path, const char *fmt, ...) {
    char what[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    err_set(LT_ERR_FORMAT, FN ": argument 'path' '%s': %s", path, what);
    return -1;
}

static int parse_dtype(const char *s, lt_dtype *d) {
    static const char *const names[] = {"F32", "F64", "I32", "I64", "BOOL", "BF16", "U8"}; /* by lt_dtype */
    for (int k = 0; k < (int)(sizeof names / sizeof *names); k++)
        if (!strcmp(s, names[k])) { *d = (lt_dtype)k; return 0; }
    return -1;
}

/* Checks one tensor's description; fills e. */
static int parse_entry(const char *path, const char *name, const json *v, entry *e) {
    if (v->kind != JSON_OBJ) return bad(path, "tensor '%s': description is not an object", name);
    const json *dt = json_get(v, "dtype"), *sh = json_get(v, "shape"), *of = json_get(v, "data_offsets");
    if (!dt || !sh || !of || v->n != 3)
        return bad(path, "tensor '%s': needs exactly the keys dtype, shape, data_offsets", name);
    e->name = name;
    if (dt->kind != JSON_STR || parse_dtype(dt->str, &e->dtype))
        return bad(path, "tensor '%s': unknown or unsupported dtype", name);
    if (sh->kind != JSON_ARR || sh->n > LT_MAX_DIMS)
        return bad(path, "tensor '%s': shape is not an array of at most %d sizes", name, LT_MAX_DIMS);
    e->ndim = sh->n;
    uint64_t numel = 1;
    for (int k = 0; k < sh->n; k++) {
        const json *d = &sh->items[k];
        if (d->kind != JSON_NUM || !d->is_uint || d->u > (uint64_t)INT64_MAX)
            return bad(path, "tensor '%s': shape entry %d is not a non-negative integer", name, k);
        e->shape[k] = (int64_t)d->u;
        if (d->u && numel > (uint64_t)INT64_MAX / d->u)
            return bad(path, "tensor '%s': shape overflows", name);
        numel *= d->u;
    }
    if (of->kind != JSON_ARR || of->n != 2 || of->items[0].kind != JSON_NUM || !of->items[0].is_uint ||
        of->items[1].kind != JSON_NUM || !of->items[1].is_uint)
        return bad(path, "tensor '%s': data_offsets is not [begin, end]", name);
    e->begin = of->items[0].u;
    e->end = of->items[1].u;
    if (e->end < e->begin)
        return bad(path, "tensor '%s': data_offsets end %llu is before begin %llu", name,
                   (unsigned long long)e->end, (unsigned long long)e->begin);
    uint64_t esz = dtype_size(e->dtype);
    if (numel > UINT64_MAX / esz || e->end - e->begin != numel * esz)
        return bad(path, "tensor '%s': data_offsets hold %llu bytes but dtype and shape need %llu", name,
                   (unsigned long long)(e->end - e->begin),
                   (unsigned long long)(numel > UINT64_MAX / esz ? UINT64_MAX : numel * esz));
    return 0;
}

static int cmp_begin(const void *a, const void *b) {
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end; /* empty tensors first at a shared offset */
}

/* The offsets must tile [0, data_len) exactly. */
static int check_tiling(const char *path, entry *es, int n, uint64_t data_len) {
    entry **order = core_malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return -1;
    for (int i = 0; i < n; i++) order[i] = &es[i];
    qsort(order, (size_t)n, sizeof *order, cmp_begin);
    uint64_t pos = 0;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (order[i]->begin < pos)
            rc = bad(path, "tensor '%s': data_offsets begin %llu overlaps the previous tensor (which ends at %llu)",
                     order[i]->name, (unsigned long long)order[i]->begin, (unsigned long long)pos);
        else if (order[i]->begin > pos)
            rc = bad(path, "tensor '%s': data_offsets begin %llu leaves a gap after byte %llu", order[i]->name,
                     (unsigned long long)order[i]->begin, (unsigned long long)pos);
        else if (order[i]->end > data_len)
            rc = bad(path, "tensor '%s': data_offsets end %llu is past the data section (%llu bytes); truncated?",
                     order[i]->name, (unsigned long long)order[i]->end, (unsigned long long)data_len);
        pos = order[i]->end;
    }
    if (!rc && pos != data_len)
        rc = bad(path, "the tensors cover %llu bytes but the data section has %llu",
                 (unsigned long long)pos, (unsigned long long)data_len);
    core_free(order);
    return rc;
}

static int parse_metadata(const char *path, const json *m, int *nmeta, char ***mk, char ***mv) {
    if (m->kind != JSON_OBJ) return bad(path, "__metadata__ is not an object");
    for (int k = 0; k < m->n; k++)
        if (m->items[k].kind != JSON_STR || strlen(m->items[k].str) != m->items[k].len)
            return bad(path, "__metadata__ value of '%s' is not a string", m->keys[k]);
    if (!mk) return 0;
    size_t arr = (size_t)(m->n ? m->n : 1) * sizeof(char *);
    *mk = core_calloc(1, arr);
    *mv = core_calloc(1, arr);
    if (!*mk || !*mv) return -1;
    *nmeta = m->n; /* entries stay NULL until filled, so cleanup frees what exists */
    for (int k = 0; k < m->n; k++) {
        (*mk)[k] = core_malloc(strlen(m->keys[k]) + 1);
        (*mv)[k] = core_malloc(m->items[k].len + 1);
        if (!(*mk)[k] || !(*mv)[k]) return -1;
        strcpy((*mk)[k], m->keys[k]);
        strcpy((*mv)[k], m->items[k].str);
    }
    return 0;
}

static int read_at(FILE *f, const char *path, uint64_t off, void *dst, size_t n) {
    if (fseeko(f, (off_t)off, SEEK_SET) || fread(dst, 1, n, f) != n)
        return err_set(LT_ERR_IO, FN ": argument 'path' '%s': read of %zu bytes at offset %llu failed%s%s", path, n,
                       (unsigned long long)off, ferror(f) ? ": " : " (file changed while reading?)",
                       ferror(f) ? strerror(errno) : ""), -1;
    return 0;
}

/* Reads and checks the data of one tensor and makes it a tensor. */
static lt_tensor *load_tensor(FILE *f, const char *path, const entry *e, uint64_t data_start) {
    size_t bytes = (size_t)(e->end - e->begin);
    unsigned char *buf = core_malloc(bytes);
    if (!buf) return NULL;
    lt_tensor *t = NULL;
    if (!read_at(f, path, data_start + e->begin, buf, bytes)) {
        size_t k = 0;
        if (e->dtype == LT_BOOL)
            while (k < bytes && buf[k] <= 1) k++;
        if (e->dtype == LT_BOOL && k < bytes)
            bad(path, "tensor '%s': BOOL byte %zu holds %u (must be 0 or 1)", e->name, k, buf[k]);
        else
            t = lt_from_data(buf, e->dtype, e->ndim, e->shape);
    }
    core_free(buf);
    return t;
}

static void free_strs(char **a, int n) {
    if (!a) return;
    for (int i = 0; i < n; i++) core_free(a[i]);
    core_free(a);
}

/* Reads the length prefix and the header JSON. */
static int read_header(FILE *f, const char *path, uint64_t fsize, json *hdr, uint64_t *data_start) {
    unsigned char len8[8];
    if (fsize < 8)
        return bad(path, "truncated: %llu bytes, a safetensors file has at least 8", (unsigned long long)fsize);
    if (read_at(f, path, 0, len8, 8)) return -1;
    /* A safetensors file is an 8-byte length and then a JSON object: when the
     * ninth byte is not '{', the file is something else (text, an image...),
     * and saying so beats reporting its first 8 bytes as a length. */
    char first;
    if (fsize > 8 && read_at(f, path, 8, &first, 1)) return -1;
    if (fsize > 8 && first != '{')
        return bad(path, "not a safetensors file (its 8-byte length prefix must be followed by a JSON header, which "
                         "must start with '{')");
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; k--) hlen = (hlen << 8) | len8[k];
    if (hlen > ST_MAX_HEADER)
        return bad(path, "header length %llu exceeds the limit of %llu bytes", (unsigned long long)hlen,
                   (unsigned long long)ST_MAX_HEADER);
    if (hlen > fsize - 8)
        return bad(path, "truncated: header length %llu but only %llu bytes follow", (unsigned long long)hlen,
                   (unsigned long long)(fsize - 8));
    if (hlen < 2) return bad(path, "header length %llu is too short for a JSON object", (unsigned long long)hlen);
    char *text = core_malloc((size_t)hlen);
    if (!text) return -1;
    if (read_at(f, path, 8, text, (size_t)hlen)) { core_free(text); return -1; }
    char err[160];
    int rc = 0;
    if (json_parse(text, (size_t)hlen, hdr, err, sizeof err))
        rc = err_code() ? -1 : bad(path, "header is not valid JSON: %s", err);
    else if (hdr->kind != JSON_OBJ)
        rc = bad(path, "header is not a JSON object");
    core_free(text);
    *data_start = 8 + hlen;
    return rc;
}

int lt_load_safetensors_meta(const char *path, char ***names, lt_tensor ***tensors, int *nmeta, char ***meta_keys,
                             char ***meta_values) {
    if (!path || !names || !tensors)
        return err_set(LT_ERR_NULL, FN "%s: argument '%s' is NULL", nmeta || meta_keys || meta_values ? "_meta" : "",
                       !path ? "path" : !names ? "names" : "tensors"), -1;
    if ((meta_keys || meta_values || nmeta) && !(meta_keys && meta_values && nmeta))
        return err_set(LT_ERR_NULL, FN "_meta: '%s': argument '%s' is NULL: pass all three metadata outputs or none",
                       path, !nmeta ? "nmeta" : !meta_keys ? "meta_keys" : "meta_values"), -1;
    *names = NULL;
    *tensors = NULL;
    if (nmeta) { *nmeta = 0; *meta_keys = *meta_values = NULL; }
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(LT_ERR_IO, FN ": argument 'path': cannot open '%s': %s", path, strerror(errno)), -1;
    struct stat sb;
    json hdr = {0};
    entry *es = NULL;
    uint64_t data_start = 0;
    int n = 0, nt = 0, rc = -1;
    if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
        err_set(LT_ERR_IO, FN ": argument 'path' '%s' is not a readable regular file", path);
        goto done;
    }
    if (read_header(f, path, (uint64_t)sb.st_size, &hdr, &data_start)) goto done;
    es = core_malloc((size_t)(hdr.n ? hdr.n : 1) * sizeof *es);
    if (!es) goto done;
    for (int k = 0; k < hdr.n; k++) {
        if (!strcmp(hdr.keys[k], "__metadata__")) {
            if (parse_metadata(path, &hdr.items[k], nmeta, meta_keys, meta_values)) goto done;
        } else if (parse_entry(path, hdr.keys[k], &hdr.items[k], &es[n])) {
            goto done;
        } else {
            n++;
        }
    }
    if (check_tiling(path, es, n, (uint64_t)sb.st_size - data_start)) goto done;
    *names = core_calloc((size_t)(n ? n : 1), sizeof(char *));
    *tensors = core_calloc((size_t)(n ? n : 1), sizeof(lt_tensor *));
    if (!*names || !*tensors) goto done;
    for (nt = 0; nt < n; nt++) {
        (*names)[nt] = core_malloc(strlen(es[nt].name) + 1);
        if (!(*names)[nt]) goto done;
        strcpy((*names)[nt], es[nt].name);
        (*tensors)[nt] = load_tensor(f, path, &es[nt], data_start);
        if (!(*tensors)[nt]) { nt++; goto done; }
    }
    rc = n;
done:
    if (rc < 0) {
        for (int i = 0; i < nt && *tensors; i++) lt_free((*tensors)[i]);
        free_strs(*names, nt);
        core_free(*tensors);
        *names = NULL;
        *tensors = NULL;
        if (nmeta) {
            free_strs(*meta_keys, *nmeta);
            free_strs(*meta_values, *nmeta);
            *meta_keys = *meta_values = NULL;
            *nmeta = 0;
        }
    }
    core_free(es);
    json_free(&hdr);
    fclose(f);
    return rc;
}

int lt_load_safetensors(const char *path, char ***names, lt_tensor ***tensors) {
    return lt_load_safetensors_meta(path, names, tensors, NULL, NULL, NULL);
}
