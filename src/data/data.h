/* data: IDX files, datasets (Fashion-MNIST, fake) and a batch loader.
 * Used by the command-line program and the tests; nothing in the runtime
 * depends on it. Errors go through the library's error state
 * (LT_ERR_IO / LT_ERR_FORMAT naming the file). */
#ifndef LT_DATA_H
#define LT_DATA_H

#include "lazytensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- IDX (idx.c) ---- */
#define DATA_IDX_MAX_DIMS 4
typedef struct data_idx {
    int ndim;
    int64_t dims[DATA_IDX_MAX_DIMS];
    const uint8_t *data; /* prod(dims) bytes, points into `base` */
    size_t size;
    void *base;          /* owned buffer */
} data_idx;

/* Parses an unsigned-byte IDX image held in memory (already decompressed).
 * `name` appears in error messages. On success `out->data` points into buf
 * and out->base is NULL (the caller owns buf). Returns 0 or -1 (error set). */
int data_idx_parse(const uint8_t *buf, size_t n, const char *name, data_idx *out);
/* Reads an IDX file, gzip-compressed or not. Returns 0 or -1 (error set). */
int data_idx_read(const char *path, data_idx *out);
void data_idx_free(data_idx *idx);

/* ---- datasets (fashion.c, fake.c) ---- */
typedef struct data_set {
    int64_t n;            /* samples */
    int c, h, w;          /* image layout (C, H, W), uint8 pixels */
    int classes;
    float mean, std;      /* normalization of pixel/255 */
    const uint8_t *images; /* n*c*h*w bytes; NULL: generated (fake) */
    const uint8_t *labels; /* n bytes; NULL: generated (fake) */
    uint64_t fake_seed;
    data_idx own[2];
} data_set;

#define DATA_FASHION_DIR "/usr/share/datasets/fashion-mnist"
#define DATA_FASHION_MEAN 0.2860f
#define DATA_FASHION_STD 0.3530f
/* Loads the train (60,000) or test (10,000) split from dir (NULL: default). */
int data_fashion_load(data_set *ds, const char *dir, bool train);
/* Fake images generated on the fly, deterministic per (seed, index); each
 * class has its own pattern under the noise, so a model can learn it. */
#define DATA_FAKE_TEST_SIZE 1000 /* the fake test set (the training set: 60,000) */
int data_fake_init(data_set *ds, int64_t n, int c, int hw, int classes, uint64_t seed);
void data_set_free(data_set *ds);
/* Writes sample i's pixels (c*h*w bytes) and returns its label. */
int data_sample(const data_set *ds, int64_t i, uint8_t *pixels);

/* ---- loader (loader.c) ---- */
typedef struct data_loader {
    const data_set *ds;
    int64_t batch;
    uint64_t seed;
    bool shuffle, augment;
    int64_t *perm;          /* order of the current epoch */
    int64_t perm_epoch;     /* epoch `perm` was built for; -1: none */
    int64_t rank, world;    /* data_loader_shard; 0, 1: everything */
    float *x;               /* (batch, c, h, w), reused every batch */
    int64_t *y;             /* (batch) */
    uint8_t *tmp, *tmp2;    /* one sample's raw pixels */
    float lut[256];         /* uint8 -> normalized float */
} data_loader;

int data_loader_init(data_loader *l, const data_set *ds, int64_t batch, uint64_t seed, bool shuffle,
                     bool augment);
void data_loader_free(data_loader *l);
/* Reads only this rank's share of every epoch, as torch's
 * DistributedSampler with drop_last: the permutation's first
 * floor(n / world) * world entries, every world-th from `rank`. Batch b of
 * the W ranks together is then exactly batch b of one loader whose batch is
 * W times larger (the same images, in another order). */
void data_loader_shard(data_loader *l, int64_t rank, int64_t world);
/* Full batches per epoch (training drops the last partial batch). */
int64_t data_loader_full_batches(const data_loader *l);
/* Fills l->x / l->y with batch b of epoch `epoch`; returns the number of rows
 * (< batch only for the last partial batch) or 0 past the end. */
int64_t data_loader_fill(data_loader *l, int64_t epoch, int64_t b);
/* Tensors of the filled rows: x (rows, c, h, w) f32 and y (rows) i64. */
lt_tensor *data_loader_x(const data_loader *l, int64_t rows);
lt_tensor *data_loader_y(const data_loader *l, int64_t rows);

/* ---- counter-based RNG (loader.c) ---- */
/* Stateless: a value depends only on its inputs, so shuffles and
 * augmentation are reproducible after a resume. */
uint64_t data_hash(uint64_t seed, uint64_t a, uint64_t b);

#endif
