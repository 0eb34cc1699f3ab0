/* The public dataset API (lt_dataset_*, lt_loader_*): the datasets and the
 * batch loader of this folder behind opaque handles, for programs outside
 * the tree and the Python package. The batches are exactly those that
 * `lazytensor train` sees for the same dataset, batch size and seed. */
#include "data.h"

#include "../core/core.h"

struct lt_dataset {
    data_set ds;
};

struct lt_loader {
    data_loader l;
};

lt_dataset *lt_dataset_fashion_mnist(const char *dir, bool train) {
    lt_dataset *d = core_calloc(1, sizeof *d);
    if (!d) return NULL;
    if (data_fashion_load(&d->ds, dir, train)) {
        char why[256]; /* the loader's message names the file */
        snprintf(why, sizeof why, "%s", lt_error_message());
        int code = lt_error();
        lt_clear_error();
        err_set(code, "lt_dataset_fashion_mnist: argument 'dir' = %s: %s", dir ? dir : DATA_FASHION_DIR, why);
        core_free(d);
        return NULL;
    }
    return d;
}

lt_dataset *lt_dataset_fake(int64_t n, int channels, int image_size, int classes, uint64_t seed) {
    if (n < 1) return err_set(LT_ERR_ARG, "lt_dataset_fake: argument 'n' = %lld must be positive", (long long)n);
    if (channels < 1 || channels > 64)
        return err_set(LT_ERR_ARG, "lt_dataset_fake: argument 'channels' = %d is not in [1, 64]", channels);
    if (image_size < 1 || image_size > 4096)
        return err_set(LT_ERR_ARG, "lt_dataset_fake: argument 'image_size' = %d is not in [1, 4096]", image_size);
    if (classes < 2) return err_set(LT_ERR_ARG, "lt_dataset_fake: argument 'classes' = %d must be >= 2", classes);
    lt_dataset *d = core_calloc(1, sizeof *d);
    if (!d) return NULL;
    if (data_fake_init(&d->ds, n, channels, image_size, classes, seed)) {
        core_free(d);
        return NULL;
    }
    return d;
}

void lt_dataset_free(lt_dataset *d) {
    if (!d) return;
    data_set_free(&d->ds);
    core_free(d);
}

int64_t lt_dataset_size(const lt_dataset *d) {
    if (!d) return err_set(LT_ERR_NULL, "lt_dataset_size: argument 'ds' is NULL"), -1;
    return d->ds.n;
}

int lt_dataset_info(const lt_dataset *d, int *channels, int *height, int *width, int *classes) {
    if (!d) return err_set(LT_ERR_NULL, "lt_dataset_info: argument 'ds' is NULL"), -1;
    if (channels) *channels = d->ds.c;
    if (height) *height = d->ds.h;
    if (width) *width = d->ds.w;
    if (classes) *classes = d->ds.classes;
    return 0;
}

lt_loader *lt_loader_new(const lt_dataset *d, int64_t batch, uint64_t seed, bool shuffle, bool augment) {
    if (!d) return err_set(LT_ERR_NULL, "lt_loader_new: argument 'ds' is NULL");
    if (batch < 1) return err_set(LT_ERR_ARG, "lt_loader_new: argument 'batch' = %lld must be positive", (long long)batch);
    lt_loader *l = core_calloc(1, sizeof *l);
    if (!l) return NULL;
    if (data_loader_init(&l->l, &d->ds, batch, seed, shuffle, augment)) {
        core_free(l);
        return NULL;
    }
    return l;
}

void lt_loader_free(lt_loader *l) {
    if (!l) return;
    data_loader_free(&l->l);
    core_free(l);
}

int64_t lt_loader_num_batches(const lt_loader *l) {
    if (!l) return err_set(LT_ERR_NULL, "lt_loader_num_batches: argument 'loader' is NULL"), -1;
    return data_loader_full_batches(&l->l);
}

int64_t lt_loader_batch_size(const lt_loader *l) {
    if (!l) return err_set(LT_ERR_NULL, "lt_loader_batch_size: argument 'loader' is NULL"), -1;
    return l->l.batch;
}

int64_t lt_loader_batch(lt_loader *l, int64_t epoch, int64_t b, lt_tensor **x, lt_tensor **y) {
    if (!l || !x || !y)
        return err_set(LT_ERR_NULL, "lt_loader_batch: argument '%s' is NULL", !l ? "loader" : !x ? "x" : "y"), -1;
    *x = *y = NULL;
    if (epoch < 0 || b < 0)
        return err_set(LT_ERR_ARG, "lt_loader_batch: argument '%s' = %lld must be >= 0", epoch < 0 ? "epoch" : "b",
                       (long long)(epoch < 0 ? epoch : b)), -1;
    int64_t rows = data_loader_fill(&l->l, epoch, b);
    if (rows <= 0) return rows;
    *x = data_loader_x(&l->l, rows);
    *y = data_loader_y(&l->l, rows);
    if (!*x || !*y) {
        lt_free(*x), lt_free(*y);
        *x = *y = NULL;
        return -1;
    }
    return rows;
}
