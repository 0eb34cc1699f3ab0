/* Byte-level text corpora: loading, the train/validation split, random
 * windows, the unigram baseline. */
#include "text.h"

#include "lazytensor.h"
#include "../core/core.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Appends the file's bytes to t. */
static int append_file(data_text *t, const char *path, int64_t size) {
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(LT_ERR_IO, "data_text_load: cannot open '%s': %s", path, strerror(errno)), -1;
    uint8_t *nb = core_realloc(t->bytes, (size_t)(t->n + size + 1));
    if (!nb) return fclose(f), -1;
    t->bytes = nb;
    size_t got = fread(t->bytes + t->n, 1, (size_t)size, f);
    fclose(f);
    if ((int64_t)got != size) return err_set(LT_ERR_IO, "data_text_load: short read of '%s'", path), -1;
    t->n += size;
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int load_dir(data_text *t, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return err_set(LT_ERR_IO, "data_text_load: cannot open '%s': %s", dir, strerror(errno)), -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (len > 4 && !strcmp(e->d_name + len - 4, ".dat"))) continue;
        if (n == cap) {
            char **nn = core_realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *nn);
            if (!nn) rc = -1;
            else names = nn;
        }
        if (!rc && !(names[n] = core_malloc(len + 1))) rc = -1;
        if (!rc) memcpy(names[n++], e->d_name, len + 1);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!rc && lstat(path, &st) == 0 && S_ISREG(st.st_mode)) rc = append_file(t, path, (int64_t)st.st_size);
        core_free(names[i]);
    }
    core_free(names);
    return rc;
}

int data_text_load(data_text *t, const char *path) {
    memset(t, 0, sizeof *t);
    struct stat st;
    if (stat(path, &st)) return err_set(LT_ERR_IO, "data_text_load: cannot open '%s': %s", path, strerror(errno)), -1;
    int rc = S_ISDIR(st.st_mode) ? load_dir(t, path) : append_file(t, path, (int64_t)st.st_size);
    if (!rc && t->n < 2) {
        err_set(LT_ERR_FORMAT, "data_text_load: '%s' holds %lld bytes; a corpus needs at least 2", path,
                (long long)t->n);
        rc = -1;
    }
    if (rc) {
        data_text_free(t);
        return -1;
    }
    t->n_train = t->n - t->n / 10;
    return 0;
}

void data_text_free(data_text *t) {
    core_free(t->bytes);
    memset(t, 0, sizeof *t);
}

static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int data_text_batch(const data_text *t, int val, int64_t b, int64_t block, uint64_t seed, int64_t step, int64_t *x,
                    int64_t *y) {
    int64_t lo = val ? t->n_train : 0, len = (val ? t->n : t->n_train) - lo;
    if (len < block + 1) {
        err_set(LT_ERR_ARG, "data_text_batch: the %s part holds %lld bytes; a window needs %lld",
                val ? "validation" : "training", (long long)len, (long long)block + 1);
        return -1;
    }
    uint64_t h = mix(mix(seed ^ (val ? 0x5a5a5a5aull : 0)) ^ (uint64_t)step);
    for (int64_t i = 0; i < b; i++) {
        h = mix(h);
        const uint8_t *w = t->bytes + lo + (int64_t)(h % (uint64_t)(len - block));
        for (int64_t k = 0; k < block; k++) x[i * block + k] = w[k], y[i * block + k] = w[k + 1];
    }
    return 0;
}

double data_text_unigram_loss(const data_text *t) {
    double cnt[256], total = (double)t->n_train + 256, s = 0;
    for (int c = 0; c < 256; c++) cnt[c] = 1;
    for (int64_t i = 0; i < t->n_train; i++) cnt[t->bytes[i]] += 1;
    for (int64_t i = t->n_train; i < t->n; i++) s -= log(cnt[t->bytes[i]] / total);
    return t->n > t->n_train ? s / (double)(t->n - t->n_train) : NAN;
}
