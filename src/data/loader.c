/* Batch loader: per-epoch shuffle, optional crop/flip augmentation, uint8 ->
 * normalized float through a lookup table, into one host buffer reused for
 * every batch. The order and the augmentation of an epoch depend only on
 * (seed, epoch, index), so a resumed run sees exactly the batches the
 * uninterrupted run would have seen. */
#include "data.h"

#include "../core/core.h"

uint64_t data_hash(uint64_t seed, uint64_t a, uint64_t b) {
    /* splitmix64 finalizer over a combination of the inputs */
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (a + 1) + 0xBF58476D1CE4E5B9ull * (b + 0x632BE59BD9B4E019ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int data_loader_init(data_loader *l, const data_set *ds, int64_t batch, uint64_t seed, bool shuffle,
                     bool augment) {
    memset(l, 0, sizeof *l);
    if (!ds || batch < 1) return err_set(LT_ERR_ARG, "loader: bad batch size %lld", (long long)batch), -1;
    if (batch > ds->n) batch = ds->n;
    size_t sz = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    l->ds = ds;
    l->batch = batch;
    l->seed = seed;
    l->shuffle = shuffle;
    l->augment = augment;
    l->perm_epoch = -1;
    l->world = 1;
    l->perm = malloc(sizeof *l->perm * (size_t)ds->n);
    l->x = malloc(sizeof *l->x * sz * (size_t)batch);
    l->y = malloc(sizeof *l->y * (size_t)batch);
    l->tmp = malloc(sz);
    l->tmp2 = malloc(sz);
    if (!l->perm || !l->x || !l->y || !l->tmp || !l->tmp2) {
        data_loader_free(l);
        return err_set(LT_ERR_OOM, "loader: out of memory"), -1;
    }
    for (int v = 0; v < 256; v++) l->lut[v] = ((float)v / 255.0f - ds->mean) / ds->std;
    return 0;
}

void data_loader_free(data_loader *l) {
    free(l->perm);
    free(l->x);
    free(l->y);
    free(l->tmp);
    free(l->tmp2);
    memset(l, 0, sizeof *l);
}

void data_loader_shard(data_loader *l, int64_t rank, int64_t world) {
    l->rank = rank;
    l->world = world;
}

int64_t data_loader_full_batches(const data_loader *l) { return l->ds->n / l->world / l->batch; }

static void build_perm(data_loader *l, int64_t epoch) {
    int64_t n = l->ds->n;
    for (int64_t i = 0; i < n; i++) l->perm[i] = i;
    if (l->shuffle)
        for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates; modulo bias is < 2^-40 here */
            int64_t j = (int64_t)(data_hash(l->seed, (uint64_t)epoch, (uint64_t)i) % (uint64_t)(i + 1));
            int64_t t = l->perm[i];
            l->perm[i] = l->perm[j];
            l->perm[j] = t;
        }
    l->perm_epoch = epoch;
}

/* Random crop with 2 pixels of zero padding, and a horizontal flip. */
static void augment(const data_set *ds, const uint8_t *src, uint8_t *dst, uint64_t r) {
    int dx = (int)(r % 5) - 2, dy = (int)((r >> 8) % 5) - 2, flip = (int)((r >> 16) & 1);
    for (int c = 0; c < ds->c; c++)
        for (int y = 0; y < ds->h; y++)
            for (int x = 0; x < ds->w; x++) {
                int sy = y + dy, sx = (flip ? ds->w - 1 - x : x) + dx;
                size_t o = ((size_t)c * (size_t)ds->h + (size_t)y) * (size_t)ds->w + (size_t)x;
                dst[o] = (sy < 0 || sy >= ds->h || sx < 0 || sx >= ds->w)
                             ? 0
                             : src[((size_t)c * (size_t)ds->h + (size_t)sy) * (size_t)ds->w + (size_t)sx];
            }
}

int64_t data_loader_fill(data_loader *l, int64_t epoch, int64_t b) {
    const data_set *ds = l->ds;
    int64_t start = b * l->batch, n = ds->n / l->world; /* this rank's share */
    if (b < 0 || start >= n) return 0;
    int64_t rows = n - start < l->batch ? n - start : l->batch;
    if (l->perm_epoch != epoch) build_perm(l, epoch);
    size_t sz = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    for (int64_t r = 0; r < rows; r++) {
        int64_t idx = l->perm[(start + r) * l->world + l->rank];
        l->y[r] = data_sample(ds, idx, l->tmp);
        const uint8_t *px = l->tmp;
        if (l->augment) {
            augment(ds, l->tmp, l->tmp2, data_hash(l->seed ^ 0xA6A6u, (uint64_t)epoch, (uint64_t)idx));
            px = l->tmp2;
        }
        float *dst = l->x + (size_t)r * sz;
        for (size_t k = 0; k < sz; k++) dst[k] = l->lut[px[k]];
    }
    return rows;
}

lt_tensor *data_loader_x(const data_loader *l, int64_t rows) {
    int64_t shape[4] = {rows, l->ds->c, l->ds->h, l->ds->w};
    return lt_from_data(l->x, LT_F32, 4, shape);
}

lt_tensor *data_loader_y(const data_loader *l, int64_t rows) {
    int64_t shape[1] = {rows};
    return lt_from_data(l->y, LT_I64, 1, shape);
}
