/* The image pipeline loses nothing: Fashion-MNIST IDX files (a slice of the
 * real ones when the Debian package is installed, generated pixels of every
 * value otherwise) exported by `lazytensor export-images --format png` and
 * read back through the image-folder loader (--channels 1, the dataset's
 * mean and std, crop only) give exactly the IDX loader's normalized tensors
 * and labels. Checked in the strongest form: folder sample i is the IDX
 * sample at place i of the stable sort by label (ImageFolder's class-sorted
 * order), which implies equality as multisets keyed by label and is what
 * makes a run on a class-sorted copy of the IDX files (bench/
 * fmnist_class_sorted.py) see the folder run's batches, sample for sample. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "cli_run.h"
#include "harness.h"

#include "data/data.h"
#include "data/image.h"

#include <stdint.h>
#include <sys/stat.h>

enum { NTRAIN = 1200, NTEST = 300, PX = 28 * 28 };

/* An uncompressed IDX file under a .gz name (the reader takes plain files
 * as zlib's gzread does). */
static int write_idx(const char *dir, const char *name, int nd, uint32_t n, const uint8_t *data) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) return -1;
    uint8_t head[16] = {0, 0, 8, (uint8_t)nd, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n,
                        0, 0, 0, 28, 0, 0, 0, 28};
    size_t len = nd == 3 ? (size_t)n * PX : n;
    int ok = fwrite(head, 1, 4 + 4 * (size_t)nd, f) == 4 + 4 * (size_t)nd && fwrite(data, 1, len, f) == len;
    return fclose(f) || !ok ? -1 : 0;
}

/* DIR's train and t10k files: the first n samples of the installed dataset,
 * or generated ones whose pixels take every byte value. */
static int write_split(const char *dir, bool train, uint32_t n, bool *real) {
    static uint8_t px[NTRAIN * PX], lab[NTRAIN];
    data_set ds;
    *real = data_fashion_load(&ds, NULL, train) == 0 && ds.n >= n;
    if (*real) {
        memcpy(px, ds.images, (size_t)n * PX), memcpy(lab, ds.labels, n);
        data_set_free(&ds);
    } else {
        lt_clear_error();
        for (uint32_t i = 0; i < n; i++) {
            lab[i] = (uint8_t)((i * 7 + i / 10) % 10);
            for (size_t k = 0; k < PX; k++) px[i * PX + k] = (uint8_t)(i * 31 + k * 7 + (k * k >> 3));
        }
    }
    return write_idx(dir, train ? "train-images-idx3-ubyte.gz" : "t10k-images-idx3-ubyte.gz", 3, n, px) ||
           write_idx(dir, train ? "train-labels-idx1-ubyte.gz" : "t10k-labels-idx1-ubyte.gz", 1, n, lab);
}

/* Every sample of ds in order (no shuffle): n*PX normalized pixels and n labels. */
static int64_t read_all(const lt_dataset *ds, double *x, double *y, int64_t cap) {
    lt_loader *l = lt_loader_new(ds, 128, 0, false, false);
    int64_t n = 0, rows;
    lt_tensor *bx, *by;
    for (int64_t b = 0; l && (rows = lt_loader_batch(l, 0, b, &bx, &by)) > 0; b++) {
        if (n + rows <= cap) {
            double *a = h_read(bx), *c = h_read(by);
            memcpy(x + n * PX, a, sizeof *a * (size_t)rows * PX), memcpy(y + n, c, sizeof *c * (size_t)rows);
            free(a), free(c);
        }
        n += rows;
        lt_free(bx), lt_free(by);
    }
    lt_loader_free(l);
    return l ? n : -1;
}

static void same_split(const char *idx, const char *png, bool train, int64_t n) {
    static double xi[NTRAIN * PX], yi[NTRAIN], xf[NTRAIN * PX], yf[NTRAIN];
    lt_imagefolder_opts o = lt_imagefolder_defaults();
    o.image_size = 28, o.channels = 1, o.resize = 0, o.mean[0] = 0.2860f, o.std[0] = 0.3530f, o.workers = 2;
    lt_dataset *di = lt_dataset_fashion_mnist(idx, train);
    lt_dataset *df = lt_dataset_imagefolder(png, train ? "train" : "val", &o);
    CHECK(di && df);
    CHECK(read_all(di, xi, yi, NTRAIN) == n && read_all(df, xf, yf, NTRAIN) == n);
    int64_t at = 0, bad = 0; /* the folder's next sample */
    for (int c = 0; c < 10; c++)
        for (int64_t i = 0; i < n; i++)
            if (yi[i] == c && at < n) {
                bad += yf[at] != c || memcmp(xi + i * PX, xf + at * PX, sizeof *xi * PX);
                at++;
            }
    CHECK_MSG(at == n && bad == 0, "%s: %lld of %lld samples differ from the IDX loader's", train ? "train" : "val",
              (long long)bad, (long long)n);
    lt_dataset_free(di), lt_dataset_free(df);
    CHECK_NO_ERR();
}

TEST(png_export_is_lossless) {
    if (!img_have(IMG_PNG)) {
        printf("  skipped: PNG support not built\n");
        return;
    }
    char idx[256], png[256], out[4096];
    snprintf(idx, sizeof idx, "%s/idx", cli_tmp);
    snprintf(png, sizeof png, "%s/png", cli_tmp);
    bool real_train, real_test;
    CHECK(mkdir(idx, 0755) == 0);
    CHECK(write_split(idx, true, NTRAIN, &real_train) == 0 && write_split(idx, false, NTEST, &real_test) == 0);
    printf("  %s pixels\n", real_train && real_test ? "Fashion-MNIST's" : "generated");
    int rc = cli_run(out, sizeof out, true, "export-images --data fashion-mnist --data-dir %s --out %s --format png",
                     idx, png);
    CHECK_MSG(rc == 0, "export-images: exit %d: %s", rc, out);
    same_split(idx, png, true, NTRAIN);
    same_split(idx, png, false, NTEST);
}

int main(int argc, char **argv) {
    if (cli_setup(argc > 1 ? argv[1] : NULL, "lt_test_export")) return 1;
    RUN(png_export_is_lossless);
    cli_cleanup();
    return h_report();
}
