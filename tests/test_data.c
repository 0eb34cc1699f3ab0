/* src/data: the IDX reader (valid, malformed, truncated, gzip), the
 * Fashion-MNIST loader on generated files, fake data, and the batch loader
 * (shuffle determinism, normalization, augmentation). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "harness.h"

#include "data/data.h"

#include <stdint.h>
#include <unistd.h>

static char dir[256];

/* An IDX image: magic, dims, then bytes i*7+1. */
static size_t make_idx(uint8_t *buf, int nd, const uint32_t *dims) {
    size_t n = 4, total = 1;
    buf[0] = buf[1] = 0, buf[2] = 8, buf[3] = (uint8_t)nd;
    for (int i = 0; i < nd; i++) {
        buf[n++] = (uint8_t)(dims[i] >> 24), buf[n++] = (uint8_t)(dims[i] >> 16);
        buf[n++] = (uint8_t)(dims[i] >> 8), buf[n++] = (uint8_t)dims[i];
        total *= dims[i];
    }
    for (size_t i = 0; i < total; i++) buf[n++] = (uint8_t)(i * 7 + 1);
    return n;
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}

/* gzip with one stored (uncompressed) deflate block: a valid .gz made
 * without linking zlib into the test. n must be < 65536. */
static size_t gzip_stored(const uint8_t *in, size_t n, uint8_t *out) {
    static const uint8_t head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    size_t k = 0;
    memcpy(out, head, 10), k = 10;
    out[k++] = 1; /* BFINAL, stored */
    out[k++] = (uint8_t)n, out[k++] = (uint8_t)(n >> 8);
    out[k++] = (uint8_t)~n, out[k++] = (uint8_t)(~n >> 8);
    memcpy(out + k, in, n), k += n;
    uint32_t c = crc32_of(in, n);
    for (int i = 0; i < 4; i++) out[k++] = (uint8_t)(c >> (8 * i));
    for (int i = 0; i < 4; i++) out[k++] = (uint8_t)(n >> (8 * i));
    return k;
}

static const char *write_file(const char *name, const uint8_t *p, size_t n) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fwrite(p, 1, n, f);
    fclose(f);
    return path;
}

TEST(idx_parse_valid) {
    uint8_t buf[256];
    uint32_t dims[3] = {2, 3, 4};
    size_t n = make_idx(buf, 3, dims);
    data_idx x;
    CHECK(data_idx_parse(buf, n, "mem", &x) == 0);
    CHECK(x.ndim == 3 && x.dims[0] == 2 && x.dims[1] == 3 && x.dims[2] == 4 && x.size == 24);
    CHECK(x.data == buf + 16 && x.data[5] == 36);
    CHECK_NO_ERR();
}

static void expect_reject(const uint8_t *buf, size_t n, const char *what) {
    data_idx x;
    CHECK_MSG(data_idx_parse(buf, n, "bad.idx", &x) == -1, "%s: accepted", what);
    CHECK_MSG(lt_error() == LT_ERR_FORMAT, "%s: error %d", what, lt_error());
    CHECK_MSG(strstr(lt_error_message(), "bad.idx") != NULL, "%s: message does not name the file: %s", what,
              lt_error_message());
    lt_clear_error();
}

TEST(idx_parse_rejects) {
    uint8_t buf[256], b[256];
    uint32_t dims[2] = {3, 5};
    size_t n = make_idx(buf, 2, dims);
    expect_reject(buf, 0, "empty");
    expect_reject(buf, 3, "short magic");
    expect_reject(buf, 7, "truncated dims");
    expect_reject(buf, n - 1, "truncated data");
    memcpy(b, buf, n), b[n] = 0;
    expect_reject(b, n + 1, "trailing byte");
    memcpy(b, buf, n), b[0] = 1;
    expect_reject(b, n, "bad magic");
    memcpy(b, buf, n), b[2] = 0x0D;
    expect_reject(b, n, "float type");
    memcpy(b, buf, n), b[3] = 0;
    expect_reject(b, n, "0 dims");
    memcpy(b, buf, n), b[3] = 9;
    expect_reject(b, n, "9 dims");
    uint32_t huge[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 2};
    n = 4 + 16;
    b[0] = b[1] = 0, b[2] = 8, b[3] = 4;
    for (int i = 0; i < 4; i++)
        b[4 + 4 * i] = (uint8_t)(huge[i] >> 24), b[5 + 4 * i] = (uint8_t)(huge[i] >> 16),
                  b[6 + 4 * i] = (uint8_t)(huge[i] >> 8), b[7 + 4 * i] = (uint8_t)huge[i];
    expect_reject(b, n, "overflowing dims");
}

/* Random byte flips and cuts of a valid file: never a crash, never an
 * accepted file whose payload does not fit the buffer. */
TEST(idx_parse_mutations) {
    uint8_t buf[256], b[256];
    uint32_t dims[3] = {2, 3, 5};
    size_t n = make_idx(buf, 3, dims);
    uint64_t r = 12345;
    for (int it = 0; it < 20000; it++) {
        memcpy(b, buf, n);
        r = data_hash(r, (uint64_t)it, 1);
        size_t cut = (r >> 32) % 3 == 0 ? (size_t)(r % (n + 1)) : n;
        b[(r >> 8) % n] ^= (uint8_t)(1u << ((r >> 16) % 8));
        data_idx x;
        if (data_idx_parse(b, cut, "fuzz", &x) == 0) CHECK(16 + x.size <= cut && x.data + x.size == b + cut);
        lt_clear_error();
    }
}

TEST(idx_files_plain_gzip_truncated) {
    uint8_t buf[512], gz[1024];
    uint32_t dims[2] = {10, 20};
    size_t n = make_idx(buf, 2, dims);
    data_idx x;
    CHECK(data_idx_read(write_file("plain.idx", buf, n), &x) == 0 && x.size == 200 && x.data[1] == 8);
    data_idx_free(&x);
    size_t gn = gzip_stored(buf, n, gz);
    const char *p = write_file("ok.idx.gz", gz, gn);
    if (data_idx_read(p, &x) == 0) {
        CHECK(x.size == 200 && x.data[199] == (uint8_t)(199 * 7 + 1));
        data_idx_free(&x);
        p = write_file("cut.idx.gz", gz, gn - 30); /* a cut-off download */
        CHECK(data_idx_read(p, &x) == -1);
        CHECK(lt_error() == LT_ERR_FORMAT && strstr(lt_error_message(), "cut.idx.gz"));
        lt_clear_error();
        gz[20] ^= 0xFF; /* payload damaged: the CRC catches it */
        p = write_file("crc.idx.gz", gz, gn);
        CHECK(data_idx_read(p, &x) == -1 && lt_error() == LT_ERR_FORMAT);
        lt_clear_error();
    } else { /* built without zlib: a clear error instead */
        CHECK(strstr(lt_error_message(), "zlib") != NULL);
        lt_clear_error();
    }
    CHECK(data_idx_read("/nonexistent/dir/x.idx.gz", &x) == -1);
    CHECK(lt_error() == LT_ERR_IO && strstr(lt_error_message(), "/nonexistent/dir/x.idx.gz"));
    lt_clear_error();
}

static void write_split(const char *img, const char *lab, uint32_t n, uint32_t nlab, int bad_label) {
    static uint8_t buf[1 << 16];
    uint32_t d3[3] = {n, 28, 28}, d1[1] = {nlab};
    write_file(img, buf, make_idx(buf, 3, d3));
    size_t k = make_idx(buf, 1, d1);
    for (uint32_t i = 0; i < nlab; i++) buf[8 + i] = (uint8_t)(i % 10);
    if (bad_label) buf[8] = 10;
    write_file(lab, buf, k);
}

TEST(fashion_from_files) {
    write_split("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 6, 6, 0);
    write_split("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 3, 3, 0);
    data_set tr, te;
    CHECK(data_fashion_load(&tr, dir, true) == 0 && tr.n == 6 && tr.h == 28 && tr.classes == 10);
    CHECK(data_fashion_load(&te, dir, false) == 0 && te.n == 3);
    uint8_t px[784];
    CHECK(data_sample(&tr, 5, px) == 5 && px[0] == (uint8_t)(5 * 784 * 7 + 1));
    data_set_free(&tr);
    data_set_free(&te);
    write_split("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 3, 4, 0);
    CHECK(data_fashion_load(&te, dir, false) == -1 && lt_error() == LT_ERR_FORMAT);
    lt_clear_error();
    write_split("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 3, 3, 1);
    CHECK(data_fashion_load(&te, dir, false) == -1 && strstr(lt_error_message(), "label 10"));
    lt_clear_error();
    CHECK(data_fashion_load(&te, "/nonexistent", false) == -1 && lt_error() == LT_ERR_IO);
    lt_clear_error();
}

TEST(fashion_installed) { /* the real files, when the Debian package is there */
    data_set te;
    if (data_fashion_load(&te, NULL, false)) {
        lt_clear_error();
        return;
    }
    CHECK(te.n == 10000 && te.c == 1 && te.h == 28);
    data_set_free(&te);
}

TEST(fake_deterministic) {
    data_set a, b, c;
    CHECK(data_fake_init(&a, 100, 3, 16, 1000, 7) == 0 && data_fake_init(&b, 100, 3, 16, 1000, 7) == 0);
    CHECK(data_fake_init(&c, 100, 3, 16, 1000, 8) == 0);
    uint8_t pa[768], pb[768], pc[768];
    int la = data_sample(&a, 42, pa), lb = data_sample(&b, 42, pb), lc = data_sample(&c, 42, pc);
    CHECK(la == lb && !memcmp(pa, pb, sizeof pa) && la >= 0 && la < 1000);
    CHECK(lc != la || memcmp(pa, pc, sizeof pa));
    CHECK(data_fake_init(&a, 0, 3, 16, 10, 0) == -1);
    CHECK_ERR(LT_ERR_ARG);
}

TEST(loader_shuffle_normalize) {
    data_set ds;
    data_fake_init(&ds, 103, 1, 8, 10, 3);
    data_loader l1, l2;
    CHECK(data_loader_init(&l1, &ds, 10, 99, true, false) == 0 && data_loader_init(&l2, &ds, 10, 99, true, false) == 0);
    CHECK(data_loader_full_batches(&l1) == 10);
    /* every sample once per epoch; the last batch is partial */
    int seen[103] = {0};
    for (int64_t b = 0; b < 11; b++) {
        int64_t rows = data_loader_fill(&l1, 0, b);
        CHECK(rows == (b < 10 ? 10 : 3));
        for (int64_t r = 0; r < rows; r++) seen[l1.perm[b * 10 + r]]++;
    }
    CHECK(data_loader_fill(&l1, 0, 11) == 0);
    int once = 1;
    for (int i = 0; i < 103; i++) once &= seen[i] == 1;
    CHECK(once);
    /* same seed and epoch: same batches, even out of order (as after a resume) */
    data_loader_fill(&l1, 2, 4);
    float x1[640];
    int64_t y1[10];
    memcpy(x1, l1.x, sizeof x1), memcpy(y1, l1.y, sizeof y1);
    data_loader_fill(&l2, 2, 4);
    CHECK(!memcmp(x1, l2.x, sizeof x1) && !memcmp(y1, l2.y, sizeof y1));
    data_loader_fill(&l2, 3, 4); /* another epoch: another order */
    CHECK(memcmp(y1, l2.y, sizeof y1) || memcmp(x1, l2.x, sizeof x1));
    /* normalization: (pixel / 255 - mean) / std */
    uint8_t px[64];
    int label = data_sample(&ds, l2.perm[40], px);
    CHECK(l2.y[0] == label && fabsf(l2.x[5] - ((float)px[5] / 255.0f - 0.5f) / 0.25f) < 1e-6f);
    data_loader_free(&l1);
    data_loader_free(&l2);
    /* Fashion-MNIST statistics, and the tensors made from the host buffer */
    ds.mean = DATA_FASHION_MEAN, ds.std = DATA_FASHION_STD;
    CHECK(data_loader_init(&l1, &ds, 4, 0, false, false) == 0);
    CHECK(fabsf(l1.lut[0] - (-0.2860f / 0.3530f)) < 1e-6f && fabsf(l1.lut[255] - (0.714f / 0.353f)) < 1e-5f);
    data_loader_fill(&l1, 0, 0);
    lt_tensor *x = data_loader_x(&l1, 4), *y = data_loader_y(&l1, 4);
    EXPECT_SHAPE(x, 4, 1, 8, 8);
    CHECK(lt_dtype_of(y) == LT_I64 && lt_numel(y) == 4);
    float got[256];
    CHECK(lt_to_host(x, got, sizeof got) == 0 && !memcmp(got, l1.x, sizeof got));
    lt_free(x), lt_free(y);
    data_loader_free(&l1);
}

TEST(loader_augment) {
    data_set ds;
    data_fake_init(&ds, 20, 1, 8, 10, 1);
    data_loader a, b;
    data_loader_init(&a, &ds, 20, 5, false, true);
    data_loader_init(&b, &ds, 20, 5, false, true);
    data_loader_fill(&a, 0, 0);
    data_loader_fill(&b, 0, 0);
    CHECK(!memcmp(a.x, b.x, sizeof(float) * 20 * 64)); /* deterministic per (seed, epoch, index) */
    data_loader_fill(&b, 1, 0);
    CHECK(memcmp(a.x, b.x, sizeof(float) * 20 * 64)); /* but changes with the epoch */
    /* crops move pixels, never invent them: every value is a source pixel or the zero pad */
    uint8_t px[64];
    int ok = 1;
    for (int r = 0; r < 20; r++) {
        data_sample(&ds, r, px);
        for (int k = 0; k < 64; k++) {
            int found = a.x[r * 64 + k] == a.lut[0];
            for (int j = 0; j < 64 && !found; j++) found = a.x[r * 64 + k] == a.lut[px[j]];
            ok &= found;
        }
    }
    CHECK(ok);
    data_loader_free(&a);
    data_loader_free(&b);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/lt_test_data_%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd)) return 1;
    RUN(idx_parse_valid);
    RUN(idx_parse_rejects);
    RUN(idx_parse_mutations);
    RUN(idx_files_plain_gzip_truncated);
    RUN(fashion_from_files);
    RUN(fashion_installed);
    RUN(fake_deterministic);
    RUN(loader_shuffle_normalize);
    RUN(loader_augment);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return h_report();
}
