/* Fashion-MNIST from the Debian package dataset-fashion-mnist: four gzip IDX
 * files. Checks that images and labels agree, so a mismatched or damaged
 * file is reported instead of training on garbage. */
#include "data.h"

#include "../core/core.h"

static int load_pair(data_set *ds, const char *dir, const char *img, const char *lab) {
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s/%s", dir, img);
    snprintf(p2, sizeof p2, "%s/%s", dir, lab);
    if (data_idx_read(p1, &ds->own[0]) || data_idx_read(p2, &ds->own[1])) return -1;
    const data_idx *x = &ds->own[0], *y = &ds->own[1];
    if (x->ndim != 3 || x->dims[1] != 28 || x->dims[2] != 28)
        return err_set(LT_ERR_FORMAT, "fashion-mnist: %s: expected (N, 28, 28) images", p1), -1;
    if (y->ndim != 1 || y->dims[0] != x->dims[0])
        return err_set(LT_ERR_FORMAT, "fashion-mnist: %s: %lld labels for %lld images in %s", p2,
                       (long long)(y->ndim == 1 ? y->dims[0] : -1), (long long)x->dims[0], p1), -1;
    if (x->dims[0] == 0) return err_set(LT_ERR_FORMAT, "fashion-mnist: %s: no images", p1), -1;
    for (size_t i = 0; i < y->size; i++)
        if (y->data[i] >= 10)
            return err_set(LT_ERR_FORMAT, "fashion-mnist: %s: label %d at %zu (expected 0..9)", p2, y->data[i], i),
                   -1;
    return 0;
}

int data_fashion_load(data_set *ds, const char *dir, bool train) {
    memset(ds, 0, sizeof *ds);
    if (!dir) dir = DATA_FASHION_DIR;
    int rc = train ? load_pair(ds, dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
                   : load_pair(ds, dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz");
    if (rc) {
        data_set_free(ds);
        return -1;
    }
    ds->n = ds->own[0].dims[0];
    ds->c = 1;
    ds->h = ds->w = 28;
    ds->classes = 10;
    ds->mean = DATA_FASHION_MEAN;
    ds->std = DATA_FASHION_STD;
    ds->images = ds->own[0].data;
    ds->labels = ds->own[1].data;
    return 0;
}

void data_set_free(data_set *ds) {
    if (!ds) return;
    data_idx_free(&ds->own[0]);
    data_idx_free(&ds->own[1]);
    memset(ds, 0, sizeof *ds);
}
