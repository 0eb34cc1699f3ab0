/* The batches of --data, whatever their source: the in-memory datasets
 * (Fashion-MNIST, fake) through data_loader, image folders through the
 * threaded data_floader. train.c sees one interface: batches per epoch and
 * "batch b of epoch e as tensors". */
#include "batches.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool big_model(const char *m) { return !strcmp(m, "resnet18") || !strcmp(m, "resnet50"); }

/* "x" or "x,y,z" into v[0..c); one value applies to every channel; NULL:
 * the ImageNet statistics (their average for one channel). */
static int parse_stats(const char *s, const float *dflt, int c, float *v, const char *opt) {
    if (!s) {
        for (int i = 0; i < c; i++) v[i] = c == 1 ? (dflt[0] + dflt[1] + dflt[2]) / 3 : dflt[i];
        return 0;
    }
    int n = 0;
    for (const char *p = s; n < 3;) {
        char *end;
        double x = strtod(p, &end);
        if (end == p || !isfinite(x)) break;
        v[n++] = (float)x;
        if (*end != ',') {
            p = end;
            if (!*end && (n == 1 || n == c)) {
                for (int i = n; i < c; i++) v[i] = v[0];
                return 0;
            }
            break;
        }
        p = end + 1;
    }
    fprintf(stderr, "lazytensor: --%s %s: expected one number or %d comma-separated numbers\n", opt, s, c);
    return -1;
}

/* The first `keep` of n samples spread evenly over the (class-sorted)
 * folder, so --test-size takes every class, not the first ones. */
static void thin(data_folder *f, int64_t keep) {
    if (keep < 0 || keep >= f->n) return;
    for (int64_t i = 0, j = 0; i < f->n; i++) {
        if (j < keep && i == j * f->n / keep) {
            f->paths[j] = f->paths[i], f->labels[j] = f->labels[i];
            j++;
        } else {
            free(f->paths[i]);
        }
    }
    f->n = keep;
}

int cli_default_workers(void) { return lt_imagefolder_defaults().workers; }

static int open_folder(cli_batches *b, const cli_opts *o, bool train) {
    const char *split = train ? "train" : "val";
    if (!o->data_dir) {
        fprintf(stderr, "lazytensor: --data imagefolder needs --data-dir DIR (with DIR/train/<class>/*.jpg and "
                        "DIR/val/<class>/*.jpg)\n");
        return -1;
    }
    if (data_folder_open(&b->folder, o->data_dir, split)) {
        fprintf(stderr, "lazytensor: %s\n", lt_error_message());
        lt_clear_error();
        return -1;
    }
    if (!train) thin(&b->folder, o->test_size);
    if (!b->folder.n) return 0; /* --test-size 0: nothing to decode */
    int size = o->image_size ? o->image_size : 224, c = o->channels ? o->channels : 3;
    data_floader_cfg cfg = {
        .batch = train ? o->batch_size : o->eval_batch ? o->eval_batch : o->batch_size,
        .shuffle = train,
        .drop_last = train,
        .workers = o->workers >= 0 ? o->workers : cli_default_workers(),
        .prefetch = o->prefetch ? o->prefetch : 2,
        .fail_bad = o->bad_images && !strcmp(o->bad_images, "fail"),
        .rank = 0, /* the sharding hook: (rank, world) of a multi-process run */
        .world = 1,
        .warn = stderr,
        .tf = {.size = size, .channels = c, .train = train && o->augment, .dct_scale = true, .seed = o->seed,
               .resize = o->resize >= 0 ? o->resize : size * 256 / 224},
    };
    lt_imagefolder_opts dflt = lt_imagefolder_defaults(); /* ImageNet's statistics */
    if (parse_stats(o->mean, dflt.mean, c, cfg.tf.mean, "mean") || parse_stats(o->std, dflt.std, c, cfg.tf.std, "std"))
        return -1;
    if (!(b->fl = data_floader_new(&b->folder, &cfg))) {
        fprintf(stderr, "lazytensor: %s\n", lt_error_message());
        lt_clear_error();
        return -1;
    }
    b->n = b->folder.n;
    b->c = c, b->hw = size, b->classes = b->folder.classes;
    b->batch = cfg.batch > b->n ? b->n : cfg.batch;
    return 0;
}

static int open_memory(cli_batches *b, const cli_opts *o, bool train) {
    data_set *ds = &b->ds;
    if (!strcmp(o->data, "fake")) {
        bool big = big_model(o->model); /* ImageNet-like for the ImageNet models */
        int c = big ? 3 : 1, hw = o->image_size ? o->image_size : big ? 224 : 28, classes = big ? 1000 : 10;
        /* A small test set: fake data is for benchmarking, and 10,000 images at
         * 224x224 took minutes to evaluate after seconds of training. */
        if (data_fake_init(ds, train ? 60000 : DATA_FAKE_TEST_SIZE, c, hw, classes, train ? o->seed : o->seed ^ 0x7e57u)) {
            fprintf(stderr, "lazytensor: %s\n", lt_error_message());
            return -1;
        }
    } else {
        if (o->image_size && o->image_size != 28) {
            fprintf(stderr, "lazytensor: --image-size applies to --data fake and imagefolder (Fashion-MNIST is 28x28)\n");
            return -1;
        }
        const char *dir = o->data_dir ? o->data_dir : DATA_FASHION_DIR;
        if (data_fashion_load(ds, dir, train)) {
            int missing = lt_error() == LT_ERR_IO;
            fprintf(stderr, "lazytensor: %s\n", lt_error_message());
            if (missing)
                fprintf(stderr, "lazytensor: Fashion-MNIST is not installed in %s. Install it with:\n"
                                "    apt-get install dataset-fashion-mnist\n"
                                "or train on generated data with --data fake\n", dir);
            return -1;
        }
    }
    if (!train && o->test_size >= 0 && o->test_size < ds->n) ds->n = o->test_size;
    b->n = ds->n;
    b->c = ds->c, b->hw = ds->h, b->classes = ds->classes;
    if (!ds->n) return 0; /* --test-size 0: nothing to load */
    int64_t batch = train ? o->batch_size : o->eval_batch ? o->eval_batch : o->batch_size;
    if (data_loader_init(&b->ml, ds, batch, o->seed, train, train && o->augment)) {
        fprintf(stderr, "lazytensor: %s\n", lt_error_message());
        return -1;
    }
    b->batch = b->ml.batch;
    return 0;
}

int batches_open(cli_batches *b, const cli_opts *o, bool train) {
    memset(b, 0, sizeof *b);
    int rc = !strcmp(o->data, "imagefolder") ? open_folder(b, o, train) : open_memory(b, o, train);
    if (rc) batches_close(b);
    return rc;
}

int batches_shard(cli_batches *b, int64_t rank, int64_t world) {
    if (world == 1) return 0;
    if (b->fl && data_floader_shard(b->fl, (int)rank, (int)world)) {
        fprintf(stderr, "lazytensor: %s\n", lt_error_message());
        lt_clear_error();
        return -1;
    }
    if (b->ml.shuffle) data_loader_shard(&b->ml, rank, world);
    else b->rank = rank, b->world = world; /* evaluation in memory: whole batches, none dropped */
    return 0;
}

int64_t batches_per_epoch(const cli_batches *b) {
    if (b->fl) return data_floader_batches(b->fl);
    if (!b->ml.ds) return 0;
    if (b->ml.shuffle) return data_loader_full_batches(&b->ml);
    int64_t all = (b->n + b->batch - 1) / b->batch, w = b->world ? b->world : 1;
    return (all - b->rank + w - 1) / w;
}

int64_t batches_next(cli_batches *b, int64_t epoch, int64_t i, lt_tensor **x, lt_tensor **y) {
    if (b->fl) return data_floader_next(b->fl, epoch, i, x, y);
    *x = *y = NULL;
    if (!b->ml.ds) return 0;
    if (!b->ml.shuffle && b->world > 1) i = i * b->world + b->rank;
    int64_t rows = data_loader_fill(&b->ml, epoch, i);
    if (rows) *x = data_loader_x(&b->ml, rows), *y = data_loader_y(&b->ml, rows);
    return rows;
}

void batches_stats(const cli_batches *b, int64_t *skipped, int64_t *decoded) {
    data_floader_stats st = {0};
    if (b->fl) st = data_floader_stats_get(b->fl);
    *skipped = st.skipped;
    *decoded = st.decoded;
}

void batches_close(cli_batches *b) {
    data_floader_free(b->fl);
    data_folder_free(&b->folder);
    if (b->ml.ds) data_loader_free(&b->ml);
    data_set_free(&b->ds);
    memset(b, 0, sizeof *b);
}
