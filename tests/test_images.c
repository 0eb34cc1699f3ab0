/* Image folders: decoding against PIL, transforms against torchvision
 * (tests/data/images/, written by scripts/make_image_fixtures.py), the
 * pixel limits, broken files skipped and counted with the right labels,
 * layout errors, the same batches for 0, 1 and 4 workers, and sharding;
 * the resampler's vector copies against its scalar one.
 * Without TurboJPEG or libspng the cases that need them say so and skip. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "harness.h"

#include "core/isa.h"
#include "data/data.h"
#include "data/image.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[160]; /* scratch folder of this run */

static const char *fixture(const char *name) {
    static char buf[4][1024];
    static int k;
    const char *slash = strrchr(__FILE__, '/');
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%.*s/data/images/%s", slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".",
             name);
    return b;
}

static uint8_t *slurp(const char *path, size_t *n) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    char msg[IMG_MSG];
    if (img_read_file(path, &buf, &cap, n, msg)) {
        h_fail(__FILE__, __LINE__, "%s: %s", path, msg);
        free(buf);
        return NULL;
    }
    return buf;
}

static void spit(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n);
    if (f) fclose(f);
}

static bool have(const char *name) {
    img_format f = strstr(name, ".png") ? IMG_PNG : IMG_JPEG;
    if (!img_have(f)) printf("  skipped %s: %s support not built\n", name, f == IMG_PNG ? "PNG" : "JPEG");
    return img_have(f);
}

TEST(decode_matches_pil) {
    static const char *files[] = {"rgb420.jpg", "rgb444.jpg", "progressive.jpg", "grayj.jpg", "cmyk.jpg",
                                  "rgb.png",    "rgba.png",   "palette.png",     "gray.png",  "graya.png",
                                  "bw.png",     "rgb16.png",  "big.png"};
    img im = {0};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (!have(files[i])) continue;
        char ref[64], msg[IMG_MSG];
        snprintf(ref, sizeof ref, "%.*s.rgb", (int)(strchr(files[i], '.') - files[i]), files[i]);
        size_t n, rn;
        uint8_t *buf = slurp(fixture(files[i]), &n), *want = slurp(fixture(ref), &rn);
        if (!buf || !want) continue;
        int d = img_decode(buf, n, 1, NULL, &im, msg);
        CHECK_MSG(d == 1, "%s: %s", files[i], msg);
        if (d == 1 && (size_t)im.w * (size_t)im.h * 3 != rn) h_fail(__FILE__, __LINE__, "%s: size", files[i]);
        else if (d == 1) {
            double sum = 0;
            int maxd = 0;
            for (size_t k = 0; k < rn; k++) {
                int e = abs((int)im.px[k] - (int)want[k]);
                sum += e;
                maxd = e > maxd ? e : maxd;
            }
            bool png = strstr(files[i], ".png") != NULL;
            /* PNG: identical; JPEG: within 1 level mean absolute difference */
            CHECK_MSG(png ? maxd == 0 : sum / (double)rn <= 1.0, "%s: mean |diff| %.3f, max %d against PIL",
                      files[i], sum / (double)rn, maxd);
        }
        free(buf), free(want);
    }
    img_free(&im);
}

/* A JPEG of w x h written here (quality 90, 4:2:0 for RGB): smooth
 * gradients under a fine pattern, so that every block has detail. */
static uint8_t *jpeg_of(int w, int h, int ch, size_t *n) {
    uint8_t *px = malloc((size_t)w * h * ch);
    char *out = NULL;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++)
                px[((size_t)y * w + x) * ch + c] = (uint8_t)(x * (2 + c) + y * (3 - c) + (x * y % 17) * 5);
    char msg[IMG_MSG];
    FILE *f = open_memstream(&out, n);
    CHECK(f && !img_jpeg_write(f, px, w, h, ch, 90, msg));
    if (f) fclose(f);
    free(px);
    return (uint8_t *)out;
}

/* A rectangle decoded alone (libjpeg's column crop and row skips) has
 * exactly the whole decode's pixels, at every DCT scale, for every kind of
 * JPEG; and a truncated file fails whatever rectangle is asked for. */
TEST(jpeg_rect_matches_whole) {
    if (!have("x.jpg")) return;
    static const char *files[] = {"rgb420.jpg", "rgb444.jpg", "progressive.jpg", "grayj.jpg", "cmyk.jpg",
                                  "made-rgb", "made-gray"};
    img whole = {0}, part = {0};
    uint64_t rng = 11;
    int cases = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        size_t n;
        uint8_t *buf = !strncmp(files[i], "made", 4) ? jpeg_of(203, 157, strstr(files[i], "gray") ? 1 : 3, &n)
                                                      : slurp(fixture(files[i]), &n);
        char msg[IMG_MSG];
        for (int denom = 1; buf && denom <= 8; denom *= 2) {
            CHECK_MSG(img_decode(buf, n, denom, NULL, &whole, msg) == denom, "%s: %s", files[i], msg);
            for (int t = 0; t < 12 && whole.w > 0; t++, cases++) {
                img_rect r;
                r.x0 = (int)(data_hash(rng, t, 0) % (uint64_t)whole.w);
                r.y0 = (int)(data_hash(rng, t, 1) % (uint64_t)whole.h);
                r.x1 = r.x0 + 1 + (int)(data_hash(rng, t, 2) % (uint64_t)(whole.w - r.x0));
                r.y1 = r.y0 + 1 + (int)(data_hash(rng, t, 3) % (uint64_t)(whole.h - r.y0));
                rng++;
                CHECK_MSG(img_decode(buf, n, denom, &r, &part, msg) == denom, "%s: %s", files[i], msg);
                CHECK_MSG(part.x0 <= r.x0 && part.y0 <= r.y0 && part.x0 + part.w >= r.x1 && part.y0 + part.h >= r.y1 &&
                              part.x0 + part.w <= whole.w && part.y0 + part.h <= whole.h,
                          "%s 1/%d: [%d,%d)x[%d,%d) decoded as %dx%d at (%d,%d)", files[i], denom, r.x0, r.x1, r.y0,
                          r.y1, part.w, part.h, part.x0, part.y0);
                int bad = 0; /* rows of the rectangle asked for */
                for (int y = r.y0; y < r.y1; y++)
                    bad += memcmp(part.px + ((size_t)(y - part.y0) * part.w + (r.x0 - part.x0)) * 3,
                                  whole.px + ((size_t)y * whole.w + r.x0) * 3, (size_t)(r.x1 - r.x0) * 3) != 0;
                CHECK_MSG(!bad, "%s 1/%d: %d of %d rows of [%d,%d)x[%d,%d) differ from the whole decode", files[i],
                          denom, bad, r.y1 - r.y0, r.x0, r.x1, r.y0, r.y1);
            }
        }
        if (buf && !strcmp(files[i], "made-rgb")) { /* cut after 60%: fails even for a rectangle at the top */
            img_rect top = {0, 0, 16, 16};
            CHECK(img_decode(buf, n * 3 / 5, 1, &top, &part, msg) == -1);
        }
        free(buf);
    }
    CHECK(cases == 7 * 4 * 12);
    img_free(&whole), img_free(&part);
}

/* Each case of transforms.txt: torchvision's resized_crop (+ hflip) through
 * img_resample, and Resize + CenterCrop through the whole eval transform. */
TEST(transforms_match_torchvision) {
    if (!have("x.png")) return;
    FILE *f = fopen(fixture("transforms.txt"), "r");
    CHECK(f != NULL);
    if (!f) return;
    char file[64], kind[16], exp[64];
    int a, b, c, d, S, flip, ncase = 0;
    img_work w = {0};
    while (fscanf(f, "%63s %15s %d %d %d %d %d %d %63s", file, kind, &a, &b, &c, &d, &S, &flip, exp) == 9) {
        size_t n, en;
        uint8_t *buf = slurp(fixture(file), &n), *want = slurp(fixture(exp), &en);
        char msg[IMG_MSG];
        if (!buf || !want || en != (size_t)S * S * 3) {
            h_fail(__FILE__, __LINE__, "case %d: fixture", ncase);
            free(buf), free(want);
            continue;
        }
        uint8_t *got = malloc(en);
        if (!strcmp(kind, "crop")) { /* top a, left b, height c, width d */
            CHECK(img_decode(buf, n, 1, NULL, &w.im, msg) == 1);
            img_box box = {b, a, b + d, a + c};
            CHECK(!img_resample(w.im.px, w.im.w, w.im.h, 3, box, S, S, 0, 0, S, S, got, &w.tmp, &w.tmp_cap));
            if (flip)
                for (int y = 0; y < S; y++)
                    for (int x = 0; x < S / 2; x++)
                        for (int ch = 0; ch < 3; ch++) {
                            uint8_t *p = got + ((size_t)y * S + x) * 3 + ch, *q = got + ((size_t)y * S + S - 1 - x) * 3 + ch, t = *p;
                            *p = *q, *q = t;
                        }
        } else { /* the eval transform, mean 0 and std 1: floats are x/255 */
            img_tf tf = {.size = S, .channels = 3, .resize = a, .mean = {0, 0, 0}, .std = {1, 1, 1}};
            float *fx = malloc(sizeof *fx * en);
            CHECK_MSG(!img_transform(&tf, buf, n, 0, 0, &w, fx, msg), "case %d: %s", ncase, msg);
            for (int ch = 0; ch < 3; ch++)
                for (int k = 0; k < S * S; k++) got[(size_t)k * 3 + ch] = (uint8_t)lrintf(fx[(size_t)ch * S * S + k] * 255);
            free(fx);
        }
        int maxd = 0;
        for (size_t k = 0; k < en; k++) maxd = abs(got[k] - want[k]) > maxd ? abs(got[k] - want[k]) : maxd;
        CHECK_MSG(maxd <= 1, "case %d (%s %s %d %d %d %d -> %d): max |diff| %d/255 against torchvision", ncase, file,
                  kind, a, b, c, d, S, maxd);
        free(buf), free(want), free(got);
        ncase++;
    }
    fclose(f);
    img_work_free(&w);
    CHECK(ncase == 8);
}

/* A source image whose last byte is the last before an unmapped page, so a
 * read past the buffer (the vector copies' gathers) faults. */
static uint8_t *guarded(size_t n, void **map, size_t *maplen) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (n + pg - 1) / pg * pg + pg;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    mprotect(m + len - pg, pg, PROT_NONE);
    *map = m, *maplen = len;
    return m + len - pg - n;
}

/* The horizontal pass's AVX2 and AVX-512 copies against the scalar one:
 * the same bytes for random images (1 and 3 channels), boxes, output sizes
 * and windows, boxes on the image's right and bottom edges included. */
TEST(resample_copies_agree) {
    int cases = 0, differ = 0;
    img_work w = {0};
    for (int it = 0; it < 300; it++) {
#define U(k, m) (int)(data_hash(12345, (k), (uint64_t)it) % (uint64_t)(m)) /* uniform in [0, m) */
        int ch = it % 2 ? 3 : 1, sw = 1 + U(1, 200), sh = 1 + U(2, 120);
        size_t n = (size_t)sw * (size_t)sh * (size_t)ch;
        void *map;
        size_t maplen;
        uint8_t *src = guarded(n, &map, &maplen);
        CHECK(src != NULL);
        if (!src) return;
        for (size_t k = 0; k < n; k++) src[k] = (uint8_t)data_hash(it, 3, k);
        img_box box = {U(4, 1000) / 1000.0 * sw * 0.5, U(5, 1000) / 1000.0 * sh * 0.5, sw, sh}; /* to the edges */
        if (it % 3 == 0) box.x1 = box.x0 + (sw - box.x0) * 0.7, box.y1 = box.y0 + (sh - box.y0) * 0.8;
        int ow = 1 + U(6, 90), oh = 1 + U(7, 40), wx = it % 4 ? U(8, ow) : 0, wy = it % 4 ? U(9, oh) : 0;
#undef U
        int ww = ow - wx, wh = oh - wy;
        size_t nout = (size_t)ww * (size_t)wh * (size_t)ch;
        uint8_t *want = malloc(nout), *got = malloc(nout);
        core_set_isa(0);
        CHECK(!img_resample(src, sw, sh, ch, box, ow, oh, wx, wy, ww, wh, want, &w.tmp, &w.tmp_cap));
        core_set_isa(-1);
        for (int level = core_isa(); level >= 1; level--) {
            core_set_isa(level);
            CHECK(!img_resample(src, sw, sh, ch, box, ow, oh, wx, wy, ww, wh, got, &w.tmp, &w.tmp_cap));
            differ += memcmp(got, want, nout) != 0;
            cases++;
            core_set_isa(-1);
        }
        free(want), free(got);
        munmap(map, maplen);
    }
    img_work_free(&w);
    CHECK_MSG(differ == 0, "%d of %d resamples differ from the scalar copy's", differ, cases);
    printf("  %d cases against the scalar copy (this CPU's best: level %d)\n", cases, core_isa());
}

TEST(random_resized_crop_params) {
    /* in range, area and ratio within bounds, varied; the fallback for an
     * extreme aspect ratio is torchvision's central crop */
    int seen_flip_area = 0;
    for (uint64_t s = 0; s < 2000; s++) {
        uint64_t rng = data_hash(7, s, 0);
        int x, y, w, h;
        img_rrc_params(500, 375, &rng, &x, &y, &w, &h);
        CHECK_MSG(w > 0 && h > 0 && x >= 0 && y >= 0 && x + w <= 500 && y + h <= 375, "crop %d,%d %dx%d", x, y, w, h);
        double area = (double)w * h / (500.0 * 375), r = (double)w / h;
        if (w != 500 || h != 375) CHECK_MSG(area >= 0.07 && area <= 1.01 && r > 0.7 && r < 1.4, "area %g ratio %g", area, r);
        seen_flip_area += area < 0.3;
    }
    CHECK(seen_flip_area > 300 && seen_flip_area < 1000); /* ~ (0.3-0.08)/0.92 of tries land below 0.3 */
    uint64_t rng = 1;
    int x, y, w, h;
    img_rrc_params(1000, 10, &rng, &x, &y, &w, &h);
    CHECK_MSG(w == 13 && h == 10 && x == 493 && y == 0, "fallback %d,%d %dx%d", x, y, w, h);
    int ow, oh;
    img_resize_size(500, 375, 256, &ow, &oh);
    CHECK(ow == 341 && oh == 256);
    CHECK(img_center_offset(341, 224) == 58 && img_center_offset(35, 32) == 2 && img_center_offset(37, 32) == 2);
    CHECK(img_jpeg_denom(500, 375, 224) == 1 && img_jpeg_denom(500, 375, 100) == 2 && img_jpeg_denom(400, 400, 50) == 8);
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c >> 1 ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

/* A PNG whose header claims w x h (valid checksum) and carries no data. */
static size_t png_claiming(uint8_t *out, uint32_t w, uint32_t h) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[17] = {0, 0, 0, 13, 'I', 'H', 'D', 'R', w >> 24, w >> 16, w >> 8, w, h >> 24, h >> 16, h >> 8, h, 8};
    uint8_t tail[4] = {2, 0, 0, 0}; /* RGB, deflate, filter 0, no interlace (after bit depth 8) */
    memcpy(out, sig, 8);
    memcpy(out + 8, ihdr, 17);
    memcpy(out + 25, tail, 4);
    uint32_t c = crc32_of(out + 12, 17);
    uint8_t cb[4] = {c >> 24, c >> 16, c >> 8, c};
    memcpy(out + 29, cb, 4);
    return 33;
}

TEST(limits_before_allocation) {
    char msg[IMG_MSG];
    img im = {0};
    int w, h;
    uint8_t buf[64] = {0};
    CHECK(img_probe(&im, buf, 0, &w, &h, msg) == -1 && strstr(msg, "empty"));
    CHECK(img_probe(&im, (const uint8_t *)"hello, world", 12, &w, &h, msg) == -1 && strstr(msg, "not a JPEG or PNG"));
    if (have("bomb.png")) {
        size_t n = png_claiming(buf, 60000, 60000);
        CHECK_MSG(img_probe(&im, buf, n, &w, &h, msg) == -1 && strstr(msg, "outside the limits"), "%s", msg);
        CHECK(img_decode(buf, n, 1, NULL, &im, msg) == -1 && im.cap == 0); /* nothing allocated */
        n = png_claiming(buf, 30, 20);
        CHECK_MSG(img_probe(&im, buf, n, &w, &h, msg) == 0 && w == 30 && h == 20, "%s", msg);
        CHECK(img_decode(buf, n, 1, NULL, &im, msg) == -1); /* no image data */
    }
    if (have("bomb.jpg")) { /* a real JPEG with its frame header patched to 60000 x 60000 */
        size_t n;
        uint8_t *j = slurp(fixture("rgb420.jpg"), &n);
        for (size_t i = 2; j && i + 9 < n; i++)
            if (j[i] == 0xff && (j[i + 1] == 0xc0 || j[i + 1] == 0xc2)) {
                j[i + 5] = 0xea, j[i + 6] = 0x60, j[i + 7] = 0xea, j[i + 8] = 0x60;
                break;
            }
        CHECK_MSG(j && img_decode(j, n, 1, NULL, &im, msg) == -1 && strstr(msg, "outside the limits"), "%s", msg);
        free(j);
    }
    img_free(&im);
}

/* ---- folders ---- */
static void mkdirs(const char *p) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
    CHECK(system(cmd) == 0);
}

/* A PNG of one flat color (a minimal writer: stored deflate blocks). */
static size_t flat_png(uint8_t *out, int side, uint8_t r, uint8_t g, uint8_t b) {
    size_t n = png_claiming(out, (uint32_t)side, (uint32_t)side);
    size_t row = 1 + (size_t)side * 3, raw = row * (size_t)side;
    uint8_t *d = out + n + 8;
    size_t k = 0;
    d[k++] = 0x78, d[k++] = 0x01;
    d[k++] = 1, d[k++] = raw & 0xff, d[k++] = raw >> 8, d[k++] = ~raw & 0xff, d[k++] = (~raw >> 8) & 0xff;
    uint32_t s1 = 1, s2 = 0;
    for (size_t i = 0; i < raw; i++) {
        size_t c = i % row;
        uint8_t v = c == 0 ? 0 : (c - 1) % 3 == 0 ? r : (c - 1) % 3 == 1 ? g : b;
        d[k++] = v;
        s1 = (s1 + v) % 65521, s2 = (s2 + s1) % 65521;
    }
    uint32_t ad = s2 << 16 | s1;
    d[k++] = ad >> 24, d[k++] = ad >> 16, d[k++] = ad >> 8, d[k++] = ad;
    uint8_t *c0 = out + n;
    c0[0] = k >> 24, c0[1] = k >> 16, c0[2] = k >> 8, c0[3] = k;
    memcpy(c0 + 4, "IDAT", 4);
    uint32_t c = crc32_of(c0 + 4, k + 4);
    uint8_t *e = d + k;
    e[0] = c >> 24, e[1] = c >> 16, e[2] = c >> 8, e[3] = c;
    static const uint8_t iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    memcpy(e + 4, iend, 12);
    return (size_t)(e + 16 - out);
}

/* root/train/<cls>/: class c's images are flat, red = 40 + 50 c, so a
 * label can be checked against its pixels. Plus broken files in class 1. */
static void make_folder(const char *root, int classes, int per_class, bool broken) {
    static uint8_t png[1 << 16];
    char p[512];
    for (int c = 0; c < classes; c++) {
        snprintf(p, sizeof p, "%s/train/cls%d", root, c);
        mkdirs(p);
        for (int i = 0; i < per_class; i++) {
            size_t n = flat_png(png, 12 + i % 5, (uint8_t)(40 + 50 * c), (uint8_t)(i * 7), 100);
            snprintf(p, sizeof p, "%s/train/cls%d/img%02d.png", root, c, i);
            spit(p, png, n);
        }
        snprintf(p, sizeof p, "%s/train/cls%d/notes.txt", root, c); /* not an image name: ignored */
        spit(p, "x", 1);
    }
    if (!broken) return;
    size_t n = flat_png(png, 16, 90, 0, 100);
    snprintf(p, sizeof p, "%s/train/cls1/zero.jpg", root);
    spit(p, "", 0);
    snprintf(p, sizeof p, "%s/train/cls1/text.png", root);
    spit(p, "this is not an image\n", 21);
    snprintf(p, sizeof p, "%s/train/cls1/truncated.png", root);
    spit(p, png, n / 2);
    png[n / 2] ^= 0x55; /* corrupt: the IDAT checksum fails */
    snprintf(p, sizeof p, "%s/train/cls1/corrupt.png", root);
    spit(p, png, n);
    n = png_claiming(png, 50000, 50000);
    snprintf(p, sizeof p, "%s/train/cls1/bomb.png", root);
    spit(p, png, n);
    if (img_have(IMG_JPEG)) {
        size_t jn;
        uint8_t *j = slurp(fixture("rgb420.jpg"), &jn);
        snprintf(p, sizeof p, "%s/train/cls1/truncated.jpg", root);
        if (j) spit(p, j, jn * 2 / 3);
        free(j);
    }
}

static data_floader_cfg cfg_of(int64_t batch, int workers, int prefetch) {
    data_floader_cfg c = {.batch = batch, .shuffle = true, .drop_last = true, .workers = workers,
                          .prefetch = prefetch, .world = 1,
                          .tf = {.size = 8, .channels = 3, .train = true, .dct_scale = true, .seed = 3,
                                 .mean = {0, 0, 0}, .std = {1, 1, 1}}};
    return c;
}

TEST(broken_files_skipped_and_counted) {
    if (!have("folder.png")) return;
    char root[256];
    snprintf(root, sizeof root, "%s/broken", g_dir);
    make_folder(root, 3, 6, true);
    data_folder f;
    CHECK(data_folder_open(&f, root, "train") == 0);
    int nbad = img_have(IMG_JPEG) ? 6 : 5;
    CHECK_MSG(f.classes == 3 && f.n == 18 + nbad, "%d classes, %lld files", f.classes, (long long)f.n);
    CHECK(f.classes == 3 && !strcmp(f.class_names[2], "cls2"));
    FILE *warn = tmpfile();
    data_floader_cfg c = cfg_of(4, 2, 2);
    c.warn = warn;
    data_floader *l = data_floader_new(&f, &c);
    CHECK(l != NULL);
    if (!l) {
        data_folder_free(&f);
        return;
    }
    for (int64_t e = 0; e < 2; e++) /* two epochs: each bad file is warned about once */
        for (int64_t b = 0; b < data_floader_batches(l); b++) {
            lt_tensor *x, *y;
            CHECK(data_floader_next(l, e, b, &x, &y) == 4);
            float px[4 * 3 * 64];
            double lab[4];
            CHECK(!lt_to_host(x, px, sizeof px));
            double *yy = h_read(y);
            memcpy(lab, yy, sizeof lab);
            free(yy);
            for (int r = 0; r < 4; r++) { /* red channel of a flat image says its class */
                int cls = (int)lrintf((px[r * 192 + 27] * 255 - 40) / 50);
                CHECK_MSG(cls == (int)lab[r], "epoch %lld batch %lld row %d: label %g, pixels of class %d",
                          (long long)e, (long long)b, r, lab[r], cls);
            }
            lt_free(x), lt_free(y);
        }
    data_floader_stats st = data_floader_stats_get(l);
    CHECK_MSG(st.skipped == nbad, "skipped %lld of %d bad files", (long long)st.skipped, nbad);
    data_floader_free(l);
    rewind(warn);
    char line[512];
    int lines = 0;
    while (fgets(line, sizeof line, warn)) lines += strstr(line, "skipping") && strstr(line, "/train/cls1/") != NULL;
    fclose(warn);
    CHECK_MSG(lines == nbad, "%d warnings for %d bad files", lines, nbad);
    /* --bad-images fail: the first bad file ends the run, named */
    c = cfg_of(4, 2, 2);
    c.fail_bad = true;
    c.shuffle = false;
    l = data_floader_new(&f, &c);
    int64_t rc = 0;
    for (int64_t b = 0; l && b < data_floader_batches(l) && rc >= 0; b++) {
        lt_tensor *x, *y;
        rc = data_floader_next(l, 0, b, &x, &y);
        lt_free(x), lt_free(y);
    }
    CHECK_MSG(rc == -1 && strstr(lt_error_message(), "/train/cls1/"), "fail mode: %lld (%s)", (long long)rc,
              lt_error_message());
    lt_clear_error();
    data_floader_free(l);
    data_folder_free(&f);
}

TEST(layout_errors) {
    data_folder f;
    char p[400];
    snprintf(p, sizeof p, "%s/missing", g_dir);
    CHECK(data_folder_open(&f, p, "train") == -1);
    CHECK_ERR(LT_ERR_IO);
    snprintf(p, sizeof p, "%s/noclasses/train", g_dir);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/noclasses", g_dir);
    CHECK(data_folder_open(&f, p, "train") == -1 && strstr(lt_error_message(), "no class folders"));
    CHECK_ERR(LT_ERR_FORMAT);
    snprintf(p, sizeof p, "%s/emptyclass/train/b", g_dir);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/emptyclass/train/a/x.png", g_dir);
    mkdirs(p); /* a directory named like an image is not a file */
    snprintf(p, sizeof p, "%s/emptyclass", g_dir);
    CHECK(data_folder_open(&f, p, "train") == -1 && strstr(lt_error_message(), "/train/a has no"));
    CHECK_ERR(LT_ERR_FORMAT);
    if (getuid() != 0) { /* root reads anything */
        snprintf(p, sizeof p, "%s/emptyclass/train", g_dir);
        chmod(p, 0);
        snprintf(p, sizeof p, "%s/emptyclass", g_dir);
        CHECK(data_folder_open(&f, p, "train") == -1);
        CHECK_ERR(LT_ERR_IO);
    }
}

/* All batches of two epochs, as bytes. */
static float *all_batches(const data_folder *f, data_floader_cfg c, size_t *n) {
    data_floader *l = data_floader_new(f, &c);
    if (!l) return NULL;
    int64_t nb = data_floader_batches(l), per = c.batch * 3 * 64 + c.batch;
    float *out = calloc((size_t)(2 * nb * per), sizeof *out);
    for (int64_t e = 0; e < 2; e++)
        for (int64_t b = 0; b < nb; b++) {
            lt_tensor *x, *y;
            int64_t rows = data_floader_next(l, e, b, &x, &y);
            float *o = out + (e * nb + b) * per;
            CHECK(rows == c.batch && !lt_to_host(x, o, sizeof *o * (size_t)(rows * 192)));
            double *yy = h_read(y);
            for (int64_t r = 0; yy && r < rows; r++) o[rows * 192 + r] = (float)yy[r];
            free(yy);
            lt_free(x), lt_free(y);
        }
    data_floader_free(l);
    *n = (size_t)(2 * nb * per);
    return out;
}

TEST(same_batches_for_any_worker_count) {
    if (!have("folder.png")) return;
    char root[256];
    snprintf(root, sizeof root, "%s/det", g_dir);
    make_folder(root, 3, 11, true);
    data_folder f;
    CHECK(data_folder_open(&f, root, "train") == 0);
    size_t n0, n1, n4;
    float *a = all_batches(&f, cfg_of(5, 0, 1), &n0), *b = all_batches(&f, cfg_of(5, 1, 2), &n1),
          *c = all_batches(&f, cfg_of(5, 4, 3), &n4);
    CHECK(a && b && c && n0 == n1 && n0 == n4);
    if (a && b && c) {
        CHECK_MSG(!memcmp(a, b, n0 * sizeof *a), "1 worker differs from 0");
        CHECK_MSG(!memcmp(a, c, n0 * sizeof *a), "4 workers differ from 0");
    }
    /* a resume starts anywhere: batch 3 of epoch 1 alone equals the run's */
    data_floader_cfg cf = cfg_of(5, 4, 3);
    data_floader *l = data_floader_new(&f, &cf);
    lt_tensor *x, *y;
    float px[5 * 192];
    int64_t nb = l ? data_floader_batches(l) : 0;
    CHECK(l && data_floader_next(l, 1, 3, &x, &y) == 5 && !lt_to_host(x, px, sizeof px));
    if (a && l) CHECK(!memcmp(px, a + (nb + 3) * (5 * 192 + 5), sizeof px));
    lt_free(x), lt_free(y);
    data_floader_free(l);
    free(a), free(b), free(c);
    data_folder_free(&f);
}

/* The x rows of batch b of epoch e (rows * floats values into out). */
static int64_t batch_rows(data_floader *l, int64_t e, int64_t b, float *out, int64_t cap) {
    lt_tensor *x = NULL, *y = NULL;
    int64_t rows = l ? data_floader_next(l, e, b, &x, &y) : -1;
    if (rows > cap || (rows > 0 && lt_to_host(x, out, (size_t)(rows * 192) * sizeof *out))) rows = -1;
    lt_free(x), lt_free(y);
    return rows;
}

TEST(shards_by_rank) {
    if (!have("folder.png")) return;
    char root[256];
    snprintf(root, sizeof root, "%s/shard", g_dir);
    make_folder(root, 2, 10, false);
    data_folder f;
    CHECK(data_folder_open(&f, root, "train") == 0);
    /* evaluation order (no shuffle, keep the last batch): ranks 0 and 1 of 2
     * take every other image, 10 each in batches of 3, 3, 3, 1 -> all 20 once */
    int seen[20] = {0};
    for (int rank = 0; rank < 2; rank++) {
        data_floader_cfg c = cfg_of(3, 2, 2);
        c.shuffle = c.drop_last = c.tf.train = false;
        c.rank = rank, c.world = 2;
        data_floader *l = data_floader_new(&f, &c);
        CHECK(l && data_floader_batches(l) == 4);
        for (int64_t b = 0; l && b < data_floader_batches(l); b++) {
            lt_tensor *x, *y;
            int64_t rows = data_floader_next(l, 0, b, &x, &y);
            CHECK(rows == (b == 3 ? 1 : 3));
            for (int64_t r = 0; r < rows; r++) seen[(b * 3 + r) * 2 + rank]++;
            lt_free(x), lt_free(y);
        }
        data_floader_free(l);
    }
    for (int i = 0; i < 20; i++) CHECK_MSG(seen[i] == 1, "image %d seen %d times", i, seen[i]);
    /* training (shuffled, drop_last): 3 ranks x batch 2 of 20 images -> 3
     * batches each (18 images), and batch b of the 3 ranks is batch b of one
     * loader with batch 6 (its rows r, r + 3, ... on rank r) */
    data_floader_cfg c1 = cfg_of(6, 0, 1);
    data_floader *one = data_floader_new(&f, &c1);
    CHECK(one && data_floader_batches(one) == 3);
    data_floader *rk[3];
    for (int r = 0; r < 3; r++) {
        data_floader_cfg c = cfg_of(2, 1, 2);
        c.rank = r, c.world = 3;
        rk[r] = data_floader_new(&f, &c);
        CHECK(rk[r] && data_floader_batches(rk[r]) == 3);
    }
    for (int64_t e = 0; e < 2; e++)
        for (int64_t b = 0; b < 3; b++) {
            float whole[6 * 192], part[2 * 192];
            CHECK(batch_rows(one, e, b, whole, 6) == 6);
            for (int r = 0; r < 3; r++) {
                CHECK(batch_rows(rk[r], e, b, part, 2) == 2);
                for (int k = 0; k < 2; k++)
                    CHECK_MSG(!memcmp(part + k * 192, whole + (k * 3 + r) * 192, 192 * sizeof *part),
                              "epoch %lld batch %lld: rank %d row %d is not row %d of the whole batch", (long long)e,
                              (long long)b, r, k, k * 3 + r);
            }
        }
    for (int r = 0; r < 3; r++) data_floader_free(rk[r]);
    data_floader_free(one);
    data_folder_free(&f);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/lt_test_images_%d", (int)getpid());
    mkdirs(g_dir);
    RUN(decode_matches_pil);
    RUN(jpeg_rect_matches_whole);
    RUN(transforms_match_torchvision);
    RUN(resample_copies_agree);
    RUN(random_resized_crop_params);
    RUN(limits_before_allocation);
    RUN(broken_files_skipped_and_counted);
    RUN(layout_errors);
    RUN(same_batches_for_any_worker_count);
    RUN(shards_by_rank);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", g_dir, g_dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", g_dir);
    return h_report();
}
