/* The public dataset API against the loader it wraps: the same batches (the
 * ones `lazytensor train` sees), partial and past-the-end batches, and bad
 * arguments answered with errors that leave the library usable. */
#include "harness.h"

#include "data/data.h"

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

int main(void) {
    RUN(batches_match_the_loader);
    RUN(bad_arguments);
    return h_report();
}
