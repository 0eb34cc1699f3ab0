/* The public dataset API against the loader it wraps: the same batches (the
 * ones `lazytensor train` sees), partial and past-the-end batches, and bad
 * arguments answered with errors that leave the library usable. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "harness.h"

#include "data/image.h"

#include <sys/stat.h>
#include <unistd.h>

static void same_batch(const lt_dataset *ds, int64_t batch, uint64_t seed, int64_t epoch, int64_t b) {
    lt_loader *l = lt_loader_new(ds, batch, seed, true, true);
    data_set ref_ds;
    data_loader ref;
    CHECK(l && data_fake_init(&ref_ds, 100, 1, 12, 10, 7) == 0);
    CHECK(data_loader_init(&ref, &ref_ds, batch, seed, true, true) == 0);
    lt_tensor *x, *y;
    int64_t rows = lt_loader_batch(l, epoch, b, &x, &y), want = data_loader_fill(&ref, epoch, b);
    CHECK_MSG(rows == want, "rows %lld, loader %lld", (long long)rows, (long long)want);
    if (rows > 0) {
        lt_tensor *rx = data_loader_x(&ref, rows), *ry = data_loader_y(&ref, rows);
        double *a = h_read(x), *c = h_read(rx), *ya = h_read(y), *yc = h_read(ry);
        CHECK(lt_numel(x) == rows * 144 && lt_numel(y) == rows && lt_dtype_of(y) == LT_I64);
        CHECK(!memcmp(a, c, sizeof *a * (size_t)lt_numel(x)) && !memcmp(ya, yc, sizeof *ya * (size_t)rows));
        free(a), free(c), free(ya), free(yc);
        lt_free(rx), lt_free(ry), lt_free(x), lt_free(y);
    }
    data_loader_free(&ref);
    data_set_free(&ref_ds);
    lt_loader_free(l);
}

TEST(batches_match_the_loader) {
    lt_dataset *ds = lt_dataset_fake(100, 1, 12, 10, 7);
    CHECK(ds && lt_dataset_size(ds) == 100);
    int c, h, w, k;
    CHECK(lt_dataset_info(ds, &c, &h, &w, &k) == 0 && c == 1 && h == 12 && w == 12 && k == 10);
    same_batch(ds, 16, 3, 0, 0);
    same_batch(ds, 16, 3, 1, 2);
    same_batch(ds, 16, 3, 0, 6); /* the partial last batch: 4 rows */
    same_batch(ds, 16, 3, 0, 7); /* past the end: 0 */
    lt_loader *l = lt_loader_new(ds, 16, 3, true, false);
    CHECK(lt_loader_num_batches(l) == 6 && lt_loader_batch_size(l) == 16);
    lt_tensor *x, *y;
    CHECK(lt_loader_batch(l, 0, 6, &x, &y) == 4);
    EXPECT_SHAPE(x, 4, 1, 12, 12);
    lt_free(x), lt_free(y);
    CHECK(lt_loader_batch(l, 0, 99, &x, &y) == 0 && !x && !y);
    lt_loader_free(l);
    lt_dataset_free(ds);
    CHECK_NO_ERR();
}

TEST(bad_arguments) {
    lt_tensor *x, *y;
    CHECK(!lt_dataset_fake(0, 1, 28, 10, 0));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_dataset_fake(10, 1, 28, 1, 0));
    CHECK_ERR(LT_ERR_ARG);
    CHECK(!lt_dataset_fashion_mnist("/nonexistent/lazytensor", true));
    CHECK_ERR(LT_ERR_IO);
    CHECK(!lt_loader_new(NULL, 8, 0, false, false));
    CHECK_ERR(LT_ERR_NULL);
    lt_dataset *ds = lt_dataset_fake(10, 1, 4, 2, 0);
    CHECK(!lt_loader_new(ds, 0, 0, false, false));
    CHECK_ERR(LT_ERR_ARG);
    lt_loader *l = lt_loader_new(ds, 4, 0, false, false);
    CHECK(lt_loader_batch(l, -1, 0, &x, &y) == -1);
    CHECK_ERR(LT_ERR_ARG);
    CHECK(lt_loader_batch(NULL, 0, 0, &x, &y) == -1);
    CHECK_ERR(LT_ERR_NULL);
    CHECK(lt_loader_num_batches(NULL) == -1 && lt_dataset_size(NULL) == -1);
    CHECK_ERR(LT_ERR_NULL);
    CHECK(lt_loader_batch(l, 0, 0, &x, &y) == 4); /* still usable */
    lt_free(x), lt_free(y);
    lt_loader_free(l);
    lt_dataset_free(ds);
    lt_loader_free(NULL);
    lt_dataset_free(NULL);
}

/* ROOT/train/<b_cls, a_cls>/<5 PNGs of 10x12> with distinct pixels. */
static void write_folder(const char *root) {
    char p[256], msg[IMG_MSG];
    static const char *cls[2] = {"b_cls", "a_cls"};
    mkdir(root, 0755);
    snprintf(p, sizeof p, "%s/train", root);
    mkdir(p, 0755);
    for (int c = 0; c < 2; c++) {
        snprintf(p, sizeof p, "%s/train/%s", root, cls[c]);
        mkdir(p, 0755);
        for (int i = 0; i < 5; i++) {
            uint8_t px[10 * 12 * 3];
            for (size_t k = 0; k < sizeof px; k++) px[k] = (uint8_t)(k * (3 + i) + 40 * c);
            snprintf(p, sizeof p, "%s/train/%s/%d.png", root, cls[c], i);
            FILE *f = fopen(p, "wb");
            CHECK(f && !img_png_write(f, px, 10, 12, 3, msg));
            if (f) fclose(f);
        }
    }
}

TEST(image_folder) {
    if (!img_have(IMG_PNG)) {
        printf("  skipped: PNG support not built\n");
        return;
    }
    char root[128];
    snprintf(root, sizeof root, "/tmp/lt_test_data_api_%d", (int)getpid());
    write_folder(root);
    lt_imagefolder_opts o = lt_imagefolder_defaults();
    o.image_size = 8, o.workers = 2;
    lt_dataset *ds = lt_dataset_imagefolder(root, "train", &o);
    int c, h, w, k;
    CHECK(ds && lt_dataset_size(ds) == 10 && lt_dataset_info(ds, &c, &h, &w, &k) == 0 && c == 3 && h == 8 && w == 8 &&
          k == 2);
    const char *n0 = lt_dataset_class_name(ds, 0), *n1 = lt_dataset_class_name(ds, 1);
    CHECK(n0 && n1 && !strcmp(n0, "a_cls") && !strcmp(n1, "b_cls")); /* sorted, as torchvision */
    CHECK(!lt_dataset_class_name(ds, 2));
    CHECK_ERR(LT_ERR_ARG);
    /* the loader `lazytensor train` runs, on the calling thread, is the oracle */
    data_folder f;
    CHECK(data_folder_open(&f, root, "train") == 0);
    data_floader_cfg cfg = {.batch = 4, .shuffle = true, .drop_last = true, .workers = 0, .prefetch = 1, .world = 1,
                            .tf = {.size = 8, .channels = 3, .resize = 256, .train = true, .dct_scale = true,
                                   .seed = 5}};
    memcpy(cfg.tf.mean, o.mean, sizeof o.mean);
    memcpy(cfg.tf.std, o.std, sizeof o.std);
    data_floader *ref = data_floader_new(&f, &cfg);
    lt_loader *l = lt_loader_new(ds, 4, 5, true, true);
    CHECK(ref && l && lt_loader_num_batches(l) == 2 && lt_loader_batch_size(l) == 4);
    for (int64_t e = 0; e < 2 && l && ref; e++)
        for (int64_t b = 0; b < 3; b++) { /* batch 2 is the dropped partial one */
            lt_tensor *x, *y, *rx, *ry;
            int64_t rows = lt_loader_batch(l, e, b, &x, &y), want = data_floader_next(ref, e, b, &rx, &ry);
            CHECK_MSG(rows == want && rows == (b < 2 ? 4 : 0), "epoch %lld batch %lld: %lld rows, %lld expected",
                      (long long)e, (long long)b, (long long)rows, (long long)want);
            if (rows > 0) {
                EXPECT_SHAPE(x, 4, 3, 8, 8);
                double *a = h_read(x), *r = h_read(rx), *ya = h_read(y), *yr = h_read(ry);
                CHECK(!memcmp(a, r, sizeof *a * 4 * 3 * 8 * 8) && !memcmp(ya, yr, sizeof *ya * 4));
                free(a), free(r), free(ya), free(yr);
            }
            lt_free(x), lt_free(y), lt_free(rx), lt_free(ry);
        }
    CHECK(lt_loader_skipped(l) == 0);
    lt_loader_free(l);
    data_floader_free(ref);
    data_folder_free(&f);
    l = lt_loader_new(ds, 3, 0, false, false); /* evaluation: every image, the last batch partial */
    lt_tensor *x, *y;
    CHECK(l && lt_loader_num_batches(l) == 3 && lt_loader_batch(l, 0, 3, &x, &y) == 1);
    lt_free(x), lt_free(y);
    lt_loader_free(l);
    lt_dataset_free(ds);
    /* bad arguments */
    CHECK(!lt_dataset_imagefolder(NULL, "train", NULL));
    CHECK_ERR(LT_ERR_NULL);
    CHECK(!lt_dataset_imagefolder(root, "val", NULL)); /* no such split */
    CHECK_ERR(LT_ERR_IO);
    o.channels = 2;
    CHECK(!lt_dataset_imagefolder(root, "train", &o));
    CHECK_ERR(LT_ERR_ARG);
    o.channels = 1, o.std[0] = 0;
    CHECK(!lt_dataset_imagefolder(root, "train", &o));
    CHECK_ERR(LT_ERR_ARG);
    lt_dataset *fake = lt_dataset_fake(10, 1, 4, 2, 0);
    CHECK(!lt_dataset_class_name(fake, 0));
    CHECK_ERR(LT_ERR_ARG);
    lt_dataset_free(fake);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", root);
}

int main(void) {
    RUN(batches_match_the_loader);
    RUN(bad_arguments);
    RUN(image_folder);
    return h_report();
}
