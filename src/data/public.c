/* The public dataset API (lt_dataset_*, lt_loader_*): the datasets and the
 * batch loaders of this folder behind opaque handles, for programs outside
 * the tree and the Python package. The batches are exactly those that
 * `lazytensor train` sees for the same dataset, batch size and seed. */
#include "image.h"

#include "../core/core.h"

#include <math.h>
#include <unistd.h>

struct lt_dataset {
    data_set ds;        /* in memory (Fashion-MNIST, fake) */
    data_folder folder; /* an image folder when folder.n > 0 */
    lt_imagefolder_opts fo;
};

struct lt_loader {
    data_loader l;
    data_floader *fl; /* image folders */
    const data_folder *folder;
    int64_t batch;
};

/* The loader's error (its message names the file or directory) again, with
 * the public function and its 'dir' argument in front. Returns NULL. */
static void *blame_dir(const char *fn, const char *dir) {
    char why[512];
    snprintf(why, sizeof why, "%s", lt_error_message());
    int code = lt_error();
    lt_clear_error();
    return err_set(code, "%s: argument 'dir' = %s: %s", fn, dir, why);
}

lt_dataset *lt_dataset_fashion_mnist(const char *dir, bool train) {
    lt_dataset *d = core_calloc(1, sizeof *d);
    if (!d) return NULL;
    if (data_fashion_load(&d->ds, dir, train)) {
        core_free(d);
        return blame_dir("lt_dataset_fashion_mnist", dir ? dir : DATA_FASHION_DIR);
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

lt_imagefolder_opts lt_imagefolder_defaults(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return (lt_imagefolder_opts){.image_size = 224, .channels = 3, .resize = 256,
                                 .mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f},
                                 .workers = cores < 1 ? 1 : cores > DATA_MAX_WORKERS ? DATA_MAX_WORKERS : (int)cores,
                                 .prefetch = 2, .fail_bad = false};
}

/* The options' first problem as an error naming the field; 0 if none. */
static int check_opts(const lt_imagefolder_opts *o) {
    const char *fn = "lt_dataset_imagefolder: argument 'opts'";
    if (o->image_size < 1 || o->image_size > 4096)
        return err_set(LT_ERR_ARG, "%s: image_size = %d is not in [1, 4096]", fn, o->image_size), -1;
    if (o->channels != 1 && o->channels != 3)
        return err_set(LT_ERR_ARG, "%s: channels = %d must be 1 or 3", fn, o->channels), -1;
    if (o->resize < 0 || o->resize > 65535)
        return err_set(LT_ERR_ARG, "%s: resize = %d is not in [0, 65535]", fn, o->resize), -1;
    for (int c = 0; c < o->channels; c++)
        if (!isfinite(o->mean[c]) || !(o->std[c] > 0) || !isfinite(o->std[c]))
            return err_set(LT_ERR_ARG, "%s: mean[%d] = %g, std[%d] = %g (finite, std > 0)", fn, c, o->mean[c], c,
                           o->std[c]), -1;
    if (o->workers < 0 || o->workers > DATA_MAX_WORKERS)
        return err_set(LT_ERR_ARG, "%s: workers = %d is not in [0, %d]", fn, o->workers, DATA_MAX_WORKERS), -1;
    if (o->prefetch < 1 || o->prefetch > 64)
        return err_set(LT_ERR_ARG, "%s: prefetch = %d is not in [1, 64]", fn, o->prefetch), -1;
    return 0;
}

lt_dataset *lt_dataset_imagefolder(const char *dir, const char *split, const lt_imagefolder_opts *opts) {
    if (!dir || !split)
        return err_set(LT_ERR_NULL, "lt_dataset_imagefolder: argument '%s' is NULL", !dir ? "dir" : "split");
    lt_imagefolder_opts o = opts ? *opts : lt_imagefolder_defaults();
    if (check_opts(&o)) return NULL;
    lt_dataset *d = core_calloc(1, sizeof *d);
    if (!d) return NULL;
    if (data_folder_open(&d->folder, dir, split)) {
        core_free(d);
        return blame_dir("lt_dataset_imagefolder", dir);
    }
    d->fo = o;
    return d;
}

void lt_dataset_free(lt_dataset *d) {
    if (!d) return;
    data_set_free(&d->ds);
    data_folder_free(&d->folder);
    core_free(d);
}

int64_t lt_dataset_size(const lt_dataset *d) {
    if (!d) return err_set(LT_ERR_NULL, "lt_dataset_size: argument 'ds' is NULL"), -1;
    return d->folder.n ? d->folder.n : d->ds.n;
}

int lt_dataset_info(const lt_dataset *d, int *channels, int *height, int *width, int *classes) {
    if (!d) return err_set(LT_ERR_NULL, "lt_dataset_info: argument 'ds' is NULL"), -1;
    bool f = d->folder.n > 0;
    if (channels) *channels = f ? d->fo.channels : d->ds.c;
    if (height) *height = f ? d->fo.image_size : d->ds.h;
    if (width) *width = f ? d->fo.image_size : d->ds.w;
    if (classes) *classes = f ? d->folder.classes : d->ds.classes;
    return 0;
}

const char *lt_dataset_class_name(const lt_dataset *d, int index) {
    if (!d) return err_set(LT_ERR_NULL, "lt_dataset_class_name: argument 'ds' is NULL");
    if (!d->folder.n)
        return err_set(LT_ERR_ARG, "lt_dataset_class_name: argument 'ds' is not an image folder (only those have class "
                                   "names)");
    if (index < 0 || index >= d->folder.classes)
        return err_set(LT_ERR_ARG, "lt_dataset_class_name: argument 'index' = %d is not in [0, %d)", index,
                       d->folder.classes);
    return d->folder.class_names[index];
}

/* An image folder's loader: the configuration `lazytensor train` builds. */
static data_floader *folder_loader(const lt_dataset *d, int64_t batch, uint64_t seed, bool shuffle, bool augment) {
    const lt_imagefolder_opts *o = &d->fo;
    data_floader_cfg cfg = {.batch = batch, .shuffle = shuffle, .drop_last = shuffle, .workers = o->workers,
                            .prefetch = o->prefetch, .fail_bad = o->fail_bad, .rank = 0, .world = 1, .warn = stderr,
                            .tf = {.size = o->image_size, .channels = o->channels, .resize = o->resize,
                                   .train = augment, .dct_scale = true, .seed = seed}};
    memcpy(cfg.tf.mean, o->mean, sizeof cfg.tf.mean);
    memcpy(cfg.tf.std, o->std, sizeof cfg.tf.std);
    return data_floader_new(&d->folder, &cfg);
}

lt_loader *lt_loader_new(const lt_dataset *d, int64_t batch, uint64_t seed, bool shuffle, bool augment) {
    if (!d) return err_set(LT_ERR_NULL, "lt_loader_new: argument 'ds' is NULL");
    if (batch < 1) return err_set(LT_ERR_ARG, "lt_loader_new: argument 'batch' = %lld must be positive", (long long)batch);
    lt_loader *l = core_calloc(1, sizeof *l);
    if (!l) return NULL;
    if (d->folder.n) {
        l->folder = &d->folder;
        l->batch = batch < d->folder.n ? batch : d->folder.n;
        if (!(l->fl = folder_loader(d, batch, seed, shuffle, augment))) {
            core_free(l);
            return NULL;
        }
    } else if (data_loader_init(&l->l, &d->ds, batch, seed, shuffle, augment)) {
        core_free(l);
        return NULL;
    }
    return l;
}

void lt_loader_free(lt_loader *l) {
    if (!l) return;
    if (l->fl) data_floader_free(l->fl);
    else data_loader_free(&l->l);
    core_free(l);
}

int64_t lt_loader_num_batches(const lt_loader *l) {
    if (!l) return err_set(LT_ERR_NULL, "lt_loader_num_batches: argument 'loader' is NULL"), -1;
    return l->fl ? l->folder->n / l->batch : data_loader_full_batches(&l->l);
}

int64_t lt_loader_batch_size(const lt_loader *l) {
    if (!l) return err_set(LT_ERR_NULL, "lt_loader_batch_size: argument 'loader' is NULL"), -1;
    return l->fl ? l->batch : l->l.batch;
}

int64_t lt_loader_batch(lt_loader *l, int64_t epoch, int64_t b, lt_tensor **x, lt_tensor **y) {
    if (!l || !x || !y)
        return err_set(LT_ERR_NULL, "lt_loader_batch: argument '%s' is NULL", !l ? "loader" : !x ? "x" : "y"), -1;
    *x = *y = NULL;
    if (epoch < 0 || b < 0)
        return err_set(LT_ERR_ARG, "lt_loader_batch: argument '%s' = %lld must be >= 0", epoch < 0 ? "epoch" : "b",
                       (long long)(epoch < 0 ? epoch : b)), -1;
    if (l->fl) return data_floader_next(l->fl, epoch, b, x, y);
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

int64_t lt_loader_skipped(const lt_loader *l) {
    if (!l) return err_set(LT_ERR_NULL, "lt_loader_skipped: argument 'loader' is NULL"), -1;
    return l->fl ? data_floader_stats_get(l->fl).skipped : 0;
}
